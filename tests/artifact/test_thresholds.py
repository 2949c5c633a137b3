"""The thresholds artifact: round trip, validation errors that name the file, and index look-ups."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import numpy as np
import pytest

from artifact.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdIndex,
    ThresholdsArtifact,
    artifact_id,
    decode_artifact,
    derived_kind,
    encode_artifact,
    load_artifact,
    save_artifact,
    validate_artifact,
)
from calibration.conformal import METHODS, PROBABILITY_METHODS, fit_conformal, predict_sets
from calibration.errors import ArtifactError


def _artifact(entries=None, defaults=None, **overrides) -> ThresholdsArtifact:
    rng = np.random.default_rng(0)
    labels = rng.integers(1, 6, 300)
    judge = np.clip(labels + rng.integers(-1, 2, 300), 1, 5)
    probabilities = rng.dirichlet(np.ones(5), 300)
    if entries is None:
        entries = []
        for method in METHODS:
            for alpha in (0.1, 0.2):
                fitted = fit_conformal(
                    method,
                    alpha,
                    labels,
                    judge_scores=judge,
                    probabilities=probabilities if method in PROBABILITY_METHODS or method == "learned_lac" else None,
                )
                entries.append(
                    ThresholdEntry(
                        judge="j",
                        prompt_family="geval",
                        criterion="coherence",
                        method=method,
                        alpha=alpha,
                        fitted=fitted,
                        heldout_coverage=0.91,
                        heldout_coverage_std=0.01,
                        heldout_set_size=3.2,
                        n_splits=20,
                    )
                )
    fields = dict(
        format_version=FORMAT_VERSION,
        created_at="2026-11-29T00:00:00Z",
        code_version="test",
        data_hash="0" * 64,
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
        default_methods=defaults
        if defaults is not None
        else [DefaultMethod(judge="j", prompt_family="geval", criterion="coherence", method="lac", reason="test")],
    )
    fields.update(overrides)
    return ThresholdsArtifact(**fields)


def test_round_trip_gives_identical_prediction_sets(tmp_path):
    artifact = _artifact()
    path = tmp_path / "thresholds.json"
    save_artifact(artifact, path)
    loaded = load_artifact(path)
    assert loaded == artifact
    rng = np.random.default_rng(9)
    judge = rng.integers(1, 6, 50)
    probabilities = rng.dirichlet(np.ones(5), 50)
    for before, after in zip(artifact.entries, loaded.entries, strict=True):
        kwargs = dict(judge_scores=judge, probabilities=probabilities)
        np.testing.assert_array_equal(
            predict_sets(before.fitted, **kwargs, rng=np.random.default_rng(1)),
            predict_sets(after.fitted, **kwargs, rng=np.random.default_rng(1)),
        )


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(ArtifactError, match="nowhere.json.*not found"):
        load_artifact(path)


def test_malformed_json_names_the_path(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ArtifactError, match="broken.json.*malformed JSON"):
        load_artifact(path)


def test_wrong_version_is_refused_with_both_versions(tmp_path):
    path = tmp_path / "old.json"
    raw = json.loads(msgspec.json.encode(_artifact()))
    raw["format_version"] = 99
    path.write_text(json.dumps(raw))
    refused = r"old.json: format_version 99 is not supported \(this code reads 1, 2, 3\)"
    with pytest.raises(ArtifactError, match=refused):
        load_artifact(path)


def test_wrong_shape_is_refused(tmp_path):
    path = tmp_path / "shape.json"
    path.write_text(json.dumps({"format_version": 1, "entries": "nope"}))
    with pytest.raises(ArtifactError, match="shape.json: not a thresholds artifact"):
        load_artifact(path)


def test_inconsistent_entries_are_refused(tmp_path):
    good = _artifact()
    duplicate = _artifact(entries=good.entries + good.entries[:1])
    with pytest.raises(ArtifactError, match="duplicate entry"):
        save_artifact(duplicate, tmp_path / "a.json")
    mismatched = msgspec.structs.replace(good.entries[0], method="lac")
    with pytest.raises(ArtifactError, match="differs from the entry's method"):
        save_artifact(_artifact(entries=[mismatched]), tmp_path / "b.json")
    with pytest.raises(ArtifactError, match="has no entry"):
        save_artifact(
            _artifact(defaults=[DefaultMethod(judge="x", prompt_family="y", criterion="z", method="lac")]),
            tmp_path / "c.json",
        )
    with pytest.raises(ArtifactError, match="label_scale"):
        save_artifact(_artifact(label_scale=[0, 1, 2]), tmp_path / "d.json")
    assert not (tmp_path / "a.json").exists()


def test_index_lookups():
    index = ThresholdIndex(_artifact())
    entry = index.lookup("j", "geval", "coherence", "lac", 0.1)
    assert entry is not None and entry.method == "lac" and entry.alpha == 0.1
    assert index.lookup("j", "geval", "coherence", "lac", 0.1 + 1e-12) is entry
    assert index.lookup("j", "geval", "coherence", "lac", 0.15) is None
    assert index.lookup("other", "geval", "coherence", "lac", 0.1) is None
    assert index.default_method("j", "geval", "coherence") == "lac"
    assert index.default_method("j", "geval", "fluency") is None
    assert index.judges() == ["j"]
    assert index.methods("j", "geval", "coherence") == list(METHODS)
    assert index.alphas("j", "geval", "coherence", "residual") == [0.1, 0.2]
    assert len(index.calibration_id) == 16
    assert ThresholdIndex(_artifact()).calibration_id == index.calibration_id


def test_a_future_format_of_another_shape_is_refused_by_its_version(tmp_path):
    # msgspec cannot read it (another shape); its format_version is read on its own to say why
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"format_version": 4, "entries": "a new shape"}))
    with pytest.raises(ArtifactError) as refused:
        load_artifact(path)
    assert str(refused.value) == f"{path}: format_version 4 is not supported (this code reads 1, 2, 3)"
    # a readable version in a wrong shape, a version that is not an integer, or no object at all: wrong shape
    for body in (
        {"format_version": 2, "entries": "nope"},
        {"format_version": "4", "entries": "nope"},
        [3],
        {"entries": "nope"},
    ):
        with pytest.raises(ArtifactError) as refused:
            decode_artifact(json.dumps(body).encode(), source="s.json")
        assert str(refused.value).startswith("s.json: not a thresholds artifact: "), body


def test_an_unreadable_path_names_the_file_and_the_reason(tmp_path):
    with pytest.raises(ArtifactError) as refused:
        load_artifact(tmp_path)  # a directory: read_bytes raises IsADirectoryError (an OSError)
    assert str(refused.value) == f"{tmp_path}: cannot read thresholds file: Is a directory"
    with pytest.raises(ArtifactError) as missing:
        load_artifact(tmp_path / "nowhere.json")
    assert str(missing.value) == (
        f"{tmp_path / 'nowhere.json'}: thresholds file not found (run `make calibrate` to write it)"
    )


def test_the_encoding_is_indented_by_one_space_and_ends_with_a_newline():
    artifact = _artifact(entries=[], defaults=[])
    assert encode_artifact(artifact) == (
        b'{\n "format_version": 3,\n "created_at": "2026-11-29T00:00:00Z",\n "code_version": "test",\n'
        b' "data_hash": "' + b"0" * 64 + b'",\n "label_scale": [\n  1,\n  2,\n  3,\n  4,\n  5\n ],\n'
        b' "entries": [],\n "default_methods": [],\n "source": "",\n "decision_rules": [],\n "label_rules": []\n}\n'
    )
    assert decode_artifact(encode_artifact(artifact)) == artifact


def test_index_listings():
    entries = _artifact().entries
    moved = [
        msgspec.structs.replace(entry, prompt_family="paper", criterion="fluency")
        for entry in entries
        if entry.method == "residual"
    ]
    other = [msgspec.structs.replace(entry, judge="k", criterion="relevance") for entry in entries[:2]]
    index = ThresholdIndex(_artifact(entries=entries + moved + other))
    assert index.entries() == entries + moved + other
    assert index.judges() == ["j", "k"]
    assert index.prompt_families("j") == ["geval", "paper"] and index.prompt_families("k") == ["geval"]
    assert index.prompt_families("nobody") == []
    assert index.criteria("j") == ["coherence", "fluency"]
    assert index.criteria("j", "paper") == ["fluency"] and index.criteria("j", "geval") == ["coherence"]
    assert index.criteria("k") == ["relevance"] and index.criteria("k", "paper") == []


def test_refusals_name_their_source():
    with pytest.raises(ArtifactError) as refused:
        validate_artifact(_artifact(label_scale=[1]))
    assert str(refused.value) == "<artifact>: label_scale [1] must be 1..K with K >= 2"
    with pytest.raises(ArtifactError) as refused:
        validate_artifact(_artifact(label_scale=[1, 3]), source="mine.json")
    assert str(refused.value) == "mine.json: label_scale [1, 3] must be 1..K with K >= 2"


def test_a_two_label_scale_is_valid():
    labels = np.array([1, 2] * 20)
    fitted = fit_conformal("residual", 0.1, labels, judge_scores=labels, n_labels=2)
    entry = ThresholdEntry(judge="j", prompt_family="p", criterion="c", method="residual", alpha=0.1, fitted=fitted)
    validate_artifact(_artifact(entries=[entry], defaults=[], label_scale=[1, 2]))


def test_save_refuses_naming_the_target_and_writes_atomically_beside_it(tmp_path, monkeypatch):
    target = tmp_path / "nested" / "deeper" / "thresholds.json"
    with pytest.raises(ArtifactError) as refused:
        save_artifact(_artifact(label_scale=[0, 1]), target)
    assert str(refused.value) == f"{target}: label_scale [0, 1] must be 1..K with K >= 2"
    assert not target.parent.exists()  # nothing is created for a refused artifact
    # the bytes go to a hidden temporary file in the target's own directory (so the rename is atomic), then
    # replace the target; missing parent directories are created
    renames = []
    real_replace = os.replace

    def spy(source, destination):
        renames.append((Path(source), Path(destination)))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", spy)
    artifact = _artifact()
    save_artifact(artifact, target)
    ((temporary, destination),) = renames
    assert destination == target and temporary.parent == target.parent
    assert temporary.name.startswith(".thresholds-") and temporary.name.endswith(".json")
    assert target.read_bytes() == encode_artifact(artifact)
    assert sorted(p.name for p in target.parent.iterdir()) == ["thresholds.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "thresholds.json"
    old = _artifact(entries=[], defaults=[])
    save_artifact(old, target)

    def broken(source, destination):
        raise PermissionError("replace refused")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(PermissionError, match="replace refused"):  # the original error, not one from the clean-up
        save_artifact(_artifact(), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thresholds.json"]
    assert load_artifact(target) == old


def _by_method(method: str, alpha: float = 0.1) -> ThresholdEntry:
    (entry,) = [e for e in _artifact().entries if e.method == method and e.alpha == alpha]
    return entry


def _with_fitted(entry: ThresholdEntry, **changes) -> ThresholdEntry:
    return msgspec.structs.replace(entry, fitted=msgspec.structs.replace(entry.fitted, **changes))


def _refusal(entry: ThresholdEntry) -> str:
    with pytest.raises(ArtifactError) as refused:
        validate_artifact(_artifact(entries=[_by_method("residual", 0.2), entry], defaults=[]))
    return str(refused.value)


# One broken field at a time, each refused with its rule's message, written out by hand from validate_artifact.
@pytest.mark.parametrize(
    ("method", "alpha", "entry_change", "fitted_change", "message"),
    [
        ("residual", 0.1, {"method": "magic"}, {}, "unknown method 'magic'"),
        ("lac", 0.1, {"input_kind": "score"}, {}, "method 'lac' cannot be fitted on input kind 'score'"),
        ("residual", 0.1, {"input_kind": "tokens"}, {}, "method 'residual' cannot be fitted on input kind 'tokens'"),
        ("residual", 0.1, {"alpha": 0.0}, {"alpha": 0.0}, "alpha must lie in (0, 1) and equal fitted.alpha (0.0)"),
        ("residual", 0.1, {"alpha": 1.0}, {"alpha": 1.0}, "alpha must lie in (0, 1) and equal fitted.alpha (1.0)"),
        ("residual", 0.1, {"alpha": 1.5}, {"alpha": 1.5}, "alpha must lie in (0, 1) and equal fitted.alpha (1.5)"),
        ("residual", 0.1, {}, {"alpha": 0.15}, "alpha must lie in (0, 1) and equal fitted.alpha (0.15)"),
        ("residual", 0.1, {}, {"n_labels": 1}, "fitted.n_labels 1 must lie in 2..5 (the label scale)"),
        ("residual", 0.1, {}, {"n_labels": 6}, "fitted.n_labels 6 must lie in 2..5 (the label scale)"),
        ("residual", 0.1, {}, {"n_cal": 0}, "calibration size 0 must be at least 1"),
        ("residual", 0.1, {}, {"threshold": float("inf")}, "threshold inf is not finite (use null for the full scale)"),
        ("residual", 0.1, {}, {"threshold": float("nan")}, "threshold nan is not finite (use null for the full scale)"),
        ("mondrian_residual", 0.1, {}, {"group_thresholds": None}, "mondrian_residual needs group_thresholds"),
        ("label_conditional", 0.1, {}, {"group_thresholds": None}, "label_conditional needs group_thresholds"),
        ("learned_lac", 0.1, {}, {"learned_matrix": None}, "learned_lac needs a 5x5 learned_matrix"),
        ("learned_lac", 0.1, {}, {"learned_matrix": [[0.2] * 5] * 4}, "learned_lac needs a 5x5 learned_matrix"),
        (
            "learned_lac",
            0.1,
            {},
            {"learned_matrix": [[0.2] * 5] * 4 + [[0.25] * 4]},
            "learned_lac needs a 5x5 learned_matrix",
        ),
    ],
)
def test_each_validation_rule_refuses_with_its_message(method, alpha, entry_change, fitted_change, message):
    entry = _with_fitted(msgspec.structs.replace(_by_method(method, alpha), **entry_change), **fitted_change)
    where = f"<artifact>: entries[1] (j, geval, coherence, {entry.method}, alpha={entry.alpha})"
    assert _refusal(entry) == f"{where}: {message}"


def test_the_edges_of_each_rule_are_accepted():
    # one calibration item, no finite threshold (the full scale), alpha just inside (0, 1)
    edges = [
        _with_fitted(_by_method("residual", 0.1), n_cal=1, threshold=None),
        _with_fitted(msgspec.structs.replace(_by_method("lac", 0.1), alpha=0.999), alpha=0.999),
        _with_fitted(msgspec.structs.replace(_by_method("aps", 0.1), alpha=1e-6), alpha=1e-6),
    ]
    validate_artifact(_artifact(entries=edges, defaults=[]))
    with pytest.raises(ArtifactError) as refused:
        validate_artifact(
            _artifact(
                defaults=[
                    DefaultMethod(
                        judge="j", prompt_family="geval", criterion="coherence", method="lac", input_kind="score"
                    )
                ]
            )
        )
    assert str(refused.value) == (
        "<artifact>: default method 'lac' for (j, geval, coherence, score verdicts) has no entry"
    )


def test_kinds_ids_and_level_rounding():
    assert [derived_kind(m) for m in ("residual", "lac", "aps", "mondrian_residual", "ordinal")] == [
        "score",
        "probabilities",
        "probabilities",
        "score",
        "probabilities",
    ]
    artifact = _artifact()
    index = ThresholdIndex(artifact)
    assert index.calibration_id == artifact_id(artifact)
    other = msgspec.structs.replace(artifact, code_version="other")
    assert artifact_id(other) != artifact_id(artifact) and len(artifact_id(other)) == 16
    assert index.alphas("j", "geval", "coherence", "lac") == [0.1, 0.2]  # kind derived from the method
    # levels match after rounding to 9 decimals: 0.1 + 3e-10 is 0.1, 0.1 + 6e-10 is not
    assert index.lookup("j", "geval", "coherence", "lac", 0.1 + 3e-10) is not None
    assert index.lookup("j", "geval", "coherence", "lac", 0.1 + 6e-10) is None
    with pytest.raises(ArtifactError) as refused:
        decode_artifact(b"{")
    assert str(refused.value).startswith("<bytes>: malformed JSON: ")


def test_a_rule_repeated_for_its_cell_and_input_kind_is_refused_naming_its_place() -> None:
    shipped = load_artifact(Path(__file__).resolve().parents[2] / "artifact" / "thresholds.json")
    validate_artifact(shipped, source="shipped")
    for field, noun in (("decision_rules", "decision rule"), ("label_rules", "per-label rule")):
        rules = getattr(shipped, field)
        repeated = msgspec.structs.replace(shipped, **{field: [*rules, rules[0]]})
        with pytest.raises(ArtifactError, match=rf"shipped: {field}\[{len(rules)}\] \(.*\): duplicate {noun}$"):
            validate_artifact(repeated, source="shipped")
