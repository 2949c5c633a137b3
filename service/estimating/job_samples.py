"""A system's samples read from a scoring job's results, for ``POST /v1/estimates`` (rules below).

A body reads a system from a job with ``job`` (the job id) and ``labelled`` items ``{id, human}`` (no ``unlabelled``):
one system, ``a`` or ``b`` of a difference, or a system of a batch. :func:`read_job_samples` reads every job the
request names and returns each system's ``JobSample`` by place; ``service.estimating.estimates`` then answers the
request as if the values had been sent. The job store is reached through the :class:`JobResults` protocol (the
jobs package sits above this one; ``service.jobs.store.JobStore`` fits it), so this module never imports it.

================================ ====================================================================================
case                             answer
================================ ====================================================================================
no REDIS_URL                     503 ``jobs-unavailable`` (after the body's own 422s); Redis down: 503 + Retry-After
no such job, another tenant's    404 ``job-not-found`` (the same answer for both, as ``GET /v1/jobs/{id}``)
job queued or running            409 ``job-not-finished`` (ask again when its status is ``succeeded`` or ``failed``)
job cancelled                    409 ``job-not-finished``: its results cover part of the run, not the run
labelled item without ``id``,    422 naming ``labelled[i]``
with ``judge``, id repeated
an id no item of the job has     422 naming the ids (up to 20 of them, and how many in all)
an id two items of the job have  422 naming the id (an item id must name one item)
an id whose item failed          left out of the labelled sample; listed in ``jobs[].labelled_failed``
every other failed item          left out of both samples; counted in ``jobs[].n_failed``
items of several criteria        422 naming them, unless ``criterion`` picks one (the others: ``n_other_criteria``;
                                 a labelled id of another criterion is a 422)
metric ``win_rate``              422: a scoring job's values are scores, not pairwise outcomes
a judge value off the scale      422 naming the item id (set ``scale_min`` / ``scale_max`` to the job's scale)
fewer than 2 labelled or         422 (after failed items are left out)
unlabelled items
the jobs' items and the          422 past MAX_ESTIMATE_VALUES (a labelled item counts two, every job item one),
request's values                 checked from the jobs' item counts before any result is read
================================ ====================================================================================

The judge's value of an item (``judge_value``, default ``expected_score``): ``label`` is the calibrated point label
(``point``), ``judge_score`` the judge's integer score, ``expected_score`` the expected score by the rule of
``calibration.input_kinds.mean_panel.expected_score``: a panel's mean, else sum_k k p_k over the verdict's
probabilities,
else the integer score (a caller's ``mean_of_samples`` is not kept in the results: such an item counts with its score).

Results are read chunk by chunk (``result_lines``, a few chunks per Redis round trip) and decoded into the few
fields used, so memory holds one float per item, and the labelled ids. Redis errors propagate (the handler answers
503 as the jobs routes do).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol, cast

import msgspec

from calibration.estimates.system import Sample
from service.config.limits import LimitSettings
from service.errors import (
    ENABLE_JOBS_HELP,
    InvalidRequestError,
    JobNotFinishedError,
    JobsUnavailableError,
    ServiceProblem,
)
from service.estimating.estimate_request import SampleOptions, check_size, request_form, system_options
from service.estimating.estimates import JobSample
from service.wire.estimates import (
    EstimateRequest,
    JobSampleUse,
    JudgeValue,
    LabelledItem,
    SystemEstimateRequest,
    SystemSamples,
)

__all__ = ["JobResults", "read_job_samples"]

_FINISHED = ("succeeded", "failed")
_SHOWN_IDS = 20
_DECODE_OFF_LOOP_BYTES = 1 << 20  # decode result blocks in a thread once this much is waiting

Place = tuple[str | None, str | None]


class JobRecordView(Protocol):
    """What is read of a job's record (``service.jobs.job_record.JobRecord``)."""

    @property
    def job_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def n_items(self) -> int: ...
    @property
    def n_done(self) -> int: ...


class JobResults(Protocol):
    """The job store's reads (``service.jobs.store.JobStore``): a record within a tenant scope, its result lines."""

    async def get(self, job_id: str, tenant: str | None = None) -> Any: ...
    def result_lines(self, record: Any, *, after: int, limit: int | None) -> AsyncIterator[bytes]: ...


class _Panel(msgspec.Struct, frozen=True):
    mean: float | None = None


class _Result(msgspec.Struct, frozen=True):
    criterion: str
    judge_score: int
    point: int
    probabilities: list[float] | None = None
    panel: _Panel | None = None


class _Line(msgspec.Struct, frozen=True):
    """The fields of a result line (``service.wire.jobs.JobItemResult``) an estimate uses."""

    index: int
    ok: bool
    item_id: str | None = None
    result: _Result | None = None


_LINES = msgspec.json.Decoder(_Line)


