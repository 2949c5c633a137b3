"""GET /v1/judges: configured judges and their calibrated cells, in short (the default) or in full."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.wire.common import RESPONSE_STRUCT

__all__ = ["JudgeCalibration", "JudgeGroup", "JudgeInfo", "JudgeSummary", "JudgesResponse", "JudgesSummary"]


# --------------------------------------------------------------------------------------------- /v1/judges


class JudgeCalibration(msgspec.Struct, **RESPONSE_STRUCT):
    """A (prompt family, criterion) a judge is calibrated for, with its methods and levels."""

    prompt_family: str
    criterion: str
    methods: list[str]
    levels: list[float]
    default_method: str | None


class JudgeInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """A judge: configured for live calls and/or present in the calibration."""

    name: str
    configured: bool
    model: str | None
    prompt_family: str | None
    logprobs: bool | None
    calibrated_criteria: list[str]
    calibrations: list[JudgeCalibration]


class JudgesResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """Configured judges first (in JUDGES_FILE order), then judges known only from the calibration."""

    default_judge: str | None
    judges: list[JudgeInfo]


class JudgeSummary(msgspec.Struct, **RESPONSE_STRUCT):
    """A judge in short: what it is, what it is calibrated for, and what /v1/score can ask of it."""

    name: str
    configured: bool  # in JUDGES_FILE: the service can call it (send document and summary)
    model: str | None
    members: list[str] | None  # a panel cell (``panel:<a>+<b>...``): its members; None for one judge
    criteria: list[str]  # calibrated criteria: a prediction set can be asked for each
    prompt_families: list[str]
    input_kinds: list[
        str
    ]  # the verdict inputs calibrated: score, probabilities, mean (calibration.input_kinds.verdicts)
    alpha_range: list[float] | None  # [smallest, largest] calibrated alpha over its cells; None when uncalibrated
    decisions: list[str]  # criteria with a certified accept/escalate rule (accept_alpha, tolerance)
    quality_gates: list[str]  # criteria with a certified quality gate (pass_threshold)
    report: str | None = None  # the judge's report page (its shipped report cards); None when it has none


class JudgeGroup(msgspec.Struct, **RESPONSE_STRUCT):
    """A configured panel (PANELS_FILE) or cascade (CASCADES_FILE): its name and its judges, in order."""

    name: str
    judges: list[str]


class JudgesSummary(msgspec.Struct, **RESPONSE_STRUCT):
    """GET /v1/judges (view=summary, the default): one short line per judge, in the full view's order."""

    view: Literal["summary"]
    default_judge: str | None
    calibration_id: str | None  # None when no artifact is loaded
    levels: list[float]  # every calibrated alpha of the artifact, ascending (a cell's own: view=full)
    panels: list[JudgeGroup]
    cascades: list[JudgeGroup]
    judges: list[JudgeSummary]
