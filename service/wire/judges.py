"""GET /v1/judges: configured judges and their calibrated cells."""

from __future__ import annotations

import msgspec

from service.wire.common import RESPONSE_STRUCT

__all__ = ["JudgeCalibration", "JudgeInfo", "JudgesResponse"]


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