class _Reference(msgspec.Struct, frozen=True, kw_only=True):
    """One system given by a job: where it is, its job, its labelled items and options, its place's prefix."""

    place: Place
    job_id: str
    labelled: list[LabelledItem]
    options: SampleOptions
    where: str


def _references(request: EstimateRequest) -> Iterator[_Reference]:
    """Every system of the request given by a job. A body whose form is wrong is skipped: ``estimate`` refuses
    it (the whole request, or that batch system alone) before it would look for its samples."""
    bodies: list[tuple[str | None, EstimateRequest | SystemEstimateRequest]] = []
    if request_form(request) == "batch":
        bodies = [(name, system) for name, system in (request.systems or {}).items()]
    else:
        bodies = [(None, request)]
    for name, body in bodies:
        try:
            form = request_form(body)
        except InvalidRequestError:
            continue
        options = system_options(request, body if isinstance(body, SystemEstimateRequest) else None)
        if form == "single" and body.job is not None and body.labelled is not None:
            yield _Reference(place=(name, None), job_id=body.job, labelled=body.labelled, options=options, where="")
        pairs: list[tuple[str, SystemSamples | None]] = [("a", body.a), ("b", body.b)]
        for part, pair in pairs if form == "difference" else []:
            if pair is not None and pair.job is not None and pair.unlabelled is None:
                yield _Reference(
                    place=(name, part), job_id=pair.job, labelled=pair.labelled, options=options, where=f"{part}."
                )


def _labelled_ids(labelled: list[LabelledItem], where: str) -> dict[str, int]:
    """Item id -> its position in ``labelled`` (422 naming the item without an id, with a judge, or repeated)."""
    positions: dict[str, int] = {}
    for index, item in enumerate(labelled):
        if item.id is None:
            raise InvalidRequestError(f"{where}labelled[{index}].id is required with 'job': the item's item_id in it")
        if item.judge is not None:
            raise InvalidRequestError(
                f"{where}labelled[{index}].judge: with 'job' the judge's value is read from the job's results; "
                "leave 'judge' out"
            )
        if item.id in positions:
            raise InvalidRequestError(
                f"{where}labelled[{index}].id {item.id!r} repeats labelled[{positions[item.id]}]: each item is "
                "labelled once (give one human label per item, e.g. their mean)"
            )
        positions[item.id] = index
    return positions


def _judge_value(result: _Result, which: str) -> float:
    if which == "label":
        return float(result.point)
    if which == "judge_score" or (result.probabilities is None and (result.panel is None or result.panel.mean is None)):
        return float(result.judge_score)
    if result.panel is not None and result.panel.mean is not None:
        return float(result.panel.mean)
    assert result.probabilities is not None
    return float(sum((k + 1) * p for k, p in enumerate(result.probabilities)))


def _named(ids: list[str]) -> str:
    shown = ", ".join(repr(item) for item in ids[:_SHOWN_IDS])
    return shown + (f" (and {len(ids) - _SHOWN_IDS} more)" if len(ids) > _SHOWN_IDS else "")


class _Reading:
    """One job's results folded into its samples, line by line (the module's rules)."""

    def __init__(self, reference: _Reference, positions: dict[str, int]) -> None:
        self.reference = reference
        self.positions = positions
        self.judge_value = cast(JudgeValue, reference.options.judge_value or "expected_score")
        self.labelled: dict[str, float] = {}
        self.failed: list[str] = []
        self.seen: set[str] = set()
        self.unlabelled: list[float] = []
        self.criteria: set[str] = set()
        self.other_criterion_ids: list[str] = []
        self.twice: list[str] = []
        self.n_failed = self.n_other = 0

    def fold(self, lines: list[_Line]) -> None:
        wanted, criterion = self.positions, self.reference.options.criterion
        for line in lines:
            labelled = line.item_id is not None and line.item_id in wanted
            if labelled:
                if line.item_id in self.seen:
                    self.twice.append(str(line.item_id))
                self.seen.add(str(line.item_id))
            if not line.ok or line.result is None:
                self.n_failed += 1
                if labelled:
                    self.failed.append(str(line.item_id))
                continue
            if criterion is not None and line.result.criterion != criterion:
                self.n_other += 1
                if labelled:
                    self.other_criterion_ids.append(str(line.item_id))
                continue
            self.criteria.add(line.result.criterion)
            value = self._checked(_judge_value(line.result, self.judge_value), line)
            if labelled:
                self.labelled[str(line.item_id)] = value
            else:
                self.unlabelled.append(value)

    def _checked(self, value: float, line: _Line) -> float:
        options = self.reference.options
        if not options.scale_min <= value <= options.scale_max:
            name = f"item {line.item_id!r}" if line.item_id is not None else f"the item at index {line.index}"
            raise InvalidRequestError(
                f"{self.reference.where}{name} of job {self.reference.job_id} has {self.judge_value} {value:g}, "
                f"off the scale {options.scale_min}..{options.scale_max}: set scale_min and scale_max to the "
                "job's scale"
            )
        return value

    def sample(self, record: JobRecordView) -> JobSample:
        """The samples once every line is folded (422 on the module's refusals)."""
        where, job, part = self.reference.where, self.reference.job_id, self.reference.place[1]
        if self.twice:
            raise InvalidRequestError(
                f"{where}labelled ids {_named(sorted(set(self.twice)))} each name more than one item of job {job}: "
                "give the job's items unique item_ids"
            )
        unknown = [key for key in self.positions if key not in self.seen]
        if unknown:
            raise InvalidRequestError(f"{where}labelled ids not among the items of job {job}: {_named(unknown)}")
        if self.other_criterion_ids:
            raise InvalidRequestError(
                f"{where}labelled ids {_named(self.other_criterion_ids)} are items of job {job} of another criterion "
                f"than {self.reference.options.criterion!r}"
            )
        if len(self.criteria) > 1:
            raise InvalidRequestError(
                f"{where}job {job} scored items of the criteria {', '.join(sorted(self.criteria))}: an estimate is "
                "of one of them; give 'criterion'"
            )
        labelled = [item for item in self.reference.labelled if item.id in self.labelled]
        for name, count in (("labelled", len(labelled)), ("unlabelled", len(self.unlabelled))):
            if count < 2:
                raise InvalidRequestError(
                    f"{where}job {job} leaves {count} {name} item(s) scored (its failed items left out); "
                    "an estimate needs at least 2"
                )
        sample = Sample(
            human=[item.human for item in labelled],
            judge=[self.labelled[str(item.id)] for item in labelled],
            judge_unlabelled=self.unlabelled,
        )
        use = JobSampleUse(
            job_id=job, system="a" if part == "a" else "b" if part == "b" else None, judge_value=self.judge_value,
            criterion=next(iter(self.criteria), self.reference.options.criterion), n_items=record.n_items,
            n_failed=self.n_failed, n_other_criteria=self.n_other, n_labelled=len(labelled),
            n_unlabelled=len(self.unlabelled), labelled_failed=self.failed,
        )  # fmt: skip
        return JobSample(sample=sample, use=use)


