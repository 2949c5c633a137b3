"""``POST /v1/estimates`` and ``/v1/estimates/batch``: request checks, then ``calibration.estimates`` as it is.

=========================== ==================================================================================
metric                      what is estimated (``calibration.estimates``)
=========================== ==================================================================================
``mean``                    mean human score on ``scale_min..scale_max`` (``estimate_mean``)
``pass_rate``               share of items whose human score is >= ``threshold`` (``estimate_pass_rate``)
``win_rate``                mean pairwise outcome, each value 1 (win), 0.5 (tie) or 0 (loss) (``estimate_win_rate``)
``difference``              this system minus ``versus`` on the metric ``of`` (default ``mean``): each system at
                            alpha / 2, combined by ``estimate_difference`` (union bound)
=========================== ==================================================================================

Refused with a 422 ``invalid-request`` naming the field: a human list and a judge list of different lengths, a
value off the scale (or not 0 / 0.5 / 1 for ``win_rate``), a missing or off-scale ``threshold``, ``threshold`` or
``of`` or ``versus`` where the metric does not use them, ``scale_min >= scale_max``, and more values in the request
than ``MAX_ESTIMATE_VALUES`` (checked before any work). The statistics' own refusals (``CalibrationError``) are 422
``calibration-error``. In the batch form each system's refusal is its own result; the request-level ones (options,
the total size) refuse the whole batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from calibration.estimates import (
    EstimateAnswer,
    Sample,
    estimate_difference,
    estimate_mean,
    estimate_pass_rate,
    estimate_win_rate,
)
from service.config.limits import LimitSettings
from service.errors import InvalidRequestError, problem_from_exception
from service.wire.estimates import (
    EstimateBatchItem,
    EstimateBatchRequest,
    EstimateBatchResponse,
    EstimateRequest,
    EstimateResult,
    LabelBudgetAnswer,
    SystemSample,
    VersusSample,
)

__all__ = ["estimate", "estimate_batch", "estimate_system"]

Options = EstimateRequest | EstimateBatchRequest
Samples = EstimateRequest | SystemSample | VersusSample
_WIN_VALUES = (0.0, 0.5, 1.0)


def _value_count(sample: Samples) -> int:
    count = len(sample.human) + len(sample.judge) + len(sample.judge_unlabelled)
    versus = getattr(sample, "versus", None)
    return count + (_value_count(versus) if versus is not None else 0)


def _check_size(samples: Sequence[Samples], limits: LimitSettings) -> None:
    total = sum(_value_count(sample) for sample in samples)
    if total > limits.max_estimate_values:
        raise InvalidRequestError(f"the request holds {total} values (human labels and judge verdicts, every "
                                  f"system); the limit is MAX_ESTIMATE_VALUES={limits.max_estimate_values}")


def _check_options(options: Options) -> str:
    """The base metric after checking the options that do not depend on a system's data."""
    base = _base(options)
    if options.metric != "difference" and options.of is not None:
        raise InvalidRequestError(f"'of' names the metric of a difference; metric {options.metric!r} takes none")
    if options.scale_min >= options.scale_max:
        raise InvalidRequestError(f"scale_min ({options.scale_min}) must be below scale_max ({options.scale_max})")
    if base == "pass_rate":
        if options.threshold is None:
            raise InvalidRequestError("pass_rate needs 'threshold' (an item passes when its score is >= threshold)")
        if not options.scale_min < options.threshold <= options.scale_max:
            raise InvalidRequestError(f"threshold {options.threshold} must lie in ({options.scale_min}, "
                                      f"{options.scale_max}]: otherwise every item passes or none does")
    elif options.threshold is not None:
        raise InvalidRequestError(f"'threshold' belongs to pass_rate; metric {base!r} takes none")
    return base


def _base(options: Options) -> str:
    """The metric each system's samples are estimated on (a difference's ``of``, default mean)."""
    return (options.of or "mean") if options.metric == "difference" else options.metric


