"""GET /v1/judges/{judge}/report (JSON) and /report.html (the page), the shipped report cards; GET
/v1/calibrations/{job_id}/report and /report.html (admin, like the job), a calibration job's.

The cards are computed where the labelled data was (``make calibrate``, the calibration job); a handler finds them,
adds the cells' feedback monitors through ``service.monitoring.views.list_monitors`` when the service keeps them,
and answers JSON or the page rendered from the same answer (``service.http.report_page``).
"""

from __future__ import annotations

from typing import Annotated

from litestar import MediaType, Request, Response, get
from litestar.params import Parameter, PathParameter
from redis.exceptions import RedisError

from service.artifacts.report_cards import cards_of
from service.errors import InvalidRequestError, NotFoundError
from service.http.auth import bearer_token
from service.http.report_page import report_page
from service.http.routes.monitoring import MAX_MONITOR_PAGE
from service.http.services import Services, problem_responses, require_admin_key, services_of
from service.jobs.tenancy import job_caller
from service.monitoring.views import list_monitors
from service.wire.monitoring import MonitorCell
from service.wire.reports import JudgeReport

__all__ = ["calibration_report", "calibration_report_page", "judge_report", "judge_report_page"]

JudgeName = Annotated[str, PathParameter(description="the judge's name, as /v1/judges lists it", max_length=300)]
JobId = Annotated[str, PathParameter(description="the calibration job's id", max_length=64)]
Criterion = Annotated[
    str | None,
    Parameter(
        description="only this criterion's card (default: every card of the judge); not blank",
        min_length=1,
        max_length=64,
        pattern=r"\S",
    ),
]
PromptFamily = Annotated[
    str | None,
    Parameter(
        description="only this prompt family's cards (default: every one); not blank",
        min_length=1,
        max_length=200,
        pattern=r"\S",
    ),
]
_MONITOR_PAGES = 20  # at most this many pages of monitors are read for one report


async def _monitors(request: Request, services: Services, judge: str, criterion: str | None) -> tuple[
    list[MonitorCell] | None, str
]:  # fmt: skip
    """The judge's monitors the caller may see (its tenant's; the admin's: all), or None and why not."""
    if services.monitors is None:
        return None, "No monitor store: the service runs without REDIS_URL, so it keeps no feedback monitors."
    settings = services.settings
    scope = job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))
    cells: list[MonitorCell] = []
    after: str | None = ""
    try:
        for _ in range(_MONITOR_PAGES):  # GET /v1/monitor's pages, as many as a judge's report reads
            page = await list_monitors(services.monitors, services.calibration.current, scope.scope, after=after or "",
                                       limit=MAX_MONITOR_PAGE)  # fmt: skip
            cells += page.cells
            after = page.next_after
            if after is None:
                break
    except (RedisError, OSError) as error:
        return None, f"The monitor store did not answer ({type(error).__name__}); the report shows no monitors."
    mine = [m for m in cells if m.judge == judge and (criterion is None or m.criterion == criterion)]
    return mine, f"{len(mine)} monitor(s) of this judge"


def _check_names(criterion: str | None, prompt_family: str | None) -> None:
    for name, value in (("criterion", criterion), ("prompt_family", prompt_family)):
        if value is not None and not value.strip():
            raise InvalidRequestError(f"{name} must not be blank")


async def _shipped(request: Request, judge: str, criterion: str | None, prompt_family: str | None) -> JudgeReport:
    _check_names(criterion, prompt_family)
    services = services_of(request)
    shelf = services.report_cards
    loaded = shelf.current()
    where = f"the shipped report cards ({shelf.path.name})"
    cards = cards_of([] if loaded is None else loaded.cards, judge, criterion=criterion, prompt_family=prompt_family,
                     where=where)  # fmt: skip
    monitors, note = await _monitors(request, services, judge, criterion)
    return JudgeReport(
        judge=judge,
        source=f"shipped report cards, {loaded.source}" if loaded is not None else where,
        created_at=None if loaded is None else loaded.created_at,
        cards=cards,
        page=_page_path(request),
        monitors=monitors,
        monitors_note=note,
    )


