"""POST /v1/compare: candidates, preferences, pairs with their certified decisions, rankings."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.config.settings import HARD_MAX_CANDIDATES
from service.wire.common import (
    REQUEST_STRUCT,
    RESPONSE_STRUCT,
    CandidateId,
    Confidence,
    Criterion,
    MarginalMode,
    Name,
    Problem,
    Text,
    pac_confidence,
)
from service.wire.schema import SchemaRules, present

__all__ = [
    "Candidate",
    "CompareRequest",
    "CompareResponse",
    "FailedCall",
    "IgnoredPreference",
    "PairResult",
    "PositionConsistencyInfo",
    "Preference",
    "RankingOrders",
    "RankingScores",
]


# -------------------------------------------------------------------------------------------- /v1/compare


class Candidate(msgspec.Struct, **REQUEST_STRUCT):
    """One candidate text to be compared pairwise."""

    id: CandidateId
    text: Text


class Preference(msgspec.Struct, **REQUEST_STRUCT):
    """The caller's own verdict on one pair, in one of two forms: ``winner`` beat ``loser`` (with ``tie: true``
    neither), or as it was shown to a judge: ``first`` and ``second`` with ``verdict`` "first" | "second" | "tie"
    (then position consistency is computed when every preference gives its order)."""

    winner: CandidateId | None = None
    loser: CandidateId | None = None
    tie: bool = False
    first: CandidateId | None = None
    second: CandidateId | None = None
    verdict: Literal["first", "second", "tie"] | None = None

    # {winner, loser[, tie]} or {first, second, verdict} (no tie: true), never a mix
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {
        "oneOf": [
            {
                "allOf": [present({"winner": "string", "loser": "string"})],
                "not": {"anyOf": [present({name: "string"}) for name in ("first", "second", "verdict")]},
            },
            {
                "allOf": [present({"first": "string", "second": "string", "verdict": "string"})],
                "not": {
                    "anyOf": [
                        *(present({name: "string"}) for name in ("winner", "loser")),
                        {"required": ["tie"], "properties": {"tie": {"enum": [True]}}},
                    ]
                },
            },
        ]
    }


class CompareRequest(msgspec.Struct, **REQUEST_STRUCT):
    """Either ``document`` + ``candidates`` (judged live; ``criterion`` required) or ``preferences`` (the caller's
    verdicts; ``criterion`` optional, echoed)."""

    criterion: Criterion | None = None
    document: Text | None = None
    candidates: (
        Annotated[
            list[Candidate], Meta(min_length=3, max_length=HARD_MAX_CANDIDATES, extra_json_schema={"uniqueItems": True})
        ]
        | None
    ) = None
    preferences: Annotated[list[Preference], Meta(min_length=1, max_length=20_000)] | None = None
    judge: Name | None = None
    prompt_family: Name | None = None
    repetitions: Annotated[int, Meta(ge=1, le=10)] = 3
    swap: bool = True
    # Level of each pair's decision: humans disagree with accepted preferences at most accept_alpha, in the
    # promise of ``guarantee`` (service.comparing.pair_decisions).
    accept_alpha: Annotated[float, Meta(gt=0, lt=1)] = 0.10
    # "expected": on average over calibrations; "pac": with probability >= confidence over them (confidence: pac
    # only, at most the artifact's 1 - delta; with "expected" a 422).
    guarantee: MarginalMode = "expected"
    confidence: Confidence | None = None

    # exactly one of live (the judge is asked: document, candidates, criterion) or the caller's preferences
    # (criterion optional: echoed); candidates are unique items (their ids must be: the part JSON Schema can state)
    JSON_SCHEMA_RULES: ClassVar[SchemaRules] = {
        "oneOf": [
            {
                "allOf": [present({"document": "string", "candidates": "array", "criterion": "string"})],
                "not": {"required": ["preferences"], "properties": {"preferences": {"type": "array"}}},
            },
            {
                "allOf": [present({"preferences": "array"})],
                "not": {
                    "anyOf": [
                        {"required": ["document"], "properties": {"document": {"type": "string"}}},
                        {"required": ["candidates"], "properties": {"candidates": {"type": "array"}}},
                    ]
                },
            },
        ],
        "allOf": [pac_confidence()],
    }


class PairResult(msgspec.Struct, **RESPONSE_STRUCT):
    """One unordered pair: wins of each side, ties, the majority side and its share of the verdicts, and the
    certified decision: ``accept`` (``preferred`` names the candidate) or ``abstain`` (``preferred`` null), with
    the reason (rules: ``service.comparing.compare``)."""

    a: str
    b: str
    wins_a: int
    wins_b: int
    ties: int
    n: int
    winner: str | None
    win_share: float
    decision: Literal["accept", "abstain"]
    preferred: str | None
    reason: str


class PositionConsistencyInfo(msgspec.Struct, **RESPONSE_STRUCT):
    """How often a verdict survives swapping the presentation order."""

    rate: float | None
    n_pairs_both_orders: int
    n_consistent: int


class RankingOrders(msgspec.Struct, **RESPONSE_STRUCT):
    """Candidate ids, best first, by each ranking method."""

    win_rate: list[str]
    bradley_terry: list[str]
    schulze: list[str]
    mfas_ilp: list[str]
    mfas_copeland: list[str]


class RankingRanks(msgspec.Struct, **RESPONSE_STRUCT):
    """Each method's rank per candidate id: 1 = best, tied candidates share a rank ("1, 1, 3"), so a tie is shown
    as a tie and not as the order its tie-break gave (rules: ``calibration.tournaments.ranking``)."""

    win_rate: dict[str, int]
    bradley_terry: dict[str, int]
    schulze: dict[str, int]
    mfas_ilp: dict[str, int]
    mfas_copeland: dict[str, int]


class RankingScores(msgspec.Struct, **RESPONSE_STRUCT):
    """Each method's score per candidate id (null where a method gives no finite score)."""

    win_rate: dict[str, float | None]
    bradley_terry: dict[str, float | None]
    schulze: dict[str, float | None]
    mfas_ilp: dict[str, float | None]
    mfas_copeland: dict[str, float | None]


