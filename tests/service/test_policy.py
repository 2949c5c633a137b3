"""The decision rule (paper 000, section 6): accept small sets, escalate the full scale, review the rest."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy import DecisionPolicy, PolicyDecision, full_scale
from service.settings import Settings
from tests.service.conftest import STAND_IN, AppHarness

ORDER = {"accept": 0, "review": 1, "escalate": 2}


@pytest.mark.parametrize(
    ("labels", "decision"),
    [
        ((3,), "accept"),
        ((2, 3), "accept"),
        ((2, 3, 4), "review"),
        ((1, 2, 3, 4), "review"),
        ((1, 2, 3, 4, 5), "escalate"),
    ],
)
def test_default_table(labels: tuple[int, ...], decision: str):
    result = DecisionPolicy().decide(labels, n_labels=5, alpha=0.1)
    assert result.decision == decision
    assert result.escalate is (decision == "escalate")
    assert "{" + ", ".join(map(str, labels)) + "}" in result.reason and "90%" in result.reason


def test_uncalibrated_always_escalates():
    result = DecisionPolicy().uncalibrated("no entry")
    assert (result.decision, result.escalate) == ("escalate", True) and "no entry" in result.reason
    assert full_scale(5) == (1, 2, 3, 4, 5)


@given(
    size=st.integers(1, 5),
    accept=st.integers(1, 3),
    gap=st.integers(1, 3),
)
def test_decision_is_monotone_in_set_size(size: int, accept: int, gap: int):
    policy = DecisionPolicy(accept_max_set_size=accept, escalate_min_set_size=accept + gap)
    smaller = policy.decide(tuple(range(1, size + 1)), n_labels=5, alpha=0.1)
    if size < 5:
        larger = policy.decide(tuple(range(1, size + 2)), n_labels=5, alpha=0.1)
        assert ORDER[smaller.decision] <= ORDER[larger.decision]
    if size == 5:
        assert smaller.decision == "escalate"  # the full scale never passes, whatever the thresholds
    elif size <= accept:
        assert smaller.decision == "accept"


def test_remembered_decisions_equal_fresh_ones_and_the_memo_is_bounded():
    labels = (1, 2, 3, 4, 5)
    subsets = [tuple(y for i, y in enumerate(labels) if mask >> i & 1) for mask in range(1, 32)]
    policy = DecisionPolicy(accept_max_set_size=1, escalate_min_set_size=4)
    for alpha in (0.1, 0.05, 0.2):
        for subset in subsets:
            first = policy.decide(list(subset), n_labels=5, alpha=alpha)
            again = policy.decide(subset, n_labels=5, alpha=alpha)
            unused = DecisionPolicy(accept_max_set_size=1, escalate_min_set_size=4)
            fresh = unused.decide(subset, n_labels=5, alpha=alpha)
            assert first == again == fresh
            assert again is first  # answered from the memo, not drawn again
            assert f"{1 - alpha:.0%}" in again.reason
    flooded = DecisionPolicy()
    for k in range(5000):
        flooded.decide((3,), n_labels=5, alpha=0.1 + k * 1e-12)
    assert len(flooded._decisions) == 4096  # bounded, and still answering
    assert flooded.decide((3,), n_labels=5, alpha=0.3).decision == "accept"


def test_thresholds_come_from_settings(start_app: Callable[[Settings], AppHarness], make_settings):
    strict = start_app(make_settings(accept_max_set_size=1, escalate_min_set_size=3))
    data = strict.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}).json()
    assert data["set_size"] == 3 and data["decision"] == "escalate"
    lenient = start_app(make_settings(accept_max_set_size=3))
    data = lenient.client.post("/v1/score", json={"criterion": "relevance", "judge": STAND_IN, "judge_score": 3}).json()
    assert data["decision"] == "accept"


def test_an_empty_set_is_never_accepted():
    decision = DecisionPolicy().decide((), n_labels=5, alpha=0.2)
    assert decision.decision == "escalate" and decision.escalate is True
    assert "no label conforms" in decision.reason and "atypical" in decision.reason


# The reason is logged as is by callers, so each branch's wording and figures are pinned exactly (written out by
# hand from the table in service/policy.py), at two levels and on a scale shorter than the escalation threshold.
@pytest.mark.parametrize(
    ("labels", "n_labels", "alpha", "decision", "reason"),
    [
        ((), 5, 0.1, "escalate",
         "the 90% prediction set is empty: no label conforms: the verdict is atypical for this calibration; "
         "ask a human"),
        ((1, 2, 3, 4, 5), 5, 0.1, "escalate",
         "the 90% prediction set {1, 2, 3, 4, 5} has 5 of 5 labels (>= 5): the verdict carries no usable "
         "information; ask a human"),
        ((2, 3), 5, 0.2, "accept",
         "the 80% prediction set {2, 3} has 2 label(s) (<= 2): the judge is reliable for this item"),
        ((4,), 5, 0.05, "accept",
         "the 95% prediction set {4} has 1 label(s) (<= 2): the judge is reliable for this item"),
        ((1, 2, 3), 5, 0.1, "review",
         "the 90% prediction set {1, 2, 3} has 3 labels (between 2 and 5): usable with care"),
        # a 4-label scale: the full scale (4 labels) escalates although 4 < escalate_min_set_size = 5
        ((1, 2, 3, 4), 4, 0.1, "escalate",
         "the 90% prediction set {1, 2, 3, 4} has 4 of 4 labels (>= 4): the verdict carries no usable "
         "information; ask a human"),
        ((1, 2, 3), 4, 0.2, "review",
         "the 80% prediction set {1, 2, 3} has 3 labels (between 2 and 4): usable with care"),
    ],
)
def test_each_branch_states_its_rule_exactly(labels, n_labels, alpha, decision, reason):
    result = DecisionPolicy().decide(labels, n_labels=n_labels, alpha=alpha)
    assert result.decision == decision
    assert result.escalate is (decision == "escalate")
    assert result.reason == reason


def test_custom_thresholds_appear_in_the_reason_and_the_repr():
    policy = DecisionPolicy(accept_max_set_size=1, escalate_min_set_size=3)
    assert repr(policy) == "DecisionPolicy(accept_max_set_size=1, escalate_min_set_size=3)"
    assert repr(DecisionPolicy()) == "DecisionPolicy(accept_max_set_size=2, escalate_min_set_size=5)"
    assert policy.decide((1, 2), n_labels=5, alpha=0.1).reason == (
        "the 90% prediction set {1, 2} has 2 labels (between 1 and 3): usable with care")
    assert policy.decide((1, 2, 3), n_labels=5, alpha=0.1).reason == (
        "the 90% prediction set {1, 2, 3} has 3 of 5 labels (>= 3): the verdict carries no usable information; "
        "ask a human")
    assert policy.decide((5,), n_labels=5, alpha=0.1).decision == "accept"


def test_uncalibrated_reason_and_the_full_scale_exactly():
    result = DecisionPolicy().uncalibrated("no threshold for the cell")
    assert result == PolicyDecision(
        decision="escalate", escalate=True,
        reason="not calibrated: no threshold for the cell; no prediction set can be trusted, so the full scale is "
               "returned")
    assert full_scale(1) == (1,) and full_scale(3) == (1, 2, 3) and full_scale(0) == ()
