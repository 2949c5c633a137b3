"""POST /v1/estimates and POST /v1/rankings (rules: ``service.estimating``).

A request that reads systems from jobs (``service.estimating.job_samples``) follows the jobs routes: without
REDIS_URL a 503 ``jobs-unavailable``, a Redis that does not answer the same 503 with Retry-After, and a job of
another API key a 404 like a missing one (the caller's tenant scope from ``service.jobs.tenancy``).
"""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from litestar import Request, post
from litestar.openapi.spec import Example
from litestar.params import Body
from redis.exceptions import RedisError

from service.errors import store_unavailable
from service.estimating.estimate_request import references_job
from service.estimating.estimates import JobSamples, estimate
from service.estimating.job_samples import read_job_samples
from service.estimating.rankings import rank_models
from service.http.auth import bearer_token
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.services import Services, problem_responses, services_of
from service.jobs.tenancy import job_caller
from service.wire.estimates import (
    EstimateBatchResponse,
    EstimateRequest,
    EstimateResult,
    RankingRequest,
    RankingResponse,
)

__all__ = ["estimates", "rankings"]

_LABELLED = [
    {"human": human, "judge": judge}
    for human, judge in zip([4, 3, 5, 4, 2, 4, 3, 5, 4, 4], [4, 3, 4, 4, 3, 5, 3, 5, 4, 3], strict=True)
]
_UNLABELLED = [{"judge": judge} for judge in [4, 5, 3, 4, 4, 2, 5, 4, 3, 4, 4, 5, 3, 4, 4, 3, 4, 5, 4, 4]]
_MEAN = {"metric": "mean", "alpha": 0.1, "labelled": _LABELLED, "unlabelled": _UNLABELLED}
_DIFFERENCE = {
    "metric": "difference",
    "a": {"labelled": _LABELLED[:4], "unlabelled": _UNLABELLED[:5]},
    "b": {
        "labelled": [{"human": 3, "judge": 3}, {"human": 2, "judge": 3}, {"human": 4, "judge": 4}],
        "unlabelled": [{"judge": 3}, {"judge": 2}, {"judge": 4}, {"judge": 3}],
    },
}
_BATCH = {
    "metric": "pass_rate",
    "threshold": 4,
    "systems": {
        "model-a": {"labelled": _LABELLED[:4], "unlabelled": _UNLABELLED[:5]},
        "model-b": {
            "labelled": [{"human": 3, "judge": 3}, {"human": 4, "judge": 4}, {"human": 5, "judge": 4}],
            "unlabelled": [{"judge": 3}, {"judge": 4}, {"judge": 2}, {"judge": 5}],
        },
    },
}
_FROM_JOB = {
    "metric": "mean",
    "alpha": 0.05,
    "job": "3f2a9c41d7b84e0f9a6c5d2e1b0f7a63",
    "judge_value": "expected_score",
    "labelled": [{"id": "item-17", "human": 4}, {"id": "item-203", "human": 3}, {"id": "item-388", "human": 5}],
}
_BATTLES = {
    "alpha": 0.1,
    "battles": [
        {"model_a": "m1", "model_b": "m2", "judge": "a", "human": "a"},
        {"model_a": "m2", "model_b": "m3", "judge": "a", "human": "tie"},
        {"model_a": "m1", "model_b": "m3", "judge": "a"},
        {"model_a": "m3", "model_b": "m2", "judge": "b"},
        {"model_a": "m1", "model_b": "m2", "judge": "tie"},
    ],
}
EstimateBody = Annotated[
    EstimateRequest,
    Body(
        examples=[
            Example(summary="A mean score on 1..5", value=_MEAN),
            Example(summary="A difference of two systems' means", value=_DIFFERENCE),
            Example(summary="Two systems' pass rates (the batch form)", value=_BATCH),
            Example(
                summary="A mean from a finished job's results and human labels of some of its items", value=_FROM_JOB
            ),
        ]
    ),
]
RankingBody = Annotated[RankingRequest, Body(examples=[Example(summary="Three models", value=_BATTLES)])]


@post(
    "/estimates",
    status_code=200,
    summary="A system's mean, pass rate, win rate or a difference, with an interval valid at the n given, "
    "from a few human labels plus many judge verdicts; or up to 100 systems at once",
    responses=problem_responses(400, 401, 404, 409, 413, 415, 422, 503),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(EstimateRequest)},
)
async def estimates(data: EstimateBody, request: Request) -> EstimateResult | EstimateBatchResponse:
    """PPI++ or the finite-sample betting interval by the switching rule (rules: ``calibration.estimates.system``); in
    the batch form a system's bad data fails that system alone. A system may be read from a finished job: ``job``
    and ``labelled`` items ``{id, human}`` (rules: ``service.estimating.job_samples``)."""
    services = services_of(request)
    jobs = await _job_samples(data, request, services) if references_job(data) else None
    return await anyio.to_thread.run_sync(  # CPU-bound: off the event loop
        lambda: estimate(data, services.settings.limits, logger=services.logger, jobs=jobs)
    )


async def _job_samples(data: EstimateRequest, request: Request, services: Services) -> JobSamples:
    """The samples of the systems read from jobs, as the caller may see them (module docstring)."""
    settings = services.settings
    caller = job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))
    store = services.jobs.store if services.jobs is not None else None
    try:
        return await read_job_samples(data, store, caller.scope, settings.limits)
    except (RedisError, OSError) as error:
        raise store_unavailable(error, settings.jobs.retry_after_s) from error


@post(
    "/rankings",
    status_code=200,
    summary="Per-model win rates and rank sets from many judged battles plus human verdicts on a random subset",
    responses=problem_responses(400, 401, 413, 415, 422),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(RankingRequest)},
)
async def rankings(data: RankingBody, request: Request) -> RankingResponse:
    """Prediction-powered ranking (rules: ``calibration.estimates.rank_sets``, ``service.estimating.rankings``)."""
    limits = services_of(request).settings.limits
    return await anyio.to_thread.run_sync(rank_models, data, limits)
