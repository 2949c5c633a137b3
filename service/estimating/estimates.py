"""``POST /v1/estimates``: the form of the request, its checks, then ``calibration.estimates.system`` as it is.

The form and the checks between fields are :mod:`service.estimating.estimate_request`; the rules, for both, here.

=========================== ==================================================================================
metric                      what is estimated (``calibration.estimates.system``)
=========================== ==================================================================================
``mean``                    mean human score on ``scale_min..scale_max`` (``estimate_mean``)
``pass_rate``               share of items whose human score is >= ``threshold`` (``estimate_pass_rate``)
``win_rate``                mean pairwise outcome, each value 1 (win), 0.5 (tie) or 0 (loss) (``estimate_win_rate``)
``difference``              system ``a`` minus system ``b`` on the metric ``of`` (default ``mean``): each system at
                            alpha / 2, combined by ``estimate_difference`` (union bound)
=========================== ==================================================================================

One body, three forms, exactly one per request: ``labelled`` + ``unlabelled`` (one system), ``a`` + ``b`` (a
difference) or ``systems`` (a batch: name -> a single or difference body; an option a system leaves out takes the
top-level value). Refused with a 422 ``invalid-request`` naming the field: fields of two forms or of none, a form's
field without its partner, ``a``/``b`` without metric ``difference`` (or a difference without them), a value off
the scale (or not 0 / 0.5 / 1 for ``win_rate``), a missing or off-scale ``threshold``, ``threshold`` or ``of``
where the metric does not use them, ``scale_min >= scale_max``, and more values in the request than
``MAX_ESTIMATE_VALUES`` (a labelled item counts two, an unlabelled one; every system; checked before any work).
The statistics' own refusals (``CalibrationError``) are 422 ``calibration-error``. In the batch form each system's
refusal (its data or its own options) is its answer ``{"error": problem}``; a body that mixes forms or holds too
many values refuses the whole request.

A job may stand in for a system's samples (one system, ``a``, ``b``, or a batch system): ``job`` with ``labelled``
items ``{id, human}`` and no ``unlabelled``. ``service.estimating.job_samples`` reads the job's results before
:func:`estimate` runs and hands each such system its ``JobSample`` by place; here the form rules refuse ``judge`` or
``id`` where they do not belong, and ``judge_value`` / ``criterion`` on a body that names no job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import msgspec
import numpy as np

from calibration.estimates.system import (
    EstimateAnswer,
    Sample,
    estimate_difference,
    estimate_mean,
    estimate_pass_rate,
    estimate_win_rate,
)
from service.config.limits import LimitSettings
from service.errors import InvalidRequestError, problem_from_exception
from service.estimating.estimate_request import (
    SampleOptions,
    check_explicit_items,
    check_job_fields,
    check_job_options,
    check_options,
    check_size,
    request_form,
    system_options,
)
from service.observability.logging import EventLogger
from service.wire.estimates import (
    EstimateBatchResponse,
    EstimateRequest,
    EstimateResult,
    JobSampleUse,
    LabelBudgetAnswer,
    SystemEstimate,
    SystemEstimateRequest,
    SystemFailure,
    SystemSamples,
)

__all__ = ["JobSample", "JobSamples", "estimate", "estimate_system"]

_WIN_VALUES = (0.0, 0.5, 1.0)


class JobSample(msgspec.Struct, frozen=True, kw_only=True):
    """One system's samples read from a job (``service.estimating.job_samples``) and how they were read."""

    sample: Sample
    use: JobSampleUse


# Samples read from jobs by place: (batch system name or None, "a" / "b" or None) -> the samples, or the problem
# that refused them (raised when that system is answered, so a batch system fails alone).
JobSamples = Mapping[tuple[str | None, str | None], JobSample | Exception]


def _sample(
    samples: SystemSamples, options: SampleOptions, where: str, read: JobSample | Exception | None = None
) -> tuple[Sample, JobSampleUse | None]:
    """The calibration Sample of ``{labelled, unlabelled}`` (or of the job read for them) after checking every
    value against the metric; with how the job was read."""
    human = [item.human for item in samples.labelled]
    if samples.job is not None:
        if isinstance(read, Exception):
            raise read
        assert read is not None, "the job samples are read before estimate() (job_samples.read_job_samples)"
        _check_values([("labelled", "human", human)], options, where)  # the job's values: checked as read
        return read.sample, read.use
    check_explicit_items(samples.labelled, where)
    judge = [float(item.judge or 0.0) for item in samples.labelled]  # every judge given (check_explicit_items)
    assert samples.unlabelled is not None  # request_form
    judge_unlabelled = [item.judge for item in samples.unlabelled]
    _check_values(
        [("labelled", "human", human), ("labelled", "judge", judge), ("unlabelled", "judge", judge_unlabelled)],
        options,
        where,
    )
    return Sample(human=human, judge=judge, judge_unlabelled=judge_unlabelled), None


def _check_values(lists: list[tuple[str, str, list[float]]], options: SampleOptions, where: str) -> None:
    """Every value on the scale (or 0 / 0.5 / 1 for win_rate); 422 naming the first one off it."""
    for field, key, listed in lists:
        values = np.asarray(listed, dtype=float)
        if options.base == "win_rate":
            bad = ~np.isin(values, _WIN_VALUES)
            rule = "must be 1 (win), 0.5 (tie) or 0 (loss)"
        else:
            bad = (values < options.scale_min) | (values > options.scale_max)
            rule = f"must lie on the scale {options.scale_min}..{options.scale_max}"
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise InvalidRequestError(f"{where}{field}[{index}].{key} = {values[index]:g}: values {rule}")


