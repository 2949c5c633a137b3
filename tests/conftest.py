"""Shared fixtures: the real data directory and the judge stand-in server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from offline.data.fetch import INCOMPLETE_MARKER
from offline.data.paths import DATA_DIR_ENV, default_data_dir

pytest_plugins = ["tests.fakes.fixtures", "tests.recorded_fixtures", "tests.redis_cleanup"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def resolve_data_dir() -> Path:
    """The real-data directory: $DATA_DIR, else ``../shared/data`` beside the checkout: the directory
    ``make data`` builds when DATA_DIR is unset (one rule, ``offline.data.paths.default_data_dir``)."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured) if configured else default_data_dir()


# The modules that take longest, longest first (per-module seconds summed over every test of a ``--durations=0``
# run of ``make test``'s command, 3 workers, docs/testing.md): they run first. ``make test`` hands out whole modules
# (``--dist loadfile``) in collection order (``--no-loadscope-reorder``; xdist's default order is by number of
# tests, which put these few-test modules last, so one worker ran the last long module while the others had
# nothing left). Longest first, the last modules handed out are short ones and the workers finish together. A
# module missing here only runs in its collection place; nothing else depends on this order.
LONG_MODULES = (
    "tests/service/http/test_schemathesis_cli.py",  # 430 s at 17 examples a seed, about 300 s at 8 (three seeds)
    "tests/service/live_judge/test_live_judge.py",  # 210 s on a loaded machine (a real model answers every call)
    "tests/offline/test_cli.py",  # 230 s (the calibrate at 2 splits: the build, then the studies)
    "tests/offline/build/test_shipped_artifact.py",  # 93 s
    "tests/offline/studies/conformal/test_validity.py",  # 90 s
    "tests/offline/studies/local_judge/test_command.py",  # 85 s on a loaded machine (three calibrations)
    "tests/service/artifacts/test_calibrations_api.py",  # 66 s
    "tests/offline/test_report_cards.py",  # 40 s (with another module's recorded ingest)
    "tests/service/http/test_reports.py",  # 35 s
    "tests/service/http/test_server.py",  # 46 s
    "tests/service/scoring/test_guarantee_modes.py",  # 36 s
    "tests/service/estimating/test_estimates_api.py",  # 34 s
    "tests/service/artifacts/test_calibrations_hardening.py",  # 33 s
    "tests/service/http/test_schemathesis.py",  # 31 s
    "tests/service/http/test_report_browser.py",  # 25 s
    "tests/service/jobs/test_worker.py",  # 29 s
    "tests/docs/test_examples.py",  # 26 s
    "tests/service/artifacts/test_calibration_rules.py",  # 17 s
    "tests/test_readme_walkthrough.py",  # 15 s
    "tests/service/scoring/test_score.py",  # 15 s
    "tests/client/integrations/test_inspect_offline.py",  # 15 s
    "tests/service/jobs/test_calibration_queue.py",  # 14 s
    "tests/service/judging/test_judge_faults.py",  # 13 s
    "tests/research/test_gap.py",  # 13 s
    "tests/offline/studies/monitoring/test_streams_and_study.py",  # 13 s
    "tests/service/http/test_openapi.py",  # 11 s
    "tests/service/comparing/test_compare_vicuna80.py",  # 10 s
    "tests/offline/studies/conformal/test_study.py",  # 10 s
    "tests/offline/studies/conformal/test_group_pac_summeval.py",  # 10 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One node id per test: schemathesis' ``schema.parametrize()`` names each operation's item
    ``test_x[GET /path]``, but pytest 9 builds a node id from the item's original name, so every operation of a
    test shared one id. Node ids are how pytest-xdist hands tests to workers (``make test`` runs three) and how
    ``-k``/``--lf``/node-id selection finds them; with one id for 17 items, xdist ran one of them. Each such item
    gets the id of its own name, as pytest 8 gave it; the set of items collected does not change."""
    by_id: dict[str, int] = {}
    for item in items:
        by_id[item.nodeid] = by_id.get(item.nodeid, 0) + 1
    for item in items:
        if by_id[item.nodeid] > 1 and item.parent is not None and item.name != getattr(item, "originalname", item.name):
            item._id = item.parent.id.child(item.name)  # noqa: SLF001 - Node.__init__'s own default for an id
    rank = {module: position for position, module in enumerate(LONG_MODULES)}
    # a stable sort: the other modules keep their order, and every module its tests' order
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(LONG_MODULES)))
    ids = [item.nodeid for item in items]
    duplicated = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if duplicated:
        raise pytest.UsageError(f"tests share a node id (xdist would run only one of each): {duplicated[:5]}")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data directory; the suite needs it (a fresh clone: ``make data`` builds it where this looks)."""
    path = resolve_data_dir()
    if not (path / "summeval" / "items.jsonl").exists():
        raise RuntimeError(
            f"real data not found at {path}: run `make data` (it builds that directory), or set {DATA_DIR_ENV} "
            "to the shared data directory"
        )
    if (path / INCOMPLETE_MARKER).exists():
        raise RuntimeError(f"the data directory {path} is incomplete (an interrupted `make data`): run it again")
    return path
