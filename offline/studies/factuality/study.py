"""FRANK factuality study: partial correlations of metrics (and LLM judges) with human factuality.

=====================================================  ===============================================
call                                                   result
=====================================================  ===============================================
``baseline_tables(frank)``                             ``{metric: FactualityTables}`` for every metric
``llm_tables(items, scores, judge=, method=)``         the same tables for one LLM judge's scores
``factuality_tables(items, scores, metric=)``          the tables for any aligned score array
``faithfulness_target(0.5)``                           ``3``: the 1..5 calibration label
``calibration_split(items)``                           fit on FRANK ``valid``, evaluate on ``test``
=====================================================  ===============================================

The tables' JSON and Markdown files are written by :mod:`offline.studies.factuality.report`.

Rules (FRANK, Pagnoni et al. NAACL 2021, and its released ``evaluate.py``):

* **Partial correlation.** Metric and human score are each regressed by least squares on an intercept plus
  one-hot ``model_name`` (the summarisation system; optionally also ``dataset``), and Pearson and Spearman
  are computed on the residuals (:func:`calibration.stats.partial_correlation`; p-values from the t-test with
  ``n - 2 - k`` degrees of freedom, ``k`` = independent covariate columns). Each system belongs to one
  dataset, so adding ``dataset`` to the controls changes nothing; it is accepted for explicitness.
* **Rows.** Overall: all items; per dataset: the items of ``cnndm`` or ``bbc`` (residualised within that
  subset). Items whose metric value is missing (NaN/None: FEQA 4, Dep Entail 83 of 2,246) are dropped;
  ``n`` reports the rows used. With these rules all 2,246 rows reproduce FRANK's published numbers
  (FactCC .204/.304, BERTScore P Art .271/.243, QAGS .065/.081).
* **Per error category.** The human score is replaced by the category's column (share of the summary's
  sentences without that error; ``RelE`` is the papers' PredE), all rows.
* **Ablation (``Flip_*``).** ``Flip_<c>`` is the factuality score when errors of category ``c`` are
  ignored (it is never below ``Factuality``; ``Flip_Other`` equals ``Factuality`` on every FRANK row).
  As in FRANK's ``ablation``: ``delta = corr(metric, Factuality) - corr(metric, Flip_<c>)`` on the same rows,
  for Pearson and Spearman. A positive delta means the metric's agreement drops when ``c`` is ignored, i.e.
  the metric does pick up errors of category ``c``; near zero or negative means it does not.
* A cell whose correlation is undefined (constant scores, too few rows) is kept with ``problem`` set and no
  coefficients, so one degenerate subset does not hide the rest of a judge's table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError, UnknownMethodError
from calibration.stats import Correlation, partial_correlation
from offline.build.factuality.answers import LLM_METHODS
from offline.build.inputs.frank import (
    CATEGORY_COLUMNS,
    FRANK_DATASETS,
    Frank,
    FrankDataError,
    FrankItem,
    baseline_scores,
)

__all__ = [
    "CONTROL_FIELDS",
    "DEFAULT_CONTROLS",
    "HUMAN_TARGET",
    "AblationCell",
    "CorrelationCell",
    "FactualityTables",
    "align_scores",
    "baseline_tables",
    "correlation_cell",
    "factuality_tables",
    "human_scores",
    "llm_tables",
]

HUMAN_TARGET = "Factuality"
CONTROL_FIELDS: tuple[str, ...] = ("model_name", "dataset")
DEFAULT_CONTROLS: tuple[str, ...] = ("model_name",)


class CorrelationCell(msgspec.Struct, frozen=True, kw_only=True):
    """Partial Pearson and Spearman of a metric with one human score on one subset of items.

    ``subset`` is ``"all"`` or a dataset name; ``n`` counts items with a metric value; ``pearson`` and
    ``spearman`` are None exactly when ``problem`` says why the correlation is undefined.
    """

    target: str
    subset: str
    n: int
    pearson: Correlation | None
    spearman: Correlation | None
    problem: str | None = None


class AblationCell(msgspec.Struct, frozen=True, kw_only=True):
    """FRANK ablation for one category: correlation with Factuality minus correlation with Flip_<category>."""

    category: str
    flip_column: str
    with_errors: CorrelationCell
    errors_ignored: CorrelationCell
    delta_pearson: float | None
    delta_spearman: float | None


class FactualityTables(msgspec.Struct, frozen=True, kw_only=True):
    """One metric's partial-correlation tables: overall, per dataset, per error category, ablation."""

    metric: str
    controls: tuple[str, ...]
    overall: CorrelationCell
    per_dataset: dict[str, CorrelationCell]
    per_category: dict[str, CorrelationCell]
    ablation: dict[str, AblationCell]


def human_scores(items: Sequence[FrankItem], target: str = HUMAN_TARGET) -> np.ndarray:
    """Human score per item: ``"Factuality"``, a category column, or ``"Flip_<category>"``."""
    if target == HUMAN_TARGET:
        return np.array([item.factuality for item in items], dtype=float)
    if target in CATEGORY_COLUMNS:
        return np.array([item.categories[target] for item in items], dtype=float)
    if target.startswith("Flip_") and target.removeprefix("Flip_") in CATEGORY_COLUMNS:
        category = target.removeprefix("Flip_")
        return np.array([item.flips[category] for item in items], dtype=float)
    raise KeyError(f"unknown human score {target!r}: use Factuality, a category or Flip_<category>")


