"""The served-entry rule: input kinds, the next smaller level, the smaller held-out set, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.conformal import fit_conformal
from calibration.serving import LevelRefused, MethodRefused, ServedEntry, Uncalibrated, choose_entry
from calibration.thresholds import FORMAT_VERSION, DefaultMethod, ThresholdEntry, ThresholdIndex, ThresholdsArtifact

CELL = ("judge", "paper", "coherence")
LABELS = np.tile(np.arange(1, 6), 30)
PROBS = np.full((LABELS.size, 5), 0.1) + np.eye(5)[LABELS - 1] * 0.5


def _entry(method: str, kind: str, alpha: float, size: float) -> ThresholdEntry:
    fitted = fit_conformal(method, alpha, LABELS, judge_scores=LABELS,
                           probabilities=PROBS if kind == "probabilities" else None, delta=0.05)
    return ThresholdEntry(judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method=method, alpha=alpha,
                          fitted=fitted, input_kind=kind, heldout_set_size=size)


def _index(score_size: float = 3.0, probability_size: float = 2.5) -> ThresholdIndex:
    entries = [_entry("residual", "score", a, score_size) for a in (0.05, 0.1, 0.2)]
    entries += [_entry("lac", "probabilities", a, probability_size) for a in (0.05, 0.1, 0.2)]
    entries += [_entry("residual", "probabilities", 0.1, 4.0)]
    defaults = [DefaultMethod(judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method="residual",
                              input_kind="score"),
                DefaultMethod(judge=CELL[0], prompt_family=CELL[1], criterion=CELL[2], method="lac",
                              input_kind="probabilities")]
    return ThresholdIndex(ThresholdsArtifact(format_version=FORMAT_VERSION, created_at="t", code_version="v",
                                             data_hash="h", label_scale=[1, 2, 3, 4, 5], entries=entries,
                                             default_methods=defaults))


def test_a_verdict_is_served_only_by_its_own_kind():
    served = choose_entry(_index(), CELL, ("score",), 0.1)
    assert isinstance(served, ServedEntry) and (served.kind, served.method) == ("score", "residual")
    served = choose_entry(_index(), CELL, ("probabilities",), 0.1)
    assert isinstance(served, ServedEntry) and (served.kind, served.method) == ("probabilities", "lac")
    missing = choose_entry(_index(), CELL, ("mean",), 0.1)
    assert isinstance(missing, Uncalibrated) and "carries mean" in missing.reason


@pytest.mark.parametrize(("score_size", "probability_size", "kind"), [(3.0, 2.5, "probabilities"),
                                                                      (2.0, 2.5, "score"),
                                                                      (2.5, 2.5, "probabilities")])
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
