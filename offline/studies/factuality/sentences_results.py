"""The sentence-level factuality study's result types: parse statistics, correlation, baseline and ablation rows,
sentence agreement, error types, the confusion matrix, and the summary that holds them.
"""

from __future__ import annotations

import msgspec

from offline.build.factuality.sentences import ParseStats

__all__ = [
    "AblationRow",
    "BaselineRow",
    "ConfusionMatrix",
    "CorrelationRow",
    "ErrorTypeRow",
    "SentenceAgreement",
    "SentenceStudySummary",
]


class CorrelationRow(msgspec.Struct, frozen=True, kw_only=True):
    """One judge on one subset (``all`` | ``cnndm`` | ``bbc``): partial correlations with Factuality."""

    judge: str
    dataset: str
    n: int
    partial_pearson: float | None
    partial_spearman: float | None
    p_value: float | None  # of the partial Pearson
    spearman_p_value: float | None
    problem: str | None = None
    # 95% Fisher-z intervals (calibration.estimates.intervals.fisher_z_interval, df n - 2 - k) and the same partial
    # correlations computed on the recorder's own reading of the replies (pred_error), beside ours
    partial_pearson_ci: tuple[float, float] | None = None
    partial_spearman_ci: tuple[float, float] | None = None
    recorded_partial_pearson: float | None = None
    recorded_partial_spearman: float | None = None
    recorded_n: int | None = None


class BaselineRow(msgspec.Struct, frozen=True, kw_only=True):
    """A FRANK baseline metric on exactly one judge's included items (overall)."""

    judge: str  # whose items
    metric: str
    n: int
    partial_pearson: float | None
    partial_spearman: float | None
    p_value: float | None
    spearman_p_value: float | None


class AblationRow(msgspec.Struct, frozen=True, kw_only=True):
    """FRANK ablation for one judge and category: correlation with Factuality minus with Flip_<category>."""

    judge: str
    category: str
    flipped_pearson: float | None
    flipped_spearman: float | None
    delta_pearson: float | None
    delta_spearman: float | None


class SentenceAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """The judge's "has an error" per sentence against the human majority, pooled over included rows."""

    judge: str
    n_sentences: int
    n_human_error: int
    n_judge_error: int
    true_positive: int
    precision: float | None
    recall: float | None
    f1: float | None
    accuracy: float


class ErrorTypeRow(msgspec.Struct, frozen=True, kw_only=True):
    """One judge and FRANK type: sentences of that human majority type, how many the judge typed the same."""

    judge: str
    error_type: str
    n: int
    same_type: int
    flagged: int  # the judge flagged some error (any type)
    recall: float | None  # same_type / n
    detection: float | None  # flagged / n


class ConfusionMatrix(msgspec.Struct, frozen=True, kw_only=True):
    """Counts: rows = human majority type (``labels``), columns = the judge's category code (``labels``)."""

    judge: str
    labels: list[str]
    counts: list[list[int]]
    n_no_majority_type: int


class SentenceStudySummary(msgspec.Struct, frozen=True, kw_only=True):
    """``factuality/llm_sentences.json``."""

    source: str
    rules: dict[str, str]
    judges: list[str]
    parse: list[ParseStats]
    rows: list[CorrelationRow]
    baselines: list[BaselineRow]
    ablation: list[AblationRow]
    sentence_agreement: list[SentenceAgreement]
    error_types: list[ErrorTypeRow]
    confusion: list[ConfusionMatrix]
