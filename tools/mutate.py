"""Mutation testing of the statistics and decision rules (``make mutate``; not part of ``make test``).

Runs mutmut (3.x) on a scratch copy of the working tree, one target at a time, and prints the score per module:
killed / (killed + survived + no tests + timeout + suspicious), skipped mutants left out. A copy, because mutmut
writes its ``mutants/`` tree and a ``setup.cfg`` into the project it runs in, and several people (and agents)
work in this checkout at once.

    python tools/mutate.py [--targets conformal calibration policy] [--max-children 2] [--workdir DIR]

Targets: ``conformal`` = calibration/conformal (module or package) against tests/calibration; ``calibration`` =
the rest of calibration/ against tests/calibration; ``policy`` = service/policy.py and the method and level
resolution in service/scoring.py against tests/service. mutmut is installed on first use (pinned below).
"""

from __future__ import annotations

import argparse
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
COPY = ("calibration", "service", "offline", "tests", "pyproject.toml", "openapi")
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
    },
    "policy": {
        "source": "service",
        "only": ["service/policy.py", "service/scoring.py"],
        "tests": ["tests/service/test_policy.py", "tests/service/test_score.py", "tests/service/test_scoring_memo.py"],
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
        "pytest_add_cli_args =\n    -p\n    no:cacheprovider",
        "also_copy =\n    " + "\n    ".join(item for item in COPY if item != target["source"]),
    ]
    if target.get("skip"):
        lines.append("do_not_mutate =\n    " + "\n    ".join(target["skip"]))
    (root / "setup.cfg").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _statuses(root: Path) -> dict[str, Counter]:
    shown = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=root,
                           capture_output=True, text=True, check=False)
    per_module: dict[str, Counter] = {}
    for line in shown.stdout.splitlines():
        match = _RESULT.match(line)
        if match:
            per_module.setdefault(match.group("name"), Counter())[match.group("status")] += 1
    return per_module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", choices=sorted(TARGETS), default=["conformal", "calibration", "policy"])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "conformal-judge-mutate")
    args = parser.parse_args(argv)
    _ensure_mutmut()
    env = dict(os.environ)
    env.setdefault("DATA_DIR", str(REPO.parent / "shared" / "data"))
    rows = []
    for name in args.targets:
        root = _scratch(args.workdir, name, TARGETS[name])
        print(f"mutate: {name} in {root}", flush=True)
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)], cwd=root,
                       env=env, check=False)
        for module, counts in sorted(_statuses(root).items()):
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
