"""bench.paired: the paired-ratio statistic and the rotation of the servers' order."""

from __future__ import annotations

import pytest

from bench.paired import paired_ratio, round_order


def test_the_paired_ratio_is_the_median_of_the_per_round_ratios():
    ours = [100.0, 90.0, 300.0, 80.0, 120.0]
    echo = [125.0, 100.0, 300.0, 100.0, 100.0]  # ratios 0.8, 0.9, 1.0, 0.8, 1.2
    ratio = paired_ratio(ours, echo)
    assert ratio.ratios == pytest.approx((0.8, 0.9, 1.0, 0.8, 1.2))
    assert ratio.median == pytest.approx(0.9)
    assert (ratio.q1, ratio.q3) == pytest.approx((0.8, 1.0))
    # not the ratio of the medians (100 / 100 = 1.0): a slow round slows both runs of its pair
    assert ratio.median != pytest.approx(1.0)


def test_one_round_and_mismatched_rounds():
    assert paired_ratio([50.0], [100.0]).median == 0.5
    with pytest.raises(ValueError, match="same, non-zero number"):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_ratio([], [])


def test_compared_servers_run_side_by_side_and_every_other_round_in_reverse():
    groups = [["uvicorn/ours", "uvicorn/echo"], ["granian/ours", "granian/echo"]]
    assert round_order(groups, 0) == ["uvicorn/ours", "uvicorn/echo", "granian/ours", "granian/echo"]
    assert round_order(groups, 1) == ["granian/echo", "granian/ours", "uvicorn/echo", "uvicorn/ours"]
    assert round_order(groups, 2) == round_order(groups, 0)
    for index in range(4):  # each pair adjacent in every round
        order = round_order(groups, index)
        assert abs(order.index("uvicorn/ours") - order.index("uvicorn/echo")) == 1
