"""Simulated pairwise tournaments from a recorded judge's score distributions (no live judge needed).

Every output of this mode is labelled "simulated from recorded score distributions" (:data:`SIMULATED_LABEL`).

The stochastic judge, stated once:

* **Score distribution per item.** A judge with log-probs: the item's renormalised probability vector over 1..5
  (``JudgeCriterionData.probabilities``). A judge without (temperature-0 text judges record one score per item,
  so an item has no distribution of its own): the empirical distribution of that judge's recorded scores for the
  item's *system* on the criterion, over all documents.
* **One comparison.** Draw a score for each of the two summaries independently from their distributions; the
  higher score wins; equal scores give a "tie" verdict (not a coin flip). The judge has no position preference.
* **Subset (the paper's default).** ``n_documents`` = 30 documents x 8 systems, ``repetitions`` k = 3, both
  presentation orders. Systems: :data:`offline.collecting.targets.PAPER_SYSTEMS` when the judge scored all of them;
  otherwise (the text judges scored only SummEval's 12 abstractive systems) the systems the judge scored, in
  SummEval's per-document order, at positions ``round(linspace(0, m - 1, 8))``. Documents: the first 30 in file
  order where the judge scored every chosen system on every criterion.
* **Seeds.** Judge ``j`` draws from ``numpy.random.default_rng([seed, zlib.crc32(j)])``, so a judge's tournaments
  do not depend on which other judges are simulated.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import combinations
from typing import cast

import msgspec
import numpy as np

from calibration.tournaments.tournament import Outcome
from offline.build.cell_data import JudgeCriterionData
from offline.build.inputs.pairwise import canonical_pair
from offline.build.inputs.summeval import CRITERIA, SummEvalItem
from offline.collecting.targets import PAPER_N_DOCUMENTS, PAPER_SYSTEMS
from offline.studies.tournaments.position_bias import PairwiseAnswer

__all__ = [
    "SIMULATED_LABEL",
    "SimulatedJudge",
    "SimulationConfig",
    "SimulationResult",
    "simulate_tournaments",
]

SIMULATED_LABEL = "simulated from recorded score distributions"
N_LABELS = 5


class SimulationConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Size of the simulated study: documents, systems per document, repetitions, orders, seed."""

    n_documents: int = PAPER_N_DOCUMENTS
    n_systems: int = 8
    repetitions: int = 3
    both_orders: bool = True
    seed: int = 0
    tie_rule: str = "equal scores give a 'tie' verdict"


class SimulatedJudge(msgspec.Struct, frozen=True, kw_only=True):
    """What was simulated for one judge: where its distributions came from, the systems and documents."""

    judge: str
    prompt_family: str
    distribution_source: str  # "logprobs" or "empirical per system"
    systems: list[str]
    documents: list[str]
    n_verdicts: int


class SimulationResult(msgspec.Struct, frozen=True, kw_only=True):
    """Simulated verdicts (as PairwiseAnswer rows) and a description of how they were made."""

    label: str
    config: SimulationConfig
    judges: list[SimulatedJudge]
    answers: list[PairwiseAnswer]


def _system_order(items: Sequence[SummEvalItem]) -> list[str]:
    """SummEval's per-document system order (the order of the first document's block)."""
    first_doc = items[0].doc_id
    return [item.system_id for item in items if item.doc_id == first_doc]


def _distributions(data: JudgeCriterionData, system_of: dict[str, str]) -> tuple[dict[str, np.ndarray], str]:
    if data.probabilities is not None:
        return {item: data.probabilities[i] for i, item in enumerate(data.item_ids)}, "logprobs"
    counts: dict[str, np.ndarray] = {}
    for item, score in zip(data.item_ids, data.judge_scores, strict=True):
        counts.setdefault(system_of[item], np.zeros(N_LABELS))[int(score) - 1] += 1
    return {
        item: counts[system_of[item]] / counts[system_of[item]].sum() for item in data.item_ids
    }, "empirical per system"


