"""Rankings of the Vicuna80 study against the human tournaments: Kendall tau-b per question and pooled, the spread
over questions with its interval, and the conclusions drawn over judges (rules in
:mod:`offline.studies.vicuna80.study`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from calibration.stats import kendall_tau_b_statistic
from calibration.tournaments.ranking import Ranking
from calibration.unit_bootstrap import mean_interval
from offline.studies.vicuna80.results import BestMethod, MfasVersusCopeland, Spread, Vicuna80RankingRow

__all__ = ["PANEL", "RANKING_METHODS", "REFERENCES", "conclusions", "pooled_rows", "ranking_rows"]

PANEL = "panel"
RANKING_METHODS: tuple[str, ...] = ("win_rate", "bradley_terry", "schulze", "mfas_copeland", "mfas_ilp")
REFERENCES: tuple[str, ...] = ("same_method", "win_rate")
BOOTSTRAP_SEED = 0


def _tau(scores: dict[str, float], reference: dict[str, float], candidates: Sequence[str]) -> float | None:
    # Statistic only: scipy's per-call overhead was most of the study's time (5,000 five-candidate rankings).
    return kendall_tau_b_statistic([scores[c] for c in candidates], [reference[c] for c in candidates])


def _spread(values: list[float | None]) -> Spread:
    defined = [v for v in values if v is not None]
    if not defined:
        return {"mean_tau": None, "mean_tau_ci": None, "std_tau": None, "q25": None, "median_tau": None, "q75": None}
    q25, median, q75 = (float(q) for q in np.quantile(defined, [0.25, 0.5, 0.75]))
    return {
        "mean_tau": statistics.fmean(defined),
        "mean_tau_ci": mean_interval(defined, seed=BOOTSTRAP_SEED).bounds,
        "std_tau": statistics.stdev(defined) if len(defined) > 1 else None,
        "q25": q25,
        "median_tau": median,
        "q75": q75,
    }


def _reference_scores(human: dict[str, Ranking], method: str, reference: str) -> dict[str, float]:
    return human[method if reference == "same_method" else "win_rate"].scores


def ranking_rows(
    source: str,
    per_question: dict[str, dict[str, Ranking]],
    human: dict[str, dict[str, Ranking]],
    candidates: dict[str, tuple[str, ...]],
    references: Sequence[str] = REFERENCES,
) -> list[Vicuna80RankingRow]:
    rows = []
    for method in RANKING_METHODS:
        for reference in references:
            taus = [
                _tau(per_question[q][method].scores, _reference_scores(human[q], method, reference), candidates[q])
                for q in sorted(per_question)
                if q in human
            ]
            rows.append(
                Vicuna80RankingRow(
                    judge=source,
                    method=method,
                    reference=reference,
                    scope="per_question",
                    n_questions=len(taus),
                    n_undefined=sum(t is None for t in taus),
                    **_spread(taus),
                )
            )
    return rows


def pooled_rows(
    source: str, pooled: dict[str, Ranking], human: dict[str, Ranking], candidates: Sequence[str]
) -> list[Vicuna80RankingRow]:
    rows = []
    for method in RANKING_METHODS:
        for reference in REFERENCES:
            ref = human[method if reference == "same_method" else "win_rate"]
            tau = _tau(pooled[method].scores, ref.scores, candidates)
            rows.append(
                Vicuna80RankingRow(
                    judge=source,
                    method=method,
                    reference=reference,
                    scope="pooled",
                    mean_tau=tau,
                    std_tau=None,
                    q25=None,
                    median_tau=tau,
                    q75=None,
                    n_questions=1,
                    n_undefined=int(tau is None),
                    order=list(pooled[method].order),
                    human_order=list(ref.order),
                )
            )
    return rows


def conclusions(
    rows: list[Vicuna80RankingRow], judges: Sequence[str]
) -> tuple[dict[str, BestMethod], dict[str, MfasVersusCopeland]]:
    per_question = {(r.judge, r.method, r.reference): r for r in rows if r.scope == "per_question"}
    best: dict[str, BestMethod] = {}
    for reference in REFERENCES:
        means: dict[str, float | None] = {}
        for method in RANKING_METHODS:
            values = [
                tau
                for j in judges
                if (j, method, reference) in per_question
                and (tau := per_question[j, method, reference].mean_tau) is not None
            ]
            means[method] = statistics.fmean(values) if values else None
        defined = {m: v for m, v in means.items() if v is not None}
        best[reference] = {
            "method": max(defined, key=lambda m: defined[m]) if defined else None,
            "mean_tau_over_judges": means,
        }
    versus: dict[str, MfasVersusCopeland] = {}
    for reference in REFERENCES:
        diffs: dict[str, float] = {}
        for judge in (*judges, PANEL):
            ilp = per_question.get((judge, "mfas_ilp", reference))
            cop = per_question.get((judge, "mfas_copeland", reference))
            if ilp is not None and cop is not None and ilp.mean_tau is not None and cop.mean_tau is not None:
                diffs[judge] = ilp.mean_tau - cop.mean_tau
        versus[reference] = {
            "ilp_minus_copeland": diffs,
            "ilp_better": sorted(j for j, d in diffs.items() if d > 1e-12),
            "copeland_better": sorted(j for j, d in diffs.items() if d < -1e-12),
            "equal": sorted(j for j, d in diffs.items() if abs(d) <= 1e-12),
        }
    return best, versus
