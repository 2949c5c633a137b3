"""POST /v1/estimates, POST /v1/estimates/batch and POST /v1/rankings (rules: ``service.estimating``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Request, post
from litestar.openapi.spec import Example
from litestar.params import Body

from service.estimating.estimates import estimate, estimate_batch
from service.estimating.rankings import rank_models
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.services import problem_responses, services_of
from service.wire.estimates import (
    EstimateBatchRequest,
    EstimateBatchResponse,
    EstimateRequest,
    EstimateResult,
    RankingRequest,
    RankingResponse,
)

__all__ = ["document_estimates_openapi", "estimates", "estimates_batch", "rankings"]

_MEAN = {
    "metric": "mean",
    "alpha": 0.1,
    "human": [4, 3, 5, 4, 2, 4, 3, 5, 4, 4],
    "judge": [4, 3, 4, 4, 3, 5, 3, 5, 4, 3],
    "judge_unlabelled": [4, 5, 3, 4, 4, 2, 5, 4, 3, 4, 4, 5, 3, 4, 4, 3, 4, 5, 4, 4],
}
_BATCH = {
    "metric": "pass_rate",
    "threshold": 4,
    "systems": [
        {"name": "model-a", **{key: _MEAN[key] for key in ("human", "judge", "judge_unlabelled")}},
        {"name": "model-b", "human": [3, 3, 4, 2, 5], "judge": [3, 4, 4, 2, 4], "judge_unlabelled": [3, 4, 2, 4, 3, 5]},
    ],
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
EstimateBody = Annotated[EstimateRequest, Body(examples=[Example(summary="A mean score on 1..5", value=_MEAN)])]
BatchBody = Annotated[EstimateBatchRequest, Body(examples=[Example(summary="Two systems' pass rates", value=_BATCH)])]
RankingBody = Annotated[RankingRequest, Body(examples=[Example(summary="Three models", value=_BATTLES)])]


@post(
    "/estimates",
    status_code=200,
    summary="A system's mean, pass rate, win rate or a difference, with an interval valid at the n given, "
    "from a few human labels plus many judge verdicts",
    responses=problem_responses(400, 401, 413, 415, 422),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(EstimateRequest)},
)
async def estimates(data: EstimateBody, request: Request) -> EstimateResult:
    """PPI++ or the finite-sample betting interval by the switching rule (rules: ``calibration.estimates``)."""
    limits = services_of(request).settings.limits
    return await anyio.to_thread.run_sync(estimate, data, limits)  # CPU-bound: off the event loop


@post(
    "/estimates/batch",
    status_code=200,
    summary="Estimates of up to 100 systems with the same options; each system is answered or fails on its own",
    responses=problem_responses(400, 401, 413, 415, 422),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(EstimateBatchRequest)},
)
async def estimates_batch(data: BatchBody, request: Request) -> EstimateBatchResponse:
    """Each system as in /v1/estimates; a system's bad data fails that system alone."""
    services = services_of(request)
    return await anyio.to_thread.run_sync(
        lambda: estimate_batch(data, services.settings.limits, logger=services.logger)
    )


@post(
    "/rankings",
    status_code=200,
    summary="Per-model win rates and rank sets from many judged battles plus human verdicts on a random subset",
    responses=problem_responses(400, 401, 413, 415, 422),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(RankingRequest)},
)
async def rankings(data: RankingBody, request: Request) -> RankingResponse:
    """Prediction-powered ranking (rules: ``calibration.rank_sets``, ``service.estimating.rankings``)."""
    limits = services_of(request).settings.limits
    return await anyio.to_thread.run_sync(rank_models, data, limits)


def document_estimates_openapi(schemas: dict[str, Any]) -> None:
    """Spec details Litestar drops: closed request objects, the values' bounds in the lists, a zero bound."""
    for name in ("EstimateRequest", "EstimateBatchRequest", "SystemSample", "VersusSample", "Battle", "RankingRequest"):
        if name in schemas:
            schemas[name].additional_properties = False
    for name in ("EstimateRequest", "SystemSample", "VersusSample"):
        properties = schemas[name].properties if name in schemas else None
        for field in ("human", "judge", "judge_unlabelled"):
            if properties and field in properties:
                properties[field].items.minimum, properties[field].items.maximum = 0.0, 10.0
    for name in ("EstimateRequest", "EstimateBatchRequest"):
        properties = schemas[name].properties if name in schemas else None
        if properties:
            properties["threshold"].minimum = 0.0
