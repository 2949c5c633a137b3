"""Export: the build's fits (both modes, per input kind), written, loaded back, giving identical prediction sets."""

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
from calibration.input_kinds.verdicts import kind_inputs
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.build.export import (
    DEFAULT_THRESHOLDS,
    build_artifact,
    code_version,
    data_files,
    data_hash,
    export_thresholds,
)
from offline.build.input_kinds import fit_input_kinds
from offline.build.modes import ALPHA_GRID, TABLE_ALPHAS, both_modes

SEED = 3
# one judge with log-probs (score and probabilities kinds) and one without, on one criterion: enough for the round
# trip; the shipped cells are checked against a fresh fit in test_shipped_artifact.py
PICK = {("gpt-4o-mini-2024-07-18", "fluency"), ("llama-2-13b-chat", "fluency")}


@pytest.fixture(scope="module")
def datasets(recorded_cells):
    """Two recorded cells, ingested once per session (tests/recorded_fixtures.py)."""
    chosen = [d for d in recorded_cells if (d.judge, d.criterion) in PICK]
    assert len(chosen) == len(PICK)
    return chosen


def _fits(datasets, seed: int) -> dict:
    return both_modes(lambda delta: fit_input_kinds(datasets, n_splits=2, seed=seed, delta=delta))


@pytest.fixture(scope="module")
def exported(datasets, data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """(in-memory artifact, loaded artifact, fits) — 2 splits are enough for the round trip."""
    fits = _fits(datasets, SEED)
    path = tmp_path_factory.mktemp("export") / "thresholds.json"
    artifact = export_thresholds(fits=fits, data_dir=data_dir, path=path, seed=SEED)
    return artifact, load_artifact(path), fits


def _inputs(entry, data) -> dict:
    scores, probabilities = kind_inputs(
        entry.input_kind, data.n_labels, judge_scores=data.judge_scores, probabilities=data.probabilities
    )
    return {"judge_scores": scores, "probabilities": probabilities}


def test_round_trip_gives_identical_prediction_sets_for_every_entry(exported, datasets) -> None:
    artifact, loaded, _ = exported
    assert loaded.entries == artifact.entries and loaded.default_methods == artifact.default_methods
    by_key = {(d.judge, d.prompt_family, d.criterion): d for d in datasets}
    methods_seen = set()
    for written, read in zip(artifact.entries, loaded.entries, strict=True):
        data = by_key[written.judge, written.prompt_family, written.criterion]
        inputs = _inputs(written, data)
        before = predict_sets(written.fitted, rng=np.random.default_rng(1), **inputs)
        after = predict_sets(read.fitted, rng=np.random.default_rng(1), **inputs)
        assert np.array_equal(before, after), written.key
        methods_seen.add(written.method)
        if written.method != "aps_randomized" and abs(written.alpha - 0.1) < 1e-9:
            # The service's single-item path on the loaded artifact agrees with the fitted predictor.
            for i in range(0, data.labels.size, 97):
                probabilities = inputs["probabilities"]
                probs = None if probabilities is None else probabilities[i].tolist()
                labels = prediction_set(read.fitted, judge_score=int(inputs["judge_scores"][i]), probabilities=probs)
                assert labels == tuple(int(k) + 1 for k in np.flatnonzero(before[i]))
    assert methods_seen == set(METHODS)


def test_entries_are_fitted_on_all_items_in_both_modes_with_heldout_figures(exported, datasets) -> None:
    artifact, _, fits = exported
    sizes = {(d.judge, d.criterion): d.labels.size for d in datasets}
    assert {e.mode for e in artifact.entries} == {"pac", "expected"}
    for entry in artifact.entries:
        assert entry.fitted.n_cal + entry.fitted.n_model_fit == sizes[entry.judge, entry.criterion]
        if entry.method == "learned_lac":
            matrix = np.array(entry.fitted.learned_matrix)
            assert matrix.shape == (5, 5) and np.allclose(matrix.sum(axis=1), 1)
        assert entry.n_splits == 2 and entry.heldout_coverage is not None
        if entry.judge.startswith("llama"):
            assert entry.method not in PROBABILITY_METHODS and entry.input_kind == "score"
    index = ThresholdIndex(artifact)
    for judge, family, criterion, kind in fits:
        default = index.default_method(judge, family, criterion, kind)
        assert default is not None
        assert index.alphas(judge, family, criterion, default, kind) == list(ALPHA_GRID)
        others = set(index.methods(judge, family, criterion, kind)) - {default}
        for method in others:
            assert index.alphas(judge, family, criterion, method, kind) == list(TABLE_ALPHAS)
    assert all(default.reason for default in artifact.default_methods)
    assert {m for d in datasets for m in SCORE_ONLY_METHODS} <= {e.method for e in artifact.entries}


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
    _, _, fits = exported
    first = build_artifact(fits=fits, data_hash="x", code_version="v", created_at="t")
    second = build_artifact(fits=_fits(datasets, SEED), data_hash="x", code_version="v", created_at="t")
    other = build_artifact(fits=_fits(datasets, SEED + 1), data_hash="x", code_version="v", created_at="t")
    assert first == second

    def matrices(artifact):
        return [e.fitted.learned_matrix for e in artifact.entries if e.method == "learned_lac"]

    assert matrices(first) and matrices(first) != matrices(other)


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
