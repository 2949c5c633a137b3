"""Transitivity study (Gupta & Kumar, sections 3.1 and 5.1; Tables 1, 2 and 6; Figure 2) on pairwise answers.

Input: :class:`~offline.studies.tournaments.position_bias.PairwiseAnswer` rows from any source (collected tournaments in
the answer store, or :mod:`offline.studies.tournaments.simulate`). Rules, stated once:

* **Input.** One input x = one (judge, criterion, document). Its tournament has the document's systems as
  candidates (sorted by id) and every readable verdict over all repetitions and both orders
  (:func:`calibration.tournaments.tournament.build_tournament`: majority per pair, ties kept as ties).
* **rho(x)** = directed 3-cycles / C(n, 3) (:func:`calibration.tournaments.tournament.violation_rate`); per judge x
  criterion the mean, the share of inputs with >= 1 cycle, the max and the median (``summarize_violation_rates``).
* **Intervals** (95%, inputs = documents are the unit): ``share_with_cycle_ci`` exact Clopper-Pearson over inputs;
  ``violation_rate_ci`` (of the mean rate) percentile bootstrap over inputs, 2,000 draws, seed 0
  (:mod:`calibration.unit_bootstrap`).
* **Rankings (Table 2).** Per judge x criterion one tournament over the systems pooling every document's
  verdicts; each of the five rankers (:func:`calibration.tournaments.ranking.rank_all`) is compared with the human
  ranking by Kendall's tau-b (ranking position vs human mean). Human ranking = systems ordered by the mean expert score
  on the criterion over the documents used.
* **Triangles.** The study needs inputs where some three systems were all compared with each other; recorded
  data without any (the shipped chain) is reported by the position-bias study instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError
from calibration.stats import kendall_tau_b
from calibration.tournaments.ranking import rank_all
from calibration.tournaments.tournament import (
    RANDOM_TOURNAMENT_VIOLATION_RATE,
    PairwiseVerdict,
    build_tournament,
    count_three_cycles,
    summarize_violation_rates,
    violation_rate,
)
from offline.build.inputs.summeval import CRITERIA, SummEvalItem
from offline.studies.tournaments.position_bias import PairwiseAnswer

__all__ = [
    "RANKING_METHODS",
    "InputRate",
    "RankingAgreement",
    "TransitivityRow",
    "TransitivitySummary",
    "has_triangles",
    "run_transitivity",
]

RANKING_METHODS: tuple[str, ...] = ("win_rate", "bradley_terry", "schulze", "mfas_copeland", "mfas_ilp")

RULES = {
    "input": "one (judge, criterion, document); candidates = its systems; all readable verdicts over repetitions "
    "and both orders; majority per pair, ties kept",
    "violation_rate": "directed 3-cycles / C(n, 3)",
    "intervals": "95%, inputs (documents) as the unit: share_with_cycle_ci exact Clopper-Pearson; violation_rate_ci "
    "(of the mean rate) percentile bootstrap over inputs, 2000 draws, seed 0",
    "rankings": "one tournament per judge x criterion pooling all documents; Kendall tau-b of ranking position vs "
    "human mean expert score over the documents used",
}


class InputRate(msgspec.Struct, frozen=True, kw_only=True):
    """rho(x) of one input (judge, criterion, document)."""

    judge: str
    criterion: str
    doc_id: str
    violation_rate: float
    n_cycles: int
    n_candidates: int
    n_tied_pairs: int


class TransitivityRow(msgspec.Struct, frozen=True, kw_only=True):
    """Per judge x criterion: the distribution of rho(x) over inputs (Tables 1 and 6)."""

    judge: str
    prompt_family: str
    criterion: str
    mean: float
    share_with_cycle: float
    max: float
    median: float
    n_inputs: int
    n_tied_pairs: int
    # 95% intervals over inputs (module rules); None in a summary written before they were reported.
    n_with_cycle: int | None = None
    violation_rate_ci: list[float] | None = None  # of ``mean``
    share_with_cycle_ci: list[float] | None = None


class RankingAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """Kendall tau-b of one ranker's system ranking against the human ranking (Table 2)."""

    judge: str
    prompt_family: str
    criterion: str
    method: str
    kendall_tau: float | None
    p_value: float | None
    n_systems: int
    order: list[str]
    human_order: list[str]


class TransitivitySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the transitivity study reports; written as ``transitivity/summary.json``."""

    simulated: bool
    label: str
    source: str
    rules: dict[str, str]
    random_baseline: float
    rows: list[TransitivityRow]
    inputs: list[InputRate]
    rankings: list[RankingAgreement]
    simulation: dict[str, object] | None = None


def _groups(answers: Iterable[PairwiseAnswer]) -> dict[tuple[str, str, str, str], list[PairwiseAnswer]]:
    groups: dict[tuple[str, str, str, str], list[PairwiseAnswer]] = {}
    for answer in answers:
        if answer.outcome is not None:
            groups.setdefault((answer.judge, answer.prompt_family, answer.criterion, answer.doc_id), []).append(answer)
    return groups


def has_triangles(answers: Iterable[PairwiseAnswer]) -> bool:
    """True when some input has three systems that were all compared with each other."""
    for group in _groups(answers).values():
        pairs = {frozenset((a.first, a.second)) for a in group}
        systems = sorted({s for pair in pairs for s in pair})
        neighbours = {s: {t for pair in pairs if s in pair for t in pair if t != s} for s in systems}
        for pair in pairs:
            x, y = tuple(pair)
            if neighbours[x] & neighbours[y]:
                return True
    return False


def _verdicts(group: Sequence[PairwiseAnswer]) -> list[PairwiseVerdict]:
    return [PairwiseVerdict(first=a.first, second=a.second, outcome=a.outcome) for a in group if a.outcome is not None]


def _human_means(items: Sequence[SummEvalItem], criterion: str, docs: set[str], systems: Sequence[str]) -> np.ndarray:
    totals: dict[str, list[float]] = {s: [] for s in systems}
    for item in items:
        if item.doc_id in docs and item.system_id in totals:
            totals[item.system_id].append(item.expert_mean[criterion])
    return np.array([np.mean(totals[s]) if totals[s] else np.nan for s in systems])


def _rankings(
    judge: str, family: str, criterion: str, groups: dict, items: Sequence[SummEvalItem]
) -> list[RankingAgreement]:
    chosen = [(key, g) for key, g in groups.items() if key[:3] == (judge, family, criterion)]
    systems = sorted({s for _, g in chosen for a in g for s in (a.first, a.second)})
    if len(systems) < 3:
        return []
    tournament = build_tournament(systems, [v for _, g in chosen for v in _verdicts(g)])
    human = _human_means(items, criterion, {key[3] for key, _ in chosen}, systems)
    human_order = [systems[i] for i in sorted(range(len(systems)), key=lambda i: (-human[i], i))]
    result = []
    for method, ranking in rank_all(tournament).items():
        position = {s: k for k, s in enumerate(ranking.order)}
        statistic: float | None
        p_value: float | None
        try:
            tau = kendall_tau_b([-position[s] for s in systems], human)
            statistic, p_value = tau.statistic, tau.p_value
        except CalibrationError:
            statistic = p_value = None
        result.append(
            RankingAgreement(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                method=method,
                kendall_tau=statistic,
                p_value=p_value,
                n_systems=len(systems),
                order=list(ranking.order),
                human_order=human_order,
            )
        )
    return sorted(result, key=lambda r: RANKING_METHODS.index(r.method) if r.method in RANKING_METHODS else 99)


def run_transitivity(
    answers: Iterable[PairwiseAnswer],
    items: Sequence[SummEvalItem],
    *,
    simulated: bool,
    label: str,
    source: str,
    simulation: dict[str, object] | None = None,
) -> TransitivitySummary:
    """Per-input violation rates, their per judge x criterion summary, and the ranking agreement (module rules)."""
    groups = _groups(answers)
    inputs: list[InputRate] = []
    rows: list[TransitivityRow] = []
    rankings: list[RankingAgreement] = []
    cells = sorted(
        {key[:3] for key in groups}, key=lambda k: (k[0], k[1], CRITERIA.index(k[2]) if k[2] in CRITERIA else 99, k[2])
    )
    for judge, family, criterion in cells:
        rates, tied = [], 0
        for key in sorted(k for k in groups if k[:3] == (judge, family, criterion)):
            group = groups[key]
            systems = sorted({s for a in group for s in (a.first, a.second)})
            tournament = build_tournament(systems, _verdicts(group))
            rate = violation_rate(tournament)
            rates.append(rate)
            tied += tournament.n_tied_pairs
            inputs.append(
                InputRate(
                    judge=judge,
                    criterion=criterion,
                    doc_id=key[3],
                    violation_rate=rate,
                    n_cycles=count_three_cycles(tournament),
                    n_candidates=len(systems),
                    n_tied_pairs=tournament.n_tied_pairs,
                )
            )
        summary = summarize_violation_rates(rates)
        rows.append(
            TransitivityRow(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                mean=summary.mean,
                share_with_cycle=summary.share_with_cycle,
                max=summary.max,
                median=summary.median,
                n_inputs=summary.n_inputs,
                n_tied_pairs=tied,
                n_with_cycle=summary.n_with_cycle,
                violation_rate_ci=summary.mean_ci,
                share_with_cycle_ci=summary.share_with_cycle_ci,
            )
        )
        rankings.extend(_rankings(judge, family, criterion, groups, items))
    return TransitivitySummary(
        simulated=simulated,
        label=label,
        source=source,
        rules=dict(RULES),
        random_baseline=RANDOM_TOURNAMENT_VIOLATION_RATE,
        rows=rows,
        inputs=inputs,
        rankings=rankings,
        simulation=simulation,
    )
