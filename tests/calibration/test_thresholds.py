"""The thresholds artifact: round trip, validation errors that name the file, and index look-ups."""

from __future__ import annotations

import json

import msgspec
import numpy as np
import pytest

from calibration.conformal import METHODS, PROBABILITY_METHODS, fit_conformal, predict_sets
from calibration.errors import ArtifactError
from calibration.thresholds import (
    FORMAT_VERSION,
    DefaultMethod,
    ThresholdEntry,
    ThresholdIndex,
    ThresholdsArtifact,
    load_artifact,
    save_artifact,
)


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
                        judge="j", prompt_family="geval", criterion="coherence", method=method, alpha=alpha,
                        fitted=fitted, heldout_coverage=0.91, heldout_coverage_std=0.01, heldout_set_size=3.2,
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
    with pytest.raises(ArtifactError, match=r"old.json: format_version 99 is not supported \(this code reads 1, 2\)"):
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
