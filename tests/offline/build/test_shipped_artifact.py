"""The shipped artifact is what `make calibrate` fits today: its SummEval cells of two judges (one with log-probs,
one without; every method and input kind) equal a fresh fit on the shipped data in both guarantee modes (same
recipe, same seed), so a code change that moves a threshold cannot ship a stale calibration.

"Equal" is within 1e-12, absolute or relative, number by number: the same fit on another machine kind (another
BLAS or libm) differs in the last bits (118 entries by at most 3.3e-16 on one), which is not staleness.
"""

from __future__ import annotations

import math
import re
from importlib import metadata
from typing import Any

import msgspec
import pytest

from artifact.thresholds import load_artifact
from offline.build.export import DEFAULT_THRESHOLDS, build_artifact
from offline.build.input_kinds import fit_input_kinds
from offline.build.modes import DEFAULT_DELTA, both_modes

TOLERANCE = 1e-12
CHECKED_JUDGES = {"gpt-4o-mini-2024-07-18", "llama-2-13b-chat"}  # refitted below


def _differences(old: Any, new: Any, at: str = "") -> list[str]:
    """Where two decoded JSON values differ by more than TOLERANCE (numbers) or at all (anything else)."""
    if isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        return [found for key in old for found in _differences(old[key], new[key], f"{at}.{key}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(old, new, strict=True))
        return [found for i, (a, b) in pairs for found in _differences(a, b, f"{at}[{i}]")]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
    if numbers and math.isclose(old, new, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
        return []
    return [] if type(old) is type(new) and old == new else [f"{at}: {old!r} != {new!r}"]


def test_the_comparison_takes_last_bit_noise_and_nothing_more():
    assert _differences({"t": [0.1, 2.0, None]}, {"t": [0.1 + 3.3e-16, 2.0, None]}) == []
    assert _differences({"t": [0.1]}, {"t": [0.1 + 1e-9]})
    assert _differences({"g": {"1": None}}, {"g": {"1": 0.0}})


@pytest.fixture(scope="module")
def shipped():
    return load_artifact(DEFAULT_THRESHOLDS)


def test_shipped_summeval_cells_equal_a_fresh_fit(shipped, recorded_cells):
    datasets = list(recorded_cells)  # recorded_datasets(data_dir), once per session (tests/recorded_fixtures.py)
    # both guarantee modes, as `make calibrate` fits them (offline.build.build), on the cells of two judges (one with
    # log-probs, one without): a cell's fit depends on its own data and the seed only, and any code change that
    # moves a threshold moves these cells' too; fitting all 32 cells twice took minutes
    checked = [d for d in datasets if d.judge in CHECKED_JUDGES]
    assert {d.judge for d in checked} == CHECKED_JUDGES
    fits = both_modes(lambda delta: fit_input_kinds(checked, n_splits=20, seed=0, delta=delta), DEFAULT_DELTA)
    fresh = build_artifact(data_hash="x", code_version="x", created_at="x", fits=fits)
    judges = {d.judge for d in datasets}
    assert judges > CHECKED_JUDGES  # the other judges' cells are checked by the artifact's structure tests

    def compared(judge: str, mode: str | None) -> bool:
        return judge in CHECKED_JUDGES

    shipped_entries = {e.key: e for e in shipped.entries if compared(e.judge, e.mode)}
    fresh_entries = {e.key: e for e in fresh.entries}
    assert {e.mode for e in fresh_entries.values()} == {"pac", "expected"}
    assert shipped_entries.keys() == fresh_entries.keys(), "run `make calibrate`: the shipped artifact is stale"
    for key, entry in fresh_entries.items():
        old = shipped_entries[key]
        fitted = _differences(msgspec.to_builtins(old.fitted), msgspec.to_builtins(entry.fitted))
        assert not fitted, (key, fitted[:5])  # before: ``==``, which last-bit noise of another machine fails
        assert old.heldout_coverage == pytest.approx(entry.heldout_coverage, rel=TOLERANCE, abs=TOLERANCE), key
        assert old.heldout_set_size == pytest.approx(entry.heldout_set_size, rel=TOLERANCE, abs=TOLERANCE), key
    shipped_defaults = {
        (d.judge, d.prompt_family, d.criterion, d.kind, d.mode): d.method
        for d in shipped.default_methods
        if compared(d.judge, d.mode)
    }
    assert shipped_defaults == {
        (d.judge, d.prompt_family, d.criterion, d.kind, d.mode): d.method for d in fresh.default_methods
    }


def test_shipped_artifact_records_this_package_version_and_both_modes(shipped):
    # built from a commit (+g<hash>) or saying it was not: never a made-up version such as "+g<hash>.dirty"
    version = re.escape(metadata.version("conformal-judge"))
    assert re.fullmatch(rf"{version}(\+g[0-9a-f]{{7,40}}| \(uncommitted changes\))", shipped.code_version)
    moded = [e for e in shipped.entries if e.input_kind is not None]
    assert {e.mode for e in moded} == {"pac", "expected"}
    assert all(e.fitted.delta == (DEFAULT_DELTA if e.mode == "pac" else None) for e in moded)
