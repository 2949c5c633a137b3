"""The pairwise artifact (``artifact/pairwise_decisions.json``, :mod:`artifact.pairwise`): each single judge's
certified thresholds, fitted on every group of its dataset (Vicuna80 and Arena PPR human votes).

Rules (the study of these rules on held-out questions is :mod:`offline.studies.pairwise_decisions.study`):

* **Signal.** ``SIGNAL_RULE``: the share of a judge's verdicts naming the preferred side
  (:mod:`calibration.decisions.pairwise`; the pair tables are :mod:`offline.build.pairwise_tables`).
* **Entries.** Per (judge, dataset) and alpha in ``ALPHAS``: the ``pac`` certificate (``HEADLINE``: the
  group-betting bound, human ties excluded, at ``DELTA``) and the ``expected`` rule
  (:func:`calibration.decisions.pairwise_expected.expected_threshold`, seed ``seed``, the alpha's grid index as
  position, Vicuna80 questions and Arena battles as the unit). Panels are left out (``/v1/compare`` asks one judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from artifact.pairwise import FORMAT_VERSION, ExpectedEvidence, PairwiseArtifact, PairwiseEntry
from calibration.decisions.pairwise import GROUP_STARTS, Bound, Ties, certify_threshold, disagreements
from calibration.decisions.pairwise_expected import expected_threshold
from offline.build.pairwise_tables import PANEL, PairTable, bound_starts, sources

__all__ = [
    "ALPHAS",
    "DELTA",
    "HEADLINE",
    "SIGNAL_RULE",
    "export_pairwise_artifact",
    "expected_units",
]

ALPHAS: tuple[float, ...] = (0.10, 0.20, 0.30)
DELTA = 0.10
SIGNAL_RULE = (
    "share of a source's verdicts (both orders, every repetition; panel: members weighted equally) naming "
    "the preferred side; ties count in the denominator; equal shares never accept"
)


class _Headline(TypedDict):
    bound: Bound
    ties: Ties


HEADLINE: _Headline = {"bound": "group_betting", "ties": "exclude"}


def expected_units(table: PairTable) -> np.ndarray:
    """The expected rule's unit per pair: each Arena battle alone, else the table's groups (Vicuna80 questions)."""
    return np.arange(table.groups.size) if table.dataset == "arena_ppr" else table.groups


def export_pairwise_artifact(
    tables: Sequence[PairTable],
    *,
    delta: float = DELTA,
    alphas: Sequence[float] = ALPHAS,
    source: str = "",
    seed: int = 0,
) -> PairwiseArtifact:
    """Each single judge's entries per alpha fitted on every group of its dataset (headline tie rule): the pac
    certificate (headline bound) and the expected rule (seed ``seed``, the alpha's grid index as position, the
    expected mode's unit); panels are left out (``/v1/compare`` asks one judge)."""
    entries = []
    for table in tables:
        for judge in sources(table):
            if judge == PANEL:
                continue
            signal = table.signals[judge]
            errors, counted = disagreements(signal.preferred, table.human, HEADLINE["ties"])
            for position, alpha in enumerate(alphas):
                cert = certify_threshold(
                    signal.confidence[counted],
                    signal.preferred[counted],
                    errors[counted],
                    table.groups[counted],
                    alpha=alpha,
                    delta=delta,
                    bound=HEADLINE["bound"],
                    group_size_bound=table.group_size_bound,
                    starts=bound_starts(HEADLINE["bound"], table, judge),
                )
                last = next((t for t in cert.tests if t.level == cert.threshold), None)
                entries.append(
                    PairwiseEntry(
                        judge=judge,
                        dataset=table.dataset,
                        alpha=float(alpha),
                        threshold=cert.threshold,
                        n_pairs=cert.n_pairs,
                        n_groups=cert.n_groups,
                        n_accepted=last.n_accepted if last else 0,
                        n_errors=last.n_errors if last else 0,
                        verdicts_per_pair=table.verdicts_per_pair[judge],
                    )
                )
                x = expected_threshold(
                    signal.confidence[counted],
                    signal.preferred[counted],
                    table.human[counted],
                    expected_units(table)[counted],
                    alpha=alpha,
                    seed=seed,
                    position=position,
                    ties=HEADLINE["ties"],
                    cell=f"{judge}|{table.dataset}",
                )
                entries.append(
                    PairwiseEntry(
                        judge=judge,
                        dataset=table.dataset,
                        alpha=float(alpha),
                        mode="expected",
                        threshold=x.threshold,
                        n_pairs=x.n_pairs,
                        n_groups=x.n_groups,
                        n_accepted=x.n_in_region,
                        n_errors=x.n_errors,
                        verdicts_per_pair=table.verdicts_per_pair[judge],
                        expected=ExpectedEvidence(
                            level=x.level,
                            n_drawn=x.n_drawn,
                            acceptance_probability=x.acceptance_probability,
                            uniform=x.uniform,
                            seed=x.seed,
                            n_fit_groups=x.n_fit_groups,
                            n_certify_groups=x.n_certify_groups,
                        ),
                    )
                )
    return PairwiseArtifact(
        format_version=FORMAT_VERSION,
        delta=delta,
        bound=HEADLINE["bound"],
        ties=HEADLINE["ties"],
        starts=list(GROUP_STARTS if HEADLINE["bound"] == "group_betting" else ()),
        signal=SIGNAL_RULE,
        source=source
        or "offline pairwise-decisions (Vicuna80, Arena PPR human votes); pac: delta above; expected: "
        f"calibration.decisions.pairwise_expected, seed {seed}, Vicuna80 questions and Arena battles as the unit",
        entries=entries,
    )
