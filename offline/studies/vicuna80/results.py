"""The Vicuna80 transitivity study's result types: each question's tournament, per-source rows, rankings per
question, ranking agreement, position and parse rows, and the summary that holds them.
"""

from __future__ import annotations

from typing import TypedDict

import msgspec

__all__ = [
    "BestMethod",
    "MfasVersusCopeland",
    "QuestionRankings",
    "Spread",
    "Vicuna80Input",
    "Vicuna80ParseRow",
    "Vicuna80PositionRow",
    "Vicuna80RankingRow",
    "Vicuna80Row",
    "Vicuna80Summary",
]


class Vicuna80Input(msgspec.Struct, frozen=True, kw_only=True):
    """One question's tournament of one source under one aggregation."""

    judge: str
    aggregation: str
    item_id: str
    violation_rate: float
    n_cycles: int
    cycles: list[list[str]]
    n_tied_pairs: int
    n_missing_pairs: int


class Vicuna80Row(msgspec.Struct, frozen=True, kw_only=True):
    """rho(x) over the questions of one source under one aggregation."""

    judge: str
    aggregation: str
    mean: float
    median: float
    max: float
    share_with_cycle: float
    n_with_cycle: int
    n_cycles: int
    n_inputs: int
    n_tied_pairs: int
    n_missing_pairs: int
    n_verdicts: int
    # 95% intervals over questions (rules in offline.studies.vicuna80.study); None in a summary written before them.
    violation_rate_ci: list[float] | None = None  # of ``mean``
    share_with_cycle_ci: list[float] | None = None


class QuestionRankings(msgspec.Struct, frozen=True, kw_only=True):
    """The five rankings (best first) of one question's ``both_orders`` tournament of one source."""

    judge: str
    item_id: str
    orders: dict[str, list[str]]


class BestMethod(TypedDict):
    """Per human reference: the ranking method with the highest mean per-question tau over the judges."""

    method: str | None
    mean_tau_over_judges: dict[str, float | None]


class MfasVersusCopeland(TypedDict):
    """Per human reference: exact MFAS minus Copeland mean tau per source, and who is better."""

    ilp_minus_copeland: dict[str, float]
    ilp_better: list[str]
    copeland_better: list[str]
    equal: list[str]


class Spread(TypedDict):
    mean_tau: float | None
    mean_tau_ci: list[float] | None
    std_tau: float | None
    q25: float | None
    median_tau: float | None
    q75: float | None


class Vicuna80RankingRow(msgspec.Struct, frozen=True, kw_only=True):
    """Kendall tau-b of one source's ranking method against the human reference (per question or pooled)."""

    judge: str
    method: str
    reference: str
    scope: str  # "per_question" | "pooled"
    mean_tau: float | None
    std_tau: float | None
    q25: float | None
    median_tau: float | None
    q75: float | None
    n_questions: int
    n_undefined: int
    order: list[str] = []  # pooled only
    human_order: list[str] = []  # pooled only
    mean_tau_ci: list[float] | None = None  # per question only: 95% bootstrap over questions


class Vicuna80PositionRow(msgspec.Struct, frozen=True, kw_only=True):
    """Position bias of one judge over all questions."""

    judge: str
    consistency: float | None
    n_pairs_both_orders: int
    n_consistent: int
    first_win_rate: float | None
    tie_rate: float | None
    n_verdicts: int
    consistency_ci: list[float] | None = None  # 95% bootstrap over questions
    first_win_rate_ci: list[float] | None = None


class Vicuna80ParseRow(msgspec.Struct, frozen=True, kw_only=True):
    """How one judge's verdicts were read: parsed replies, recorded labels used, agreement with the label."""

    judge: str
    n_rows: int
    n_parsed: int
    n_from_label: int
    parse_rate: float
    agreement_with_label: float | None
    rules: dict[str, int]


class Vicuna80Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the study reports; written as ``transitivity/vicuna80.json``."""

    label: str
    source: str
    rules: dict[str, str]
    random_baseline: float
    judges: list[str]
    assistants: list[str]
    n_questions: int
    n_human_votes: int
    human_votes_left_out: dict[str, int]  # per assistant no item answers: votes naming it
    n_human_votes_left_out: int
    rows: list[Vicuna80Row]
    rankings: list[Vicuna80RankingRow]
    position_bias: list[Vicuna80PositionRow]
    parse: list[Vicuna80ParseRow]
    best_method: dict[str, BestMethod]
    mfas_vs_copeland: dict[str, MfasVersusCopeland]
    inputs: list[Vicuna80Input]
    question_rankings: list[QuestionRankings]
