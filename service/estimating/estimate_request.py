"""The form of a ``POST /v1/estimates`` body and the checks between its fields, before any statistics.

The rules are those of :mod:`service.estimating.estimates` (its module docstring states the forms and every
refusal): exactly one form per body (one system, a difference, a batch), each form's fields with their partners,
the options each system is answered with (its own, else the request's) and how they fit the metric and the form,
the job fields, and the size limit ``MAX_ESTIMATE_VALUES``. Every refusal is a 422 ``invalid-request`` naming the
field. Shared by :mod:`service.estimating.estimates` and :mod:`service.estimating.job_samples`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from service.config.limits import LimitSettings
from service.errors import InvalidRequestError
from service.wire.estimates import EstimateRequest, LabelledItem, SystemEstimateRequest, SystemSamples

__all__ = [
    "SampleOptions",
    "check_explicit_items",
    "check_job_fields",
    "check_job_options",
    "check_options",
    "check_size",
    "references_job",
    "request_form",
    "system_options",
]

_OPTIONS = (
    "metric", "of", "alpha", "scale_min", "scale_max", "threshold", "target_half_width", "judge_value", "criterion",
)  # fmt: skip
_JOB_OPTIONS = ("judge_value", "criterion")
_FORMS = "one system (labelled and unlabelled, or job and labelled), a difference (a and b) or a batch (systems)"
_SYSTEM_FORMS = "one system (labelled and unlabelled, or job and labelled) or a difference (a and b)"


class SampleOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options one system is answered with (a batch system's own, else the request's)."""

    metric: str | None  # None: given neither by the system nor by the request (refused by check_options)
    of: str | None
    alpha: float
    scale_min: int
    scale_max: int
    threshold: float | None
    target_half_width: float | None
    judge_value: str | None = None  # a job's systems only (default expected_score)
    criterion: str | None = None

    @property
    def base(self) -> str | None:
        """The metric each sample is estimated on (a difference's ``of``, default mean; None without a metric)."""
        return (self.of or "mean") if self.metric == "difference" else self.metric


def _present(body: Any, fields: Iterable[str]) -> list[str]:
    return [field for field in fields if getattr(body, field) is not None]


def references_job(body: EstimateRequest | SystemEstimateRequest) -> bool:
    """Whether the body reads any system from a job (its own ``job``, ``a``'s, ``b``'s or a batch system's)."""
    if body.job is not None or any(pair is not None and pair.job is not None for pair in (body.a, body.b)):
        return True
    systems = body.systems if isinstance(body, EstimateRequest) else None
    return systems is not None and any(references_job(system) for system in systems.values())


def check_job_fields(body: Any, where: str) -> None:
    """A body with ``job`` takes ``labelled`` and no ``unlabelled`` (the job's other items are the unlabelled)."""
    if body.job is None:
        return
    if body.unlabelled is not None:
        raise InvalidRequestError(
            f"{where}'unlabelled' and 'job' exclude each other: with a job, its other scored items are the "
            "unlabelled sample"
        )
    if body.labelled is None:
        raise InvalidRequestError(
            f"{where}'job' needs 'labelled': the job's items with a human label, each {{id, human}}"
        )


def request_form(body: EstimateRequest | SystemEstimateRequest, where: str = "") -> str:
    """``single``, ``difference`` or ``batch``: the one form the body's fields give (422 naming them otherwise)."""
    if body.job is not None:
        check_job_fields(body, where)
    sample_fields = _present(body, ("labelled", "unlabelled", "job"))
    pair_fields = _present(body, ("a", "b"))
    batch_fields = _present(body, ("systems",)) if isinstance(body, EstimateRequest) else []
    groups = [group for group in (sample_fields, pair_fields, batch_fields) if group]
    forms = _FORMS if isinstance(body, EstimateRequest) else _SYSTEM_FORMS
    if len(groups) > 1:
        given = ", ".join(field for group in groups for field in group)
        raise InvalidRequestError(f"{where}give exactly one form: {forms}; got {given}")
    if not groups:
        raise InvalidRequestError(f"{where}give the data as {forms}")
    if sample_fields and len(sample_fields) < 2 and body.job is None:
        missing = "unlabelled" if sample_fields == ["labelled"] else "labelled"
        raise InvalidRequestError(
            f"{where}'{sample_fields[0]}' needs '{missing}' (one system: the labelled items and the unlabelled ones)"
        )
    if pair_fields and len(pair_fields) < 2:
        missing = "b" if pair_fields == ["a"] else "a"
        raise InvalidRequestError(
            f"{where}'{pair_fields[0]}' needs '{missing}' (a difference: system a minus system b)"
        )
    return "single" if sample_fields else ("difference" if pair_fields else "batch")