class FailedCall(msgspec.Struct, **RESPONSE_STRUCT):
    """A pairwise judge call that failed after the client's retries; its verdict is missing."""

    first: str
    second: str
    repetition: int
    error: Problem


class IgnoredPreference(msgspec.Struct, **RESPONSE_STRUCT):
    """A preference left out of the tournament (a self-comparison), by its index in ``preferences``."""

    index: int
    reason: str


class CompareResponse(msgspec.Struct, **RESPONSE_STRUCT):
    """Tournament diagnostics: 3-cycles, violation rate, position consistency, pairs and rankings."""

    criterion: str | None
    judge: str | None
    source: Literal["judge", "caller"]
    candidates: list[str]
    n_candidates: int
    n_triples: int
    n_verdicts: int
    cycles: list[list[str]]
    n_cycles: int
    violation_rate: float
    flagged: bool
    reason: str
    position_consistency: PositionConsistencyInfo | None
    pairs: list[PairResult]
    rankings: RankingOrders
    scores: RankingScores
    accept_alpha: float  # the level of every pair's decision
    mode: MarginalMode  # the guarantee mode whose entries decided the pairs (the request's ``guarantee``)
    complete: bool
    failed_calls: list[FailedCall]
    cached_calls: int
    judge_calls: int  # live judge calls that answered (not from the cache; failed calls are in failed_calls)
    # False when the exact MFAS ranking hit MFAS_TIME_LIMIT_S: rankings.mfas_ilp then holds the heuristic order
    # (Copeland improved by single-candidate moves); every other figure is exact.
    exact: bool = True
    # "possible_prompt_injection": the document or a candidate tries to steer the judge (service.screening.injection);
    # "judge_model_mismatch": a reply named another model than the judge's configured one (service.judging.model_check)
    flags: list[str] = msgspec.field(default_factory=list)
    # self-comparisons among the caller's preferences: left out of every figure, listed here (service.comparing.compare)
    ignored_preferences: list[IgnoredPreference] = msgspec.field(default_factory=list)
    # each method's tied ranks (rankings gives each order; with exact false, mfas_ilp's are the heuristic's places)
    ranks: RankingRanks | None = None