def _check_controls(controls: Sequence[str]) -> tuple[str, ...]:
    unknown = [name for name in controls if name not in CONTROL_FIELDS]
    if unknown:
        raise KeyError(f"unknown control field(s) {unknown}; allowed: {CONTROL_FIELDS}")
    return tuple(controls)


def correlation_cell(
    items: Sequence[FrankItem],
    scores: np.ndarray,
    *,
    target: str = HUMAN_TARGET,
    dataset: str | None = None,
    controls: Sequence[str] = DEFAULT_CONTROLS,
) -> CorrelationCell:
    """Partial Pearson/Spearman of ``scores`` (aligned to items, NaN = missing) with ``target`` on a subset."""
    controls = _check_controls(controls)
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (len(items),):
        raise FrankDataError(None, None, f"scores have shape {scores.shape}; expected ({len(items)},), one per item")
    if dataset is not None and dataset not in FRANK_DATASETS:
        raise KeyError(f"unknown dataset {dataset!r}; FRANK has {FRANK_DATASETS}")
    rows = [i for i, item in enumerate(items) if dataset is None or item.dataset == dataset]
    chosen = [items[i] for i in rows]
    x = scores[rows]
    y = human_scores(chosen, target)
    covariates = [[getattr(item, field) for item in chosen] for field in controls]
    subset = dataset or "all"
    n = int(np.count_nonzero(~np.isnan(x)))
    try:
        pearson_result = partial_correlation(x, y, covariates, "pearson")
        spearman_result = partial_correlation(x, y, covariates, "spearman")
    except CalibrationError as exc:
        return CorrelationCell(target=target, subset=subset, n=n, pearson=None, spearman=None, problem=str(exc))
    return CorrelationCell(
        target=target, subset=subset, n=pearson_result.n, pearson=pearson_result, spearman=spearman_result
    )


def _difference(first: Correlation | None, second: Correlation | None) -> float | None:
    return None if first is None or second is None else first.statistic - second.statistic


def factuality_tables(
    items: Sequence[FrankItem], scores: np.ndarray, *, metric: str, controls: Sequence[str] = DEFAULT_CONTROLS
) -> FactualityTables:
    """All partial-correlation tables of one metric's aligned scores (NaN = missing) against FRANK humans."""
    overall = correlation_cell(items, scores, controls=controls)
    per_dataset = {ds: correlation_cell(items, scores, dataset=ds, controls=controls) for ds in FRANK_DATASETS}
    per_category = {c: correlation_cell(items, scores, target=c, controls=controls) for c in CATEGORY_COLUMNS}
    ablation = {}
    for category in CATEGORY_COLUMNS:
        flipped = correlation_cell(items, scores, target=f"Flip_{category}", controls=controls)
        ablation[category] = AblationCell(
            category=category,
            flip_column=f"Flip_{category}",
            with_errors=overall,
            errors_ignored=flipped,
            delta_pearson=_difference(overall.pearson, flipped.pearson),
            delta_spearman=_difference(overall.spearman, flipped.spearman),
        )
    return FactualityTables(
        metric=metric,
        controls=tuple(controls),
        overall=overall,
        per_dataset=per_dataset,
        per_category=per_category,
        ablation=ablation,
    )


def baseline_tables(frank: Frank, *, controls: Sequence[str] = DEFAULT_CONTROLS) -> dict[str, FactualityTables]:
    """Tables for every metric of ``baseline_metrics.json``, keyed by its name there, in file order."""
    return {
        metric: factuality_tables(frank.items, baseline_scores(frank, metric), metric=metric, controls=controls)
        for metric in frank.metric_names
    }


def align_scores(items: Sequence[FrankItem], scores: Mapping[tuple[str, str], float | None]) -> np.ndarray:
    """Scores keyed by ``(hash, model_name)`` as an array aligned to items; absent/None -> NaN.

    Raises FrankDataError when a key names no item (a misaligned answer file must not pass silently).
    """
    index = {item.key: i for i, item in enumerate(items)}
    unknown = [key for key in scores if key not in index]
    if unknown:
        raise FrankDataError(None, None, f"{len(unknown)} score keys match no FRANK item, e.g. {unknown[0]!r}")
    aligned = np.full(len(items), np.nan)
    for key, value in scores.items():
        if value is not None:
            aligned[index[key]] = float(value)
    if np.isinf(aligned).any():
        raise FrankDataError(None, None, "scores hold an infinite value")
    return aligned


def llm_tables(
    items: Sequence[FrankItem],
    scores: Mapping[tuple[str, str], float | None],
    *,
    judge: str,
    method: str,
    controls: Sequence[str] = DEFAULT_CONTROLS,
) -> FactualityTables:
    """Tables for one LLM judge's factuality scores (method "direct" or "qa"); metric = "<judge> (<method>)"."""
    if method not in LLM_METHODS:
        raise UnknownMethodError(f"LLM factuality method must be one of {LLM_METHODS}; got {method!r}")
    return factuality_tables(items, align_scores(items, scores), metric=f"{judge} ({method})", controls=controls)
