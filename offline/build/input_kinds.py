"""Every served (judge, prompt family, criterion) x input kind fitted by document: the artifact's SummEval entries.

Rules (:mod:`calibration.input_kinds.fit`; the held-out figures are summarised by the validity study,
:mod:`offline.studies.conformal.validity`):

* **Input kinds.** A cell with log-probs on every item is fitted twice: on the integer score alone (``score``) and
  on the probabilities (``probabilities``); a cell without them only on ``score``; a mean-of-samples judge only on
  ``mean`` (:mod:`calibration.input_kinds.verdicts`).
* **Groups.** Splits keep every SummEval document (its 16 summaries) on one side.
* **Thresholds.** PAC at ``delta``: with probability >= 1 - delta over the calibration data the served artifact
  covers >= 1 - alpha; ``delta`` None gives the expected mode's thresholds (:mod:`offline.build.modes`).
* **Levels.** :data:`offline.build.modes.ALPHA_GRID`; evidence at ``REPORT_ALPHAS`` and ``HEADLINE_ALPHA``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from artifact.input_kinds import FitKey
from calibration.input_kinds.fit import InputKindFit, KindData, cell_kind_data, fit_input_kind
from offline.build.cell_data import JudgeCriterionData
from offline.build.modes import ALPHA_GRID, DEFAULT_DELTA, HEADLINE_ALPHA, REPORT_ALPHAS

__all__ = ["fit_input_kinds", "kind_data"]


def kind_data(data: JudgeCriterionData, groups: Sequence[str]) -> list[KindData]:
    """The cell's items as verdicts of every kind it supports (score; probabilities when every item has them; a
    mean-of-samples judge: mean only)."""
    return cell_kind_data(data.labels, data.judge_scores, data.probabilities, data.means, groups, data.n_labels)


def fit_input_kinds(
    datasets: Sequence[JudgeCriterionData],
    *,
    n_splits: int = 20,
    seed: int = 0,
    delta: float | None = DEFAULT_DELTA,
    alphas: Sequence[float] = ALPHA_GRID,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> dict[FitKey, InputKindFit]:
    """Every (cell, kind) fitted with :func:`calibration.input_kinds.fit.fit_input_kind`, keyed (judge, prompt family,
    criterion, kind), in the order of ``datasets`` and their kinds."""
    tasks = [(data, kd) for data in datasets for kd in kind_data(data, data.documents)]
    fits: dict[FitKey, InputKindFit] = {}
    for data, kd in progress(tasks) if progress is not None else tasks:
        fits[(data.judge, data.prompt_family, data.criterion, kd.kind)] = fit_input_kind(
            kd,
            alphas=alphas,
            delta=delta,
            headline_alpha=HEADLINE_ALPHA,
            report_alphas=REPORT_ALPHAS,
            n_splits=n_splits,
            seed=seed,
        )
    return fits
