"""GET /v1/judges."""

from __future__ import annotations

from litestar import Request, get

from service.http.services import problem_responses, services_of
from service.wire.judges import JudgeCalibration, JudgeInfo, JudgesResponse

__all__ = ["list_judges"]


@get(
    "/judges",
    summary="Configured judges and the criteria each is calibrated for",
    responses=problem_responses(401),
    tags=["judges"],
)
async def list_judges(request: Request) -> JudgesResponse:
    """Configured judges (JUDGES_FILE order), then judges known only from the calibration (caller verdicts)."""
    services = services_of(request)
    snapshot = services.calibration.current
    configured = services.judges.names()
    calibrated = snapshot.judges() if snapshot is not None else []
    judges: list[JudgeInfo] = []
    for name in configured + [name for name in calibrated if name not in configured]:
        config = services.judges.config(name)
        cells = snapshot.cells(name) if snapshot is not None else []
        calibrations = [
            JudgeCalibration(
                prompt_family=family,
                criterion=criterion,
                methods=snapshot.methods(name, family, criterion),
                levels=snapshot.levels_for(name, family, criterion),
                default_method=snapshot.index.default_method(name, family, criterion),
            )
            for family, criterion in cells
            if snapshot is not None
        ]
        judges.append(
            JudgeInfo(
                name=name,
                configured=config is not None,
                model=None if config is None else config.model,
                prompt_family=None if config is None else config.prompt_family,
                logprobs=None if config is None else bool(config.logprobs),
                calibrated_criteria=sorted({c.criterion for c in calibrations}),
                calibrations=calibrations,
            )
        )
    return JudgesResponse(default_judge=services.judges.default_judge(), judges=judges)
