"""POST /v1/score and POST /v1/score/batch."""

from __future__ import annotations

import asyncio
from typing import Annotated

from litestar import Request, post
from litestar.openapi.spec import Example
from litestar.params import Body

from service.errors import InvalidRequestError
from service.http.auth import bearer_token
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.problems import problem_from_exception
from service.http.services import Services, problem_responses, services_of
from service.jobs.tenancy import job_caller
from service.observability.logging import EventLogger
from service.observability.tracing import Tracing, trace_evaluation
from service.scoring.context import ScoringContext
from service.scoring.monitor_alarm import AlarmedCell, AlarmNote
from service.scoring.score import score_item
from service.wire.common import Problem
from service.wire.decoding import as_wire_type
from service.wire.score import BatchItemResult, ScoreBatchRequest, ScoreBatchResponse, ScoreRequest, ScoreResponse

__all__ = ["caller_alarms", "score", "score_batch", "scoring_context"]

_OWN_VERDICT = {"criterion": "relevance", "judge": "gpt-4o-mini-2024-07-18", "judge_score": 4}
_OWN_LOGPROBS = {
    "criterion": "coherence",
    "judge": "gpt-4o-mini-2024-07-18",
    "judge_logprobs": {"1": -6.2, "2": -3.1, "3": -0.9, "4": -0.6, "5": -4.0},
    "alpha": 0.1,
}
_LIVE = {
    "criterion": "coherence",
    "document": "The city council approved the new park budget on Monday after a long debate.",
    "summary": "The council approved the park budget.",
}
ScoreBody = Annotated[
    ScoreRequest,
    Body(
        examples=[
            Example(summary="Calibrate your own verdict (no judge call)", value=_OWN_VERDICT),
            Example(summary="Calibrate your own log-probabilities", value=_OWN_LOGPROBS),
            Example(summary="Ask the configured judge", value=_LIVE),
        ]
    ),
]
BatchBody = Annotated[
    ScoreBatchRequest,
    Body(examples=[Example(summary="Two verdicts", value={"items": [_OWN_VERDICT, _OWN_LOGPROBS]})]),
]


async def caller_alarms(request: Request, services: Services) -> dict[AlarmedCell, AlarmNote]:
    """The feedback monitors' alarms that change this caller's answers (its tenant's and the admin's; none without
    Redis): a cached copy (service.monitoring.board), never a failure when Redis is down."""
    monitors = services.monitors
    if monitors is None:
        return {}
    settings = services.settings
    caller = job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))
    return await monitors.board.for_caller(caller.tenant, monitors.admin_tenant)


def scoring_context(services: Services, alarms: dict[AlarmedCell, AlarmNote] | None = None) -> ScoringContext:
    """A scoring context holding the calibration snapshot current at the request's start (and the caller's
    alarms, when given)."""
    return ScoringContext(
        settings=services.settings,
        snapshot=services.calibration.current,
        calibration_error=services.calibration.error,
        judges=services.judges,
        policy=services.policy,
        metrics=services.metrics,
        screened=services.judges.screened,  # the process's memo: a repeated text is screened once
        alarms=alarms or {},
    )


@post(
    "/score",
    status_code=200,
    summary="Score one summary (or calibrate your own verdict) with a conformal prediction set",
    responses=problem_responses(400, 401, 413, 415, 422, 502, 503),
    tags=["score"],
    opt={BODY_DECODER: BodyDecoder(ScoreRequest)},
)
async def score(data: ScoreBody, request: Request) -> ScoreResponse:
    """Verdict -> prediction set -> certified accept / escalate (rules: ``service.scoring.score``,
    ``service.scoring.policy``)."""
    services = services_of(request)
    alarms = await caller_alarms(request, services) if services.monitors is not None else None
    answer = await score_item(scoring_context(services, alarms), data)  # echoes data.item_id
    if services.tracing.enabled:
        trace_evaluation(services.tracing, answer)
    return answer


def batch_width(services: Services) -> int:
    """How many batch items are scored at once: twice the judges' total concurrency, at least 64.

    Starting all 1,000 items in one turn of the event loop makes the ones that will wait for a judge slot do
    their set-up first and delays the first judge call by 100-250 ms (measured); a window twice as wide as the
    judges can take keeps every judge slot busy without that burst.
    """
    return max(64, 2 * services.judges.total_concurrency())


async def _batch_item(
    context: ScoringContext,
    logger: EventLogger,
    index: int,
    raw: object,
    path: str,
    window: asyncio.Semaphore,
    tracing: Tracing,
) -> BatchItemResult:
    item_id = raw.get("item_id") if isinstance(raw, dict) else None
    item_id = item_id if isinstance(item_id, str) else None
    async with window:
        try:
            item = as_wire_type(raw, ScoreRequest)  # as /v1/score decodes (service.wire.decoding)
            result = await score_item(context, item)
        except Exception as error:  # every failure stays with its item; the problem mapping decides the status
            problem, _ = problem_from_exception(error, instance=f"{path}#/items/{index}")
            context.metrics.count_problem(problem.status, problem.type)
            _log_failed_item(logger, index, item_id, problem, error)
            return BatchItemResult(index=index, item_id=item_id, ok=False, error=problem)
    if tracing.enabled:
        trace_evaluation(tracing, result)
    return BatchItemResult(index=index, item_id=item_id, ok=True, result=result)


def _log_failed_item(logger: EventLogger, index: int, item_id: str | None, problem: Problem, error: Exception) -> None:
    """One JSON line per failed batch item (the request id comes with it): error for 5xx, info for bad input."""
    fields = {"index": index, "item_id": item_id, "status": problem.status, "problem": problem.type}
    if problem.type.endswith("internal-error"):
        logger.error("batch.item_failed", exc_info=error, **fields)
    elif problem.status >= 500:
        logger.warning("batch.item_failed", detail=problem.detail[:300], **fields)
    else:
        logger.info("batch.item_failed", detail=problem.detail[:300], **fields)


@post(
    "/score/batch",
    status_code=200,
    summary="Score up to 1,000 items; each item succeeds or fails on its own, results in input order",
    responses=problem_responses(400, 401, 413, 415, 422, 429, 503),
    tags=["score"],
    opt={BODY_DECODER: BodyDecoder(ScoreBatchRequest)},
)
async def score_batch(data: BatchBody, request: Request) -> ScoreBatchResponse:
    """Each item as in /v1/score, concurrently (judge calls bounded per judge); one bad item fails alone."""
    services = services_of(request)
    limit = services.settings.max_batch_items
    if len(data.items) > limit:
        raise InvalidRequestError(f"the batch has {len(data.items)} items; the limit is MAX_BATCH_ITEMS={limit}")
    context = scoring_context(services, await caller_alarms(request, services))
    window = asyncio.Semaphore(batch_width(services))
    services.admission.admit(len(data.items))  # 429 past MAX_INFLIGHT_ITEMS (service/judging/admission.py)
    try:
        results = await asyncio.gather(
            *(
                _batch_item(context, services.logger, index, raw, "/v1/score/batch", window, services.tracing)
                for index, raw in enumerate(data.items)
            )
        )
    finally:
        services.admission.release(len(data.items))
    n_ok = sum(1 for item in results if item.ok)
    return ScoreBatchResponse(results=list(results), n_ok=n_ok, n_failed=len(results) - n_ok)
