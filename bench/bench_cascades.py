"""Judge calls per item in a cascade against the strong judge alone (run: python -m bench.bench_cascades).

=== ===================================================== =========================================================
row what is measured                                      baseline and target
=== ===================================================== =========================================================
a   a two-judge cascade (cheap -> strong) over the         the strong judge alone (1 call per item) at the same
    recorded SummEval verdicts, every stage decided by     accept_alpha; target: the cascade's error among accepted
    the certified rule of the artifact exactly as          <= accept_alpha (its guarantee) on documents the rules
    ``/v1/score`` decides it, at accept_alpha / 2; the     never saw
    strong judge is called only when the cheap one cannot
    accept: judge calls per item (mean)
=== ===================================================== =========================================================

Rules, stated once:

* **Items.** The SummEval items both judges of the pair answered, all four criteria pooled; the human label is
  the study's y* (expert mean rounded, halves up). An *error* is |y* - point| >= tolerance (tolerance 2: more than
  one label off), ``point`` being the accepting stage's calibrated label.
* **Serving.** Each verdict is served as the service serves it: the set from
  :func:`offline.validation.artifact.serve_item` (``artifact.serving.choose_entry`` + the conformal set's interval hull,
  set level 0.10 = ``DEFAULT_ALPHA``), the decision from :func:`service.scoring.cell_decision.decide_for_cell` on a
  :class:`service.artifacts.snapshot.CalibrationSnapshot` of the artifact, the verdict's kinds in the service's order
  (``probabilities`` before ``score`` when the judge gave log-probs). A cascade of S = 2 stages decides each stage at
  accept_alpha / 2 and calls the strong judge only when the cheap stage does not accept (``service.scoring.cascades``);
  judge calls per item = 1 + the share not accepted by stage 1.
* **Held-out (the rows that count).** The shipped ``artifact/thresholds.json`` has its decision rules fitted on all
  100 documents, so on the recorded data it is in-sample. The held-out rows refit the rules exactly as the shipped
  ones are fitted (:func:`offline.build.rules.export_rules`: document-level bound, the same grid) on half
  the documents (``N_SPLITS`` seeded splits by document, :func:`calibration.input_kinds.heldout.group_splits`, seed
  0), put
  them in the shipped artifact in place of its rules and serve the other half; figures are pooled over the splits. The
  conformal entries stay the shipped ones (they only decide an empty-set escalation).
* **In-sample.** The shipped artifact as it is, on every item: what the served rules do on their own data.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec
import numpy as np

from artifact.thresholds import ThresholdsArtifact, load_artifact
from bench.table import BenchRow, print_table
from calibration.input_kinds.heldout import group_splits
from offline.build.cell_data import JudgeCriterionData
from offline.build.rules import export_rules
from offline.data.paths import resolve_data_dir
from offline.validation.artifact import recorded_datasets, serve_item
from service.artifacts.snapshot import CalibrationSnapshot
from service.scoring.cell_decision import DecisionAsk, decide_for_cell
from service.scoring.policy import DecisionPolicy

ARTIFACT = Path(__file__).resolve().parents[1] / "artifact" / "thresholds.json"
PAIRS: tuple[tuple[str, str], ...] = (
    ("gpt-3.5-turbo-0301", "gpt-4o-mini-2024-07-18"),
    ("llama-2-13b-chat", "qwen2.5-72b-instruct"),
    ("gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct"),
)
ACCEPT_ALPHAS: tuple[float, ...] = (0.10, 0.20, 0.40)
TOLERANCE = 2
SET_ALPHA = 0.10  # the service's DEFAULT_ALPHA: the set's level when the request names none
N_SPLITS = 10
SEED = 0


@dataclasses.dataclass(frozen=True)
class Outcome:
    """Per item of one (pair, accept_alpha): accepted by stage 1, by stage 2, the strong judge alone; errors."""

    first: np.ndarray
    second: np.ndarray
    strong: np.ndarray
    cascade_wrong: np.ndarray
    strong_wrong: np.ndarray


def _documents(data: JudgeCriterionData) -> np.ndarray:
    return np.asarray(data.groups if data.groups is not None else [i.split("/", 1)[0] for i in data.item_ids])


def _subset(data: JudgeCriterionData, keep: np.ndarray) -> JudgeCriterionData:
    """The cell's items whose mask ``keep`` is set (every per-item array cut alike)."""
    return dataclasses.replace(
        data,
        item_ids=tuple(np.asarray(data.item_ids)[keep]),
        labels=data.labels[keep],
        judge_scores=data.judge_scores[keep],
        probabilities=None if data.probabilities is None else data.probabilities[keep],
        groups=None if data.groups is None else tuple(np.asarray(data.groups)[keep]),
        means=None if data.means is None else data.means[keep],
    )


