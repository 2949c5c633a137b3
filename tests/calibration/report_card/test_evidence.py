"""Held-out evidence from served answers (calibration.report_card.evidence)."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from calibration.errors import CalibrationError
from calibration.report_card.evidence import HeldoutAnswers, mode_evidence, split_documents


def _answers() -> HeldoutAnswers:
    return HeldoutAnswers(
        mode="pac",
        alpha=0.1,
        labels=[1, 1, 2, 3, 3, 3],
        groups=["a", "a", "b", "b", "c", "c"],
        set_low=[1, 2, 2, 3, 1, 2],
        set_high=[2, 3, 3, 1, 3, 2],  # item 3: an empty set (low > high)
        points=[[1, 1], [3, 3], [2, 2], [3, 3], [5, 5], [2, 2]],
        accept_alphas=[0.05, 0.1],
        accepted=[[False, True], [False, True], [True, True], [False, False], [False, True], [False, False]],
    )


def test_per_label_rows_count_coverage_accepts_and_wrong_accepts() -> None:
    evidence = mode_evidence(_answers(), n_labels=3, tolerance=2, accept_alpha=0.1)
    one, two, three = evidence.per_label
    assert (one.n_items, one.n_documents, one.set_coverage, one.accept_share) == (2, 1, 0.5, 1.0)
    assert one.wrongly_accepted_share == pytest.approx(0.5)  # point 3 for label 1: |1 - 3| >= 2
    assert (two.n_items, two.set_coverage, two.accept_share, two.wrongly_accepted_share) == (1, 1.0, 1.0, 0.0)
    assert three.set_coverage == pytest.approx(1 / 3)  # empty, [1, 3] covers, [2, 2] does not
    assert three.accept_share == pytest.approx(1 / 3) and three.wrongly_accepted_share == pytest.approx(1 / 3)
    assert evidence.set_size_counts == [1, 1, 3, 1]  # sizes 2, 2, 2, 0, 3, 1
    assert evidence.mean_set_size == pytest.approx(10 / 6)
    assert evidence.coverage == pytest.approx(3 / 6)
    assert evidence.accept_share == pytest.approx(4 / 6)


def test_the_operating_curve_gives_the_error_among_accepted_at_each_level() -> None:
    evidence = mode_evidence(_answers(), n_labels=3, tolerance=2, accept_alpha=0.1)
    strict, loose = evidence.operating_curve
    assert (strict.accept_share, strict.n_accepted, strict.error_among_accepted) == (pytest.approx(1 / 6), 1, 0.0)
    assert (loose.n_accepted, loose.error_among_accepted) == (4, pytest.approx(2 / 4))


def test_an_unknown_accept_alpha_is_refused() -> None:
    with pytest.raises(CalibrationError):
        mode_evidence(_answers(), n_labels=3, tolerance=2, accept_alpha=0.2)


def test_folds_deal_whole_documents() -> None:
    groups = [f"d{i // 3}" for i in range(30)]
    folds = split_documents(groups, 2, seed=4)
    assert sorted(np.concatenate(folds).tolist()) == list(range(30))
    names = [{groups[i] for i in fold} for fold in folds]
    assert not names[0] & names[1] and len(names[0]) == len(names[1]) == 5


def test_a_point_that_moves_with_the_level_is_read_at_each_level() -> None:
    answers = msgspec.structs.replace(_answers(), points=[[1, 3], [3, 3], [2, 2], [3, 3], [3, 5], [2, 2]])
    evidence = mode_evidence(answers, n_labels=3, tolerance=2, accept_alpha=0.1)
    loose = evidence.operating_curve[1]
    assert loose.error_among_accepted == pytest.approx(3 / 4)  # item 0's point 3 at 0.1 is now wrong too
    assert evidence.per_label[0].wrongly_accepted_share == pytest.approx(1.0)
