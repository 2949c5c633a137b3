"""The layers hold: every import-linter contract of pyproject.toml is kept, and no import cycle exists.

The contracts (``[tool.importlinter]``) state who may import whom: calibration/ <- artifact/ <- judges/ <- service/
and offline/ (never each other), the worker never loads the HTTP package, and inside service/ HTTP sits on the
domains, the domains on errors, wire types and config. The cycle check covers what a layer contract cannot: two
modules of one layer importing each other.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("artifact", "calibration", "judges", "service", "offline")


def test_every_import_contract_is_kept():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--no-cache",
            "--no-logo",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    summary = [line for line in run.stdout.splitlines() if line.startswith("Contracts:")]
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary == [f"Contracts: {len(contracts)} kept, 0 broken."], run.stdout  # every contract was checked


def _import_graph() -> nx.DiGraph:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    imports = nx.DiGraph()
    imports.add_nodes_from(graph.modules)
    for module in graph.modules:
        imports.add_edges_from((module, imported) for imported in graph.find_modules_directly_imported_by(module))
    return imports


def test_the_packages_are_read_from_this_tree():
    graph = grimp.build_graph("service", cache_dir=None)
    assert "service.errors" in graph.modules and "service.jobs.calibration_jobs.jobs" in graph.modules


def test_no_import_cycle():
    imports = _import_graph()
    assert imports.number_of_nodes() > 100  # the whole code base, not an empty graph
    cycles = sorted(sorted(component) for component in nx.strongly_connected_components(imports) if len(component) > 1)
    assert not cycles, "modules importing each other (directly or in a ring): " + "; ".join(
        ", ".join(component) for component in cycles
    )


def test_the_cycle_check_finds_a_ring():
    ring = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    assert [sorted(c) for c in nx.strongly_connected_components(ring) if len(c) > 1] == [["a", "b", "c"]]
