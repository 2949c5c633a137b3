"""The input of the conformal studies: one judge's recorded answers on one criterion, aligned with the human target.

A cell is one (judge, prompt family, criterion): its used items, the human target y* per item
(:func:`offline.build.inputs.summeval.human_target`), the judge's integer score, its probabilities over 1..K when every
used item has log-probs, and how many answers were excluded for a missing or unreadable score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.conformal import METHODS, PROBABILITY_METHODS, probabilities_from_logprobs
from calibration.input_kinds.verdicts import round_half_up
from offline.build.answers.store import AnswerStore, aligned_direct
from offline.build.inputs.summeval import SummEvalItem, human_target

__all__ = [
    "N_LABELS",
    "SCORE_ONLY_METHODS",
    "DirectAnswer",
    "JudgeCriterionData",
    "build_cell_data",
    "cell_data_from_store",
    "methods_for",
    "probability_row",
]

N_LABELS = 5
SCORE_ONLY_METHODS: tuple[str, ...] = tuple(m for m in METHODS if m not in PROBABILITY_METHODS)


class DirectAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One judge answer on one item: its integer score (None = unreadable/missing) and log-probs over 1..K."""

    judge: str
    prompt_family: str
    criterion: str
    item_id: str
    judge_score: int | None
    logprobs: dict[str, float] | None = None
    mean_of_samples: float | None = None


@dataclass(frozen=True)
class JudgeCriterionData:
    """Aligned arrays for one (judge, prompt family, criterion); arrays are per used item."""

    judge: str
    prompt_family: str
    criterion: str
    item_ids: tuple[str, ...]
    labels: np.ndarray
    judge_scores: np.ndarray
    probabilities: np.ndarray | None
    n_answered: int
    n_excluded: int
    groups: tuple[str, ...] | None = None  # split group (document / source id) per item; None: each item alone
    # A judge whose verdict is a mean of sampled scores (every item): its means; judge_scores then hold
    # round_half_up(mean), used only by the item-level study (the served artifact fits the ``mean`` kind).
    means: np.ndarray | None = None
    n_labels: int = N_LABELS  # K of the cell's scale 1..K

    @property
    def documents(self) -> tuple[str, ...]:
        """The document of each item, the unit of every document-level fit and split: its group, else the item id's
        prefix before ``/`` (SummEval's ``<document>/<system>``)."""
        if self.groups is not None:
            return tuple(self.groups)
        return tuple(item_id.split("/", 1)[0] for item_id in self.item_ids)

    @property
    def errors(self) -> np.ndarray:
        """Absolute judge error |judge_score - y*| per item."""
        return np.abs(self.judge_scores - self.labels)


def probability_row(logprobs: dict[str, float]) -> np.ndarray | None:
    """Probabilities over 1..K from stored log-probs (a missing label counts -inf); None when none is usable."""
    values = [logprobs.get(str(k), -math.inf) for k in range(1, N_LABELS + 1)]
    if all(math.isinf(v) for v in values):
        return None
    return probabilities_from_logprobs(np.asarray(values, dtype=float))


def build_cell_data(answers: Iterable[DirectAnswer], items: Sequence[SummEvalItem]) -> list[JudgeCriterionData]:
    """Group answers by (judge, prompt family, criterion), join y* from ``items``; sorted by those keys.

    Answers whose item has no human label are ignored; answers without a judge score are counted as excluded.
    """
    by_id = {item.item_id: item for item in items}
    groups: dict[tuple[str, str, str], list[DirectAnswer]] = {}
    for answer in answers:
        if answer.item_id in by_id and answer.criterion in by_id[answer.item_id].expert_mean:
            groups.setdefault((answer.judge, answer.prompt_family, answer.criterion), []).append(answer)
    result = []
    for (judge, family, criterion), group in sorted(groups.items()):
        group.sort(key=lambda a: a.item_id)
        used = [a for a in group if a.judge_score is not None or a.mean_of_samples is not None]
        if not used:
            continue
        mean_judge = all(a.mean_of_samples is not None for a in used)
        rows = [None if a.logprobs is None else probability_row(a.logprobs) for a in used]
        present = [r for r in rows if r is not None]
        probabilities = np.vstack(present) if len(present) == len(rows) else None
        result.append(
            JudgeCriterionData(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                item_ids=tuple(a.item_id for a in used),
                labels=np.array([human_target(by_id[a.item_id].expert_mean[criterion]) for a in used]),
                # used: every answer has a judge score or a mean of samples
                judge_scores=np.array(
                    [
                        round_half_up(a.mean_of_samples) if a.judge_score is None else a.judge_score  # type: ignore[arg-type]
                        for a in used
                    ],
                    dtype=np.int64,
                ),
                means=np.array([a.mean_of_samples for a in used], dtype=float) if mean_judge else None,
                probabilities=probabilities,
                n_answered=len(group),
                n_excluded=len(group) - len(used),
                groups=tuple(by_id[a.item_id].doc_id for a in used),
            )
        )
    return result


def cell_data_from_store(
    store: AnswerStore, items: Sequence[SummEvalItem], *, task: str = "direct"
) -> list[JudgeCriterionData]:
    """Read every judge's direct answers (repetition 0) from the answer store; see build_cell_data."""
    answers: list[DirectAnswer] = []
    for count in store.counts():
        if count.task != task:
            continue
        for row in aligned_direct(store, count.judge, count.criterion, prompt_family=count.prompt_family, task=task):
            answers.append(
                DirectAnswer(
                    judge=count.judge,
                    prompt_family=count.prompt_family,
                    criterion=count.criterion,
                    item_id=row.item_id,
                    judge_score=row.judge_score,
                    logprobs=row.logprobs,
                    mean_of_samples=row.mean_of_samples,
                )
            )
    return build_cell_data(answers, items)


def methods_for(data: JudgeCriterionData) -> tuple[str, ...]:
    """All METHODS when the judge gave probabilities, else the score-only ones (residual, mondrian, learned)."""
    return METHODS if data.probabilities is not None else SCORE_ONLY_METHODS