def _answer(sample: Sample, options: SampleOptions, alpha: float) -> EstimateAnswer:
    width = options.target_half_width
    if options.base == "mean":
        return estimate_mean(
            sample, alpha, scale_min=options.scale_min, scale_max=options.scale_max, target_half_width=width
        )
    if options.base == "pass_rate":
        assert options.threshold is not None  # check_options
        return estimate_pass_rate(sample, alpha, options.threshold, target_half_width=width)
    return estimate_win_rate(sample, alpha, target_half_width=width)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _result(
    answer: EstimateAnswer, of: str | None, kind: type[EstimateResult], uses: list[JobSampleUse | None]
) -> EstimateResult:
    budget = answer.label_budget
    jobs = [use for use in uses if use is not None]
    return kind(
        estimate=answer.estimate,
        interval=answer.interval,
        method=answer.method,
        human_only_interval=answer.human_only_interval,
        effective_sample_gain=_finite(answer.effective_sample_gain),
        n_labelled=answer.n_labelled,
        n_unlabelled=answer.n_unlabelled,
        metric=answer.metric,
        of=of,
        alpha=answer.alpha,
        switch_reason=answer.switch_reason,
        switch_rule=answer.switch_rule,
        human_only_method=answer.human_only_method,
        lam=_finite(answer.lam),
        label_budget=None if budget is None else LabelBudgetAnswer(**msgspec.structs.asdict(budget)),
        ppi_interval=answer.ppi_interval,
        betting_interval=answer.betting_interval,
        classical_interval=answer.classical_interval,
        jobs=jobs or None,
        served_gain=_finite(answer.served_gain),
        gain_note=answer.gain_note,
    )


def estimate_system(
    body: EstimateRequest | SystemEstimateRequest,
    options: SampleOptions,
    where: str = "",
    *,
    kind: type[EstimateResult] = EstimateResult,
    jobs: JobSamples | None = None,
    system: str | None = None,
) -> EstimateResult:
    """One system's (or one difference's) answer under ``options`` as ``kind`` (422 problem on bad input);
    ``jobs``: the samples read from jobs, ``system`` the batch system's name (their place)."""
    form = request_form(body, where)
    check_options(options, form, where)
    check_job_options(body, where)
    read = jobs or {}
    if form == "single":
        assert body.labelled is not None  # request_form
        samples = SystemSamples(labelled=body.labelled, unlabelled=body.unlabelled, job=body.job)
        sample, use = _sample(samples, options, where, read.get((system, None)))
        return _result(_answer(sample, options, options.alpha), None, kind, [use])
    assert body.a is not None and body.b is not None  # request_form
    for name, pair in (("a", body.a), ("b", body.b)):
        if pair.job is None and pair.unlabelled is None:
            raise InvalidRequestError(
                f"{where}{name}: 'labelled' needs 'unlabelled' (or 'job', to read them from a job)"
            )
        check_job_fields(pair, f"{where}{name}.")
    sample_a, use_a = _sample(body.a, options, f"{where}a.", read.get((system, "a")))
    sample_b, use_b = _sample(body.b, options, f"{where}b.", read.get((system, "b")))
    first = _answer(sample_a, options, options.alpha / 2)
    second = _answer(sample_b, options, options.alpha / 2)
    return _result(estimate_difference(first, second), options.base, kind, [use_a, use_b])


def _pointer(name: str) -> str:
    """``name`` as a JSON Pointer reference token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return name.replace("~", "~0").replace("/", "~1")


def _batch(
    request: EstimateRequest, path: str, logger: EventLogger | None, jobs: JobSamples | None
) -> EstimateBatchResponse:
    assert request.systems is not None  # request_form
    check_job_options(request, "")
    answers: dict[str, SystemEstimate | SystemFailure] = {}
    for name, system in request.systems.items():
        try:
            options = system_options(request, system)
            answer = estimate_system(system, options, kind=SystemEstimate, jobs=jobs, system=name)
            assert isinstance(answer, SystemEstimate)
            answers[name] = answer
        except Exception as error:  # each system's failure stays with it; the problem mapping decides the status
            problem, _ = problem_from_exception(error, instance=f"{path}#/systems/{_pointer(name)}")
            if problem.status >= 500 and logger is not None:
                logger.error("estimates.system_failed", exc_info=error, system=name, problem=problem.type)
            answers[name] = SystemFailure(error=problem)
    return EstimateBatchResponse(systems=answers)


def estimate(
    request: EstimateRequest,
    limits: LimitSettings,
    *,
    path: str = "/v1/estimates",
    logger: EventLogger | None = None,
    jobs: JobSamples | None = None,
) -> EstimateResult | EstimateBatchResponse:
    """The answer of ``POST /v1/estimates``: one system's, one difference's, or one per system of a batch;
    ``jobs``: the samples ``service.estimating.job_samples.read_job_samples`` read for systems given by a job."""
    check_size(request, limits)
    if request_form(request) == "batch":
        return _batch(request, path, logger, jobs)
    return estimate_system(request, system_options(request, None), jobs=jobs)
