"""The decision rule (paper 000, section 6): accept small sets, escalate the full scale, review the rest."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.policy import DecisionPolicy, full_scale
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
