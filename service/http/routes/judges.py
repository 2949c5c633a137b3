"""GET /v1/judges: the judges in short (``view=summary``, the default) or in full (``view=full``)."""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get
from litestar.params import Parameter

from service.artifacts.judges_view import ConfiguredJudge, judges_full, judges_summary, with_reports
from service.errors import InvalidRequestError
from service.http.services import problem_responses, services_of
from service.wire.judges import JudgesResponse, JudgesSummary

__all__ = ["VIEWS", "list_judges"]

VIEWS = ("summary", "full")
View = Annotated[
    str,
    Parameter(
        description="summary (default): one short line per judge (criteria, prompt families, input kinds, the "
        "span of calibrated alphas, the criteria with a certified decision or quality gate), the artifact's levels "
        "once, the configured panels and cascades; full: every calibrated (prompt family, criterion) of every "
        "judge with its methods, levels and default method",
        schema_extra={"enum": list(VIEWS)},
    ),
]


@get(
    "/judges",
    summary="Configured judges and the criteria each is calibrated for (view=full: every cell's methods and levels)",
    responses=problem_responses(401, 422),
    tags=["judges"],
)
async def list_judges(request: Request, view: View = "summary") -> JudgesSummary | JudgesResponse:
    """Configured judges (JUDGES_FILE order), then judges known only from the calibration (caller verdicts)."""
    if view not in VIEWS:
        raise InvalidRequestError(f"unknown view {view!r}", allowed=list(VIEWS))
    services = services_of(request)
    pool = services.judges
    configured = [ConfiguredJudge.of(name, pool.config(name)) for name in pool.names()]
    snapshot = services.calibration.current
    if view == "full":
        return judges_full(snapshot, configured, pool.default_judge())
    summary = judges_summary(snapshot, configured, pool.default_judge(), panels=pool.panels, cascades=pool.cascades)
    return with_reports(summary, services.report_cards.judges())