def _finished(record: JobRecordView, where: str) -> None:
    if record.status in _FINISHED:
        return
    if record.status == "cancelled":
        raise JobNotFinishedError(
            f"{where}job {record.job_id} was cancelled: its results cover part of the run only, so its items are "
            "not the run's; submit the run again"
        )
    raise JobNotFinishedError(
        f"{where}job {record.job_id} is {record.status} ({record.n_done} of {record.n_items} items done): ask again "
        f"when GET /v1/jobs/{record.job_id} says succeeded or failed"
    )


async def _read(results: JobResults, reference: _Reference, record: JobRecordView) -> JobSample:
    """Fold the job's result lines into the reference's samples, decoding large reads off the event loop."""
    if reference.options.metric == "win_rate" or reference.options.of == "win_rate":
        raise InvalidRequestError(
            f"{reference.where}win_rate takes pairwise outcomes (1, 0.5, 0); a scoring job's results are scores: "
            "use mean or pass_rate"
        )
    reading = _Reading(reference, _labelled_ids(reference.labelled, reference.where))
    _finished(record, reference.where)
    waiting: list[bytes] = []
    size = 0
    async for block in results.result_lines(record, after=-1, limit=None):
        waiting.append(block)
        size += len(block)
        if size >= _DECODE_OFF_LOOP_BYTES:
            reading.fold(await asyncio.to_thread(_LINES.decode_lines, b"".join(waiting)))
            waiting, size = [], 0
    if waiting:
        reading.fold(_LINES.decode_lines(b"".join(waiting)))
    return reading.sample(record)


async def read_job_samples(
    request: EstimateRequest, results: JobResults | None, scope: str | None, limits: LimitSettings
) -> dict[Place, JobSample | Exception]:
    """Every job-given system's samples by place (module rules). The whole request is refused (raised) for its own
    form or size, without a job store (``results`` None: no REDIS_URL, 503 after the body's own 422s), and when it
    is not a batch; in a batch a system's refusal is kept as its entry."""
    check_size(request, limits)
    references = list(_references(request))
    if references and results is None:
        raise JobsUnavailableError(f"REDIS_URL is not set: estimates from a job read its results. {ENABLE_JOBS_HELP}")
    records: dict[Place, Any] = {}
    answers: dict[Place, JobSample | Exception] = {}
    for reference in references:
        try:
            records[reference.place] = await cast(JobResults, results).get(reference.job_id, scope)
        except ServiceProblem as error:  # 404: no such job for this caller
            if reference.place[0] is None:
                raise
            answers[reference.place] = error
    check_size(request, limits, extra=sum(record.n_items for record in records.values()))
    for reference in references:
        if reference.place not in records:
            continue
        try:
            answers[reference.place] = await _read(cast(JobResults, results), reference, records[reference.place])
        except ServiceProblem as error:  # 409, 422
            if reference.place[0] is None:
                raise
            answers[reference.place] = error
    return answers
