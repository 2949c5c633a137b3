"""Types every endpoint shares: criteria, levels, names, texts, the problem object.

Wire types: frozen, keyword-only msgspec Structs with their constraints in the types.

These are the single source of the OpenAPI spec (``openapi/openapi.json``). Request types forbid unknown
fields, so a typo (``"alpah"``) is a 422 rather than a silently ignored default. Limits that settings can
lower (document length, batch size, candidates) are checked again by the domain functions."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.wire.schema import implies, present

__all__ = [
    "Confidence",
    "GuaranteeMode",
    "MarginalMode",
    "ReadinessCheck",
    "REQUEST_STRUCT",
    "RESPONSE_STRUCT",
    "Alpha",
    "CRITERIA",
    "CandidateId",
    "Criterion",
    "Decision",
    "ItemIdText",
    "JudgeScore",
    "LogProb",
    "MeanOfSamples",
    "Name",
    "PassThreshold",
    "Problem",
    "ProblemError",
    "Text",
    "Tolerance",
    "pac_confidence",
]

CRITERIA = ("coherence", "consistency", "fluency", "relevance", "faithfulness")
Criterion = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$",
        description="a criterion the calibration covers or a rubric names "
        "(SummEval's coherence, consistency, fluency, relevance; faithfulness; yours from RUBRICS_FILE or your "
        "calibration); an unknown one is a 422 with the allowed names",
    ),
]
# accept: use ``point`` as the label (certified); escalate: ask a human; second_opinion: ask the cascade's next judge
Decision = Literal["accept", "escalate", "second_opinion"]
Alpha = Annotated[float, Meta(gt=0, lt=1, description="miscoverage level; the target coverage is 1 - alpha")]
# not blank: some non-whitespace character (the domain functions refuse a blank text, str.strip)
Text = Annotated[str, Meta(min_length=1, extra_json_schema={"pattern": r"\S"})]
# Which promise every guarantee of an answer keeps: "per_label" holds for every human label separately, on average over
# the draw of the calibration documents (calibration.per_label); "expected" holds for all labels together on average
# over that draw; "pac" for all labels together with probability >= confidence over it (calibration.decisions.rule).
GuaranteeMode = Literal["per_label", "expected", "pac"]
# The marginal promises alone: pairwise decisions and conformal entries keep one of these.
MarginalMode = Literal["expected", "pac"]
Confidence = Annotated[
    float,
    Meta(
        gt=0,
        lt=1,
        description="pac only (send guarantee: pac): the probability over the calibration documents that the "
        "guarantee holds; served at the calibrated confidence, which is this field's maximum",
    ),
]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
JudgeScore = Annotated[int, Meta(ge=1, le=10, description="the judge's score on the cell's scale 1..K (K <= 10)")]
MeanOfSamples = Annotated[
    float, Meta(ge=1, le=10, description="mean of several sampled judge scores (G-Eval style), on the scale 1..K")
]
LogProb = Annotated[float, Meta(le=0, description="natural log-probability of this score token")]
CandidateId = Annotated[str, Meta(min_length=1, max_length=200)]
Tolerance = Annotated[
    int,
    Meta(
        ge=1,
        le=10,
        description="an accepted point counts as wrong when |human - point| >= tolerance labels "
        "(1: exact match required; default 2: within one label)",
    ),
]
PassThreshold = Annotated[
    int,
    Meta(
        ge=2,
        le=10,
        description="quality-gate mode: pass iff label >= pass_threshold; accept only a certified "
        "pass (false-pass rate among items humans would fail <= accept_alpha)",
    ),
]


def pac_confidence() -> dict[str, object]:
    """``confidence`` applies to the pac guarantee only (service.scoring.resolve.request_mode,
    service.comparing.pair_decisions.check_guarantee): a confidence needs ``guarantee: "pac"``."""
    return implies(
        present({"confidence": "number"}), {"required": ["guarantee"], "properties": {"guarantee": {"const": "pac"}}}
    )


ItemIdText = Annotated[
    str, Meta(min_length=1, max_length=200, description="the caller's own id for this item, echoed in the result")
]

# Struct options of every request type (closed to unknown fields) and every answer type.
REQUEST_STRUCT = {"frozen": True, "kw_only": True, "forbid_unknown_fields": True}
RESPONSE_STRUCT = {"frozen": True, "kw_only": True}


class ReadinessCheck(msgspec.Struct, **RESPONSE_STRUCT):
    """One readiness check: its name, whether it passed, and why."""

    name: str
    ok: bool
    detail: str


class ProblemError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One validation failure: what is wrong, and where (``key``: field path, ``source``: body/query/...)."""

    message: str
    key: str | None = None
    source: str | None = None


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An RFC 9457 problem object (media type application/problem+json) with this service's extensions."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemError] | None = None  # validation failures
    allowed: list[str] | None = None  # the accepted values when a name or level was unknown
    raw_reply: str | None = None  # the judge's unreadable reply, shortened
    checks: list[ReadinessCheck] | None = None  # /readyz
