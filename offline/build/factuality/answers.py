"""FRANK factuality answers as the build reads them, and the faithfulness calibration's target and split.

* **Answers.** The answer store's rows of task ``factuality_direct`` / ``factuality_qa`` stored under the prompt
  family of the same name (``judges.factuality.methods.FAITHFULNESS_PROMPT_FAMILIES``), criterion
  ``faithfulness``, repetition 0, ``item_id`` = ``"<hash>/<model_name>"``; an id naming no FRANK item is an
  error (a misaligned store must not pass silently).
* **Score.** direct: the judge's 1-5 ``judge_score``; qa: the QA score in [0, 1] (mean token F1), read from the
  stored ``QAFactuality`` JSON (``raw_reply``). A failed call or a missing/unreadable score is missing.
* **Target.** :func:`faithfulness_target`: ``round_half_up(1 + 4 x Factuality)`` on 1..5.
* **Split.** :func:`calibration_split`: FRANK's own, fit on ``valid``, evaluate on ``test``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import msgspec

from calibration.errors import ScoreOutOfRangeError
from judges.factuality.methods import FAITHFULNESS_PROMPT_FAMILIES
from offline.build.answers.store import AnswerStore
from offline.build.inputs.frank import FrankDataError, FrankItem

__all__ = [
    "CRITERION",
    "LLM_METHODS",
    "FactualityAnswer",
    "FrankSplit",
    "calibration_split",
    "factuality_answers_from_store",
    "faithfulness_target",
]

CRITERION = "faithfulness"
LLM_METHODS: tuple[str, ...] = ("direct", "qa")


class FactualityAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One stored factuality answer: the 1-5 verdict, the score the study correlates (None = missing)."""

    judge: str
    method: str
    prompt_family: str
    item_id: str
    judge_score: int | None
    score: float | None
    logprobs: dict[str, float] | None = None
    model: str | None = None
    error: str | None = None


class _QAScore(msgspec.Struct):
    score: float


_QA_DECODER = msgspec.json.Decoder(_QAScore)


def _qa_score(raw_reply: str | None) -> float | None:
    """The aggregate QA score of a stored QAFactuality JSON, or None when it is absent or unreadable."""
    if not raw_reply:
        return None
    try:
        score = _QA_DECODER.decode(raw_reply).score
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return score if 0.0 <= score <= 1.0 else None


def factuality_answers_from_store(
    store: AnswerStore, items: Sequence[FrankItem]
) -> dict[tuple[str, str], list[FactualityAnswer]]:
    """Every judge's factuality answers (module rules), keyed by (judge, method), each list ordered by item_id.

    Raises FrankDataError when a stored item_id names no FRANK item.
    """
    known = {item.item_id for item in items}
    result: dict[tuple[str, str], list[FactualityAnswer]] = {}
    for method, family in FAITHFULNESS_PROMPT_FAMILIES.items():
        if method not in LLM_METHODS:  # sentence fact-checks: offline.build.factuality.sentences
            continue
        for record in store.iter_answers(task=family, prompt_family=family, criterion=CRITERION):
            if record.repetition != 0:
                continue
            if record.item_id not in known:
                raise FrankDataError(
                    None,
                    None,
                    f"stored {family} answer of judge {record.judge!r} names item "
                    f"{record.item_id!r}, which is no FRANK '<hash>/<model_name>'",
                )
            ok = record.error is None
            score: float | None = None
            if ok and record.judge_score is not None:
                score = float(record.judge_score) if method == "direct" else _qa_score(record.raw_reply)
            result.setdefault((record.judge, method), []).append(
                FactualityAnswer(
                    judge=record.judge,
                    method=method,
                    prompt_family=family,
                    item_id=record.item_id,
                    judge_score=record.judge_score if ok else None,
                    score=score,
                    logprobs=record.logprobs if ok else None,
                    model=record.model,
                    error=record.error,
                )
            )
    for answers in result.values():
        answers.sort(key=lambda answer: answer.item_id)
    return dict(sorted(result.items()))


class FrankSplit(msgspec.Struct, frozen=True, kw_only=True):
    """FRANK's own split: calibrate (fit) on ``valid`` items, evaluate on ``test`` items."""

    fit: tuple[FrankItem, ...]
    evaluate: tuple[FrankItem, ...]


def faithfulness_target(factuality: float) -> int:
    """1..5 faithfulness label: ``round_half_up(1 + 4 * factuality)`` (0 -> 1, 0.375 -> 3, 0.5 -> 3, 1 -> 5).

    ``1 + 4 * factuality`` is first rounded to 9 decimals so that binary noise cannot move a half; halves go
    up. Raises ScoreOutOfRangeError when factuality is not a number in [0, 1].
    """
    if isinstance(factuality, bool) or not isinstance(factuality, Real) or not 0.0 <= factuality <= 1.0:
        raise ScoreOutOfRangeError(f"factuality must be a number in [0, 1]; got {factuality!r}")
    return int(math.floor(round(1.0 + 4.0 * float(factuality), 9) + 0.5))


def calibration_split(items: Sequence[FrankItem]) -> FrankSplit:
    """Split by FRANK's own ``split`` field: fit = ``valid`` items, evaluate = ``test`` items (file order)."""
    return FrankSplit(
        fit=tuple(item for item in items if item.split == "valid"),
        evaluate=tuple(item for item in items if item.split == "test"),
    )