def _choose_systems(scored: set[str], order: Sequence[str], n_systems: int) -> list[str]:
    if n_systems == len(PAPER_SYSTEMS) and set(PAPER_SYSTEMS) <= scored:
        return list(PAPER_SYSTEMS)
    available = [s for s in order if s in scored]
    if len(available) < n_systems:
        return available
    positions = np.round(np.linspace(0, len(available) - 1, n_systems)).astype(int)
    return [available[p] for p in positions]


def _sample(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Scores 1..K drawn by inverse CDF: rows of ``cdf`` per draw, uniforms ``u``."""
    return np.minimum((u[:, None] > cdf).sum(axis=1), N_LABELS - 1) + 1


def simulate_tournaments(
    datasets: Sequence[JudgeCriterionData],
    items: Sequence[SummEvalItem],
    *,
    config: SimulationConfig | None = None,
    judges: Sequence[str] | None = None,
) -> SimulationResult:
    """Sample full tournaments (every pair of the chosen systems per document) for each judge (module rules)."""
    config = config or SimulationConfig()
    system_of = {item.item_id: item.system_id for item in items}
    doc_order = list(dict.fromkeys(item.doc_id for item in items))
    order = _system_order(items)
    by_judge: dict[tuple[str, str], dict[str, JudgeCriterionData]] = {}
    for data in datasets:
        by_judge.setdefault((data.judge, data.prompt_family), {})[data.criterion] = data
    described: list[SimulatedJudge] = []
    answers: list[PairwiseAnswer] = []
    for (judge, family), per_criterion in sorted(by_judge.items()):
        if judges is not None and judge not in judges:
            continue
        criteria = [c for c in CRITERIA if c in per_criterion]
        dists = {}
        source = ""
        for criterion in criteria:
            dists[criterion], source = _distributions(per_criterion[criterion], system_of)
        scored = set.intersection(*({system_of[i] for i in dists[c]} for c in criteria))
        systems = _choose_systems(scored, order, config.n_systems)
        documents = [doc for doc in doc_order if all(f"{doc}/{s}" in dists[c] for c in criteria for s in systems)][
            : config.n_documents
        ]
        rng = np.random.default_rng([config.seed, zlib.crc32(judge.encode())])
        pairs = [canonical_pair(x, y) for x, y in combinations(systems, 2)]
        orders = ("ab", "ba") if config.both_orders else ("ab",)
        plan = [(a, b, o, r) for a, b in pairs for o in orders for r in range(config.repetitions)]
        first = [a if o == "ab" else b for a, b, o, _ in plan]
        second = [b if o == "ab" else a for a, b, o, _ in plan]
        index = {s: k for k, s in enumerate(systems)}
        i_first = np.array([index[s] for s in first])
        i_second = np.array([index[s] for s in second])
        n_before = len(answers)
        for criterion in criteria:
            for doc in documents:
                cdf = np.cumsum(np.vstack([dists[criterion][f"{doc}/{s}"] for s in systems]), axis=1)
                s_first = _sample(cdf[i_first], rng.random(len(plan)))
                s_second = _sample(cdf[i_second], rng.random(len(plan)))
                outcomes = np.where(s_first > s_second, "first", np.where(s_first < s_second, "second", "tie"))
                answers.extend(
                    PairwiseAnswer(
                        judge=judge,
                        prompt_family=family,
                        criterion=criterion,
                        doc_id=doc,
                        first=f,
                        second=s,
                        outcome=cast(Outcome, str(out)),
                        repetition=plan[k][3],
                    )
                    for k, (f, s, out) in enumerate(zip(first, second, outcomes, strict=True))
                )
        described.append(
            SimulatedJudge(
                judge=judge,
                prompt_family=family,
                distribution_source=source,
                systems=systems,
                documents=documents,
                n_verdicts=len(answers) - n_before,
            )
        )
    return SimulationResult(label=SIMULATED_LABEL, config=config, judges=described, answers=answers)