def _decide(
    snapshot: CalibrationSnapshot, data: JudgeCriterionData, position: int, accept_alpha: float, memo: dict
) -> tuple[bool, int]:
    """(accepted, point) of one item, decided as /v1/score decides it (its served set memoised in ``memo``)."""
    cell = (data.judge, data.prompt_family, data.criterion)
    score = int(data.judge_scores[position])
    probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
    kinds = ("score",) if probabilities is None else ("probabilities", "score")
    key = (cell, position, "set")
    if key not in memo:  # the set does not depend on accept_alpha
        memo[key] = serve_item(
            snapshot.index,
            cell,
            kinds,
            SET_ALPHA,
            judge_score=score,
            probabilities=probabilities,
            n_labels=data.n_labels,
        )
    item = memo[key]
    if item.served is None or item.labels is None:  # uncalibrated: the service escalates
        return False, score
    decision = decide_for_cell(
        DecisionPolicy(),
        snapshot,
        cell=cell,
        kinds=kinds,
        served_input_kind=item.served.kind,
        alpha=item.served.alpha,
        delta=item.served.entry.fitted.delta,
        judge_score=score,
        probabilities=probabilities,
        mean=None,
        prediction_set=item.labels,
        ask=DecisionAsk(TOLERANCE, accept_alpha, None),
    )
    return decision.decision == "accept", decision.point


def _decisions(
    snapshot: CalibrationSnapshot, data: JudgeCriterionData, positions: np.ndarray, accept_alpha: float, memo: dict
) -> tuple[np.ndarray, np.ndarray]:
    """(accepted, point) of the cell's items at ``positions`` (``_decide``, memoised per snapshot in ``memo``:
    the same verdict at the same level is the same call)."""
    cell = (data.judge, data.prompt_family, data.criterion)
    accepted = np.zeros(positions.size, dtype=bool)
    points = np.zeros(positions.size, dtype=np.int64)
    for out, position in enumerate(positions.tolist()):
        key = (cell, position, accept_alpha)
        if key not in memo:
            memo[key] = _decide(snapshot, data, position, accept_alpha, memo)
        accepted[out], points[out] = memo[key]
    return accepted, points


def _pair_cells(
    datasets: Sequence[JudgeCriterionData], cheap: str, strong: str
) -> list[tuple[JudgeCriterionData, JudgeCriterionData, np.ndarray, np.ndarray]]:
    """Per criterion: (cheap cell, strong cell, positions of the common items in each), in item order."""
    out = []
    for first in (d for d in datasets if d.judge == cheap):
        second = next(d for d in datasets if d.judge == strong and d.criterion == first.criterion)
        common = sorted(set(first.item_ids) & set(second.item_ids))
        where_first = {item: i for i, item in enumerate(first.item_ids)}
        where_second = {item: i for i, item in enumerate(second.item_ids)}
        out.append(
            (first, second, np.array([where_first[i] for i in common]), np.array([where_second[i] for i in common]))
        )
    return out


def _outcome(
    snapshot: CalibrationSnapshot, cells: list, documents: np.ndarray | None, accept_alpha: float, memo: dict
) -> Outcome:
    """The cascade (stage level accept_alpha / 2) and the strong judge alone on the cells' items in ``documents``
    (``memo``: the snapshot's decisions already made)."""
    parts: list[list[np.ndarray]] = [[], [], [], [], []]
    for first, second, at_first, at_second in cells:
        if documents is not None:
            keep = np.isin(_documents(first)[at_first], documents)
            at_first, at_second = at_first[keep], at_second[keep]
        labels = second.labels[at_second]
        one, one_point = _decisions(snapshot, first, at_first, accept_alpha / 2, memo)
        two, two_point = _decisions(snapshot, second, at_second, accept_alpha / 2, memo)
        alone, alone_point = _decisions(snapshot, second, at_second, accept_alpha, memo)
        two = two & ~one  # stage 2 decides only what stage 1 passed on
        point = np.where(one, one_point, two_point)
        for bucket, values in zip(
            parts,
            (one, two, alone, np.abs(labels - point) >= TOLERANCE, np.abs(labels - alone_point) >= TOLERANCE),
            strict=True,
        ):
            bucket.append(values)
    return Outcome(*(np.concatenate(p) for p in parts))


