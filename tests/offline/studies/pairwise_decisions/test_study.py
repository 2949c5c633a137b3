"""Certified pairwise decisions on the real human votes of Vicuna80 and Arena PPR (few splits, to stay fast)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from artifact.pairwise import DEFAULT_PATH, decode_pairwise_artifact, encode_pairwise_artifact, load_pairwise_artifact
from calibration.decisions.pairwise import DEFAULT_LEVELS, accepted
from calibration.decisions.pairwise_expected import expected_threshold
from calibration.input_kinds.heldout import group_splits
from offline.build.inputs.arena_ppr import load_arena_ppr
from offline.build.inputs.errors import DataError
from offline.build.inputs.vicuna80 import load_vicuna80
from offline.build.pairwise import ALPHAS, DELTA, export_pairwise_artifact
from offline.build.pairwise_tables import PANEL, arena_pairs, sources, vicuna80_pairs
from offline.cli import main
from offline.studies.pairwise_decisions.modes import mode_check, mode_rows, rule_seed
from offline.studies.pairwise_decisions.study import run_pairwise_decisions


@pytest.fixture(scope="module")
def vicuna(data_dir: Path):
    return vicuna80_pairs(load_vicuna80(data_dir))


@pytest.fixture(scope="module")
def arena(data_dir: Path):
    return arena_pairs(load_arena_ppr(data_dir))


def test_arena_loader_reproduces_the_readme_counts_and_reference_agreement(data_dir: Path) -> None:
    data = load_arena_ppr(data_dir)
    assert Counter(data.human_winners) == {"model_a": 9516, "model_b": 9391, "tie": 2880, "tie (bothbad)": 5132}
    reference = {"gpt-4-0125-preview": 0.833, "claude-3-opus-20240229": 0.723, "gpt-3.5-turbo": 0.570}
    for judge, outcome in data.judges.items():
        both = (outcome != 0) & (data.human != 0)
        assert float((outcome[both] == data.human[both]).mean()) == pytest.approx(reference[judge], abs=0.0005)


def test_arena_loader_refuses_a_misaligned_judge_file(tmp_path: Path) -> None:
    folder = tmp_path / "pairwise" / "arena_ppr"
    folder.mkdir(parents=True)
    row = {"num": 0, "question_id": "q", "model_a": "x", "model_b": "y", "winner": "model_a"}
    (folder / "human.jsonl").write_text(json.dumps(row) + "\n")
    (folder / "judge.jsonl").write_text(json.dumps({**row, "model_b": "z"}) + "\n")
    with pytest.raises(DataError, match="judge.jsonl:1"):
        load_arena_ppr(tmp_path)


def test_vicuna80_pairs_and_human_plurality_by_hand(vicuna, data_dir: Path) -> None:
    assert vicuna.groups.size == 800 and np.bincount(vicuna.groups).tolist() == [10] * 80
    # Independent plurality over the raw file (guanaco votes have no pair here).
    votes: dict[tuple[str, str, str], Counter[str]] = {}
    for line in (data_dir / "pairwise" / "vicuna80" / "human.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "guanaco" in row["first"] or "guanaco" in row["second"]:
            continue
        a, b = sorted((row["first"], row["second"]))
        side = "tie" if row["vote"] == "tie" else row[row["vote"]]
        votes.setdefault((row["item_id"], a, b), Counter())[side] += 1
    keys = sorted(votes, key=lambda k: (k[0], f"{k[1]}|{k[2]}"))
    expected = []
    for key in keys:
        c = votes[key]
        top = max(c.values())
        winners = [s for s, n in c.items() if n == top]
        expected.append(0 if len(winners) > 1 or winners[0] == "tie" else (1 if winners[0] == key[1] else -1))
    assert sorted(Counter(expected).items()) == sorted(Counter(vicuna.human.tolist()).items())


def test_vicuna80_judge_signal_matches_the_recorded_labels(vicuna, data_dir: Path) -> None:
    # gpt-4 from its raw labels (both orders): the parsed choices may differ from a label in a few replies only.
    rows = [json.loads(x) for x in (data_dir / "pairwise/vicuna80/judges/gpt-4.jsonl").read_text().splitlines()]
    sides: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        a, b = sorted((r["first"], r["second"]))
        winner = None if r["label"] == "tie" else r[r["label"]]
        sides.setdefault((r["item_id"], a, b), []).append(0 if winner is None else 1 if winner == a else -1)
    keys = sorted(sides, key=lambda k: (k[0], f"{k[1]}|{k[2]}"))
    preferred = np.array([np.sign(sum(sides[k])) for k in keys])
    signal = vicuna.signals["gpt-4"]
    assert set(np.round(signal.confidence, 6)) <= {0.0, 0.5, 1.0}
    assert (preferred == signal.preferred).mean() >= 0.97


def test_one_split_by_hand_with_scipy(vicuna) -> None:
    # Vicuna80 gpt-4 at alpha 0.2, split 0: the fixed-sequence test redone with scipy's exact binomial test.
    alpha, delta = 0.2, 0.1
    summary = run_pairwise_decisions([vicuna], n_splits=1, n_draws=0, alphas=(alpha,))
    row = next(r for r in summary.rows if r.source == "gpt-4" and r.bound == "pair_binomial" and r.ties == "exclude")
    split = group_splits(vicuna.groups, n_splits=1, seed=0)[0]
    s = vicuna.signals["gpt-4"]
    counted = vicuna.human != 0
    wrong = s.preferred != vicuna.human
    cal = split.calibration[counted[split.calibration]]
    threshold = None
    for level in DEFAULT_LEVELS:
        take = cal[(s.preferred[cal] != 0) & (s.confidence[cal] >= level)]
        n, k = take.size, int(wrong[take].sum())
        if n == 0 or stats.binomtest(k, n, alpha, alternative="less").pvalue > delta:
            break
        threshold = level
    assert row.thresholds == {"none" if threshold is None else f"{threshold:.2f}": 1}
    test = split.test
    acc = test[(s.preferred[test] != 0) & (s.confidence[test] >= (threshold or 2.0))]
    assert row.accept_share == pytest.approx(acc.size / test.size)
    scored = acc[counted[acc]]
    assert row.agreement == (pytest.approx(float((~wrong[scored]).mean())) if scored.size else None)


def test_study_rows_on_both_datasets(vicuna, arena) -> None:
    summary = run_pairwise_decisions([vicuna, arena], n_splits=3, n_draws=0)
    assert summary.split_seeds == [[0, 0], [0, 1], [0, 2]]
    for name, n_sources in (("vicuna80", 6), ("arena_ppr", 4)):
        rows = [r for r in summary.rows if r.dataset == name]
        assert len(rows) == n_sources * 3 * 2 * 2  # sources x alphas x tie rules x bounds
        assert {r.source for r in rows} >= {PANEL}
        for r in rows:
            assert 0 <= r.accept_share <= r.all_decisive_accept_share + 1e-12
            assert r.agreement is None or 0 <= r.agreement <= 1
            assert sum(r.thresholds.values()) == 3
        for source in {r.source for r in rows}:
            shares = [
                next(
                    r.accept_share
                    for r in rows
                    if r.source == source and r.alpha == a and r.bound == "pair_binomial" and r.ties == "exclude"
                )
                for a in summary.alphas
            ]
            assert shares == sorted(shares)  # a larger alpha never certifies less with the binomial test
    gpt4 = next(
        r
        for r in summary.rows
        if r.dataset == "arena_ppr"
        and r.source == "gpt-4-0125-preview"
        and r.ties == "exclude"
        and r.alpha == 0.2
        and r.bound == "pair_binomial"
    )
    assert gpt4.all_decisive_agreement == pytest.approx(0.833, abs=0.01)  # held-out halves of the README figure


def test_mode_rows_on_both_datasets(vicuna, arena) -> None:
    summary = run_pairwise_decisions([vicuna, arena], n_splits=3, n_draws=0, alphas=(0.1, 0.2))
    for name, n_sources, unit in (("vicuna80", 6, "question"), ("arena_ppr", 4, "battle")):
        rows = [r for r in summary.modes if r.dataset == name]
        assert len(rows) == n_sources * 2 * 2  # sources x modes x alphas
        for r in rows:
            assert 0 <= r.accept_share <= 1 and 0 <= r.disagreement_mean <= r.disagreement_max <= 1
            assert r.share_nothing_accepted == r.thresholds.get("none", 0) / 3
            assert r.unit == (unit if r.mode == "expected" else "group")
            if r.mode == "pac":  # the pac mode is the study's served rule: group bound, ties excluded
                same = next(
                    d
                    for d in summary.rows
                    if (d.dataset, d.source, d.alpha, d.bound, d.ties)
                    == (name, r.source, r.alpha, "group_betting", "exclude")
                )
                assert (r.accept_share, r.thresholds) == (same.accept_share, same.thresholds)
    check = summary.done_when["modes"]
    assert set(check) >= {"check", "expected", "pac"}
    # One expected row redone by hand: Vicuna80 panel at alpha 0.2 (grid position 1).
    row = next(
        r for r in summary.modes if (r.dataset, r.source, r.mode, r.alpha) == ("vicuna80", PANEL, "expected", 0.2)
    )
    s = vicuna.signals[PANEL]
    counted = vicuna.human != 0
    shares, rates = [], []
    for split in group_splits(vicuna.groups, n_splits=3, seed=0):
        cal = split.calibration[counted[split.calibration]]
        cert = expected_threshold(
            s.confidence[cal],
            s.preferred[cal],
            vicuna.human[cal],
            vicuna.groups[cal],
            alpha=0.2,
            seed=rule_seed(0, split.split),
            position=1,
        )
        acc = accepted(s.preferred[split.test], s.confidence[split.test], cert.threshold)
        shares.append(acc.mean())
        scored = acc & counted[split.test]
        rates.append((scored & (s.preferred[split.test] != vicuna.human[split.test])).sum() / max(scored.sum(), 1))
    assert row.accept_share == pytest.approx(float(np.mean(shares)))
    assert row.disagreement_mean == pytest.approx(float(np.mean(rates)))
    assert check["expected"]["accept_share"] == row.accept_share


def test_validity_simulation_rows(vicuna) -> None:
    summary = run_pairwise_decisions([vicuna], n_splits=2, n_draws=20, alphas=(0.2,))
    sims = summary.simulation
    assert {(r.bound, r.ties) for r in sims} >= {("pair_binomial", "exclude"), ("group_betting", "error")}
    assert all(r.n_draws == 20 and 0 <= r.failures <= 20 and r.n_groups_per_draw == 40 for r in sims)


def test_export_artifact_round_trips_and_leaves_panels_out(vicuna, arena) -> None:
    artifact = export_pairwise_artifact([vicuna, arena])
    again = decode_pairwise_artifact(encode_pairwise_artifact(artifact))
    assert again == artifact
    judges = {(e.dataset, e.judge) for e in artifact.entries}
    assert len(judges) == 5 + 3 and all(j != PANEL for _, j in judges)
    assert all(e.n_errors <= e.n_accepted <= e.n_pairs for e in artifact.entries)
    pac = {(e.dataset, e.judge, e.alpha) for e in artifact.entries if e.mode == "pac"}
    expected = [e for e in artifact.entries if e.mode == "expected"]
    assert {(e.dataset, e.judge, e.alpha) for e in expected} == pac and len(expected) == 8 * 3
    # Arena battles are their own units: as many groups as counted battles; seed 0, a fifth of them FIT.
    arena_gpt4 = next(e for e in expected if e.dataset == "arena_ppr" and e.judge == "gpt-4-0125-preview")
    assert arena_gpt4.expected is not None and arena_gpt4.n_groups == arena_gpt4.n_pairs == int(
        (arena.human != 0).sum()
    )
    assert arena_gpt4.expected.seed == 0 and arena_gpt4.expected.n_fit_groups == arena_gpt4.n_groups // 5
    # the shipped file is this export
    shipped = load_pairwise_artifact(DEFAULT_PATH)
    assert shipped.entries == artifact.entries


def test_cli_writes_json_and_figure_and_no_artifact(tmp_path: Path, data_dir: Path, capsys) -> None:
    code = main(
        [
            "pairwise-decisions",
            "--data-dir",
            str(data_dir),
            "--out",
            str(tmp_path),
            "--splits",
            "2",
            "--draws",
            "0",
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "done-when" in out and "vicuna80" in out and "arena_ppr" in out
    assert "- target" in out and "expected" in out
    assert "| panel |" in (tmp_path / "pairwise_decisions" / "modes.md").read_text()
    summary = json.loads((tmp_path / "pairwise_decisions" / "summary.json").read_text())
    assert summary["n_splits"] == 2 and summary["rows"] and summary["modes"]
    assert (tmp_path / "pairwise_decisions" / "accept_vs_agreement.png").read_bytes()[:4] == b"\x89PNG"
    # the study reads the build's rules and never writes the artifact (offline.build.pairwise does): no --export
    with pytest.raises(SystemExit) as refused:
        main(["pairwise-decisions", "--out", str(tmp_path), "--export", str(tmp_path / "pd.json")])
    assert refused.value.code == 2 and not (tmp_path / "pd.json").exists()


def test_cli_refuses_bad_arguments(tmp_path: Path, data_dir: Path) -> None:
    assert main(["pairwise-decisions", "--data-dir", str(data_dir), "--out", str(tmp_path), "--delta", "1.5"]) == 2


def test_the_expected_mode_meets_the_vicuna80_panel_target_on_twenty_splits(vicuna) -> None:
    """docs/pairwise-decisions.md: the 5-judge panel at accept_alpha 0.20, 20 splits by question (40 calibrate):
    expected accepts >= 0.65 of the held-out pairs with mean disagreement among accepted <= 0.20; pac nothing."""
    splits = group_splits(vicuna.groups, n_splits=20, seed=0, cal_fraction=0.5)
    rows = mode_rows(vicuna, sources(vicuna), ALPHAS, splits, seed=0, delta=DELTA)
    check = mode_check(rows)
    assert check["expected"]["met"] is True, check
    assert check["expected"]["disagreement_mean"] <= 0.20 and check["expected"]["accept_share"] >= 0.65
    assert check["pac"]["accept_share"] == 0.0
    # every expected row keeps its promise on these held-out questions, up to the noise of 20 splits
    assert all(r.disagreement_mean <= r.alpha + 0.03 for r in rows if r.mode == "expected"), [
        (r.source, r.alpha, r.disagreement_mean) for r in rows if r.mode == "expected"
    ]
