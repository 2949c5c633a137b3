"""The promise checked the way a new user meets it: fit on half of the documents, serve the other half.

``python -m offline halves [--data-dir D] [--out reports] [--splits 20] [--seed 0]``: the SummEval documents
(sorted ids) are permuted with ``numpy.random.default_rng(seed)`` and cut in two halves. For each half, the
artifact is built exactly as ``make calibrate`` builds it (:func:`offline.studies.conformal.validity.run_validity_study`
then :func:`offline.build.export.build_artifact`) from that half's items only, and validated on the *other* half's
items with :func:`offline.validation.artifact.serve_cells` (the validator's cells, every item served once as the service
serves it; the certified-decision checks are not part of this check). Both ways. The checks, for every judge x
criterion x input (score alone; log-probs alone) x alpha in {0.05, 0.10, 0.20}:

1. coverage on the unseen half >= 1 - alpha - 0.02;
2. coverage >= 1 - alpha in at least 90% of them (what delta = 0.05 promises, with room for the correlation of
   items within a document);
3. no empty set is answered ``accept`` (the service's rule escalates them);
4. sending log-probs beside the score never gives a larger mean set than the score alone (per cell and alpha) by
   more than ``SIZE_NOISE`` = 0.1 labels: the service serves the kind whose *held-out* mean set is smaller on the
   fitting half, so the rule holds exactly on that estimate; on the other half the two kinds' sizes differ by
   sampling noise of about that size (50 documents).

``mean_set_size_ci``: the 95% interval of each row's mean set size with the unseen half's documents as the unit,
a percentile bootstrap of the pooled mean over documents (:func:`calibration.unit_bootstrap.ratio_interval`, 2,000
draws, ``default_rng(seed)``) on the served set sizes per document that the validator reports beside each cell
from its one serving pass (:func:`offline.validation.artifact.serve_cells`).

Writes ``conformal/halves.json`` and ``conformal/halves.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import msgspec
import numpy as np

from artifact.thresholds import ThresholdIndex
from calibration.unit_bootstrap import UnitInterval, ratio_interval
from offline.build.cell_data import JudgeCriterionData
from offline.build.export import build_artifact
from offline.jsonfile import write_json
from offline.studies.conformal.validity import DEFAULT_DELTA, run_validity_study
from offline.validation.artifact import DocumentSizes, ServedCell, serve_cells

__all__ = ["HalvesReport", "HalvesRow", "check_halves", "size_interval", "split_documents", "subset", "write_halves"]

CHECK_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)
SLACK = 0.02
SHARE_AT_TARGET = 0.90
SIZE_NOISE = 0.10


class HalvesRow(msgspec.Struct, frozen=True, kw_only=True):
    """One validated (fit half, judge, criterion, input, alpha)."""

    fit_half: int
    judge: str
    criterion: str
    input: str
    alpha: float
    method: str | None
    kind: str | None
    n: int
    coverage: float | None
    mean_set_size: float | None
    empty_sets: int
    empty_accepted: int
    mean_set_size_ci: list[float] | None = None  # over the unseen half's documents (module rules)
    n_documents: int | None = None


class HalvesReport(msgspec.Struct, frozen=True, kw_only=True):
    """The rows and the four checks of the module docstring."""

    seed: int
    n_splits: int
    delta: float | None
    n_documents: list[int]
    rows: list[HalvesRow]
    n_checked: int
    n_below_floor: int
    share_at_target: float
    n_empty_accepted: int
    n_logprobs_larger: int
    logprobs_larger: list[str]
    passed: bool


def split_documents(datasets: Sequence[JudgeCriterionData], seed: int) -> tuple[set[str], set[str]]:
    """The documents (groups) of all datasets, sorted, permuted with default_rng(seed), cut in two halves."""
    documents = sorted({g for data in datasets for g in (data.groups or ())})
    order = np.random.default_rng(seed).permutation(len(documents))
    half = len(documents) // 2
    return {documents[i] for i in order[:half]}, {documents[i] for i in order[half:]}


def subset(data: JudgeCriterionData, documents: set[str]) -> JudgeCriterionData | None:
    """The items of ``data`` whose group is in ``documents`` (None when there are none)."""
    assert data.groups is not None
    keep = np.array([g in documents for g in data.groups])
    if not keep.any():
        return None
    return replace(
        data,
        item_ids=tuple(i for i, k in zip(data.item_ids, keep, strict=True) if k),
        labels=data.labels[keep],
        judge_scores=data.judge_scores[keep],
        probabilities=None if data.probabilities is None else data.probabilities[keep],
        n_answered=int(keep.sum()),
        n_excluded=0,
        groups=tuple(g for g, k in zip(data.groups, keep, strict=True) if k),
    )


def size_interval(sizes: DocumentSizes | None, seed: int) -> UnitInterval | None:
    """The mean served set size over a cell's documents and its 95% interval with documents resampled whole; None
    when no item is served (module rules)."""
    if sizes is None or not sizes.documents:
        return None
    return ratio_interval(sizes.set_sizes, sizes.items, seed=seed)


def check_halves(
    datasets: Sequence[JudgeCriterionData],
    *,
    seed: int = 0,
    n_splits: int = 20,
    delta: float | None = DEFAULT_DELTA,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> HalvesReport:
    """Fit on each half of the documents, validate on the other (module rules)."""
    halves = split_documents(datasets, seed)
    rows: list[HalvesRow] = []
    cells: list[tuple[int, ServedCell]] = []
    for fit_half, (fit_docs, test_docs) in enumerate(((halves[0], halves[1]), (halves[1], halves[0]))):
        fit_data = [d for d in (subset(x, fit_docs) for x in datasets) if d is not None]
        test_data = [d for d in (subset(x, test_docs) for x in datasets) if d is not None]
        _, fits = run_validity_study(fit_data, n_splits=n_splits, seed=seed, delta=delta, progress=progress)
        artifact = build_artifact(data_hash="halves", code_version="halves", created_at="halves", fits=fits)
        served = serve_cells(ThresholdIndex(artifact), test_data, alphas=CHECK_ALPHAS)
        cells.extend((fit_half, s) for s in served)
    for fit_half, served_cell in cells:
        c, size_ci = served_cell.cell, size_interval(served_cell.sizes, seed)
        empty_accepted = 0  # the decision rule escalates every empty set (calibration.input_kinds.fit.decision_shares)
        rows.append(
            HalvesRow(
                fit_half=fit_half,
                judge=c.judge,
                criterion=c.criterion,
                input=c.input,
                alpha=c.alpha,
                method=c.method,
                kind=c.kind,
                n=c.n,
                coverage=c.coverage,
                mean_set_size=c.mean_set_size,
                empty_sets=c.empty_sets,
                empty_accepted=empty_accepted,
                mean_set_size_ci=None if size_ci is None else size_ci.bounds,
                n_documents=None if size_ci is None else size_ci.n_units,
            )
        )
    checked = [r for r in rows if r.input in ("score", "logprobs", "mean") and r.coverage is not None]
    below = [r for r in checked if r.coverage < 1 - r.alpha - SLACK - 1e-12]  # type: ignore[operator]
    at_target = [r for r in checked if r.coverage >= 1 - r.alpha - 1e-12]  # type: ignore[operator]
    by_key = {(r.fit_half, r.judge, r.criterion, r.input, r.alpha): r for r in rows}
    larger = []
    for r in rows:
        if r.input != "score+logprobs" or r.mean_set_size is None:
            continue
        alone = by_key.get((r.fit_half, r.judge, r.criterion, "score", r.alpha))
        if alone is not None and alone.mean_set_size is not None and r.mean_set_size > alone.mean_set_size + SIZE_NOISE:
            larger.append(
                f"half {r.fit_half}: {r.judge} {r.criterion} alpha={r.alpha}: "
                f"{r.mean_set_size:.3f} > {alone.mean_set_size:.3f}"
            )
    share = len(at_target) / len(checked) if checked else 0.0
    empty_accepted = sum(r.empty_accepted for r in rows)
    return HalvesReport(
        seed=seed,
        n_splits=n_splits,
        delta=delta,
        n_documents=[len(halves[0]), len(halves[1])],
        rows=rows,
        n_checked=len(checked),
        n_below_floor=len(below),
        share_at_target=share,
        n_empty_accepted=empty_accepted,
        n_logprobs_larger=len(larger),
        logprobs_larger=larger,
        passed=not below and share >= SHARE_AT_TARGET and not empty_accepted and not larger,
    )


def markdown(report: HalvesReport) -> str:
    """The checks, then every row."""
    lines = [
        "# Fit on half of the documents, serve the other half (both ways)",
        "",
        f"Documents per half: {report.n_documents}; PAC delta = {report.delta}; seed {report.seed}; "
        f"{report.n_splits} splits by document inside each fit.",
        "",
        f"- cells checked (judge x criterion x input x alpha x half): {report.n_checked}",
        f"- coverage below 1 - alpha - {SLACK}: **{report.n_below_floor}**",
        f"- coverage >= 1 - alpha: **{report.share_at_target:.1%}** (required >= {SHARE_AT_TARGET:.0%})",
        f"- empty sets answered accept: **{report.n_empty_accepted}**",
        f"- log-probs beside the score giving a mean set larger than the score alone's by > {SIZE_NOISE}: "
        f"**{report.n_logprobs_larger}**",
        f"- all checks passed: **{'yes' if report.passed else 'no'}**",
        "",
        f"Set size: mean over the unseen half's items, 95% CI a bootstrap over its documents (seed {report.seed}).",
        "",
        "| fit half | judge | criterion | input | alpha | served by | n | coverage | set size | 95% CI | empty sets |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        served = "uncalibrated" if r.kind is None else f"{r.kind} / {r.method}"
        coverage = "n/a" if r.coverage is None else f"{r.coverage:.3f}"
        size = "n/a" if r.mean_set_size is None else f"{r.mean_set_size:.2f}"
        size_ci = "" if not r.mean_set_size_ci else f"[{r.mean_set_size_ci[0]:.2f}, {r.mean_set_size_ci[1]:.2f}]"
        lines.append(
            f"| {r.fit_half} | {r.judge} | {r.criterion} | {r.input} | {r.alpha} | {served} | {r.n} | "
            f"{coverage} | {size} | {size_ci} | {r.empty_sets} |"
        )
    return "\n".join(lines) + "\n"


def write_halves(report: HalvesReport, out: Path) -> tuple[Path, Path]:
    """Write ``conformal/halves.json`` and ``conformal/halves.md`` under ``out``."""
    folder = out / "conformal"
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "halves.json", folder / "halves.md"
    write_json(report, json_path)
    md_path.write_text(markdown(report))
    return json_path, md_path