def _check_sample(sample: Samples, base: str, options: Options, where: str) -> Sample:
    if len(sample.human) != len(sample.judge):
        raise InvalidRequestError(f"{where}human and {where}judge must be aligned (one judge verdict per human "
                                  f"label), got {len(sample.human)} and {len(sample.judge)} values")
    for field in ("human", "judge", "judge_unlabelled"):
        values = np.asarray(getattr(sample, field), dtype=float)
        if base == "win_rate":
            bad = ~np.isin(values, _WIN_VALUES)
            rule = "must be 1 (win), 0.5 (tie) or 0 (loss)"
        else:
            bad = (values < options.scale_min) | (values > options.scale_max)
            rule = f"must lie on the scale {options.scale_min}..{options.scale_max}"
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise InvalidRequestError(f"{where}{field}[{index}] = {values[index]:g}: values {rule}")
    return Sample(human=sample.human, judge=sample.judge, judge_unlabelled=sample.judge_unlabelled)


def _answer(base: str, sample: Sample, options: Options, alpha: float) -> EstimateAnswer:
    width = options.target_half_width
    if base == "mean":
        return estimate_mean(sample, alpha, scale_min=options.scale_min, scale_max=options.scale_max,
                             target_half_width=width)
    if base == "pass_rate":
        assert options.threshold is not None  # _check_options
        return estimate_pass_rate(sample, alpha, options.threshold, target_half_width=width)
    return estimate_win_rate(sample, alpha, target_half_width=width)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _result(answer: EstimateAnswer, name: str | None, of: str | None) -> EstimateResult:
    budget = answer.label_budget
    return EstimateResult(
        name=name, metric=answer.metric, of=of, alpha=answer.alpha, estimate=answer.estimate,
        interval=answer.interval, method=answer.method, switch_reason=answer.switch_reason,
        switch_rule=answer.switch_rule, human_only_interval=answer.human_only_interval,
        human_only_method=answer.human_only_method, gain=_finite(answer.effective_sample_gain),
        n_labelled=answer.n_labelled, n_unlabelled=answer.n_unlabelled, lam=_finite(answer.lam),
        label_budget=None if budget is None else LabelBudgetAnswer(**msgspec.structs.asdict(budget)),
        ppi_interval=answer.ppi_interval, betting_interval=answer.betting_interval,
        classical_interval=answer.classical_interval,
    )


def estimate_system(options: Options, system: EstimateRequest | SystemSample) -> EstimateResult:
    """One system's answer under ``options`` (the options already checked by ``_check_options``)."""
    base = _base(options)
    if options.metric != "difference":
        if system.versus is not None:
            raise InvalidRequestError(f"'versus' is the second system of a difference; metric {options.metric!r} "
                                      "takes none")
        answer = _answer(base, _check_sample(system, base, options, ""), options, options.alpha)
        return _result(answer, system.name, None)
    if system.versus is None:
        raise InvalidRequestError("metric 'difference' needs 'versus': the samples of the system to subtract")
    first = _answer(base, _check_sample(system, base, options, ""), options, options.alpha / 2)
    second = _answer(base, _check_sample(system.versus, base, options, "versus."), options, options.alpha / 2)
    return _result(estimate_difference(first, second), system.name, base)


def estimate(request: EstimateRequest, limits: LimitSettings) -> EstimateResult:
    """The answer of ``POST /v1/estimates``: one system (422 problem on bad input)."""
    _check_size([request], limits)
    _check_options(request)
    return estimate_system(request, request)


def estimate_batch(request: EstimateBatchRequest, limits: LimitSettings, *, path: str = "/v1/estimates/batch",
                   logger: Any = None) -> EstimateBatchResponse:
    """The answer of ``POST /v1/estimates/batch``: every system answered or refused on its own, in input order."""
    _check_size(request.systems, limits)
    _check_options(request)
    results = []
    for index, system in enumerate(request.systems):
        try:
            result = estimate_system(request, system)
        except Exception as error:  # each system's failure stays with it; the problem mapping decides the status
            problem, _ = problem_from_exception(error, instance=f"{path}#/systems/{index}")
            if problem.status >= 500 and logger is not None:
                logger.error("estimates.system_failed", exc_info=error, index=index, problem=problem.type)
            results.append(EstimateBatchItem(index=index, name=system.name, ok=False, error=problem))
        else:
            results.append(EstimateBatchItem(index=index, name=system.name, ok=True, result=result))
    n_ok = sum(1 for item in results if item.ok)
    return EstimateBatchResponse(results=results, n_ok=n_ok, n_failed=len(results) - n_ok)
