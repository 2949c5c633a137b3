"""One prediction set, this tree against an older checkout: paired, interleaved timings in one run.

Two worker processes, one per tree (``PYTHONPATH`` = the tree), each import that tree's ``calibration.conformal``.
The baseline worker fits every method on one seeded data set; both workers decode the same fitted predictors (the
artifact's JSON) and time one set on the same inputs, two ways: ``prediction_set(fitted, ...)`` and the path the
service takes, ``compile_rule(fitted).prediction_set(...)`` with the rule compiled once (the service compiles each
entry's rule on first use and keeps it; a tree without ``calibration.conformal.sets.compile_rule`` serves
``prediction_set``, so its compiled timing is that). Rounds alternate the order (ABBA), so drift and other load
on the machine fall on both sides; the result per case and path is the median over rounds of the per-round ratio
candidate/baseline. Both trees, and both paths, must give the same sets (checked before timing).

Run: ``python bench/bench_registry_paired.py --baseline-tree /path/to/older/checkout`` (``--candidate-tree``
defaults to the tree holding this file). Under ``make bench`` it runs only when ``BENCH_BASELINE_TREE`` names a
checkout; otherwise it says so and skips.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
CANDIDATE_TREE = HERE.parents[1]
PROBABILITIES = [0.05, 0.15, 0.5, 0.2, 0.1]
ALPHA = 0.1
N_CALIBRATION = 1000


@dataclass(frozen=True)
class Case:
    """One timed call: a method's fitted predictor and the item's inputs."""

    name: str
    method: str
    judge_score: int | None
    probabilities: list[float] | None


CASES = [
    Case("residual", "residual", 3, PROBABILITIES),
    Case("residual_expected", "residual_expected", 3, PROBABILITIES),
    Case("lac", "lac", 3, PROBABILITIES),
    Case("aps", "aps", 3, PROBABILITIES),
    Case("aps_randomized", "aps_randomized", 3, PROBABILITIES),
    Case("ordinal", "ordinal", 3, PROBABILITIES),
    Case("mondrian_residual", "mondrian_residual", 3, PROBABILITIES),
    Case("learned_lac", "learned_lac", 3, PROBABILITIES),
    Case("learned_lac (score only)", "learned_lac", 3, None),
    Case("label_conditional", "label_conditional", 3, PROBABILITIES),
]


# --- the worker: runs under one tree ---------------------------------------------------------------------------


class _Worker:
    """Serves one tree: fit (baseline only), load fitted predictors, form sets, time calls."""

    def __init__(self) -> None:
        self.conformal = importlib.import_module("calibration.conformal")
        self.msgspec = importlib.import_module("msgspec")
        self.fitted: dict[str, Any] = {}
        self.rules: dict[str, Any] = {}

    def fit(self) -> dict[str, str]:
        """Every method fitted on one seeded data set, as the artifact's JSON."""
        np = importlib.import_module("numpy")
        rng = np.random.default_rng(0)
        labels = rng.integers(1, 6, N_CALIBRATION)
        judge = np.clip(labels + rng.integers(-1, 2, N_CALIBRATION), 1, 5)
        probabilities = rng.dirichlet(np.ones(5), N_CALIBRATION)
        methods = sorted({case.method for case in CASES})
        return {
            method: self.msgspec.json.encode(
                self.conformal.fit_conformal(method, ALPHA, labels, judge_scores=judge, probabilities=probabilities)
            ).decode()
            for method in methods
        }

    def load(self, encoded: dict[str, str]) -> None:
        """Decode the fitted predictors into this tree's FittedConformal (as loading an artifact does)."""
        kind = self.conformal.FittedConformal
        self.fitted = {method: self.msgspec.json.decode(text, type=kind) for method, text in encoded.items()}
        compile_rule = getattr(importlib.import_module("calibration.conformal.sets"), "compile_rule", None)
        if compile_rule is not None:
            self.rules = {method: compile_rule(fitted) for method, fitted in self.fitted.items()}

    def call(self, case: Case, compiled: bool) -> Callable[[], tuple[int, ...]]:
        """The timed call of one case: ``prediction_set(fitted, ...)``, or the compiled rule's (the service's path;
        ``prediction_set`` on a tree without compiled rules)."""
        judge_score, probabilities = case.judge_score, case.probabilities
        if compiled and self.rules:
            rule_set = self.rules[case.method].prediction_set

            def compiled_one() -> tuple[int, ...]:
                result: tuple[int, ...] = rule_set(judge_score=judge_score, probabilities=probabilities)
                return result

            return compiled_one
        prediction_set = self.conformal.prediction_set
        fitted = self.fitted[case.method]

        def one() -> tuple[int, ...]:
            result: tuple[int, ...] = prediction_set(fitted, judge_score=judge_score, probabilities=probabilities)
            return result

        return one

    def sets(self) -> dict[str, list[list[int]]]:
        """Each case's prediction set, by both paths."""
        return {case.name: [list(self.call(case, compiled)()) for compiled in (False, True)] for case in CASES}

    def time(self, name: str, compiled: bool, inner: int, repeat: int) -> float:
        """Seconds per call: the best of ``repeat`` timings of ``inner`` calls (garbage collection off)."""
        call = self.call(next(case for case in CASES if case.name == name), compiled)
        best = float("inf")
        gc.disable()
        try:
            for _ in range(repeat):
                start = time.perf_counter()
                for _ in range(inner):
                    call()
                best = min(best, (time.perf_counter() - start) / inner)
        finally:
            gc.enable()
        return best


