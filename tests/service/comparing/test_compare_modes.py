"""POST /v1/compare: the guarantee modes of each pair's decision (``expected`` by default, ``pac`` on request)."""

from __future__ import annotations

import pytest

from artifact.pairwise import (
    DEFAULT_PATH,
    FORMAT_VERSION,
    ExpectedEvidence,
    PairwiseArtifact,
    PairwiseEntry,
    PairwiseIndex,
    load_pairwise_artifact,
)
from tests.service.conftest import AppHarness


def _entry(mode: str, threshold: float | None, alpha: float = 0.2) -> PairwiseEntry:
    evidence = None
    if mode == "expected":
        evidence = ExpectedEvidence(
            level=threshold,
            n_drawn=64,
            acceptance_probability=1.0 if threshold is not None else 0.0,
            uniform=0.3,
            seed=0,
            n_fit_groups=16,
            n_certify_groups=64,
        )
    accepted = 0 if threshold is None else 40
    return PairwiseEntry(
        judge="gpt-4",
        dataset="vicuna80",
        alpha=alpha,
        threshold=threshold,
        n_pairs=685,
        n_groups=80,
        n_accepted=accepted,
        n_errors=accepted // 10,
        verdicts_per_pair=2,
        mode=mode,
        expected=evidence,
    )


def _index(*entries: PairwiseEntry) -> PairwiseIndex:
    return PairwiseIndex(
        PairwiseArtifact(
            format_version=FORMAT_VERSION,
            delta=0.1,
            bound="group_betting",
            ties="exclude",
            signal="vote share",
            source="test",
            entries=list(entries),
        )
    )


# a beats b in both orders (share 1.0); a vs c one a-win and one tie (share 0.5).
PREFERENCES = [
    {"first": "a", "second": "b", "verdict": "first"},
    {"first": "b", "second": "a", "verdict": "second"},
    {"first": "c", "second": "a", "verdict": "second"},
    {"first": "a", "second": "c", "verdict": "tie"},
]


def _post(app: AppHarness, **extra: object):
    return app.client.post("/v1/compare", json={"preferences": PREFERENCES, "judge": "gpt-4", **extra})


def _pairs(app: AppHarness, **extra: object) -> tuple[dict, dict[tuple[str, str], dict]]:
    reply = _post(app, accept_alpha=0.2, **extra)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    return body, {(p["a"], p["b"]): p for p in body["pairs"]}


@pytest.fixture
def two_modes(app: AppHarness) -> AppHarness:
    # expected accepts from share 0.5; pac only unanimous pairs: the served mode shows in which pairs accept.
    app.services.calibration.pairwise = _index(_entry("expected", 0.5), _entry("pac", 1.0))
    return app


def test_the_default_mode_is_expected(two_modes: AppHarness) -> None:
    body, pairs = _pairs(two_modes)
    assert body["mode"] == "expected" and body["accept_alpha"] == 0.2
    assert (pairs["a", "b"]["decision"], pairs["a", "c"]["decision"]) == ("accept", "accept")
    reason = pairs["a", "c"]["reason"]
    assert "expected mode" in reason
    assert "on average over calibrations, humans disagree with accepted preferences on new questions at most 0.2" in (
        reason
    )
    assert "confidence" not in reason


def test_guarantee_pac_serves_the_pac_entry(two_modes: AppHarness) -> None:
    body, pairs = _pairs(two_modes, guarantee="pac")
    assert body["mode"] == "pac"
    assert (pairs["a", "b"]["decision"], pairs["a", "c"]["decision"]) == ("accept", "abstain")
    assert "pac: P(human disagrees | accepted) <= 0.2 with confidence 0.9" in pairs["a", "b"]["reason"]
    assert "below the certified threshold 1.00" in pairs["a", "c"]["reason"] and "pac" in pairs["a", "c"]["reason"]
    # a confidence at or below the calibrated one is served
    assert _post(two_modes, accept_alpha=0.2, guarantee="pac", confidence=0.9).status_code == 200
    assert _post(two_modes, accept_alpha=0.2, guarantee="pac", confidence=0.5).status_code == 200


def test_a_mode_without_an_entry_abstains_naming_the_mode(app: AppHarness) -> None:
    app.services.calibration.pairwise = _index(_entry("pac", 0.5))
    _, pairs = _pairs(app)
    assert {p["decision"] for p in pairs.values()} == {"abstain"}
    assert all("never calibrated in the expected mode" in p["reason"] for p in pairs.values())
    app.services.calibration.pairwise = _index(_entry("expected", None))
    _, pairs = _pairs(app)
    assert all("accepts nothing (expected mode" in p["reason"] for p in pairs.values())


def test_confidence_with_the_expected_mode_is_a_422_problem(two_modes: AppHarness) -> None:
    for extra in ({"confidence": 0.9}, {"confidence": 0.9, "guarantee": "expected"}):
        reply = _post(two_modes, **extra)
        assert reply.status_code == 422, reply.text
        assert reply.headers["content-type"].startswith("application/problem+json")
        assert "confidence applies to guarantee 'pac' only" in reply.json()["detail"]


def test_a_confidence_above_the_calibrated_one_is_a_422_naming_it(two_modes: AppHarness) -> None:
    reply = _post(two_modes, guarantee="pac", confidence=0.95)
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert "calibrated confidence 0.9" in problem["detail"] and problem["allowed"] == ["0.9"]


@pytest.mark.parametrize("extra", [{"guarantee": "bayes"}, {"guarantee": None}, {"confidence": 1.0}])
def test_bad_guarantee_or_confidence_values_are_422(two_modes: AppHarness, extra: dict) -> None:
    reply = _post(two_modes, **{"guarantee": "pac", **extra})
    assert reply.status_code == 422, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")


def test_the_shipped_artifact_serves_both_modes(app: AppHarness) -> None:
    shipped = load_pairwise_artifact(DEFAULT_PATH)
    assert app.services.calibration.pairwise.artifact == shipped
    for mode in ("pac", "expected"):
        assert app.services.calibration.pairwise.alphas("gpt-4", mode) == [0.1, 0.2, 0.3]
    body, _ = _pairs(app)
    assert body["mode"] == "expected"
