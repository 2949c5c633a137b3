"""Every product module is reached from an entry point: ``python -m service``, ``python -m service.worker``,
``python -m service.openapi_export``, ``python -m offline`` with every command it dispatches (``make calibrate``
runs ``offline calibrate``, ``halves`` and ``results-page``), and whatever the Makefile runs with ``python -m``.

Reached = the closure of the imports from those modules, read from the source by grimp: every ``import`` statement,
at module level or inside a function (the commands import their study when they run), but not those under
``if TYPE_CHECKING:`` (never executed); importing ``a.b.c`` also runs ``a`` and ``a.b``. A module outside that
closure is dead code, or code only tests use (it belongs under ``tests/``), or finished research (``research/``).
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("calibration", "artifact", "judges", "service", "offline")
ENTRY_POINTS = ("service.__main__", "service.worker", "service.openapi_export", "offline.__main__")
# Each with its reason; an entry is removed when the module is wired in or removed.
UNREACHED: dict[str, str] = {}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)


def reached_from(graph: grimp.ImportGraph, entry_points: tuple[str, ...]) -> set[str]:
    """The modules an import of ``entry_points`` runs (the closure described in the module docstring)."""
    seen: set[str] = set()
    stack = list(entry_points)
    while stack:
        module = stack.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        stack.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        stack.extend(graph.find_modules_directly_imported_by(module))
    return seen


def test_every_makefile_module_run_is_an_entry_point() -> None:
    run = set(re.findall(r"python -m ([A-Za-z_][\w.]*)", (ROOT / "Makefile").read_text()))
    product = {module for module in run if module.split(".")[0] in PACKAGES}
    assert {"offline", "service", "service.worker", "service.openapi_export"} <= product  # the read works
    assert {module if "." in module else f"{module}.__main__" for module in product} <= set(ENTRY_POINTS)


def test_every_offline_command_is_dispatched_to_a_reached_handler(graph: grimp.ImportGraph) -> None:
    from offline.cli import main
    from offline.commands.parser import build_parser

    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.dest == "command"]  # noqa: SLF001
    handlers = [name for name in main.__code__.co_names if name.startswith("run_")]
    assert len(handlers) == len(commands.choices), (sorted(commands.choices), handlers)
    reached = reached_from(graph, ENTRY_POINTS)
    assert "offline.commands.studies" in reached and "offline.studies.panels.study" in reached


def test_every_product_module_is_reached_from_an_entry_point(graph: grimp.ImportGraph) -> None:
    reached = reached_from(graph, ENTRY_POINTS)
    assert len(reached) > 200  # the walk followed the imports, not just the entry points
    unreached = sorted(set(graph.modules) - reached - set(UNREACHED))
    assert not unreached, (
        "product modules no entry point imports (move test-only code under tests/, research under research/, "
        f"or delete): {', '.join(unreached)}"
    )
    assert set(UNREACHED) <= set(graph.modules) - reached, "an allowed module is now reached: drop its entry"


def test_the_walk_finds_a_module_imported_inside_a_function_and_skips_a_stranger(graph: grimp.ImportGraph) -> None:
    # offline.commands.studies imports each study inside its handler; research is no product package
    assert "offline.studies.estimates.study" in graph.find_modules_directly_imported_by("offline.commands.studies")
    reached = reached_from(graph, ("offline.commands.studies",))
    assert "offline.studies.estimates.study" in reached and "offline" in reached and "service.http.app" not in reached
