"""The planner's draws, points and answer (calibration.report_card.planner)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.errors import CalibrationError
from calibration.report_card.planner import document_draws, documents_for, file_projection, planner_point

GROUPS = [f"d{i // 4}" for i in range(40)]  # 10 documents of 4 items


def test_below_the_files_size_distinct_documents_are_fitted_and_the_others_served() -> None:
    for draw in document_draws(GROUPS, 6, 5, seed=1):
        assert not draw.projected
        fitted = {GROUPS[i] for i in draw.fitted}
        served = {GROUPS[i] for i in draw.served}
        assert len(fitted) == 6 and len(draw.fitted) == 24 and not fitted & served and len(served) == 4
        assert len(set(draw.fitted_groups)) == 6


def test_from_the_files_size_the_bands_files_are_the_files_size_drawn_with_replacement_each_copy_its_own() -> None:
    draws = document_draws(GROUPS, 25, 3, seed=1)
    for draw in draws:
        assert draw.projected and draw.served == list(range(40)) and draw.document_weight == 2.5
        assert len(draw.fitted) == 40 and len(set(draw.fitted_groups)) == 10
        assert all(g.split("#")[0] == GROUPS[i] for i, g in zip(draw.fitted, draw.fitted_groups, strict=True))
    assert any(len({GROUPS[i] for i in d.fitted}) < 10 for d in draws)  # some document drawn twice
    # the same files for every projected size, counted n / N times
    again = document_draws(GROUPS, 10, 3, seed=1)
    assert [d.fitted for d in again] == [d.fitted for d in draws] and {d.document_weight for d in again} == {1.0}


def test_the_projection_is_the_whole_file_counted_n_over_n_times() -> None:
    projection = file_projection(GROUPS, 25)
    assert projection.projected and projection.document_weight == 2.5
    assert projection.fitted == projection.served == list(range(40)) and projection.fitted_groups == GROUPS
    assert all(not d.projected and d.document_weight == 1.0 for d in document_draws(GROUPS, 9, 2, seed=1))
    with pytest.raises(CalibrationError, match="measured"):
        file_projection(GROUPS, 9)


def test_draws_are_seeded() -> None:
    assert document_draws(GROUPS, 6, 3, seed=2) == document_draws(GROUPS, 6, 3, seed=2)
    assert document_draws(GROUPS, 6, 3, seed=2) != document_draws(GROUPS, 6, 3, seed=3)
    with pytest.raises(CalibrationError):
        document_draws(GROUPS, 0, 3, seed=2)


def test_a_point_is_the_mean_and_the_10th_and_90th_percentiles() -> None:
    shares = np.linspace(0, 1, 11)
    point = planner_point(20, False, shares, 5 - shares)
    assert point.accept_share == pytest.approx(0.5)
    assert (point.accept_share_low, point.accept_share_high) == pytest.approx((0.1, 0.9))
    assert (point.set_size_low, point.set_size_high) == pytest.approx((4.1, 4.9))


def test_a_projected_point_is_its_centre_with_a_band_of_its_larger_deviation_either_side() -> None:
    shares = np.linspace(0.3, 0.7, 11)  # 10th and 90th percentiles 0.34 and 0.66
    point = planner_point(50, True, shares, 3 - shares, centre=(0.2, 2.5), n_labels=5)
    assert (point.accept_share, point.mean_set_size) == (0.2, 2.5)
    assert (point.accept_share_low, point.accept_share_high) == pytest.approx((0.0, 0.66))  # 0.2 -/+ 0.46, clipped
    assert (point.set_size_low, point.set_size_high) == pytest.approx((2.34, 2.66))  # 2.5 -/+ 0.16
    inside = planner_point(50, True, shares, 3 - shares, centre=(0.4, 2.6), n_labels=5)
    assert (inside.accept_share_low, inside.accept_share_high) == pytest.approx((0.14, 0.66))
    assert planner_point(50, True, [0.5], [4.9], centre=(0.5, 1.2), n_labels=5).set_size_low == 1.0
    with pytest.raises(CalibrationError, match="n_labels"):
        planner_point(50, True, shares, 3 - shares, centre=(0.2, 2.5))
    measured = planner_point(20, False, [0.0] * 9 + [0.9], [5.0] * 10)  # the mean above the 90th percentile
    assert measured.accept_share == pytest.approx(0.09) and measured.accept_share_high == pytest.approx(0.09)


def test_the_documents_for_a_target_are_the_first_size_reaching_it() -> None:
    points = [planner_point(n, False, [s], [3.0]) for n, s in ((10, 0.1), (20, 0.45), (50, 0.6), (100, 0.55))]
    assert documents_for(points, 0.5) == 50
    assert documents_for(points, 0.05) == 10
    assert documents_for(points, 0.9) is None
