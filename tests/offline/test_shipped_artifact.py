"""The shipped artifact is what `make calibrate` fits today: its SummEval cells equal a fresh fit on the shipped
data (same recipe, same seed), so a code change that moves a threshold cannot ship a stale calibration."""

from __future__ import annotations

from importlib import metadata

import pytest

from calibration.thresholds import load_artifact
from offline.export import DEFAULT_THRESHOLDS, build_artifact
from offline.studies.validity import DEFAULT_DELTA, run_validity_study


@pytest.fixture(scope="module")
def shipped():
    return load_artifact(DEFAULT_THRESHOLDS)


def test_shipped_summeval_cells_equal_a_fresh_fit(shipped, recorded_cells):
    datasets = list(recorded_cells)  # recorded_datasets(data_dir), once per session (tests/offline/conftest.py)
    _, fits = run_validity_study(datasets, n_splits=20, seed=0, delta=DEFAULT_DELTA)
    fresh = build_artifact(datasets, None, seed=0, data_hash="x", code_version="x", created_at="x", fits=fits)
    judges = {d.judge for d in datasets}
    shipped_entries = {e.key: e for e in shipped.entries if e.judge in judges}
    fresh_entries = {e.key: e for e in fresh.entries}
    assert shipped_entries.keys() == fresh_entries.keys(), "run `make calibrate`: the shipped artifact is stale"
    for key, entry in fresh_entries.items():
        old = shipped_entries[key]
        assert old.fitted == entry.fitted, key
        assert old.heldout_coverage == pytest.approx(entry.heldout_coverage, abs=1e-12), key
        assert old.heldout_set_size == pytest.approx(entry.heldout_set_size, abs=1e-12), key
    shipped_defaults = {(d.judge, d.prompt_family, d.criterion, d.kind): d.method for d in shipped.default_methods
                        if d.judge in judges}
    assert shipped_defaults == {(d.judge, d.prompt_family, d.criterion, d.kind): d.method
                                for d in fresh.default_methods}


def test_shipped_artifact_records_this_package_version_and_pac(shipped):
    assert shipped.code_version.split("+")[0] == metadata.version("conformal-judge")
    assert all(e.fitted.delta == DEFAULT_DELTA for e in shipped.entries if e.input_kind is not None)