def _with_rules(
    artifact: ThresholdsArtifact, datasets: Sequence[JudgeCriterionData], documents: np.ndarray
) -> CalibrationSnapshot:
    """The shipped artifact with its decision rules refitted (as shipped) on ``documents`` only."""
    calibration = [_subset(d, np.isin(_documents(d), documents)) for d in datasets]
    refitted = msgspec.structs.replace(artifact, decision_rules=export_rules(calibration, seed=SEED))
    return CalibrationSnapshot.build(refitted, path="bench", loaded_at="bench")


def _merge(outcomes: Sequence[Outcome]) -> Outcome:
    return Outcome(*(np.concatenate([getattr(o, f.name) for o in outcomes]) for f in dataclasses.fields(Outcome)))


def _error(wrong: np.ndarray, accepted: np.ndarray) -> float | None:
    return float(wrong[accepted].mean()) if accepted.any() else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def bench_cascades() -> tuple[list[BenchRow], list[str]]:
    """Row a (module docstring), plus the detail lines: calls, accept share and error among accepted."""
    started = time.perf_counter()
    datasets = recorded_datasets(resolve_data_dir(None))
    artifact = load_artifact(ARTIFACT)
    judges = {judge for pair in PAIRS for judge in pair}
    datasets = [d for d in datasets if d.judge in judges]
    all_documents = np.unique(np.concatenate([_documents(d) for d in datasets]))
    splits = group_splits(all_documents, n_splits=N_SPLITS, seed=SEED, cal_fraction=0.5)
    snapshots = [
        (_with_rules(artifact, datasets, all_documents[s.calibration]), all_documents[s.test], {}) for s in splits
    ]
    shipped = CalibrationSnapshot.build(artifact, path=str(ARTIFACT), loaded_at="bench")
    shipped_memo: dict = {}
    rows, lines = [], []
    header = (
        "| pair (cheap -> strong) | rules | items served | accept_alpha | cascade: judge calls per item | "
        "cascade: accept share | cascade: error among accepted | strong alone: accept share | "
        "strong alone: error among accepted |"
    )
    lines += [
        f"(a) tolerance {TOLERANCE}; the four criteria pooled; held-out items are counted once per split that "
        "serves them",
        "",
        header,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cheap, strong in PAIRS:
        cells = _pair_cells(datasets, cheap, strong)
        for accept_alpha in ACCEPT_ALPHAS:
            for rules, outcome in (
                (
                    f"held-out ({N_SPLITS} splits, 50 documents)",
                    _merge([_outcome(s, cells, test, accept_alpha, memo) for s, test, memo in snapshots]),
                ),
                ("shipped (in-sample)", _outcome(shipped, cells, None, accept_alpha, shipped_memo)),
            ):
                cascade = outcome.first | outcome.second
                calls = 1.0 + float((~outcome.first).mean())
                error, alone_error = (
                    _error(outcome.cascade_wrong, cascade),
                    _error(outcome.strong_wrong, outcome.strong),
                )
                lines.append(
                    f"| {cheap} -> {strong} | {rules} | {cascade.size} | {accept_alpha:g} | {calls:.3f} | "
                    f"{cascade.mean():.3f} | {_fmt(error)} | {outcome.strong.mean():.3f} | "
                    f"{_fmt(alone_error)} |"
                )
                if rules.startswith("held-out"):
                    rows.append(
                        BenchRow(
                            name=f"(a) {cheap} -> {strong}, accept_alpha {accept_alpha:g}: judge calls per item "
                            f"(accepts {cascade.mean():.1%}, error among accepted {_fmt(error)})",
                            ours=calls,
                            baseline_name=f"{strong} alone (accepts {outcome.strong.mean():.1%}, error "
                            f"{_fmt(alone_error)})",
                            baseline=1.0,
                            unit="calls",
                            target=f"error among accepted <= {accept_alpha:g}",
                            met=error is None or error <= accept_alpha + 1e-12,
                        )
                    )
    lines.insert(0, f"(a) seconds in all (loading the recorded answers included): {time.perf_counter() - started:.0f}")
    return rows, lines


def main() -> None:
    """Print the cascade table and its detail."""
    rows, lines = bench_cascades()
    print_table("Cascades: judge calls per item (service.scoring.cascades rule, certified decisions)", rows)
    for line in lines:
        print(line if line.startswith("|") or not line else f"- {line}")


if __name__ == "__main__":
    main()