def serve() -> None:
    """Answer one JSON request per stdin line with one JSON line on stdout."""
    worker = _Worker()
    for line in sys.stdin:
        request = json.loads(line)
        command = request["command"]
        if command == "fit":
            answer: object = worker.fit()
        elif command == "load":
            worker.load(request["fitted"])
            answer = None
        elif command == "sets":
            answer = worker.sets()
        elif command == "where":
            answer = str(Path(str(worker.conformal.__file__)).resolve().parents[2])
        else:
            answer = worker.time(request["case"], request["compiled"], request["inner"], request["repeat"])
        sys.stdout.write(json.dumps({"answer": answer}) + "\n")
        sys.stdout.flush()


# --- the driver ---------------------------------------------------------------------------------------------------


class _Tree:
    """A worker process importing one tree's code."""

    def __init__(self, tree: Path) -> None:
        environment = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(HERE), "--serve"],
            cwd=tree,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: object) -> Any:
        """Send one request, return its answer."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with {self.process.wait()}")
        return json.loads(line)["answer"]

    def close(self) -> None:
        """End the worker."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


Row = tuple[str, float, float, float, float, float, float, float]


def paired_ratios(baseline_tree: Path, candidate_tree: Path, rounds: int, inner: int, repeat: int) -> list[Row]:
    """Per case: median baseline µs; median candidate µs, median ratio and its highest per-round value, for
    ``prediction_set(fitted, ...)`` and for the compiled rule."""
    baseline, candidate = _Tree(baseline_tree), _Tree(candidate_tree)
    try:
        for tree, worker in ((baseline_tree, baseline), (candidate_tree, candidate)):
            where = Path(worker.ask(command="where"))
            if where != tree.resolve():
                raise RuntimeError(f"the worker for {tree} imported calibration from {where}")
        fitted = baseline.ask(command="fit")
        baseline.ask(command="load", fitted=fitted)
        candidate.ask(command="load", fitted=fitted)
        old_sets, new_sets = baseline.ask(command="sets"), candidate.ask(command="sets")
        if old_sets != new_sets:
            raise RuntimeError(f"the trees give different sets: baseline {old_sets}, candidate {new_sets}")
        # (worker, compiled): the baseline's service path, the candidate's plain and compiled paths
        sides = ((baseline, True), (candidate, False), (candidate, True))
        timings: dict[str, list[list[float]]] = {case.name: [[], [], []] for case in CASES}
        for round_index in range(rounds):
            for case in CASES:
                order = range(3) if round_index % 2 == 0 else range(2, -1, -1)
                for side in order:
                    worker, compiled = sides[side]
                    seconds = worker.ask(command="time", case=case.name, compiled=compiled, inner=inner, repeat=repeat)
                    timings[case.name][side].append(seconds)
    finally:
        baseline.close()
        candidate.close()
    rows = []
    for name, (old, plain, compiled) in timings.items():
        plain_ratios = [n / o for o, n in zip(old, plain, strict=True)]
        compiled_ratios = [n / o for o, n in zip(old, compiled, strict=True)]
        rows.append(
            (
                name,
                statistics.median(old) * 1e6,
                statistics.median(plain) * 1e6,
                statistics.median(plain_ratios),
                max(plain_ratios),
                statistics.median(compiled) * 1e6,
                statistics.median(compiled_ratios),
                max(compiled_ratios),
            )
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print the paired table (or skip when no baseline checkout is named)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        default=os.environ.get("BENCH_BASELINE_TREE"),
        help="an older checkout of this repository (default: $BENCH_BASELINE_TREE)",
    )
    parser.add_argument("--candidate-tree", type=Path, default=CANDIDATE_TREE)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--inner", type=int, default=2000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=3, help="timings per round and tree (the best is kept)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    arguments, _ = parser.parse_known_args(argv)
    if arguments.serve:
        serve()
        return
    print("\n### Conformal registry: one prediction set, candidate vs baseline tree (paired, interleaved)\n")
    if arguments.baseline_tree is None:
        print("skipped: pass --baseline-tree PATH (or set BENCH_BASELINE_TREE) to name an older checkout")
        return
    rows = paired_ratios(
        arguments.baseline_tree, arguments.candidate_tree, arguments.rounds, arguments.inner, arguments.repeat
    )
    print(
        f"baseline {arguments.baseline_tree}, candidate {arguments.candidate_tree}; {arguments.rounds} rounds "
        f"(ABBA), each the best of {arguments.repeat} x {arguments.inner} calls\n"
    )
    print("| case | baseline µs | prediction_set µs | ratio (median) | max | compiled rule µs | ratio (median) | max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, old, plain, plain_ratio, plain_high, compiled, compiled_ratio, compiled_high in rows:
        print(
            f"| {name} | {old:.2f} | {plain:.2f} | {plain_ratio:.2f} | {plain_high:.2f} | {compiled:.2f} "
            f"| {compiled_ratio:.2f} | {compiled_high:.2f} |"
        )


if __name__ == "__main__":
    if "--serve" in sys.argv:  # a worker: import the tree on PYTHONPATH, not this file's folder
        sys.path[:] = [entry for entry in sys.path if entry and Path(entry).resolve() != HERE.parent]
    main()
