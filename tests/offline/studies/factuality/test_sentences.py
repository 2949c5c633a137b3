"""The recorded sentence-level fact-checks on FRANK: loader, parse counts, store, study, report (real data)."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from judges.client import JudgeClient
from judges.factuality.sentence_check import split_sentences
from judges.factuality.sentence_parse import parse_sentence_verdicts
from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.factuality.faithfulness import faithfulness_data, run_faithfulness_study
from offline.build.factuality.sentences import (
    ingest_sentences,
    item_score,
    judge_score_of,
    sentence_answers_from_store,
)
from offline.build.factuality.validity import sentence_fits, without_prompt_family
from offline.build.inputs.errors import DataError
from offline.build.inputs.finesure import FINESURE_DIR, RecordedFactCheck, load_finesure
from offline.build.inputs.frank import Frank, load_frank
from offline.collecting.run import collect
from offline.collecting.targets import frank_targets
from offline.report import build_report
from offline.studies.factuality.sentences import JSON_FILE, MARKDOWN_FILE, run_sentence_study
from offline.studies.factuality.sentences_report import write_sentence_study
from offline.studies.factuality.sentences_results import SentenceStudySummary
from offline.studies.factuality.sentences_validity import sentence_validity, write_sentence_validity
from tests.fakes.judge_server import JudgeServer

JUDGES = 8


@pytest.fixture(scope="module")
def frank(data_dir: Path) -> Frank:
    return load_frank(data_dir)


@pytest.fixture(scope="module")
def checks(data_dir: Path, frank: Frank) -> list[RecordedFactCheck]:
    return load_finesure(data_dir, frank)


@pytest.fixture(scope="module")
def summary(frank: Frank, checks: list[RecordedFactCheck]) -> SentenceStudySummary:
    return run_sentence_study(frank, checks)


def _independent_partial(x: np.ndarray, y: np.ndarray, systems: list[str]) -> tuple[float, float, float]:
    """(Pearson, Spearman, Pearson p) of the residuals after lstsq on intercept + one-hot systems."""
    names = sorted(set(systems))
    columns = [np.ones(len(systems))] + [np.array([system == name for system in systems]) for name in names[1:]]
    design = np.column_stack(columns).astype(float)
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    pearson = float(np.corrcoef(rx, ry)[0, 1])
    # Round away float noise (~1e-15) so that equal residuals tie before ranking; FRANK's Factuality is given
    # to 10 decimals (0.3333333333), so residual gaps of ~1e-11 are in the data and must stay.
    ranks = [scipy_stats.rankdata(np.round(r, 12)) for r in (rx, ry)]
    spearman = float(np.corrcoef(ranks[0], ranks[1])[0, 1])
    df = len(x) - 2 - (len(names) - 1)
    t = pearson * np.sqrt(df / (1 - pearson**2))
    return pearson, spearman, float(2 * scipy_stats.t.sf(abs(t), df))


def test_loader_joins_every_row_to_frank(checks: list[RecordedFactCheck], frank: Frank) -> None:
    assert len(checks) == JUDGES
    items = {item.item_id: item for item in frank.items}
    for check in checks:
        assert len(check.rows) == 200
        assert all(items[row.item_id].dataset == row.dataset for row in check.rows)
        assert all(len(a.labels) == len(row.sentences) for row in check.rows for a in row.annotators)


def test_loader_refuses_an_unknown_item(tmp_path: Path, data_dir: Path, frank: Frank) -> None:
    folder = tmp_path / FINESURE_DIR
    folder.mkdir(parents=True)
    line = (data_dir / FINESURE_DIR / "o3-2025-04-16.jsonl").read_text(encoding="utf-8").splitlines()[0]
    row = json.loads(line)
    row["model_name"] = "no-such-system"
    (folder / "x.jsonl").write_text(line + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"x\.jsonl:2: .*no FRANK item"):
        load_finesure(tmp_path, frank)
    assert load_finesure(tmp_path / "empty", frank) == []


def test_count_mismatches_are_excluded_and_counted(
    summary: SentenceStudySummary, checks: list[RecordedFactCheck]
) -> None:
    for check, stats in zip(sorted(checks, key=lambda c: c.judge), summary.parse, strict=True):
        # Independent of our parser: the recorder's own lists disagree with the sentence count on these rows.
        recorded_mismatch = sum(len(row.pred_error) != len(row.sentences) for row in check.rows)
        assert stats.n_wrong_count == recorded_mismatch
        assert stats.n_included + stats.n_wrong_count + stats.n_unreadable == stats.n_rows == 200
        assert stats.parse_rate == 1.0
        assert stats.recorded_row_agreement is not None and stats.recorded_row_agreement >= 0.99
    overall = {r.judge: r for r in summary.rows if r.dataset == "all"}
    assert {j: overall[j].n for j in overall} == {s.judge: s.n_included for s in summary.parse}


def test_overall_partial_correlations_match_an_independent_least_squares(
    summary: SentenceStudySummary, checks: list[RecordedFactCheck], frank: Frank
) -> None:
    items = {item.item_id: item for item in frank.items}
    overall = {r.judge: r for r in summary.rows if r.dataset == "all"}
    assert len(overall) == JUDGES
    for check in checks:
        scored = []
        for row in check.rows:
            text = row.response.replace("```json", "").replace("```", "")
            try:  # a plain reading: fences off; failing that, the invalid escape \' read as '
                verdicts = json.loads(text)
            except json.JSONDecodeError:
                try:
                    verdicts = json.loads(text.replace("\\'", "'"))
                except json.JSONDecodeError:
                    continue
            if isinstance(verdicts, dict):  # one reply wraps the list: {"result": [...]}
                (verdicts,) = verdicts.values()
            if len(verdicts) == len(row.sentences):
                errors = [v["category"].strip().lower() != "no error" for v in verdicts]
                scored.append((items[row.item_id], 1 - sum(errors) / len(errors)))
        x = np.array([score for _, score in scored])
        y = np.array([item.factuality for item, _ in scored])
        pearson, spearman, p_value = _independent_partial(x, y, [item.model_name for item, _ in scored])
        row = overall[check.judge]
        assert row.n == len(scored)
        assert row.partial_pearson == pytest.approx(pearson, abs=1e-6)
        assert row.partial_spearman == pytest.approx(spearman, abs=1e-6)
        assert row.p_value == pytest.approx(p_value, rel=1e-6, abs=1e-12)


def test_sentence_agreement_counts(summary: SentenceStudySummary, checks: list[RecordedFactCheck]) -> None:
    by_judge = {a.judge: a for a in summary.sentence_agreement}
    for check in checks:
        tp = fp = fn = 0
        for row in check.rows:
            parsed = parse_sentence_verdicts(row.response, n_sentences=len(row.sentences))
            if parsed.verdicts is None:
                continue
            for i, verdict in enumerate(parsed.verdicts):
                human = sum(a.labels[i] for a in row.annotators) >= 2
                tp += human and verdict.error
                fp += verdict.error and not human
                fn += human and not verdict.error
        agreement = by_judge[check.judge]
        assert agreement.precision == pytest.approx(tp / (tp + fp))
        assert agreement.recall == pytest.approx(tp / (tp + fn))
        assert agreement.f1 == pytest.approx(2 * tp / (2 * tp + fp + fn))


def test_error_types_and_confusion_are_consistent(summary: SentenceStudySummary) -> None:
    types = {(t.judge, t.error_type): t for t in summary.error_types}
    for matrix in summary.confusion:
        counts = np.array(matrix.counts)
        agreement = next(a for a in summary.sentence_agreement if a.judge == matrix.judge)
        assert counts.sum() + matrix.n_no_majority_type == agreement.n_sentences
        assert counts[-1].sum() == agreement.n_sentences - agreement.n_human_error  # the NoE row
        for i, code in enumerate(matrix.labels[:-1]):
            assert types[(matrix.judge, code)].n == counts[i].sum()
            assert types[(matrix.judge, code)].same_type == counts[i, i]


def test_baselines_use_exactly_the_judges_items(summary: SentenceStudySummary) -> None:
    overall = {r.judge: r.n for r in summary.rows if r.dataset == "all"}
    assert {b.metric for b in summary.baselines} == {"FactCC", "BertScore P Art", "QAGS"}
    assert all(b.n == overall[b.judge] for b in summary.baselines)


def test_store_round_trip_and_outputs(
    tmp_path: Path, frank: Frank, checks: list[RecordedFactCheck], summary: SentenceStudySummary
) -> None:
    with AnswerStore(tmp_path / "answers.sqlite") as store:
        stats = ingest_sentences(store, checks)
        again = ingest_sentences(store, checks)
        assert stats == again
        answers = sentence_answers_from_store(store, frank.items)
    assert len(answers) == JUDGES
    for (judge, method), group in answers.items():
        assert method == "sentences" and len(group) == 200
        scored = [a for a in group if a.judge_score is not None]
        assert len(scored) == next(s.n_included for s in stats if s.judge == judge)
        assert all(a.judge_score == judge_score_of(a.score) for a in scored if a.score is not None)
    json_path, md_path = write_sentence_study(summary, tmp_path)
    document = json.loads(json_path.read_text(encoding="utf-8"))
    assert {r["dataset"] for r in document["rows"]} == {"all", "cnndm", "bbc"}
    assert {"judge", "dataset", "n", "partial_pearson", "partial_spearman", "p_value"} <= set(document["rows"][0])
    assert document["error_types"] and document["sentence_agreement"]
    assert "FineSurE" in md_path.read_text(encoding="utf-8")
    files = build_report(tmp_path)
    index = files.index.read_text(encoding="utf-8")
    assert "FineSurE-prompt recordings, not the paper's prompts" in index
    figure = tmp_path / "factuality" / "llm_sentences_confusion.png"
    assert figure in files.figures and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / JSON_FILE).exists() and (tmp_path / MARKDOWN_FILE).exists()


def test_judge_score_and_item_score() -> None:
    assert [judge_score_of(s) for s in (0.0, 0.125, 0.5, 2 / 3, 1.0)] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        judge_score_of(1.5)
    reply = json.dumps([{"sentence": "a", "category": "no error"}, {"sentence": "b", "category": "entity error"}])
    assert item_score(parse_sentence_verdicts(reply, n_sentences=2)) == 0.5
    assert item_score(parse_sentence_verdicts(reply, n_sentences=3)) is None


def test_store_made_before_the_sentences_task_is_widened(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with AnswerStore(path) as store:
        store.put(AnswerRecord(judge="j", prompt_family="p", task="direct", criterion="c", item_id="i", judge_score=3))
    conn = sqlite3.connect(path)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'answers'").fetchone()[0]
    old_sql = sql.replace(", 'factuality_sentences'", "")
    assert old_sql != sql
    conn.executescript(
        f"ALTER TABLE answers RENAME TO a0; {old_sql}; INSERT INTO answers SELECT * FROM a0; DROP TABLE a0;"
    )
    conn.close()
    record = AnswerRecord(
        judge="j",
        prompt_family="factuality_sentences",
        task="factuality_sentences",
        criterion="faithfulness",
        item_id="h/m",
        judge_score=5,
    )
    with AnswerStore(path) as store:
        store.put(record)
        assert store.count() == 2 and store.get(record.key) is not None


def test_sentence_cells_are_calibrated_by_article_for_the_artifact(
    tmp_path: Path, frank: Frank, checks: list[RecordedFactCheck]
) -> None:
    with AnswerStore(":memory:") as store:
        ingest_sentences(store, checks)
        answers = sentence_answers_from_store(store, frank.items)
    fits = sentence_fits(frank.items, answers, n_splits=2, seed=0, delta=0.05)
    validity = sentence_validity(fits, n_splits=2, seed=0, delta=0.05)
    assert {(c.judge, c.prompt_family, c.criterion, c.kind) for c in validity.cells} == set(fits)
    assert {key[1:] for key in fits} == {("factuality_sentences", "faithfulness", "score")} and len(fits) == JUDGES
    hashes = {item.item_id: item.hash for item in frank.items}
    for cell in validity.cells:  # groups are FRANK articles: fewer groups than items, never more
        n_articles = len({hashes[a.item_id] for a in answers[(cell.judge, "sentences")] if a.judge_score is not None})
        assert cell.n_groups == n_articles < cell.n_items
    json_path, md_path = write_sentence_validity(validity, tmp_path)
    assert json_path.exists() and "FRANK sentence-level" in md_path.read_text(encoding="utf-8")


def test_without_prompt_family_drops_only_that_family(frank: Frank, checks: list[RecordedFactCheck]) -> None:
    with AnswerStore(":memory:") as store:
        ingest_sentences(store, checks[:2])
        answers = sentence_answers_from_store(store, frank.items)
    study = run_faithfulness_study(faithfulness_data(frank.items, answers), seed=0)
    assert study.summary.cells and study.fitted
    kept = without_prompt_family(study, "other_family")
    assert kept is not None and kept.fitted == study.fitted and kept.summary.cells == study.summary.cells
    dropped = without_prompt_family(study)
    assert dropped is not None and not dropped.fitted and not dropped.summary.cells
    assert not dropped.summary.default_methods and without_prompt_family(None) is None


def test_collected_sentence_answers_are_read_back(judge_server: JudgeServer, frank: Frank) -> None:
    """``collect --task factuality_sentences`` against the stand-in: stored under the family, read back as scores."""

    def responder(body: dict) -> str:
        content = body["messages"][-1]["content"]
        fenced = content.split("<<<SENTENCES>>>")[1].split("<<<END SENTENCES>>>")[0]
        n = len(re.findall(r"(?m)^\d+\. ", fenced))
        return json.dumps(
            [
                {"sentence": f"s{i}", "category": "entity error" if i == 0 else "no error", "reason": "r"}
                for i in range(n)
            ]
        )

    judge_server.responder = responder
    targets = frank_targets(frank, limit=3, seed=0)

    async def run(store: AnswerStore) -> None:
        async with JudgeClient(judge_server.judge_config(name="stand-in")) as client:
            await collect(
                store,
                client,
                task="factuality_sentences",
                items=targets,
                criteria=["faithfulness"],
                repetitions=1,
                progress=False,
            )

    with AnswerStore(":memory:") as store:
        asyncio.run(run(store))
        records = list(store.iter_answers(task="factuality_sentences"))
        answers = sentence_answers_from_store(store, frank.items)
    assert {(r.prompt_family, r.criterion) for r in records} == {("factuality_sentences", "faithfulness")}
    (group,) = answers.values()
    assert len(group) == 3
    for answer, target in zip(group, sorted(targets, key=lambda t: t.item_id), strict=True):
        n = len(split_sentences(target.summary))
        assert answer.item_id == target.item_id and answer.score == pytest.approx((n - 1) / n)
        assert answer.judge_score == judge_score_of((n - 1) / n)
