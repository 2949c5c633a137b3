"""Panel combination: names, expected scores, the mean verdict, disagreement, sub-panels
(calibration.input_kinds.mean_panel)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from calibration.input_kinds.mean_panel import (
    disagreement,
    expected_score,
    expected_scores,
    panel_kind_data,
    panel_mean,
    panel_means,
    panel_members,
    panel_name,
    served_panel,
)
from calibration.input_kinds.verdicts import two_point_probabilities


def test_panel_name_is_sorted_and_round_trips() -> None:
    name = panel_name(["qwen", "gpt-4o", "llama"])
    assert name == "panel:gpt-4o+llama+qwen"
    assert panel_name(["llama", "qwen", "gpt-4o"]) == name
    assert panel_members(name) == ("gpt-4o", "llama", "qwen")


@pytest.mark.parametrize("members", [["a"], ["a", "a"], ["a", "b+c"], ["panel:a+b", "c"], ["", "b"]])
def test_panel_name_refuses_bad_members(members: list[str]) -> None:
    with pytest.raises(ValueError):
        panel_name(members)


def test_panel_members_refuses_non_canonical_names() -> None:
    with pytest.raises(ValueError):
        panel_members("panel:b+a")
    with pytest.raises(ValueError):
        panel_members("gpt-4o")


def test_expected_score_rule_order() -> None:
    probs = [0.1, 0.2, 0.3, 0.2, 0.2]
    assert expected_score(5, judge_score=2, probabilities=probs, mean=3.25) == 3.25
    assert expected_score(5, judge_score=2, probabilities=probs) == pytest.approx(0.1 + 0.4 + 0.9 + 0.8 + 1.0)
    assert expected_score(5, judge_score=2) == 2.0
    with pytest.raises(ValueError):
        expected_score(5)
    with pytest.raises(ValueError):
        expected_score(5, probabilities=[0.5, 0.5])


def test_vector_and_scalar_rules_agree() -> None:
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(5), size=50)
    scores = rng.integers(1, 6, size=50)
    means = rng.uniform(1, 5, size=50)
    np.testing.assert_allclose(
        expected_scores(5, probabilities=probs, judge_scores=scores),
        [expected_score(5, probabilities=list(p), judge_score=int(s)) for p, s in zip(probs, scores, strict=True)],
    )
    np.testing.assert_array_equal(expected_scores(5, judge_scores=scores), scores.astype(float))
    np.testing.assert_array_equal(expected_scores(5, means=means, probabilities=probs), means)
    matrix = np.column_stack([expected_scores(5, probabilities=probs), scores, means])
    np.testing.assert_allclose(panel_means(matrix, 5), [panel_mean(list(row), 5) for row in matrix])
    np.testing.assert_allclose(panel_means(matrix, 5), [statistics.fmean(row) for row in matrix])


def test_panel_mean_clips_float_noise_and_needs_two() -> None:
    assert panel_mean([5.0000000001, 5.0], 5) == 5.0
    assert panel_mean([1.0, 0.9999999999], 5) == 1.0
    with pytest.raises(ValueError):
        panel_mean([3.0], 5)
    with pytest.raises(ValueError):
        panel_means(np.ones((3, 1)), 5)


def test_disagreement_matches_statistics() -> None:
    values = [1.5, 4.0, 2.25, 3.0]
    found = disagreement(values)
    assert found.spread == pytest.approx(2.5)
    assert found.std == pytest.approx(statistics.pstdev(values))
    assert disagreement([3.0, 3.0]).spread == 0.0


def test_panel_kind_data_is_the_mean_kind() -> None:
    expected = np.array([[1.0, 2.0], [4.5, 5.0], [3.0, 3.0]])
    data = panel_kind_data(expected, labels=np.array([1, 5, 3]), groups=np.array(["d1", "d1", "d2"]))
    assert data.kind == "mean"
    np.testing.assert_array_equal(data.judge_scores, [2, 5, 3])  # round_half_up(1.5) = 2, of 4.75 = 5
    assert data.probabilities is not None
    np.testing.assert_allclose(data.probabilities[1], two_point_probabilities(4.75, 5))
    np.testing.assert_allclose(data.probabilities @ np.arange(1, 6), [1.5, 4.75, 3.0])


def test_served_panel_uses_the_present_members_only() -> None:
    members = ["a", "b", "c", "d"]
    assert served_panel(members, members) == "panel:a+b+c+d"
    assert served_panel(members, ["d", "b", "c"]) == "panel:b+c+d"
    assert served_panel(members, ["a", "x", "c"]) == "panel:a+c"  # a non-member never enters
    assert served_panel(members, ["c"]) is None
    assert served_panel(members, []) is None


def test_member_inputs_name_the_panel_family() -> None:
    from calibration.input_kinds.mean_panel import is_panel_family, member_input, panel_family

    assert member_input(judge_score=3, probabilities=[0.2] * 5, mean=2.5) == "mean"
    assert member_input(judge_score=3, probabilities=[0.2] * 5) == "probabilities"
    assert member_input(judge_score=3) == "score"
    with pytest.raises(ValueError):
        member_input()
    assert panel_family(["probabilities", "score"]) == "panel:probabilities+score"
    with pytest.raises(ValueError):
        panel_family(["score"])
    with pytest.raises(ValueError):
        panel_family(["score", "logits"])
    assert is_panel_family("panel:score+score") and is_panel_family("panel") and not is_panel_family("geval")
