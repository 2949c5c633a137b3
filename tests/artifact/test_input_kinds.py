"""Fits -> artifact entries and defaults, and a labelled cell -> its kinds (artifact.input_kinds), on fits built
by hand: every held-out figure is a distinct number, so each one is checked to land in its own entry field."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from artifact.input_kinds import (
    DEFAULT_DELTA,
    OTHER_METHOD_ALPHAS,
    fit_keys,
    kind_artifact,
    kind_entries,
    labelled_kind_data,
)
from artifact.labels import LabelledCell
from artifact.thresholds import FORMAT_VERSION, DefaultMethod
from calibration.conformal import FittedConformal
from calibration.input_kinds.fit import HeldoutFigures, InputKindFit
from calibration.input_kinds.selection import MethodChoice

FIELDS = (
    "coverage",
    "coverage_std",
    "coverage_p5",
    "set_size",
    "min_bin_coverage",
    "min_label_coverage",
    "empty_share",
    "non_interval_share",
    "accept_share",
    "review_share",
    "escalate_share",
    "accept_accuracy",
)


def _figures(method: str, alpha: float, base: float) -> HeldoutFigures:
    # field i holds base + i / 1000: a figure copied into the wrong field (or dropped) is seen
    values = {name: base + i / 1000 for i, name in enumerate(FIELDS)}
    return HeldoutFigures(method=method, alpha=alpha, n_splits=int(base * 100), full_scale_share=0.5, **values)


def _fitted(method: str, alpha: float, n_labels: int) -> FittedConformal:
    return FittedConformal(method=method, alpha=alpha, n_labels=n_labels, n_cal=10, threshold=alpha * 10)


def _fit(default: str, methods: dict[str, list[float]], n_labels: int = 5, base: float = 0.5) -> InputKindFit:
    heldout, fitted = [], {}
    for m, (method, alphas) in enumerate(methods.items()):
        fitted[method] = {a: _fitted(method, a, n_labels) for a in alphas}
        heldout += [_figures(method, a, base + m / 10 + a) for a in alphas]
    return InputKindFit(
        kind="score",
        n_items=10,
        n_groups=5,
        delta=0.05,
        fitted=fitted,
        heldout=heldout,
        default=MethodChoice(method=default, qualified=True, qualifying=[default], reason=f"why {default}"),
        selection_evidence=[],
        procedure=[],
    )


def test_the_default_at_every_level_others_only_at_the_listed_levels_each_with_its_own_figures():
    # 0.1 + 0.2 is 0.30000000000000004: the levels are compared after rounding to 9 decimals
    alphas = [0.01, 0.05, 0.1, 0.1 + 0.2, 0.2]
    fit = _fit("residual", {"residual": alphas, "learned_lac": alphas, "mondrian_residual": [0.01, 0.3]})
    entries, defaults = kind_entries({("j", "fam", "crit", "score"): fit})
    kept = [(e.method, e.alpha) for e in entries]
    assert kept == [("residual", a) for a in alphas] + [
        ("learned_lac", 0.05),
        ("learned_lac", 0.1),
        ("learned_lac", 0.2),
    ]
    figures = {(h.method, h.alpha): h for h in fit.heldout}
    for entry in entries:
        h = figures[(entry.method, entry.alpha)]
        assert (entry.judge, entry.prompt_family, entry.criterion, entry.input_kind) == ("j", "fam", "crit", "score")
        assert entry.fitted is fit.fitted[entry.method][entry.alpha]
        assert type(entry.alpha) is float
        assert (
            entry.heldout_coverage,
            entry.heldout_coverage_std,
            entry.heldout_coverage_p5,
            entry.heldout_set_size,
            entry.n_splits,
            entry.min_bin_coverage,
            entry.min_label_coverage,
            entry.empty_share,
            entry.non_interval_share,
            entry.accept_share,
            entry.review_share,
            entry.escalate_share,
            entry.accept_accuracy,
        ) == (
            h.coverage,
            h.coverage_std,
            h.coverage_p5,
            h.set_size,
            h.n_splits,
            h.min_bin_coverage,
            h.min_label_coverage,
            h.empty_share,
            h.non_interval_share,
            h.accept_share,
            h.review_share,
            h.escalate_share,
            h.accept_accuracy,
        )
    assert defaults == [
        DefaultMethod(
            judge="j",
            prompt_family="fam",
            criterion="crit",
            method="residual",
            reason="why residual",
            input_kind="score",
            mode="pac" if fit.delta is not None else "expected",
            selection_qualified=True,  # the fit's typed selection outcome
        )
    ]


def test_levels_are_matched_after_rounding_to_nine_decimals():
    # 3e-10 off: equal to 9 decimals, not to 10
    fit = _fit("residual", {"residual": [0.1], "learned_lac": [0.05]})
    drifted = InputKindFit(
        kind=fit.kind,
        n_items=fit.n_items,
        n_groups=fit.n_groups,
        delta=fit.delta,
        fitted={
            "residual": {0.1 + 3e-10: fit.fitted["residual"][0.1]},
            "learned_lac": {0.05 + 3e-10: fit.fitted["learned_lac"][0.05]},
        },
        heldout=fit.heldout,
        default=fit.default,
        selection_evidence=[],
        procedure=[],
    )
    first, second = kind_entries({("j", "f", "c", "score"): drifted})[0]
    assert (first.method, first.alpha, first.heldout_coverage) == ("residual", 0.1 + 3e-10, fit.heldout[0].coverage)
    assert (second.method, second.alpha, second.heldout_coverage) == (
        "learned_lac",
        0.05 + 3e-10,
        fit.heldout[1].coverage,
    )


def test_one_default_per_cell_and_kind_in_fit_order():
    fits = {
        ("a", "f", "c", "score"): _fit("residual", {"residual": [0.1]}),
        ("a", "f", "c", "probabilities"): _fit("aps", {"aps": [0.1], "residual": [0.1]}),
        ("b", "g", "d", "mean"): _fit("ordinal", {"ordinal": [0.3]}),
    }
    entries, defaults = kind_entries(fits)
    assert [(d.judge, d.prompt_family, d.criterion, d.input_kind, d.method) for d in defaults] == [
        ("a", "f", "c", "score", "residual"),
        ("a", "f", "c", "probabilities", "aps"),
        ("b", "g", "d", "mean", "ordinal"),
    ]
    assert [(e.judge, e.input_kind, e.method, e.alpha) for e in entries] == [
        ("a", "score", "residual", 0.1),
        ("a", "probabilities", "aps", 0.1),
        ("a", "probabilities", "residual", 0.1),
        ("b", "mean", "ordinal", 0.3),
    ]


def test_the_artifact_holds_the_fits_on_the_widest_scale_with_its_provenance():
    fits = {
        ("a", "f", "c", "score"): _fit("residual", {"residual": [0.1]}, n_labels=3),
        ("b", "f", "c", "score"): _fit("residual", {"residual": [0.1]}, n_labels=7),
    }
    artifact = kind_artifact(
        fits, created_at="2026-01-02T03:04:05+00:00", code_version="v9", data_hash="abc", source="from a test"
    )
    entries, defaults = kind_entries(fits)
    assert artifact.format_version == FORMAT_VERSION
    assert (artifact.created_at, artifact.code_version, artifact.data_hash, artifact.source) == (
        "2026-01-02T03:04:05+00:00",
        "v9",
        "abc",
        "from a test",
    )
    assert artifact.label_scale == [1, 2, 3, 4, 5, 6, 7]
    assert artifact.entries == entries and artifact.default_methods == defaults


def test_no_fit_gives_the_default_one_to_five_scale():
    artifact = kind_artifact({}, created_at="t", code_version="v", data_hash="h", source="s")
    assert artifact.label_scale == [1, 2, 3, 4, 5] and artifact.entries == [] and artifact.default_methods == []


def test_the_module_constants():
    assert OTHER_METHOD_ALPHAS == {0.05, 0.1, 0.15, 0.2}
    assert DEFAULT_DELTA == 0.05


def _cell(judge: str, probabilities: bool, means: bool, k: int = 4) -> LabelledCell:
    labels = np.array([1, 2, 4, 3], dtype=np.int64)
    return LabelledCell(
        judge=judge,
        prompt_family="custom",
        criterion="c",
        n_labels=k,
        item_ids=("a", "b", "c", "d"),
        labels=labels,
        judge_scores=np.array([2, 2, 3, 4], dtype=np.int64),
        probabilities=np.array(
            [[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.0, 0.1, 0.5, 0.4], [0.0, 0.0, 0.3, 0.7]]
        )
        if probabilities
        else None,
        groups=("g1", "g1", "g2", "g3"),
        means=np.array([1.5, 2.25, 3.0, 3.75]) if means else None,
    )


def test_a_cell_with_log_probs_gives_score_and_probabilities():
    cell = _cell("j", probabilities=True, means=False)
    score, probs = labelled_kind_data(cell)
    assert (score.kind, probs.kind) == ("score", "probabilities")
    assert score.judge_scores.tolist() == [2, 2, 3, 4] and score.probabilities is None
    assert probs.judge_scores.tolist() == [2, 1, 3, 4]  # the most probable label, ties to the lower
    np.testing.assert_array_equal(probs.probabilities, cell.probabilities)
    for data in (score, probs):
        assert data.labels.tolist() == [1, 2, 4, 3] and data.groups.tolist() == ["g1", "g1", "g2", "g3"]
        assert data.n_labels == 4


def test_a_mean_of_samples_cell_gives_only_mean():
    (data,) = labelled_kind_data(_cell("j", probabilities=True, means=True))
    assert data.kind == "mean" and data.n_labels == 4
    assert data.judge_scores.tolist() == [2, 2, 3, 4]  # halves up
    np.testing.assert_allclose(
        data.probabilities, [[0.5, 0.5, 0, 0], [0, 0.75, 0.25, 0], [0, 0, 1, 0], [0, 0, 0.25, 0.75]]
    )


def test_a_score_only_cell_gives_score():
    (data,) = labelled_kind_data(_cell("j", probabilities=False, means=False))
    assert data.kind == "score" and data.probabilities is None


def test_fit_keys_pair_each_cell_with_its_kinds_in_cell_order():
    first, second = _cell("x", probabilities=True, means=False), _cell("y", probabilities=False, means=False)
    keys = fit_keys([first, second])
    assert [(cell.judge, data.kind) for cell, data in keys] == [("x", "score"), ("x", "probabilities"), ("y", "score")]
    assert keys[0][0] is first and keys[2][0] is second
    assert fit_keys([]) == []


@pytest.mark.parametrize("alpha", sorted(OTHER_METHOD_ALPHAS))
def test_a_non_default_method_is_kept_at_each_listed_level(alpha):
    fit = _fit("residual", {"residual": [alpha], "learned_lac": [alpha]})
    entries, _ = kind_entries({("j", "f", "c", "score"): fit})
    assert [e.method for e in entries] == ["residual", "learned_lac"]


def test_held_out_figures_are_keyed_by_level_rounded_to_nine_decimals():
    # the figures carry the level 3e-10 off the fitted one: equal to 9 decimals (found), not to 10
    fit = _fit("residual", {"residual": [0.1]})
    (figures,) = fit.heldout
    moved = msgspec.structs.replace(figures, alpha=0.1 + 3e-10)
    drifted = msgspec.structs.replace(fit, heldout=[moved])
    (entry,), _ = kind_entries({("j", "f", "c", "score"): drifted})
    assert entry.alpha == 0.1 and entry.heldout_coverage == figures.coverage
