"""Export: thresholds fitted on all items, written, loaded back, giving identical prediction sets."""

from __future__ import annotations

import hashlib
import subprocess
from datetime import datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from artifact.thresholds import ThresholdIndex, load_artifact
from calibration.conformal import METHODS, PROBABILITY_METHODS, predict_sets, prediction_set
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.build.export import (
    DEFAULT_THRESHOLDS,
    build_artifact,
    code_version,
    data_files,
    data_hash,
    export_thresholds,
)
from offline.studies.conformal.rules import ALPHAS
from offline.studies.conformal.study import run_conformal_study
from offline.studies.conformal.validity import ALPHA_GRID

SEED = 3


@pytest.fixture(scope="module")
def datasets(recorded_cells):
    """The recorded judges' cells, ingested once per session (tests/recorded_fixtures.py)."""
    return list(recorded_cells)


@pytest.fixture(scope="module")
def exported(datasets, data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """(in-memory artifact, loaded artifact, study) — the study with 2 splits is enough for the round trip."""
    summary = run_conformal_study(datasets, n_splits=2, seed=SEED)
    path = tmp_path_factory.mktemp("export") / "thresholds.json"
    artifact = export_thresholds(datasets, summary, data_dir=data_dir, path=path, seed=SEED)
    return artifact, load_artifact(path), summary


def test_round_trip_gives_identical_prediction_sets_for_every_entry(exported, datasets) -> None:
    artifact, loaded, _ = exported
    assert loaded.entries == artifact.entries and loaded.default_methods == artifact.default_methods
    by_key = {(d.judge, d.prompt_family, d.criterion): d for d in datasets}
    methods_seen = set()
    for written, read in zip(artifact.entries, loaded.entries, strict=True):
        data = by_key[written.judge, written.prompt_family, written.criterion]
        inputs = {"judge_scores": data.judge_scores, "probabilities": data.probabilities}
        before = predict_sets(written.fitted, rng=np.random.default_rng(1), **inputs)
        after = predict_sets(read.fitted, rng=np.random.default_rng(1), **inputs)
        assert np.array_equal(before, after), written.key
        methods_seen.add(written.method)
        if written.method != "aps_randomized" and abs(written.alpha - 0.1) < 1e-9:
            # The service's single-item path on the loaded artifact agrees with the fitted predictor.
            for i in range(0, data.labels.size, 97):
                probs = None if data.probabilities is None else data.probabilities[i].tolist()
                labels = prediction_set(read.fitted, judge_score=int(data.judge_scores[i]), probabilities=probs)
                assert labels == tuple(int(k) + 1 for k in np.flatnonzero(before[i]))
    assert methods_seen == set(METHODS)


def test_entries_are_fitted_on_all_items_with_study_figures(exported, datasets) -> None:
    artifact, _, summary = exported
    n_probability = sum(d.probabilities is not None for d in datasets)
    per_cell = n_probability * len(METHODS) + (len(datasets) - n_probability) * len(SCORE_ONLY_METHODS)
    assert len(artifact.entries) == per_cell * len(ALPHAS)
    sizes = {(d.judge, d.criterion): d.labels.size for d in datasets}
    for entry in artifact.entries:
        n = sizes[entry.judge, entry.criterion]
        assert entry.fitted.n_cal + entry.fitted.n_model_fit == n
        if entry.method == "learned_lac":
            matrix = np.array(entry.fitted.learned_matrix)
            assert matrix.shape == (5, 5) and np.allclose(matrix.sum(axis=1), 1)
        cell = summary.cell(entry.judge, entry.criterion, entry.method, entry.alpha)
        assert (entry.heldout_coverage, entry.heldout_set_size, entry.n_splits) == (cell.coverage, cell.set_size, 2)
        assert entry.heldout_coverage_std == cell.coverage_std and entry.min_bin_coverage == cell.min_bin_coverage
        if entry.judge.startswith("llama"):
            assert entry.method not in PROBABILITY_METHODS
    index = ThresholdIndex(artifact)
    for d in datasets:
        assert index.default_method(d.judge, d.prompt_family, d.criterion) is not None
    assert all(default.reason for default in artifact.default_methods)


def test_provenance(exported, data_dir: Path) -> None:
    artifact, _, _ = exported
    created = datetime.fromisoformat(artifact.created_at)
    assert created.utcoffset() is not None and created.utcoffset().total_seconds() == 0
    assert artifact.code_version.startswith(metadata.version("conformal-judge"))
    assert artifact.code_version == code_version()
    digest = hashlib.sha256()
    files = sorted(
        [*Path(data_dir, "judges", "summeval").glob("*.json*"), Path(data_dir, "summeval", "items.jsonl")],
        key=lambda p: p.relative_to(data_dir).as_posix(),
    )
    assert files == data_files(data_dir)
    for path in files:
        content = path.read_bytes()
        digest.update(f"{path.relative_to(data_dir).as_posix()}\0{len(content)}\0".encode() + content)
    assert artifact.data_hash == digest.hexdigest() == data_hash(files, data_dir)


def test_build_is_deterministic_for_a_seed(datasets, exported) -> None:
    _, _, summary = exported
    subset = [d for d in datasets if d.criterion == "fluency"]
    first = build_artifact(subset, summary, seed=SEED, data_hash="x", code_version="v", created_at="t")
    second = build_artifact(subset, summary, seed=SEED, data_hash="x", code_version="v", created_at="t")
    other = build_artifact(subset, summary, seed=SEED + 1, data_hash="x", code_version="v", created_at="t")
    assert first == second
    assert [e.fitted.learned_matrix for e in first.entries] != [e.fitted.learned_matrix for e in other.entries]


def test_shipped_artifact_loads_and_covers_every_cell() -> None:
    artifact = load_artifact(DEFAULT_THRESHOLDS)
    index = ThresholdIndex(artifact)
    summeval = {
        "gpt-3.5-turbo-0301",
        "gpt-4o-mini-2024-07-18",
        "qwen2.5-72b-instruct",
        "llama-2-7b-chat",
        "llama-2-13b-chat",
        "llama-2-70b-chat",
    }
    assert summeval <= set(index.judges())
    for judge in sorted(summeval):
        (family,) = index.prompt_families(judge)
        for criterion in ("coherence", "consistency", "fluency", "relevance"):
            kinds = index.kinds(judge, family, criterion)
            assert kinds == (["score", "probabilities"] if family == "geval" else ["score"]), (judge, criterion)
            for kind in kinds:
                default = index.default_method(judge, family, criterion, kind)
                assert default is not None
                assert index.alphas(judge, family, criterion, default, kind) == list(ALPHA_GRID)
                assert {"residual", "mondrian_residual", "learned_lac"} <= set(
                    index.methods(judge, family, criterion, kind)
                )
    for entry in artifact.entries:
        assert entry.heldout_coverage is not None and entry.n_splits == 20
        assert entry.fitted.delta == (0.05 if entry.mode == "pac" else None)
        assert entry.input_kind is not None
    # the sentence-level fact-checkers (8 LLMs) and the issue-14 panel with its sub-panels are shipped too
    assert len({e.judge for e in artifact.entries if e.prompt_family == "factuality_sentences"}) == 8
    assert len({e.judge for e in artifact.entries if e.judge.startswith("panel:")}) == 11


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=checkout, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip()


def test_code_version_names_a_commit_only_when_the_checkout_is_that_commit(tmp_path: Path) -> None:
    """Clean: ``<version>+g<short hash>`` of HEAD. A tracked file changed: ``<version> (uncommitted changes)``, no
    commit and no ``.dirty`` suffix (no commit holds the code that would have fitted the artifact). An untracked
    file does not change it."""
    version = metadata.version("conformal-judge")
    _git(tmp_path, "init", "-q")
    (tmp_path / "module.py").write_text("x = 1\n")
    _git(tmp_path, "add", "module.py")
    _git(tmp_path, "commit", "-q", "-m", "first")
    head = _git(tmp_path, "rev-parse", "--short", "HEAD")
    assert code_version(tmp_path) == f"{version}+g{head}"
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert code_version(tmp_path) == f"{version}+g{head}"
    (tmp_path / "module.py").write_text("x = 2\n")
    assert code_version(tmp_path) == f"{version} (uncommitted changes)"
    outside = tmp_path.parent / f"{tmp_path.name}-outside"  # no git checkout: the package version alone
    outside.mkdir()
    assert code_version(outside) == version
