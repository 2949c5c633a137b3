"""``make calibrate`` does not churn the tracked artifact (issue 22): a re-export whose numbers moved by at most
1e-12 (another machine kind's last bits) leaves the file as it is; one where something really moved is written
with every unmoved number kept byte for byte."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest

from artifact.thresholds import ThresholdsArtifact, load_artifact, save_artifact
from offline.build.artifact_stability import same_within, save_unless_unmoved, settle
from offline.build.export import DEFAULT_THRESHOLDS


@pytest.fixture(scope="module")
def shipped() -> ThresholdsArtifact:
    return load_artifact(DEFAULT_THRESHOLDS)


def _nudge(value: object, factor: float, every: int, counter: list[int]) -> object:
    """``value`` with every ``every``-th non-integral float moved by ``factor`` relative (rest unchanged)."""
    if isinstance(value, float) and not value.is_integer() and math.isfinite(value):
        counter[0] += 1
        return value * (1 + factor) if counter[0] % every == 0 else value
    if isinstance(value, dict):
        return {key: _nudge(item, factor, every, counter) for key, item in value.items()}
    if isinstance(value, list):
        return [_nudge(item, factor, every, counter) for item in value]
    return value


def _moved(artifact: ThresholdsArtifact, factor: float, every: int = 3) -> tuple[ThresholdsArtifact, int]:
    counter = [0]
    raw = msgspec.to_builtins(artifact)
    raw["entries"] = _nudge(raw["entries"], factor, every, counter)
    raw["created_at"] = "2099-01-01T00:00:00+00:00"
    raw["code_version"] = raw["code_version"].split("+")[0] + "+gdeadbee"
    return msgspec.convert(raw, ThresholdsArtifact), counter[0] // every


def test_last_bit_noise_leaves_the_tracked_file_untouched(shipped, tmp_path: Path):
    path = tmp_path / "thresholds.json"
    save_artifact(shipped, path)
    before = path.read_bytes()
    noisy, n_moved = _moved(shipped, 2.2e-16)  # one or two ulps, as a fresh clone on another machine kind
    assert n_moved > 100 and noisy != shipped
    kept, written = save_unless_unmoved(noisy, path)
    assert not written and kept == shipped
    assert path.read_bytes() == before  # before: rewritten with thousands of last-bit changes


def test_a_real_move_is_written_with_the_unmoved_numbers_kept(shipped, tmp_path: Path):
    path = tmp_path / "thresholds.json"
    save_artifact(shipped, path)
    noisy, _ = _moved(shipped, 2.2e-16)
    raw = msgspec.to_builtins(noisy)
    entry = next(e for e in raw["entries"] if e["heldout_coverage"] is not None)
    entry["heldout_coverage"] = round(entry["heldout_coverage"] - 1e-6, 12)  # one number really moved
    changed = msgspec.convert(raw, ThresholdsArtifact)
    saved, written = save_unless_unmoved(changed, path)
    assert written
    on_disk = load_artifact(path)
    assert on_disk == saved and on_disk.created_at == "2099-01-01T00:00:00+00:00"
    differing = [
        (old.key, new.key)
        for old, new in zip(shipped.entries, on_disk.entries, strict=True)
        if msgspec.to_builtins(old) != msgspec.to_builtins(new)
    ]
    assert len(differing) == 1  # the noisy numbers kept the shipped values; only the real move is new
    assert (
        next(e for e in on_disk.entries if e.heldout_coverage is not None).heldout_coverage == entry["heldout_coverage"]
    )


def test_a_new_package_version_or_data_counts_as_a_move(shipped):
    newer = msgspec.structs.replace(shipped, code_version="99.0.0+gabc")
    assert settle(shipped, newer)[1]
    other_data = msgspec.structs.replace(shipped, data_hash="0" * 64)
    assert settle(shipped, other_data)[1]
    fewer = msgspec.structs.replace(shipped, entries=shipped.entries[1:])
    assert settle(shipped, fewer)[1]
    assert not settle(shipped, msgspec.structs.replace(shipped, created_at="2099-01-01T00:00:00+00:00"))[1]


def test_a_clean_build_over_one_with_uncommitted_changes_rewrites_the_provenance(shipped):
    """The same numbers, now traceable to a commit: the file is rewritten; the other way round it is not (the
    numbers in the file still came from the clean commit it names)."""
    version = shipped.code_version.split("+")[0].split(" (")[0]
    dirty = msgspec.structs.replace(shipped, code_version=f"{version} (uncommitted changes)")
    clean = msgspec.structs.replace(shipped, code_version=f"{version}+g1234567")
    assert settle(dirty, clean)[1] and settle(dirty, clean)[0].code_version == f"{version}+g1234567"
    assert not settle(clean, dirty)[1]
    assert not settle(clean, msgspec.structs.replace(shipped, code_version=f"{version}+gabcdef0"))[1]


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        (0.1, 0.1 + 3.3e-16, True),
        (1e-300, 0.0, True),
        (0.9, 0.9 + 2e-12, False),
        (1e6, 1e6 * (1 + 5e-13), True),
        ({"a": [1.0, None]}, {"a": [1.0 + 1e-15, None]}, True),
        ({"a": [1.0, None]}, {"a": [1.0, 0.0]}, False),
        (True, 1, False),
        ("x", "y", False),
    ],
)
def test_same_within_is_absolute_or_relative_1e_12(old, new, same):
    assert same_within(old, new) is same
