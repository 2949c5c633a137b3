"""Certified pairwise decisions on real human votes: accept share and human agreement among accepted pairs.

Datasets: ``pairwise/vicuna80`` (80 questions x 10 pairs, 5 LLM judges in both orders, 1-3 human votes per pair)
and ``pairwise/arena_ppr`` (26,919 Chatbot Arena battles, 3 LLM judges' hard verdicts, one human vote each).
Rules, stated once (also written into the JSON):

* **Sources.** Each judge alone, and ``panel`` (all judges; each member's verdicts weighted equally).
  Signal and acceptance: :mod:`calibration.decisions.pairwise` (vote share over both orders and repetitions; a
  single Arena verdict gives confidence 1 when decisive, 0 on a tie).
* **Verdicts.** Vicuna80: the parsed choice where the reply parses, else the recorded label
  (``offline.build.answers.ingest.vicuna80_records``, as the transitivity study reads them). Arena: the recorded winner.
* **Human label.** Vicuna80: strict plurality of the pair's votes (a, b, tie), none = tie. Arena: the vote;
  ``tie`` and ``tie (bothbad)`` are ties.
* **Ties.** ``exclude`` (headline): pairs with a human tie are left out of calibration and of the agreement;
  ``error``: a human tie counts as a disagreement. Accept share is over all held-out pairs either way.
* **Groups.** The exchangeable unit is the question (Vicuna80: 10 pairs each) or the ``question_id`` (Arena:
  26,910 ids, 9 with two battles). Split i puts a seeded half of the groups in calibration
  (:func:`calibration.input_kinds.heldout.group_splits`, ``default_rng([seed, i])``), the rest is held out.
* **Bounds.** ``group_betting`` (headline and served: valid with clustered pairs by construction; multi-start
  fixed sequence from 1.0, 0.8 and 0.6 at delta / k each, k = the starts left after merging those that the
  source's verdict count makes equal: 1 for a single judge, 2 for the Arena panel, 3 for the Vicuna80 panel)
  and ``pair_binomial`` (Trust-or-Escalate's Clopper-Pearson over pairs, one chain from 1.0 at delta; it counts
  the 10 pairs of a question as independent, which the validity simulation shows it is not), over levels 1.00,
  0.95, ..., 0.05. Per (dataset, ties, bound, alpha, source): mean accept share over splits, agreement among
  accepted held-out pairs pooled over splits (and its mean over splits that accepted something), splits whose
  held-out error exceeds alpha.
* **Modes.** The ``expected`` mode (:mod:`calibration.decisions.pairwise_expected`; Vicuna80 questions, Arena battles as
  the unit) beside ``pac`` (the group-bound certificate) on the same splits, ties excluded:
  :mod:`offline.studies.pairwise_decisions.modes` states the figures.
* **Validity simulation.** The full dataset is the population; each draw takes as many groups as a calibration
  half, with replacement (``default_rng([seed, 1000 + draw])``), certifies, and fails when the population's error
  among pairs accepted at the certified threshold exceeds alpha. Failure rate vs delta with its Monte-Carlo
  standard error sqrt(delta (1 - delta) / draws).

The pair tables live in :mod:`offline.build.pairwise_tables`, the validity simulation in
:mod:`offline.studies.pairwise_decisions.simulation`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from calibration.decisions.pairwise import (
    BOUNDS,
    DEFAULT_LEVELS,
    Bound,
    Ties,
    accepted,
    certify_threshold,
    disagreements,
)
from calibration.input_kinds.heldout import group_splits
from offline.build.pairwise import ALPHAS, DELTA, HEADLINE, SIGNAL_RULE
from offline.build.pairwise_tables import PANEL, PairTable, bound_starts, sources
from offline.studies.pairwise_decisions.modes import MODE_RULES, mode_check, mode_rows
from offline.studies.pairwise_decisions.results import DecisionRow, ModeRow, PairwiseDecisionSummary, SimulationRow
from offline.studies.pairwise_decisions.simulation import population_risks, simulation_rows

__all__ = [
    "JSON_FILE",
    "run_pairwise_decisions",
]

JSON_FILE = "pairwise_decisions/summary.json"
FIGURE_FILE = "pairwise_decisions/accept_vs_agreement.png"
TIES: tuple[Ties, ...] = ("exclude", "error")
BOUNDARY_MARGIN = 0.01


RULES = {
    "signal": SIGNAL_RULE,
    "vicuna80_verdict": "parsed choice where the reply parses, else the recorded label",
    "human_label": "Vicuna80: strict plurality of the pair's human votes (a, b, tie), none = tie; Arena: the vote, "
    "both tie kinds = tie",
    "ties_exclude": "pairs with a human tie are left out of calibration and agreement (accept share still over all "
    "held-out pairs)",
    "ties_error": "a human tie counts as a disagreement with any accepted preference",
    "groups": "Vicuna80: question (10 pairs); Arena: question_id; calibration and held-out groups are disjoint",
    "fixed_sequence": "levels 1.00 to 0.05 by 0.05, most confident first; stop at the first level not certified; "
    "group_betting: one chain from each of 1.0, 0.8, 0.6 at delta / 3, threshold = lowest certified level",
    "group_betting": "p = 1 / mean over 4 fixed bets of prod_g (1 - nu (x_g - alpha)), x_g = alpha + (e_g - alpha "
    "a_g) / m; valid over independent groups",
    "pair_binomial": "exact binomial P(Bin(n_accepted, alpha) <= n_errors) over pairs (Trust-or-Escalate)",
    "simulation": "population = the full dataset; draws of a calibration half's group count with replacement",
    **MODE_RULES,
}


def _decision_row(
    table: PairTable, source: str, ties: Ties, bound: Bound, alpha: float, delta: float, splits: Sequence[Any]
) -> DecisionRow:
    signal = table.signals[source]
    errors, counted = disagreements(signal.preferred, table.human, ties)
    shares, agreements = [], []
    thresholds: Counter[str] = Counter()
    n_acc = n_agree = above = nothing = 0
    decisive = signal.preferred != 0
    for split in splits:
        cal = split.calibration[counted[split.calibration]]
        cert = certify_threshold(
            signal.confidence[cal],
            signal.preferred[cal],
            errors[cal],
            table.groups[cal],
            alpha=alpha,
            delta=delta,
            bound=bound,
            group_size_bound=table.group_size_bound,
            starts=bound_starts(bound, table, source),
        )
        thresholds["none" if cert.threshold is None else f"{cert.threshold:.2f}"] += 1
        test = split.test
        acc = accepted(signal.preferred[test], signal.confidence[test], cert.threshold)
        shares.append(float(acc.mean()))
        scored = acc & counted[test]
        k = int(scored.sum())
        agree = int((scored & ~errors[test]).sum())
        n_acc += k
        n_agree += agree
        if k:
            agreements.append(agree / k)
            above += (k - agree) / k > alpha
        else:
            nothing += 1
    ref_share = float(np.mean([decisive[s.test].mean() for s in splits]))
    ref = np.concatenate([s.test for s in splits])
    ref = ref[decisive[ref] & counted[ref]]
    return DecisionRow(
        dataset=table.dataset,
        source=source,
        ties=ties,
        bound=bound,
        alpha=alpha,
        delta=delta,
        n_splits=len(splits),
        accept_share=float(np.mean(shares)),
        accept_share_min=float(np.min(shares)),
        accept_share_max=float(np.max(shares)),
        agreement=n_agree / n_acc if n_acc else None,
        agreement_mean=float(np.mean(agreements)) if agreements else None,
        n_splits_error_above_alpha=int(above),
        n_splits_nothing_accepted=nothing,
        thresholds=dict(sorted(thresholds.items(), reverse=True)),
        all_decisive_accept_share=ref_share,
        all_decisive_agreement=float((~errors[ref]).mean()) if ref.size else None,
        n_test_pairs_mean=float(np.mean([s.test.size for s in splits])),
    )


def _done_when(rows: Sequence[DecisionRow]) -> dict[str, Any]:
    """The headline check (Vicuna80 panel at alpha 0.20, held-out questions) under each bound, ties excluded."""
    out: dict[str, Any] = {
        "check": "Vicuna80, alpha 0.20, held-out questions, 5-judge panel: accept share >= 0.60 "
        "and agreement among accepted >= 0.80",
        "headline_bound": HEADLINE["bound"],
    }
    for bound in BOUNDS:
        head = [
            r
            for r in rows
            if r.dataset == "vicuna80"
            and r.source == PANEL
            and r.alpha == 0.20
            and r.bound == bound
            and r.ties == "exclude"
        ]
        if head:
            r = head[0]
            out[bound] = {
                "accept_share": r.accept_share,
                "agreement": r.agreement,
                "met": bool(r.accept_share >= 0.60 and r.agreement is not None and r.agreement >= 0.80),
            }
    return out


def run_pairwise_decisions(
    tables: Sequence[PairTable],
    *,
    n_splits: int = 20,
    seed: int = 0,
    cal_fraction: float = 0.5,
    delta: float = DELTA,
    alphas: Sequence[float] = ALPHAS,
    n_draws: int = 300,
    progress: Callable[[Iterable], Iterable] = lambda it: it,
) -> PairwiseDecisionSummary:
    """Every table of the study (module rules) for the given datasets; ``n_draws = 0`` skips the simulation."""
    rows: list[DecisionRow] = []
    modes: list[ModeRow] = []
    simulation: list[SimulationRow] = []
    datasets: dict[str, dict[str, Any]] = {}
    jobs = [(t, s, ties, alpha) for t in tables for s in sources(t) for ties in TIES for alpha in alphas]
    splits = {
        t.dataset: group_splits(t.groups, n_splits=n_splits, seed=seed, cal_fraction=cal_fraction) for t in tables
    }
    for table in tables:
        datasets[table.dataset] = {
            "n_pairs": int(table.groups.size),
            "n_groups": int(table.groups.max() + 1),
            "group_size_bound": table.group_size_bound,
            "sources": sources(table),
            "human_a": int((table.human == 1).sum()),
            "human_b": int((table.human == -1).sum()),
            "human_tie": int((table.human == 0).sum()),
            "n_cal_groups": int(np.unique(table.groups[splits[table.dataset][0].calibration]).size),
        }
    for table in progress(tables):
        modes.extend(mode_rows(table, sources(table), alphas, splits[table.dataset], seed=seed, delta=delta))
    for table, source, ties, alpha in progress(jobs):
        for bound in BOUNDS:
            rows.append(_decision_row(table, source, ties, bound, alpha, delta, splits[table.dataset]))
        if n_draws > 0:
            simulation.extend(
                simulation_rows(
                    table,
                    source,
                    ties,
                    alpha,
                    delta,
                    n_draws=n_draws,
                    n_groups=datasets[table.dataset]["n_cal_groups"],
                    seed=seed,
                )
            )
    if n_draws > 0:
        # The hardest real case: alpha just below the population error of accepting every decisive pair, so
        # the last levels are true nulls that a too-liberal bound would reject.
        for table, source in progress([(t, s) for t in tables for s in sources(t)]):
            risk = population_risks(table, source, "exclude")[DEFAULT_LEVELS[-1]]
            if BOUNDARY_MARGIN < risk - BOUNDARY_MARGIN < 1:
                simulation.extend(
                    simulation_rows(
                        table,
                        source,
                        "exclude",
                        round(risk - BOUNDARY_MARGIN, 4),
                        delta,
                        n_draws=n_draws,
                        n_groups=datasets[table.dataset]["n_cal_groups"],
                        seed=seed,
                    )
                )
    return PairwiseDecisionSummary(
        rules=dict(RULES),
        seed=seed,
        split_seeds=[[seed, i] for i in range(n_splits)],
        n_splits=n_splits,
        cal_fraction=cal_fraction,
        delta=delta,
        alphas=[float(a) for a in alphas],
        levels=list(DEFAULT_LEVELS),
        datasets=datasets,
        rows=rows,
        simulation=simulation,
        done_when={**_done_when(rows), "modes": mode_check(modes)},
        modes=modes,
    )