async def _of_job(request: Request, job_id: str, criterion: str | None, prompt_family: str | None) -> JudgeReport:
    _check_names(criterion, prompt_family)
    services = services_of(request)
    job = await services.calibrations.get(job_id)
    where = f"calibration job {job.id} ({job.status})"
    if not job.report_cards:
        detail = "its cards come when it is done" if job.status in ("queued", "running") else "see its warnings"
        raise NotFoundError(f"{where} has no report card: {detail}")
    judges = sorted({card.judge for card in job.report_cards})
    judge = judges[0] if len(judges) == 1 else ", ".join(judges) or "(none)"
    cards = [c for j in judges for c in cards_of(job.report_cards, j, criterion=criterion, prompt_family=prompt_family,
                                                 where=where)]  # fmt: skip
    monitors, note = await _monitors(request, services, judge, criterion)
    return JudgeReport(
        judge=judge,
        source=f"calibration job {job.id} ({job.n_rows} labelled rows)",
        created_at=job.finished_at,
        cards=cards,
        page=_page_path(request),
        monitors=monitors,
        monitors_note=note,
    )


def _page_path(request: Request) -> str:
    """The page's path for this request's report (the JSON path with ``.html``), with its query."""
    path = request.url.path
    page = path if path.endswith(".html") else path + ".html"
    query = request.url.query
    return page + (f"?{query}" if query else "")


def _json_path(request: Request) -> str:
    path = request.url.path.removesuffix(".html")
    query = request.url.query
    return path + (f"?{query}" if query else "")


def _page(request: Request, report: JudgeReport) -> Response[str]:
    # text/html alone: Litestar appends "; charset=utf-8" to a text/ type (given whole, the page said it twice)
    return Response(report_page(report, _json_path(request)), media_type=MediaType.HTML)


@get(
    "/judges/{judge:str}/report",
    summary="A shipped judge's report cards: skill with intervals against the no-information baseline and the "
    "human-human ceiling, per-label evidence, operating curves, the planner, and its monitors",
    responses=problem_responses(400, 401, 404, 422, 503),
    tags=["judges"],
)
async def judge_report(
    request: Request, judge: JudgeName, criterion: Criterion = None, prompt_family: PromptFamily = None
) -> JudgeReport:
    """The judge's cards from the shipped report cards file (404 naming the judges that have one)."""
    return await _shipped(request, judge, criterion, prompt_family)


@get(
    "/judges/{judge:str}/report.html",
    summary="The same report as an HTML page (server-rendered tables and SVG, no script)",
    responses=problem_responses(400, 401, 404, 422, 503),
    tags=["judges"],
    media_type=MediaType.HTML,
)
async def judge_report_page(
    request: Request, judge: JudgeName, criterion: Criterion = None, prompt_family: PromptFamily = None
) -> Response[str]:
    """The page of ``GET /v1/judges/{judge}/report``."""
    return _page(request, await _shipped(request, judge, criterion, prompt_family))


@get(
    "/calibrations/{job_id:str}/report",
    guards=[require_admin_key],
    summary="A calibration job's report cards (admin key, like the job): the same figures for your own labelled file",
    responses=problem_responses(400, 401, 403, 404, 422, 503),
    tags=["calibration"],
)
async def calibration_report(
    request: Request, job_id: JobId, criterion: Criterion = None, prompt_family: PromptFamily = None
) -> JudgeReport:
    """The job's cards (404 while it runs or when no card could be computed: its warnings say why)."""
    return await _of_job(request, job_id, criterion, prompt_family)


@get(
    "/calibrations/{job_id:str}/report.html",
    guards=[require_admin_key],
    summary="A calibration job's report as an HTML page (admin key)",
    responses=problem_responses(400, 401, 403, 404, 422, 503),
    tags=["calibration"],
    media_type=MediaType.HTML,
)
async def calibration_report_page(
    request: Request, job_id: JobId, criterion: Criterion = None, prompt_family: PromptFamily = None
) -> Response[str]:
    """The page of ``GET /v1/calibrations/{job_id}/report``."""
    return _page(request, await _of_job(request, job_id, criterion, prompt_family))