def _value_count(body: EstimateRequest | SystemEstimateRequest | SystemSamples) -> int:
    labelled, unlabelled = body.labelled or (), body.unlabelled or ()
    count = 2 * len(labelled) + len(unlabelled)
    if not isinstance(body, SystemSamples):
        count += sum(_value_count(pair) for pair in (body.a, body.b) if pair is not None)
    if isinstance(body, EstimateRequest) and body.systems is not None:
        count += sum(_value_count(system) for system in body.systems.values())
    return count


def system_options(request: EstimateRequest, system: SystemEstimateRequest | None) -> SampleOptions:
    """The options of one system: its own where it gives them, else the request's."""
    values = {field: getattr(request, field) for field in _OPTIONS}
    if system is not None:
        values.update({field: getattr(system, field) for field in _present(system, _OPTIONS)})
    return SampleOptions(**values)


def check_options(options: SampleOptions, form: str, where: str) -> None:
    """The rules between options, and between the metric and the form."""
    if options.metric is None:
        raise InvalidRequestError(f"{where}'metric' is required: mean, pass_rate, win_rate or difference")
    if options.metric == "difference" and form != "difference":
        raise InvalidRequestError(
            f"{where}metric 'difference' needs 'a' and 'b' (the two systems' labelled and "
            "unlabelled items) instead of 'labelled' and 'unlabelled'"
        )
    if options.metric != "difference" and form == "difference":
        raise InvalidRequestError(
            f"{where}'a' and 'b' are the two systems of a difference; metric "
            f"{options.metric!r} takes 'labelled' and 'unlabelled'"
        )
    if options.metric != "difference" and options.of is not None:
        raise InvalidRequestError(f"{where}'of' names the metric of a difference; metric {options.metric!r} takes none")
    if options.scale_min >= options.scale_max:
        raise InvalidRequestError(
            f"{where}scale_min ({options.scale_min}) must be below scale_max ({options.scale_max})"
        )
    if options.base == "pass_rate":
        if options.threshold is None:
            raise InvalidRequestError(
                f"{where}pass_rate needs 'threshold' (an item passes when its score is >= threshold)"
            )
        if not options.scale_min < options.threshold <= options.scale_max:
            raise InvalidRequestError(
                f"{where}threshold {options.threshold} must lie in ({options.scale_min}, "
                f"{options.scale_max}]: otherwise every item passes or none does"
            )
    elif options.threshold is not None:
        raise InvalidRequestError(f"{where}'threshold' belongs to pass_rate; metric {options.base!r} takes none")


def check_job_options(body: EstimateRequest | SystemEstimateRequest, where: str) -> None:
    """``judge_value`` and ``criterion`` only on a body that reads a job (a batch's defaults: some system's)."""
    given = _present(body, _JOB_OPTIONS)
    if given and not references_job(body):
        raise InvalidRequestError(
            f"{where}'{given[0]}' tells how a job's results are read: give 'job' (and labelled items {{id, human}})"
        )


def check_explicit_items(labelled: list[LabelledItem], where: str) -> None:
    """Without a job every labelled item carries the judge's verdict and no item id."""
    for index, item in enumerate(labelled):
        if item.judge is None:
            raise InvalidRequestError(
                f"{where}labelled[{index}].judge is required: the judge's verdict on the item (or give 'job' and "
                "each item's 'id', and the judge's value is read from the job)"
            )
        if item.id is not None:
            raise InvalidRequestError(
                f"{where}labelled[{index}].id names an item of a job: give 'job' too, or leave 'id' out"
            )


def check_size(request: EstimateRequest, limits: LimitSettings, extra: int = 0) -> None:
    """422 when the request's values (and ``extra`` more, a job's items) pass MAX_ESTIMATE_VALUES."""
    total = _value_count(request) + extra
    if total > limits.max_estimate_values:
        jobs = f", the jobs' items {extra} of them" if extra else ""
        raise InvalidRequestError(
            f"the request holds {total} values (human labels and judge verdicts, every system{jobs}); "
            f"the limit is MAX_ESTIMATE_VALUES={limits.max_estimate_values}"
        )
