"""POST /v1/compare."""

from __future__ import annotations

from typing import Annotated

from litestar import Request, post
from litestar.openapi.spec import Example
from litestar.params import Body

from service.comparing.compare import CompareContext, compare_candidates
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.services import problem_responses, services_of
from service.wire.compare import CompareRequest, CompareResponse

__all__ = ["compare"]

_PREFERENCES = {
    "criterion": "coherence",
    "preferences": [
        {"winner": "system-a", "loser": "system-b"},
        {"winner": "system-b", "loser": "system-c"},
        {"winner": "system-c", "loser": "system-a"},
    ],
}
_LIVE = {
    "criterion": "relevance",
    "document": "The city council approved the new park budget on Monday after a long debate.",
    "candidates": [
        {"id": "a", "text": "The council approved the park budget."},
        {"id": "b", "text": "A debate happened on Monday."},
        {"id": "c", "text": "The city has a council."},
    ],
    "repetitions": 1,
}
CompareBody = Annotated[
    CompareRequest,
    Body(
        examples=[
            Example(summary="Your own preferences (a 3-cycle)", value=_PREFERENCES),
            Example(summary="Judge three candidates live", value=_LIVE),
        ]
    ),
]


@post(
    "/compare",
    status_code=200,
    summary="Pairwise comparison (live: 3-20 candidates; preferences: up to 20): 3-cycles, violation rate, rankings",
    responses=problem_responses(400, 401, 413, 415, 422, 502, 503),
    tags=["compare"],
    opt={BODY_DECODER: BodyDecoder(CompareRequest)},
)
async def compare(data: CompareBody, request: Request) -> CompareResponse:
    """Tournament diagnostics of live or caller-given pairwise verdicts (rules: ``service.comparing.compare``)."""
    services = services_of(request)
    context = CompareContext(
        settings=services.settings,
        judges=services.judges,
        logger=services.logger,
        pairwise=services.calibration.pairwise,
    )
    return await compare_candidates(context, data)
