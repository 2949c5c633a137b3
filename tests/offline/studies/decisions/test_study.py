"""The certified-decision study and export on the recorded SummEval judges: features as the service computes them,
serving through decide(), per-label rows that never pool, the shipped rules, and a document-resampling
simulation on real data."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from artifact.thresholds import encode_artifact, load_artifact
from calibration.decisions.fit import DecisionData, fit_decision_rule
from calibration.decisions.rule import MODES, decide, feature_of
from offline.build.export import DEFAULT_THRESHOLDS, replace_decision_rules
from offline.build.rules import export_rules
from offline.studies.decisions.cells import cell_input_kinds, served
from offline.studies.decisions.study import (
    EXPORT_ALPHAS,
    EXPORT_GATES,
    EXPORT_TOLERANCES,
    run_decision_study,
)


def _cell(recorded_cells, judge: str, criterion: str):
    return next(c for c in recorded_cells if c.judge == judge and c.criterion == criterion)


def test_cell_kinds_compute_features_as_the_service_does(recorded_cells) -> None:
    data = _cell(recorded_cells, "qwen2.5-72b-instruct", "coherence")
    kinds = {k.kind: k for k in cell_input_kinds(data)}
    assert set(kinds) == {"score", "probabilities"} and kinds["probabilities"].headline
    row = [float(p) for p in data.probabilities[7]]
    assert kinds["probabilities"].data.features[7] == feature_of(
        "expected_score", score=None, probabilities=row, mean=None
    )
    assert kinds["score"].data.features[7] == float(data.judge_scores[7])
    llama = cell_input_kinds(_cell(recorded_cells, "llama-2-7b-chat", "fluency"))
    assert [k.kind for k in llama] == ["score"] and llama[0].headline


def test_served_is_decide_item_by_item(recorded_cells) -> None:
    cell = cell_input_kinds(_cell(recorded_cells, "gpt-4o-mini-2024-07-18", "relevance"))[1]
    rule = fit_decision_rule(
        cell.data,
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        input_kind=cell.kind,
        feature=cell.feature,
        alphas=(0.2,),
        gates=(),
    )
    accepted, points = served(rule, cell.data.features, tolerance=2, alpha=0.2)
    for position in range(0, cell.data.features.size, 37):
        outcome = decide(rule, float(cell.data.features[position]), tolerance=2, accept_alpha=0.2)
        assert (accepted[position], points[position]) == (outcome.accepted, outcome.point)
    assert accepted.any()


def test_study_lists_every_label_including_rare_coherence_ones(recorded_cells) -> None:
    data = [_cell(recorded_cells, "qwen2.5-72b-instruct", "coherence")]
    study = run_decision_study(data, n_splits=2, seed=0, resampling_draws=3)
    labels = [
        r
        for r in study.labels
        if r.kind == "probabilities" and r.bound == "betting" and r.tolerance == 2 and r.accept_alpha == 0.1
    ]
    assert [r.label for r in labels] == [1, 2, 3, 4, 5]
    counts = np.bincount(data[0].labels, minlength=6)[1:]
    # every label appears with its count (items per served half, over the splits): nothing pooled into a neighbour
    assert sum(r.items_per_split for r in labels) == pytest.approx(counts.sum() / 2, rel=0.15)
    assert all(r.certifiable == (r.items_per_split >= 20) for r in labels)
    assert {g.pass_threshold for g in study.gates} == {3}
    assert any(h.bound == "betting" and h.tolerance == 2 and h.accept_alpha == 0.1 for h in study.headlines)
    assert {(r.bound, r.accept_alpha, r.draws) for r in study.resampling} == {
        (b, a, 3) for b in ("betting", "clopper_pearson_items") for a in (0.1, 0.2)
    }


def test_exported_rules_cover_every_cell_and_kind_and_validate(recorded_cells, tmp_path: Path) -> None:
    rules = export_rules(list(recorded_cells)[:2])
    assert [(r.criterion, r.input_kind) for r in rules] == [
        (c.criterion, k.kind) for c in list(recorded_cells)[:2] for k in cell_input_kinds(c)
    ]
    for rule in rules:
        # every row in both guarantee modes: pac certified by the betting bound, expected by the selective test
        assert {(c.tolerance, c.accept_alpha, c.mode) for c in rule.certifications} == {
            (t, a, m) for t in EXPORT_TOLERANCES for a in EXPORT_ALPHAS for m in MODES
        }
        assert {(g.pass_threshold, g.accept_alpha, g.mode) for g in rule.quality_gates} == {
            (t, a, m) for t in EXPORT_GATES for a in EXPORT_ALPHAS for m in MODES
        }
        assert all(c.bound == {"pac": "betting", "expected": "selective_test"}[c.mode] for c in rule.certifications)
    copy = tmp_path / "thresholds.json"
    shutil.copyfile(DEFAULT_THRESHOLDS, copy)
    before = load_artifact(copy)
    assert replace_decision_rules(copy, rules) == len(rules)
    after = load_artifact(copy)
    assert after.decision_rules == rules
    # nothing else moved: the file re-encodes to the same bytes once the rules are put back as they were
    restored = encode_artifact(
        type(after)(
            **{**{f: getattr(after, f) for f in after.__struct_fields__}, "decision_rules": before.decision_rules}
        )
    )
    assert restored == encode_artifact(before)


def test_shipped_decision_rules_equal_a_fresh_fit(recorded_cells) -> None:
    shipped = load_artifact(DEFAULT_THRESHOLDS)
    fresh = export_rules(list(recorded_cells))
    assert shipped.decision_rules == fresh, "stale: run `python -m offline build` (make artifact)"


def test_document_resampling_on_real_data_fails_at_most_delta(recorded_cells) -> None:
    # The population is one real cell's 100 documents (qwen2.5-72b consistency, expected score); each draw takes
    # 100 documents with replacement (the export's size), fits the exported recipe at tolerance 2 and
    # accept_alpha 0.10, and fails when the accepted bins' error on the whole population exceeds 0.10.
    cell = cell_input_kinds(_cell(recorded_cells, "qwen2.5-72b-instruct", "consistency"))[1]
    population = cell.data
    doc_ids = np.unique(population.groups)
    members = [np.flatnonzero(population.groups == d) for d in doc_ids]
    rng = np.random.default_rng(21)
    draws, failures, accepting = 100, 0, 0
    for draw in range(draws):
        chosen = rng.integers(0, doc_ids.size, size=doc_ids.size)
        index = np.concatenate([members[c] for c in chosen])
        sample = DecisionData(
            labels=population.labels[index],
            features=population.features[index],
            groups=np.repeat(np.arange(chosen.size), [members[c].size for c in chosen]),
            n_labels=5,
        )
        rule = fit_decision_rule(
            sample,
            judge="j",
            prompt_family="p",
            criterion="c",
            input_kind="probabilities",
            feature="expected_score",
            tolerances=(2,),
            alphas=(0.1,),
            gates=(),
            seed=draw,
        )
        bins = rule.certifications[0].accepted_bins
        if not bins:
            continue
        accepting += 1
        index_all = np.searchsorted(rule.bin_edges, population.features, side="right")
        accepted = np.isin(index_all, bins)
        risk = float((np.abs(population.labels - np.asarray(rule.points)[index_all])[accepted] >= 2).mean())
        failures += risk > 0.1
    assert accepting >= draws // 2  # not vacuous: most draws accept something
    assert failures / draws <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / draws)
