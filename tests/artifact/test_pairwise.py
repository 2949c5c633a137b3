"""The pairwise decisions artifact: validation, the most conservative entry per judge, the serving rule."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from artifact.pairwise import (
    DEFAULT_PATH,
    FORMAT_VERSION,
    MODES,
    ExpectedEvidence,
    PairwiseArtifact,
    PairwiseEntry,
    PairwiseIndex,
    decide_pair,
    decode_pairwise_artifact,
    encode_pairwise_artifact,
    load_pairwise_artifact,
)
from calibration.errors import ArtifactError


def _entry(**changes: object) -> PairwiseEntry:
    base = dict(
        judge="j",
        dataset="d",
        alpha=0.2,
        threshold=0.5,
        n_pairs=10,
        n_groups=5,
        n_accepted=6,
        n_errors=1,
        verdicts_per_pair=2,
    )
    return PairwiseEntry(**{**base, **changes})  # type: ignore[arg-type]


def _expected(evidence: dict | None = None, **changes: object) -> PairwiseEntry:
    """A valid expected entry: level 0.5 accepted (A = 4, E = 1, phi = min(1, 0.2 x 5 / 2) = 0.5 > u = 0.3)."""
    base: dict[str, object] = dict(
        level=0.5, n_drawn=4, acceptance_probability=0.5, uniform=0.3, seed=0, n_fit_groups=1, n_certify_groups=4
    )
    evidence_fields = {**base, **(evidence or {})}
    fields = dict(mode="expected", n_accepted=4, n_errors=1, expected=ExpectedEvidence(**evidence_fields))
    return _entry(**{**fields, **changes})


def _artifact(*entries: PairwiseEntry, **changes: object) -> PairwiseArtifact:
    base = dict(
        format_version=FORMAT_VERSION,
        delta=0.1,
        bound="group_betting",
        ties="exclude",
        signal="s",
        source="t",
        entries=list(entries),
    )
    return PairwiseArtifact(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        _artifact(format_version=99),
        _artifact(delta=1.0),
        _artifact(bound="nope"),
        _artifact(_entry(alpha=0.0)),
        _artifact(_entry(threshold=1.5)),
        _artifact(_entry(n_errors=7)),
        _artifact(_entry(), _entry()),
        _artifact(_entry(mode="bayes")),
        _artifact(_entry(expected=_expected().expected)),  # a pac entry carries no expected evidence
        _artifact(_expected(expected=None)),
        _artifact(_expected(threshold=0.75)),  # an expected threshold is the chosen level
        _artifact(_expected(evidence={"uniform": 0.6})),  # accepted only when uniform < phi
        _artifact(_expected(threshold=None)),  # uniform < phi: the level was accepted, the threshold is not null
        _artifact(_expected(evidence={"acceptance_probability": 0.9})),  # phi is min(1, alpha (A + 1) / (E + 1))
        _artifact(_expected(evidence={"n_certify_groups": 3})),  # FIT + CERTIFY groups = n_groups
        _artifact(_expected(n_accepted=5, n_errors=1, evidence={"acceptance_probability": 0.6})),  # A > n_drawn
        _artifact(_expected(), _expected()),
    ],
)
def test_broken_artifacts_are_refused(bad: PairwiseArtifact) -> None:
    with pytest.raises(ArtifactError):
        encode_pairwise_artifact(bad)


def test_round_trip_and_malformed_json(tmp_path: Path) -> None:
    artifact = _artifact(_entry(), _entry(alpha=0.1, threshold=None, n_accepted=0, n_errors=0))
    path = tmp_path / "a.json"
    path.write_bytes(encode_pairwise_artifact(artifact))
    assert load_pairwise_artifact(path) == artifact
    with pytest.raises(ArtifactError, match="not a pairwise decisions artifact"):
        decode_pairwise_artifact(b'{"format_version": 1}')
    with pytest.raises(ArtifactError, match="cannot read"):
        load_pairwise_artifact(tmp_path / "missing.json")


def test_the_shipped_artifact_is_valid() -> None:
    artifact = load_pairwise_artifact(DEFAULT_PATH)
    assert artifact.bound == "group_betting" and artifact.ties == "exclude"
    assert msgspec.json.decode(DEFAULT_PATH.read_bytes())["format_version"] == FORMAT_VERSION
    # both modes for every (judge, dataset, alpha); the expected ones fitted with seed 0
    keys = {mode: {(e.judge, e.dataset, e.alpha) for e in artifact.entries if e.mode == mode} for mode in MODES}
    assert keys["pac"] == keys["expected"] and len(keys["pac"]) == 24
    assert all(e.expected.seed == 0 for e in artifact.entries if e.expected is not None)


def test_expected_entries_round_trip_and_old_entries_decode_as_pac() -> None:
    refused = _expected(threshold=None, evidence={"uniform": 0.6})  # tested, not accepted: abstain always
    nothing = _expected(threshold=None, n_accepted=0, n_errors=0, evidence={"level": None, "acceptance_probability": 0})
    artifact = _artifact(
        _entry(), _expected(alpha=0.2), _expected(alpha=0.3, evidence={"acceptance_probability": 0.75})
    )
    for entries in (artifact.entries, [refused], [nothing]):
        again = _artifact(*entries)
        assert decode_pairwise_artifact(encode_pairwise_artifact(again)) == again
    old = msgspec.json.encode(_artifact(_entry()))
    plain = msgspec.json.decode(old)
    for entry in plain["entries"]:
        del entry["mode"], entry["expected"]  # a file written before the modes
    decoded = decode_pairwise_artifact(msgspec.json.encode(plain))
    assert decoded.entries[0].mode == "pac" and decoded.entries[0].expected is None


def test_index_keeps_modes_apart() -> None:
    index = PairwiseIndex(
        _artifact(_entry(threshold=0.75), _expected(), _expected(alpha=0.3, evidence={"acceptance_probability": 0.75}))
    )
    assert index.entry("j", 0.2).threshold == 0.75  # type: ignore[union-attr]
    assert index.entry("j", 0.2, "pac").mode == "pac"  # type: ignore[union-attr]
    assert index.entry("j", 0.2, "expected").threshold == 0.5  # type: ignore[union-attr]
    assert index.alphas("j") == [0.2] and index.alphas("j", "expected") == [0.2, 0.3]
    assert index.entry("j", 0.3) is None and index.entry("j", 0.3, "expected") is not None


def test_index_keeps_the_most_conservative_entry_per_judge_and_alpha() -> None:
    index = PairwiseIndex(
        _artifact(
            _entry(dataset="x", threshold=0.5),
            _entry(dataset="y", threshold=0.75),
            _entry(dataset="x", alpha=0.3, threshold=0.5),
            _entry(dataset="y", alpha=0.3, threshold=None, n_accepted=0, n_errors=0),
        )
    )
    assert index.entry("j", 0.2).threshold == 0.75  # type: ignore[union-attr]
    assert index.entry("j", 0.3).threshold is None  # type: ignore[union-attr]
    assert index.entry("j", 0.1) is None and index.entry(None, 0.2) is None and index.entry("k", 0.2) is None
    assert index.alphas("j") == [0.2, 0.3]


@pytest.mark.parametrize(
    ("threshold", "wins_a", "wins_b", "n", "expected"),
    [
        (0.5, 2, 0, 2, ("accept", 1, 1.0)),
        (0.5, 1, 0, 2, ("accept", 1, 0.5)),  # one win and one tie: share 0.5 reaches 0.5
        (0.75, 1, 0, 2, ("abstain", 1, 0.5)),
        (0.5, 1, 1, 2, ("abstain", 0, 0.0)),  # split: no preferred side
        (0.5, 0, 3, 4, ("accept", -1, 0.75)),
        (None, 2, 0, 2, ("abstain", 1, 1.0)),
    ],
)
def test_decide_pair(threshold, wins_a, wins_b, n, expected) -> None:
    d = decide_pair(_entry(threshold=threshold, n_accepted=6 if threshold else 0), wins_a, wins_b, n)
    assert (d.decision, d.preferred, d.confidence) == expected
    assert decide_pair(None, wins_a, wins_b, n).decision == "abstain"
