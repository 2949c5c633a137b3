"""The served-entry rule: input kinds, the next smaller level, the smaller held-out set, refusals."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from artifact.serving import LevelRefused, MethodRefused, ServedEntry, Uncalibrated, choose_entry
from artifact.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdEntry, ThresholdIndex, ThresholdsArtifact
from calibration.conformal import fit_conformal

CELL = ("judge", "paper", "coherence")
LABELS = np.tile(np.arange(1, 6), 30)
PROBS = np.full((LABELS.size, 5), 0.1) + np.eye(5)[LABELS - 1] * 0.5


def _entry(method: str, kind: str, alpha: float, size: float) -> ThresholdEntry:
    fitted = fit_conformal(
        method, alpha, LABELS, judge_scores=LABELS, probabilities=PROBS if kind == "probabilities" else None, delta=0.05
    )
    return ThresholdEntry(
        judge=CELL[0],
        prompt_family=CELL[1],
        criterion=CELL[2],
        method=method,
        alpha=alpha,
        fitted=fitted,
        input_kind=kind,
        heldout_set_size=size,
    )


def _index(score_size: float = 3.0, probability_size: float = 2.5) -> ThresholdIndex:
    entries = [_entry("residual", "score", a, score_size) for a in (0.05, 0.1, 0.2)]
    entries += [_entry("lac", "probabilities", a, probability_size) for a in (0.05, 0.1, 0.2)]
    entries += [_entry("residual", "probabilities", 0.1, 4.0)]
    defaults = [
        DefaultMethod(judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method="residual", input_kind="score"),
        DefaultMethod(
            judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method="lac", input_kind="probabilities"
        ),
    ]
    return ThresholdIndex(
        ThresholdsArtifact(
            format_version=FORMAT_VERSION,
            created_at="t",
            code_version="v",
            data_hash="h",
            label_scale=[1, 2, 3, 4, 5],
            entries=entries,
            default_methods=defaults,
        )
    )


def test_a_verdict_is_served_only_by_its_own_kind():
    served = choose_entry(_index(), CELL, ("score",), 0.1)
    assert isinstance(served, ServedEntry) and (served.kind, served.method) == ("score", "residual")
    served = choose_entry(_index(), CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and (served.kind, served.method) == ("probabilities", "lac")
    missing = choose_entry(_index(), CELL, ("mean",), 0.1)
    assert isinstance(missing, Uncalibrated) and "carries mean" in missing.reason


@pytest.mark.parametrize(
    ("score_size", "probability_size", "kind"),
    [(3.0, 2.5, "probabilities"), (2.0, 2.5, "score"), (2.5, 2.5, "probabilities")],
)
def test_both_kinds_serve_the_smaller_held_out_set(score_size, probability_size, kind):
    served = choose_entry(_index(score_size, probability_size), CELL, ("probabilities", "score"), 0.1)
    assert isinstance(served, ServedEntry) and served.kind == kind


def test_a_level_between_calibrated_ones_uses_the_next_smaller_and_says_so():
    served = choose_entry(_index(), CELL, ("score",), 0.15)
    assert isinstance(served, ServedEntry) and served.alpha == 0.1 and "next smaller one (0.1)" in served.note
    assert choose_entry(_index(), CELL, ("score",), 0.5).alpha == 0.2  # type: ignore[union-attr]
    with pytest.raises(LevelRefused) as refused:
        choose_entry(_index(), CELL, ("score",), 0.01)
    assert refused.value.allowed == [0.05, 0.1, 0.2]


def test_a_named_method_of_another_kind_is_refused_with_what_to_send():
    with pytest.raises(MethodRefused) as refused:
        choose_entry(_index(), CELL, ("score",), 0.1, "lac")
    assert "log-probs" in str(refused.value) and refused.value.allowed == ["residual"]
    served = choose_entry(_index(), CELL, ("probabilities", "score"), 0.1, "residual")
    # calibrated for both kinds the verdict carries: the smaller held-out set (score 3.0 < probabilities 4.0)
    assert isinstance(served, ServedEntry) and served.kind == "score" and "probabilities verdicts" in served.note


# Every message below was written out by hand from the rules in artifact/serving.py; the service returns them
# as the problem detail or the answer's note, so the wording and the figures in it are part of the contract.
def test_uncalibrated_reasons_name_the_cell_what_it_was_fitted_on_and_what_the_verdict_carries():
    index = _index()
    cell = "judge='judge', prompt_family='paper', criterion="
    assert choose_entry(index, CELL, ("mean",), 0.1) == Uncalibrated(
        reason=f"thresholds for {cell}'coherence' were fitted on score, probabilities verdicts; this verdict carries "
        "mean"
    )
    assert choose_entry(index, CELL, (), 0.1) == Uncalibrated(
        reason=f"thresholds for {cell}'coherence' were fitted on score, probabilities verdicts; this verdict carries "
        "nothing"
    )
    assert choose_entry(index, ("judge", "paper", "fluency"), ("score", "probabilities"), 0.1) == Uncalibrated(
        reason=f"thresholds for {cell}'fluency' were fitted on no verdicts; this verdict carries score, probabilities"
    )


def test_refusals_state_the_request_the_cell_and_what_is_calibrated():
    index = _index()
    with pytest.raises(MethodRefused) as refused:
        choose_entry(index, CELL, ("score",), 0.1, "lac")
    assert str(refused.value) == (
        "method 'lac' is not calibrated for score verdicts of judge='judge', prompt_family='paper', "
        "criterion='coherence' (lac is calibrated for probabilities verdicts only: send the judge's log-probs); "
        "calibrated: residual"
    )
    with pytest.raises(MethodRefused) as refused:
        choose_entry(index, CELL, ("probabilities", "score"), 0.1, "magic")
    assert str(refused.value) == (
        "method 'magic' is not calibrated for probabilities or score verdicts of judge='judge', "
        "prompt_family='paper', criterion='coherence'; calibrated: residual, lac"
    )
    assert refused.value.allowed == ["residual", "lac"]  # the core's method order, not alphabetical
    with pytest.raises(LevelRefused) as low:
        choose_entry(index, CELL, ("probabilities", "score"), 0.01, "residual")
    assert str(low.value) == (
        "alpha=0.01 is below every calibrated level (0.05, 0.1, 0.2); ask for one of them or a larger alpha"
    )
    assert low.value.allowed == [0.05, 0.1, 0.2]  # both kinds' levels of the method, merged and sorted


def test_a_method_calibrated_for_two_other_kinds_lists_both_and_what_to_send():
    entries = [
        _entry("residual", "score", 0.1, 3.0),
        _entry("residual", "probabilities", 0.1, 3.0),
        _entry("lac", "probabilities", 0.1, 2.0),
    ]
    mean_fit = fit_conformal("mondrian_residual", 0.1, LABELS, judge_scores=LABELS, delta=0.05)  # means rounded
    entries.append(
        ThresholdEntry(
            judge=CELL[0],
            prompt_family=CELL[1],
            criterion=CELL[2],
            method="mondrian_residual",
            alpha=0.1,
            fitted=mean_fit,
            input_kind="mean",
            heldout_set_size=2.0,
        )
    )
    index = ThresholdIndex(
        ThresholdsArtifact(
            format_version=FORMAT_VERSION,
            created_at="t",
            code_version="v",
            data_hash="h",
            label_scale=[1, 2, 3, 4, 5],
            entries=entries,
        )
    )
    with pytest.raises(MethodRefused) as refused:
        choose_entry(index, CELL, ("mean",), 0.1, "residual")
    assert str(refused.value) == (
        "method 'residual' is not calibrated for mean verdicts of judge='judge', prompt_family='paper', "
        "criterion='coherence' (residual is calibrated for score and probabilities verdicts only: send the judge's "
        "integer score or log-probs); calibrated: mondrian_residual"
    )
    # no default recorded for a kind: its first calibrated method (core order) serves it
    served = choose_entry(index, CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and served.method == "residual" and served.note == ""


def test_notes_state_the_level_used_and_the_offers_compared():
    index = _index()
    served = choose_entry(index, CELL, ("score",), 0.15)
    assert served == ServedEntry(
        entry=index.lookup(*CELL, "residual", 0.1, "score"),
        kind="score",
        method="residual",
        alpha=0.1,
        note="; alpha=0.15 is not a calibrated level, so the next smaller one (0.1) was used",
    )
    served = choose_entry(index, CELL, ("probabilities", "score"), 0.1, "residual")
    assert served.note == (
        "; served from score verdicts with residual (held-out mean set size 3.00; "  # type: ignore[union-attr]
        "probabilities verdicts -> residual (4.00))"
    )
    served = choose_entry(index, CELL, ("score", "probabilities"), 0.1)
    assert served.note == (
        "; served from probabilities verdicts with lac (held-out mean set size 2.50; "  # type: ignore[union-attr]
        "score verdicts -> residual (3.00))"
    )
    # the level is matched within 1e-9: just below 0.1 is still 0.1 (no note); 1e-8 below falls to 0.05
    close = choose_entry(index, CELL, ("score",), 0.1 - 1e-10)
    assert isinstance(close, ServedEntry) and (close.alpha, close.note) == (0.1, "")
    below = choose_entry(index, CELL, ("score",), 0.1 - 1e-8)
    assert isinstance(below, ServedEntry) and below.alpha == 0.05 and "next smaller one (0.05)" in below.note


def test_an_entry_without_a_held_out_size_loses_to_one_with_it_and_says_n_a():
    index = _index()
    unknown = ThresholdIndex(
        msgspec.structs.replace(
            index.artifact,
            entries=[
                msgspec.structs.replace(entry, heldout_set_size=None) if entry.kind == "score" else entry
                for entry in index.artifact.entries
            ],
        )
    )
    served = choose_entry(unknown, CELL, ("score", "probabilities"), 0.1)
    assert isinstance(served, ServedEntry) and served.kind == "probabilities"
    assert served.note == (
        "; served from probabilities verdicts with lac (held-out mean set size 2.50; score verdicts -> residual (n/a))"
    )
    alone = choose_entry(unknown, CELL, ("score",), 0.1)
    assert isinstance(alone, ServedEntry) and alone.note == ""
    nowhere = ThresholdIndex(
        msgspec.structs.replace(
            index.artifact,
            entries=[msgspec.structs.replace(entry, heldout_set_size=None) for entry in index.artifact.entries],
        )
    )
    served = choose_entry(nowhere, CELL, ("score", "probabilities"), 0.1)  # both unknown: the verdict's kind order
    assert isinstance(served, ServedEntry) and served.kind == "score"
    assert served.note == (
        "; served from score verdicts with residual (held-out mean set size n/a; probabilities verdicts -> lac (n/a))"
    )


def _three_kinds_index(with_defaults: bool) -> ThresholdIndex:
    mean_fit = fit_conformal("residual", 0.1, LABELS, judge_scores=LABELS, delta=0.05)
    entries = [
        _entry("residual", "score", 0.1, 3.0),
        _entry("lac", "probabilities", 0.1, 2.0),
        _entry("residual", "probabilities", 0.1, 4.0),
        ThresholdEntry(
            judge=CELL[0],
            prompt_family=CELL[1],
            criterion=CELL[2],
            method="residual",
            alpha=0.1,
            fitted=mean_fit,
            input_kind="mean",
            heldout_set_size=3.5,
        ),
    ]
    defaults = (
        [
            DefaultMethod(
                judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method="residual", input_kind="probabilities"
            )
        ]
        if with_defaults
        else []
    )
    return ThresholdIndex(
        ThresholdsArtifact(
            format_version=FORMAT_VERSION,
            created_at="t",
            code_version="v",
            data_hash="h",
            label_scale=[1, 2, 3, 4, 5],
            entries=entries,
            default_methods=defaults,
        )
    )


def test_without_a_default_a_kind_offers_its_own_first_method():
    # no default recorded: the kind's own first method (core order), not the cell's; here probabilities has only
    # lac while the cell's first method is residual (score)
    index = ThresholdIndex(
        msgspec.structs.replace(
            _three_kinds_index(False).artifact,
            entries=[_entry("residual", "score", 0.1, 3.0), _entry("lac", "probabilities", 0.1, 2.0)],
        )
    )
    served = choose_entry(index, CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and (served.kind, served.method) == ("probabilities", "lac")
    served = choose_entry(_three_kinds_index(False), CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and served.method == "residual"  # core order: residual before lac
    served = choose_entry(_three_kinds_index(True), CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and served.method == "residual"


def test_three_kinds_compared_and_a_level_note_together():
    index = _three_kinds_index(False)
    served = choose_entry(index, CELL, ("mean", "probabilities", "score"), 0.15)
    assert isinstance(served, ServedEntry) and (served.kind, served.method, served.alpha) == ("score", "residual", 0.1)
    assert served.note == (
        "; alpha=0.15 is not a calibrated level, so the next smaller one (0.1) was used"
        "; served from score verdicts with residual (held-out mean set size 3.00; mean verdicts -> residual (3.50), "
        "probabilities verdicts -> residual (4.00))"
    )
