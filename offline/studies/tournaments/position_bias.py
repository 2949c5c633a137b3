"""Position bias of a pairwise judge: does its verdict survive swapping the presentation order?

Works on any pairwise answers (the shipped chain of GPT-3.5 verdicts, or collected tournaments). Each answer is a
:class:`PairwiseAnswer`: the document, the two systems as shown, and the parsed outcome (None = unreadable reply).

Rules, stated once:

* Candidates are document-scoped (``"<doc_id>/<system>"``), so one system pair in two documents is two pairs.
* Consistency (``calibration.tournaments.position_consistency.position_consistency``): per unordered pair judged in both
  orders, the majority in each order names the same system (or both orders are ties; "tie" verdicts abstain).
* ``tie_rate``: "tie" verdicts / readable verdicts. ``first_win_rate``: share of decisive verdicts won by the
  candidate shown first (0.5 = no position preference).
* Unreadable replies are excluded from every rate and counted (``n_unparsed``).
* **Intervals** (95%, the document is the unit: its pairs and verdicts move together):
  ``consistency_ci`` and ``first_win_rate_ci``, percentile bootstrap over documents of the pooled share
  (:func:`calibration.unit_bootstrap.ratio_interval`, 2,000 draws, seed 0); documents with no pair in both orders
  (no decisive verdict) are not units of that share. The pooled ``all`` row resamples documents with every
  criterion of a document together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from calibration.tournaments.position_consistency import position_consistency
from calibration.tournaments.tournament import Outcome, PairwiseVerdict
from calibration.unit_bootstrap import ratio_interval
from offline.build.answers.ingest import VICUNA80_CRITERION, VICUNA80_PROMPT_FAMILY
from offline.build.answers.store import AnswerStore
from offline.build.inputs.pairwise import presented
from offline.build.inputs.summeval import CRITERIA

__all__ = [
    "PairwiseAnswer",
    "PositionBiasRow",
    "PositionBiasSummary",
    "pairwise_answers_from_store",
    "run_position_bias",
    "unit_intervals",
]

BOOTSTRAP_SEED = 0


class PairwiseAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One pairwise verdict as shown: ``first`` won when outcome is "first"; outcome None = unreadable."""

    judge: str
    prompt_family: str
    criterion: str
    doc_id: str
    first: str
    second: str
    outcome: Outcome | None
    repetition: int = 0


class PositionBiasRow(msgspec.Struct, frozen=True, kw_only=True):
    """Position consistency and tie rate of one judge on one criterion ("all" = every criterion pooled)."""

    judge: str
    prompt_family: str
    criterion: str
    consistency: float | None
    n_pairs_both_orders: int
    n_consistent: int
    n_verdicts: int
    n_unparsed: int
    tie_rate: float | None
    first_win_rate: float | None
    # 95% intervals over documents (module rules); None when undefined or in a summary written before them.
    n_documents: int | None = None
    consistency_ci: list[float] | None = None
    first_win_rate_ci: list[float] | None = None


class PositionBiasSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the position-bias study reports; written as ``position_bias/summary.json``."""

    rows: list[PositionBiasRow]
    rules: dict[str, str]
    source: str
    simulated: bool = False


RULES = {
    "candidates": "document-scoped: '<doc_id>/<system>'",
    "consistency": "pairs judged in both orders whose per-order majority names the same system (or ties in both)",
    "tie_rate": "tie verdicts / readable verdicts",
    "first_win_rate": "decisive verdicts won by the first-shown candidate / decisive verdicts",
    "unparsed": "unreadable replies are excluded from every rate and counted",
    "intervals": "95%, documents as the unit: consistency_ci and first_win_rate_ci are percentile bootstrap "
    "intervals of the pooled share over documents (2000 draws, seed 0); the 'all' row keeps a document's "
    "criteria together",
}


def pairwise_answers_from_store(store: AnswerStore) -> list[PairwiseAnswer]:
    """Every stored SummEval pairwise answer (task "pairwise") as shown to the judge, in store key order.

    The Vicuna80 tournaments (family "prd", criterion "overall") are their own study (``studies/vicuna80/study.py``)."""
    answers = []
    for record in store.iter_answers(task="pairwise"):
        if (record.prompt_family, record.criterion) == (VICUNA80_PROMPT_FAMILY, VICUNA80_CRITERION):
            continue
        doc_id, first, second = presented(record.item_id, record.order)
        answers.append(
            PairwiseAnswer(
                judge=record.judge,
                prompt_family=record.prompt_family,
                criterion=record.criterion,
                doc_id=doc_id,
                first=first,
                second=second,
                outcome=record.outcome if record.error is None else None,
                repetition=record.repetition,
            )
        )
    return answers


def _verdicts(answers: Iterable[PairwiseAnswer]) -> list[PairwiseVerdict]:
    return [
        PairwiseVerdict(first=f"{a.doc_id}/{a.first}", second=f"{a.doc_id}/{a.second}", outcome=a.outcome)
        for a in answers
        if a.outcome is not None
    ]


def _share_interval(rows: list[tuple[int, int]], seed: int) -> list[float] | None:
    return ratio_interval([a for a, _ in rows], [b for _, b in rows], seed=seed).bounds if rows else None


def unit_intervals(
    verdicts_by_unit: Mapping[str, Iterable[PairwiseVerdict]], *, seed: int = BOOTSTRAP_SEED
) -> tuple[list[float] | None, list[float] | None]:
    """95% intervals of position consistency and of the first-shown win rate with each unit (document, question)
    resampled whole (module rules); None where no unit has a pair in both orders (a decisive verdict)."""
    per_unit = [position_consistency(v) for _, v in sorted(verdicts_by_unit.items())]
    both = [(r.n_consistent, r.n_pairs_both_orders) for r in per_unit if r.n_pairs_both_orders]
    decisive = [
        (round(r.first_win_rate * (r.n_verdicts - r.n_ties)), r.n_verdicts - r.n_ties)
        for r in per_unit
        if r.first_win_rate is not None
    ]
    return _share_interval(both, seed), _share_interval(decisive, seed)


def _row(
    judge: str, family: str, criterion: str, answers: Sequence[PairwiseAnswer], documents: Sequence[str]
) -> PositionBiasRow:
    """One row; ``documents[i]`` is the unit (the SummEval document) of ``answers[i]``."""
    result = position_consistency(_verdicts(answers))
    by_document: dict[str, list[PairwiseAnswer]] = {}
    for answer, document in zip(answers, documents, strict=True):
        by_document.setdefault(document, []).append(answer)
    consistency_ci, first_win_rate_ci = unit_intervals({d: _verdicts(group) for d, group in by_document.items()})
    return PositionBiasRow(
        judge=judge,
        prompt_family=family,
        criterion=criterion,
        consistency=result.rate,
        n_pairs_both_orders=result.n_pairs_both_orders,
        n_consistent=result.n_consistent,
        n_verdicts=result.n_verdicts,
        n_unparsed=sum(a.outcome is None for a in answers),
        tie_rate=result.tie_rate,
        first_win_rate=result.first_win_rate,
        n_documents=len(by_document),
        consistency_ci=consistency_ci,
        first_win_rate_ci=first_win_rate_ci,
    )


def run_position_bias(
    answers: Iterable[PairwiseAnswer], *, source: str, simulated: bool = False
) -> PositionBiasSummary:
    """Per (judge, prompt family) and criterion, plus all criteria pooled: consistency, ties, first-win rate."""
    groups: dict[tuple[str, str], list[PairwiseAnswer]] = {}
    for answer in answers:
        groups.setdefault((answer.judge, answer.prompt_family), []).append(answer)
    rows = []
    for (judge, family), group in sorted(groups.items()):
        present = [c for c in CRITERIA if any(a.criterion == c for a in group)]
        present += sorted({a.criterion for a in group} - set(present))
        for criterion in present:
            chosen = [a for a in group if a.criterion == criterion]
            rows.append(_row(judge, family, criterion, chosen, [a.doc_id for a in chosen]))
        # Pooled: candidates are also criterion-scoped so that criteria never merge into one pair.
        pooled = [msgspec.structs.replace(a, doc_id=f"{a.criterion}:{a.doc_id}") for a in group]
        rows.append(_row(judge, family, "all", pooled, [a.doc_id for a in group]))
    return PositionBiasSummary(rows=rows, rules=dict(RULES), source=source, simulated=simulated)
