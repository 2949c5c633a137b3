"""Mutation testing of the statistics and decision rules (``make mutate``; not part of ``make test``).

Runs mutmut (3.x) on a scratch copy of the working tree, one target at a time, and prints the score per module:
killed / (killed + survived + no tests + timeout + suspicious), skipped mutants left out. A copy, because mutmut
writes its ``mutants/`` tree and a ``setup.cfg`` into the project it runs in, and several people (and agents)
work in this checkout at once.

    python tools/mutate.py [--targets conformal calibration policy] [--max-children 2] [--workdir DIR]
                           [--modules artifact/serving.py ...] [--resume] [--survivors]

Targets: ``conformal`` = calibration/conformal (module or package) against tests/calibration; ``calibration`` =
the rest of calibration/ against tests/calibration; ``policy`` = service/scoring/policy.py and cell_decision.py and
the method and level resolution in service/scoring/resolve.py and sets.py (the functions named in ``mutants``
below: criterion, judge, prompt family, level, named method, plan, calibrated entry; not the judge call,
own-verdict parsing or the response assembly) against tests/service. mutmut is installed on first use (pinned below).

A target too slow to finish in one sitting runs in parts: ``--modules`` runs only the mutants of those files
(all of the target's mutants are made, the others stay "not checked" and are not counted); ``--resume`` keeps the
scratch copy and its results, copies sources and tests afresh from the working tree (mutmut re-makes the mutants
of changed functions) and runs the chosen mutants not yet checked; ``--resume --survivors`` re-runs the ones that
survived (or had no tests) after tests were added.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTMUT = "mutmut==3.8.1"
COPY = (
    "calibration",
    "artifact",
    "judges",
    "service",
    "offline",
    "research",
    "tests",
    "tools",
    "pyproject.toml",
    "openapi",
)
TARGETS = {
    "conformal": {
        "source": "calibration",
        "only": ["calibration/conformal.py", "calibration/conformal/*"],
        "tests": ["tests/calibration"],
    },
    "calibration": {
        "source": "calibration",
        "only": ["calibration/*.py"],
        "skip": ["calibration/conformal.py", "calibration/conformal/*"],
        "tests": ["tests/calibration"],
        # these list a module's public names with vars(): mutmut's trampolines add names, so they always fail
        "deselect": [
            "tests/calibration/tournaments/test_ranking.py::test_all_lists_the_public_names",
            "tests/calibration/tournaments/test_tournament.py::test_all_lists_the_public_names",
        ],
    },
    "policy": {
        "source": "service",
        "only": [
            "service/scoring/policy.py",
            "service/scoring/cell_decision.py",
            "service/scoring/resolve.py",
            "service/scoring/sets.py",
        ],
        "tests": [
            "tests/service/scoring/test_policy.py",
            "tests/service/scoring/test_decisions.py",
            "tests/service/scoring/test_cascades.py",
            "tests/service/scoring/test_score.py",
            "tests/service/scoring/test_scoring_memo.py",
            "tests/service/scoring/test_scoring_resolution.py",
            "tests/service/judging/test_rubrics.py",
        ],
        "mutants": [
            "service.scoring.policy.*",
            "service.scoring.cell_decision.*",
            "service.scoring.sets.x_calibrated_entry__mutmut_*",
        ]
        + [
            f"service.scoring.resolve.x_{name}__mutmut_*"
            for name in (
                "_check_criterion",
                "_resolve_judge",
                "_live_prompt_family",
                "_resolve_prompt_family",
                "_resolve_alpha",
                "_check_named_method",
                "resolve",
            )
        ],
    },
}
KILLED = {"killed", "timeout"}  # a mutant that hangs the tests is detected
COUNTED = KILLED | {"survived", "no tests", "suspicious", "segfault"}
_RESULT = re.compile(r"^\s*(?P<name>[\w.]+?)\.x(?:ǁ\w+ǁ)?_?\w*__mutmut_\d+:\s*(?P<status>[\w ]+?)\s*$")


def _ensure_mutmut() -> None:
    try:
        import mutmut  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", MUTMUT], check=True)


def _scratch(workdir: Path, name: str, target: dict) -> Path:
    root = workdir / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "mutants", ".hypothesis", "*.sqlite")
    for item in COPY:
        source = REPO / item
        if source.is_dir():
            shutil.copytree(source, root / item, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, root / item)
    lines = [
        "[mutmut]",
        f"source_paths = {target['source']}",
        "only_mutate =\n    " + "\n    ".join(target["only"]),
        "pytest_add_cli_args_test_selection =\n    " + "\n    ".join(target["tests"]),
        "pytest_add_cli_args =\n    -p\n    no:cacheprovider"
        + "".join(f"\n    --deselect\n    {test}" for test in target.get("deselect", ())),
        "also_copy =\n    " + "\n    ".join(item for item in COPY if item != target["source"]),
    ]
    if target.get("skip"):
        lines.append("do_not_mutate =\n    " + "\n    ".join(target["skip"]))
    (root / "setup.cfg").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _mutants(root: Path) -> dict[str, str]:
    """Every mutant mutmut has made in ``root``, name -> status ("not checked" until run)."""
    shown = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    found = {}
    for line in shown.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


def _statuses(root: Path, patterns: list[str] | None) -> dict[str, Counter]:
    per_module: dict[str, Counter] = {}
    for name, status in _mutants(root).items():
        if patterns and not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            continue
        match = _RESULT.match(f"{name}: {status}")
        if match:
            per_module.setdefault(match.group("name"), Counter())[match.group("status")] += 1
    return per_module


def _patterns(target: dict, modules: list[str] | None) -> list[str] | None:
    """mutmut name patterns for the chosen files (``artifact/serving.py`` -> ``artifact.serving.*``)."""
    if not modules:
        return target.get("mutants")
    chosen = []
    for module in modules:
        path = Path(module)
        if (
            path.suffix != ".py"
            or not any(fnmatch.fnmatchcase(module, only) for only in target["only"])
            or any(fnmatch.fnmatchcase(module, skip) for skip in target.get("skip", ()))
        ):
            raise SystemExit(f"mutate: {module} is not a file of this target ({target['only']})")
        chosen.append(".".join(path.with_suffix("").parts) + ".*")
    return chosen


def _refresh(root: Path) -> None:
    """Copy the working tree's sources and tests over the scratch copy (mtimes kept). On its next run mutmut
    re-makes the mutants of each function whose code changed (their results reset to "not checked"), keeps the
    others' results, and collects coverage for tests it has not seen."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "mutants", ".hypothesis", "*.sqlite")
    for item in COPY:
        source = REPO / item
        if source.is_dir():
            shutil.copytree(source, root / item, ignore=ignore, dirs_exist_ok=True)
        elif source.exists():
            shutil.copy2(source, root / item)


