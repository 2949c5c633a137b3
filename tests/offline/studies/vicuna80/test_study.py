"""Vicuna80 real tournaments: loader refusals, ingest, and every figure against an independent count over raw rows."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import msgspec
import numpy as np
import pytest
from scipy import stats

from judges.parsing.choice import parse_choice
from offline.build.answers.ingest import ingest_vicuna80
from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.inputs.errors import DataError
from offline.build.inputs.vicuna80 import load_vicuna80
from offline.report import build_report, write_summary
from offline.report.vicuna80 import vicuna80_section, vicuna80_tables
from offline.studies.tournaments.position_bias import PositionBiasSummary, pairwise_answers_from_store
from offline.studies.vicuna80.rankings import PANEL
from offline.studies.vicuna80.study import HUMAN, JSON_FILE, write_vicuna80_study
from offline.studies.vicuna80.verdicts import AGGREGATIONS, verdicts_from_store
from tests.vicuna80_study import vicuna80_study

JUDGES = ("bard", "claude-v1", "gpt-3.5-turbo", "gpt-4", "vicuna-13b")


@pytest.fixture(scope="module")
def study(data_dir: Path):
    return vicuna80_study(data_dir)


# ------------------------------------------------------------------------ independent computation over raw rows


def _raw_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _independent(data_dir: Path) -> dict[tuple[str, str], dict[str, object]]:
    """Per (source, rule): per-question 3-cycle counts and tied pairs, from the JSON rows with plain dicts.

    Verdict = parse_choice's outcome when it reads one, else the row's label. Net votes per unordered pair
    (+1 for the alphabetically smaller assistant winning, -1 for the other, ties 0); an edge iff net != 0;
    a pair whose net is 0 is tied. Cycles: every 3-subset whose edges all exist and go round.
    """
    folder = data_dir / "pairwise" / "vicuna80"
    items = {row["item_id"]: sorted(row["answers"]) for row in _raw_rows(folder / "items.jsonl")}
    votes: dict[tuple[str, str], list[tuple[str, str, str, str]]] = defaultdict(list)  # (source, rule) -> rows
    for judge in JUDGES:
        for row in _raw_rows(folder / "judges" / f"{judge}.jsonl"):
            outcome = parse_choice(row["response"]).outcome or row["label"]
            rule = "order_a" if row["first"] < row["second"] else "order_b"
            entry = (row["item_id"], row["first"], row["second"], outcome)
            for source in (judge, PANEL):
                votes[source, "both_orders"].append(entry)
                votes[source, rule].append(entry)
    for row in _raw_rows(folder / "human.jsonl"):
        if row["first"] in items[row["item_id"]] and row["second"] in items[row["item_id"]]:
            votes[HUMAN, "both_orders"].append((row["item_id"], row["first"], row["second"], row["vote"]))
    result = {}
    for key, rows in votes.items():
        net: dict[tuple[str, str, str], int] = defaultdict(int)
        for item_id, first, second, outcome in rows:
            if outcome == "tie":
                net.setdefault((item_id, *sorted((first, second))), 0)
                continue
            winner = first if outcome == "first" else second
            a, b = sorted((first, second))
            net[item_id, a, b] += 1 if winner == a else -1
        beats = {(q, a, b) if n > 0 else (q, b, a) for (q, a, b), n in net.items() if n != 0}
        cycles, tied = {}, {}
        for q, names in items.items():
            cycles[q] = sum(
                1
                for x, y, z in itertools.combinations(names, 3)
                if {(q, x, y), (q, y, z), (q, z, x)} <= beats or {(q, y, x), (q, z, y), (q, x, z)} <= beats
            )
            tied[q] = sum(1 for (qq, _, _), n in net.items() if qq == q and n == 0)
        result[key] = {"cycles": cycles, "tied": tied, "n": len(rows)}
    return result


def test_violation_rates_equal_an_independent_enumeration_over_the_raw_rows(study, data_dir: Path) -> None:
    _, _, _, summary = study
    expected = _independent(data_dir)
    rows = {(r.judge, r.aggregation): r for r in summary.rows}
    assert set(rows) == set(expected)
    assert len(rows) == 6 * 3 + 1  # five judges and the panel under three rules, humans under both_orders
    for key, truth in expected.items():
        row = rows[key]
        rates = [truth["cycles"][q] / math.comb(5, 3) for q in sorted(truth["cycles"])]
        assert row.n_inputs == 80
        assert row.n_cycles == sum(truth["cycles"].values()), key
        assert row.mean == pytest.approx(statistics.fmean(rates), abs=1e-12), key
        assert row.median == pytest.approx(statistics.median(rates), abs=1e-12), key
        assert row.max == pytest.approx(max(rates), abs=1e-12), key
        assert row.share_with_cycle == pytest.approx(sum(r > 0 for r in rates) / 80, abs=1e-12), key
        assert row.n_tied_pairs == sum(truth["tied"].values()), key
        assert row.n_verdicts == truth["n"], key
        # 95% intervals, questions as the unit: exact binomial for the share, bootstrap over questions for the mean.
        exact = stats.binomtest(sum(r > 0 for r in rates), 80).proportion_ci(method="exact")
        assert row.share_with_cycle_ci == [pytest.approx(exact.low), pytest.approx(exact.high)], key
        boot = stats.bootstrap(
            (np.array(rates),), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(0)
        ).confidence_interval
        assert row.violation_rate_ci == [pytest.approx(boot.low, abs=1e-12), pytest.approx(boot.high, abs=1e-12)]
        assert row.violation_rate_ci[0] <= row.mean <= row.violation_rate_ci[1], key
    per_input = {(x.judge, x.aggregation, x.item_id): x.n_cycles for x in summary.inputs}
    for (source, rule), truth in expected.items():
        for q, count in truth["cycles"].items():
            assert per_input[source, rule, q] == count


def test_the_published_reference_figures_hold(study) -> None:
    """Data README: both orders give mean rho 0.000-0.006 per judge; one order alone 6-40% of questions cycle."""
    _, _, _, summary = study
    for row in summary.rows:
        if row.judge in JUDGES and row.aggregation == "both_orders":
            assert row.mean <= 0.0065
        if row.judge in JUDGES and row.aggregation != "both_orders":
            assert 0.06 <= row.share_with_cycle <= 0.40


def test_parse_counts_and_the_verdict_source(study) -> None:
    data, ingested, verdicts, summary = study
    assert [p.judge for p in summary.parse] == list(JUDGES)
    for p in summary.parse:
        rows = data.judges[p.judge]
        parsed = [(parse_choice(v.response).outcome, v.label) for v in rows]
        assert p.n_rows == len(rows)
        assert p.n_parsed == sum(o is not None for o, _ in parsed)
        assert p.n_from_label == sum(o is None for o, _ in parsed)
        assert p.agreement_with_label == pytest.approx(sum(o == lab for o, lab in parsed) / p.n_parsed)
    assert len(verdicts) == sum(len(rows) for rows in data.judges.values()) == 8160
    assert summary.n_human_votes + summary.n_human_votes_left_out == 7040  # every row of human.jsonl accounted for


def test_position_bias_per_judge_by_hand(study) -> None:
    data, _, verdicts, summary = study
    for row in summary.position_bias:
        mine = [v for v in verdicts if v.source == row.judge]
        decisive = [v for v in mine if v.outcome != "tie"]
        assert row.first_win_rate == pytest.approx(sum(v.outcome == "first" for v in decisive) / len(decisive))
        per_order: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        for v in mine:
            if v.outcome != "tie":
                per_order[v.item_id, v.first, v.second][v.first if v.outcome == "first" else v.second] += 1
        consistent = both = 0
        by_question: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # question -> [consistent, both]
        for (q, first, second), tally in per_order.items():
            if first > second:
                continue
            back = per_order.get((q, second, first), Counter())

            def majority(c: Counter, x: str = first, y: str = second) -> str | None:
                return x if c[x] > c[y] else y if c[y] > c[x] else None

            both += 1
            consistent += majority(tally) == majority(back)
            by_question[q][0] += majority(tally) == majority(back)
            by_question[q][1] += 1
        # pairs whose every verdict in one order was a tie never enter per_order: add them as (None, ...) pairs
        all_pairs = {(v.item_id, *sorted((v.first, v.second))) for v in mine}
        missing = [p for p in all_pairs if (p[0], p[1], p[2]) not in per_order]
        for q, a, b in missing:
            back = per_order.get((q, b, a), Counter())
            both += 1
            consistent += (a if back[a] > back[b] else b if back[b] > back[a] else None) is None
            by_question[q][0] += (a if back[a] > back[b] else b if back[b] > back[a] else None) is None
            by_question[q][1] += 1
        assert row.n_pairs_both_orders == both == 800
        assert row.n_consistent == consistent
        # The interval resamples questions whole (the pooled share over a bootstrap draw of questions).
        counts = np.array([by_question[q] for q in sorted(by_question)], dtype=float)
        boot = stats.bootstrap(
            (counts[:, 0], counts[:, 1]),
            lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis),
            paired=True,
            vectorized=True,
            n_resamples=2000,
            method="percentile",
            rng=np.random.default_rng(0),
        ).confidence_interval
        assert row.consistency_ci == [pytest.approx(boot.low), pytest.approx(boot.high)]
        assert row.consistency_ci[0] <= row.consistency <= row.consistency_ci[1]
        assert row.first_win_rate_ci[0] <= row.first_win_rate <= row.first_win_rate_ci[1]


def test_rankings_rows_and_conclusions(study) -> None:
    _, _, _, summary = study
    per_question = [r for r in summary.rankings if r.scope == "per_question" and r.judge in (*JUDGES, PANEL)]
    assert len(per_question) == 6 * 5 * 2
    for r in per_question:
        assert r.n_questions == 80 and r.mean_tau is not None and -1 <= r.mean_tau <= 1
        # Bootstrap over questions of the mean tau: it holds the mean, and its width is close to the normal
        # interval's 2 * 1.96 * sd / sqrt(n) over the defined taus (an independent scale check).
        low, high = r.mean_tau_ci
        assert low <= r.mean_tau <= high
        normal = 2 * 1.96 * r.std_tau / math.sqrt(r.n_questions - r.n_undefined)
        assert 0.8 * normal <= high - low <= 1.2 * normal, (r.judge, r.method, r.reference)
    assert all(r.mean_tau_ci is None for r in summary.rankings if r.scope == "pooled")
    best = summary.best_method["same_method"]
    means = best["mean_tau_over_judges"]
    assert best["method"] == max(means, key=lambda m: means[m])
    assert {r.judge for r in summary.rankings if r.scope == "pooled"} == {*JUDGES, PANEL}
    assert len({(q.judge, q.item_id) for q in summary.question_rankings}) == 6 * 80


def test_ingest_is_idempotent_and_kept_out_of_the_summeval_pairwise_studies(data_dir: Path) -> None:
    data = load_vicuna80(data_dir)
    with AnswerStore(":memory:") as store:
        first = ingest_vicuna80(store, data)
        again = ingest_vicuna80(store, data)
        store.put(
            AnswerRecord(
                judge="j",
                prompt_family="paper",
                task="pairwise",
                criterion="fluency",
                item_id="d1/M1|M2",
                order="ab",
                outcome="first",
            )
        )
        summeval_side = pairwise_answers_from_store(store)
    assert (first.inserted, again.inserted, again.updated, again.unchanged) == (8160, 0, 0, 8160)
    assert [a.judge for a in summeval_side] == ["j"]


def test_a_judge_gone_from_the_data_keeps_its_stored_rows_out_of_the_study(data_dir: Path) -> None:
    data = load_vicuna80(data_dir)
    with AnswerStore(":memory:") as store:
        ingest_vicuna80(store, data)
        store.put(
            AnswerRecord(
                judge="retired",
                prompt_family="prd",
                task="pairwise",
                criterion="overall",
                item_id="q1/bard|gpt-4",
                order="ab",
                outcome="first",
            )
        )
        everyone, _ = verdicts_from_store(store)
        current, rules = verdicts_from_store(store, data.judges)
    assert {v.source for v in everyone} - {v.source for v in current} == {"retired"}
    assert set(rules) == set(JUDGES)


def test_outputs_json_tables_and_index(study, tmp_path: Path) -> None:
    _, _, _, summary = study
    path = write_vicuna80_study(summary, tmp_path)
    assert path == tmp_path / JSON_FILE
    saved = json.loads(path.read_text(encoding="utf-8"))
    for row in saved["rows"]:
        assert {"judge", "aggregation", "mean", "share_with_cycle", "n_inputs"} <= set(row)
        assert row["aggregation"] in AGGREGATIONS
    assert saved["rankings"] and saved["position_bias"]
    assert all(len(row["violation_rate_ci"]) == 2 and len(row["share_with_cycle_ci"]) == 2 for row in saved["rows"])
    assert all(len(row["consistency_ci"]) == 2 for row in saved["position_bias"])
    assert all(len(r["mean_tau_ci"]) == 2 for r in saved["rankings"] if r["scope"] == "per_question")
    # build_report wants one of the SummEval/FRANK summaries beside it: an empty position-bias one will do.
    write_summary(PositionBiasSummary(rows=[], rules={}, source="none"), tmp_path / "position_bias" / "summary.json")
    files = build_report(tmp_path)
    index = files.index.read_text(encoding="utf-8")
    assert "## Transitivity on real tournaments (Vicuna80)" in index
    assert (tmp_path / "transitivity" / "vicuna80_violation_rates.png").stat().st_size > 0
    assert "Per-question violation rates" in (tmp_path / "transitivity" / "tables.md").read_text(encoding="utf-8")
    assert "panel" in vicuna80_tables(summary) and "Position bias" in vicuna80_section(summary)


# ------------------------------------------------------------------------------------------- bad data


def _tiny(tmp_path: Path, judge_rows: list[dict], human_rows: list[dict] | None = None) -> Path:
    folder = tmp_path / "pairwise" / "vicuna80"
    (folder / "judges").mkdir(parents=True)
    item = {"item_id": "q1", "category": "generic", "question": "Q?", "answers": {"a": "x", "b": "y", "c": "z"}}
    (folder / "items.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")
    (folder / "judges" / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judge_rows), encoding="utf-8")
    human = human_rows if human_rows is not None else [{"item_id": "q1", "first": "a", "second": "b", "vote": "tie"}]
    (folder / "human.jsonl").write_text("".join(json.dumps(r) + "\n" for r in human), encoding="utf-8")
    (folder / "prompts.json").write_text("[]", encoding="utf-8")
    return tmp_path


def _row(**fields: object) -> dict:
    return {"item_id": "q1", "first": "a", "second": "b", "repetition": 0, "response": "1", "label": "first", **fields}


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (_row(second="zed"), "assistant 'zed' has no answer in item 'q1'"),
        (_row(second="a"), "assistant 'a' is compared with itself"),
        (_row(label="both"), "unknown label 'both'"),
        (_row(item_id="q9"), "item_id 'q9' is not in items.jsonl"),
        (_row(), "duplicate verdict"),
    ],
)
def test_bad_judge_rows_stop_the_run_with_file_and_line(tmp_path: Path, bad: dict, problem: str) -> None:
    root = _tiny(tmp_path, [_row(), bad])
    with pytest.raises(DataError) as caught:
        load_vicuna80(root)
    path = root / "pairwise" / "vicuna80" / "judges" / "j.jsonl"
    assert str(caught.value).startswith(f"{path}:2: ")
    assert problem in str(caught.value)


def test_bad_human_rows_stop_the_run_and_outside_assistants_are_counted(tmp_path: Path) -> None:
    root = _tiny(tmp_path, [_row()], [{"item_id": "q1", "first": "a", "second": "b", "vote": "maybe"}])
    with pytest.raises(DataError, match=r"human\.jsonl:1: unknown vote 'maybe'"):
        load_vicuna80(root)
    root = _tiny(
        tmp_path / "2",
        [_row()],
        [
            {"item_id": "q1", "first": "a", "second": "guanaco", "vote": "first"},
            {"item_id": "q1", "first": "c", "second": "b", "vote": "second"},
        ],
    )
    data = load_vicuna80(root)
    assert data.human_outside == {"guanaco": 1} and data.n_human_left_out == 1
    assert [(v.first, v.second, v.line) for v in data.human] == [("c", "b", 2)]


def test_the_summary_round_trips(study) -> None:
    _, _, _, summary = study
    from offline.studies.vicuna80.results import Vicuna80Summary

    assert msgspec.json.decode(msgspec.json.encode(summary), type=Vicuna80Summary) == summary
