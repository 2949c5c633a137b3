"""``export_thresholds`` (what ``make calibrate`` ends with) leaves the tracked artifact untouched when the fresh
fit differs from it only in the last bits of its floats (issue 22: a fresh clone on another machine kind
rewrote 9,050 floats), and still writes a real change."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import offline.build.export as export
from artifact.thresholds import ThresholdsArtifact, load_artifact, save_artifact


def _with_floats(artifact: ThresholdsArtifact, change) -> ThresholdsArtifact:
    def walk(value):
        if isinstance(value, float) and not value.is_integer():
            return change(value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    raw = msgspec.to_builtins(artifact)
    raw["entries"] = walk(raw["entries"])
    return msgspec.convert(raw, ThresholdsArtifact)


@pytest.fixture
def tracked(tmp_path: Path) -> Path:
    path = tmp_path / "thresholds.json"
    save_artifact(load_artifact(export.DEFAULT_THRESHOLDS), path)
    return path


def _export(monkeypatch: pytest.MonkeyPatch, fresh: ThresholdsArtifact, path: Path) -> ThresholdsArtifact:
    """``export_thresholds`` with the studies' artifact replaced by ``fresh`` (the fit itself is tested elsewhere)."""
    monkeypatch.setattr(export, "build_artifact", lambda *args, **kwargs: fresh)
    return export.export_thresholds(fits=None, data_dir=path.parent, path=path, seed=0)


def test_last_bit_noise_does_not_rewrite_the_tracked_artifact(monkeypatch, tracked: Path):
    before = tracked.read_bytes()
    shipped = load_artifact(tracked)
    fresh = _with_floats(
        msgspec.structs.replace(shipped, created_at="2099-01-01T00:00:00+00:00"), lambda v: v * (1 + 2.2e-16)
    )
    assert fresh.entries != shipped.entries
    returned = _export(monkeypatch, fresh, tracked)
    assert tracked.read_bytes() == before  # before: every run rewrote it (thousands of last-bit float changes)
    assert returned == shipped


def test_a_real_change_is_written(monkeypatch, tracked: Path):
    shipped = load_artifact(tracked)
    fresh = _with_floats(shipped, lambda v: v + 1e-6)
    _export(monkeypatch, fresh, tracked)
    assert load_artifact(tracked).entries == fresh.entries
    assert tracked.stat().st_mode & 0o777 == 0o644