def _mutmut_run(root: Path, env: dict, max_children: int, names: list[str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *names],
        cwd=root,
        env=env,
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", choices=sorted(TARGETS), default=["conformal", "calibration", "policy"])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "conformal-judge-mutate")
    parser.add_argument(
        "--modules", nargs="+", metavar="FILE", help="only these files of the (single) target, e.g. artifact/serving.py"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the scratch copy and its results, refresh sources and tests, run the unrun",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="PATH",
        help="test files for a new scratch copy instead of the target's (a narrower selection for "
        "mutants whose reaching tests are too slow; its score is a lower bound)",
    )
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="with --resume: re-run the chosen mutants that survived or had no tests",
    )
    args = parser.parse_args(argv)
    if args.modules and len(args.targets) != 1:
        parser.error("--modules needs exactly one target")
    if args.survivors and not args.resume:
        parser.error("--survivors needs --resume")
    _ensure_mutmut()
    env = dict(os.environ)
    shared = REPO.parent / "shared" / "data"  # the scratch copy needs the checkout's data directory by its path
    env.setdefault("DATA_DIR", str(shared if shared.is_dir() else REPO / ".data"))
    rows = []
    for name in args.targets:
        target = TARGETS[name]
        patterns = _patterns(target, args.modules)
        root = args.workdir / name
        names = list(patterns or [])
        resume = args.resume and (root / "mutants").is_dir()
        if resume:
            _refresh(root)
            # mutmut re-makes changed functions' mutants and maps new tests, then stops: this name matches nothing
            _mutmut_run(root, env, args.max_children, ["refresh-only.no-such-mutant"])
            wanted = {"survived", "no tests"} if args.survivors else {"not checked"}
            names = [
                mutant
                for mutant, status in _mutants(root).items()
                if status in wanted
                and (not patterns or any(fnmatch.fnmatchcase(mutant, pattern) for pattern in patterns))
            ]
        else:
            root = _scratch(args.workdir, name, {**target, "tests": args.tests} if args.tests else target)
        print(f"mutate: {name} in {root}: {len(names) if resume else 'all chosen'} mutants to run", flush=True)
        if names or not resume:
            _mutmut_run(root, env, args.max_children, names)
        for module, counts in sorted(_statuses(root, patterns).items()):
            counted = sum(n for status, n in counts.items() if status in COUNTED)
            killed = sum(n for status, n in counts.items() if status in KILLED)
            rows.append((module, killed, counted, counts))
    print(f"\n{'module':<40} {'killed':>7} {'counted':>8} {'score':>7}  detail")
    for module, killed, counted, counts in rows:
        score = f"{killed / counted:.1%}" if counted else "-"
        detail = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
        print(f"{module:<40} {killed:>7} {counted:>8} {score:>7}  {detail}")
    print(f"\nsurvivors: `cd {args.workdir}/<target> && {sys.executable} -m mutmut show <name>`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
