"""The pairwise-decisions study's two guarantee modes side by side on held-out questions: ``expected``
(:mod:`calibration.decisions.pairwise_expected`) and ``pac`` (the fixed-sequence test with the group bound, as served).

Rules, stated once (also written into the JSON):

* **Units.** The expected rule's unit is the question on Vicuna80 (10 pairs each) and the battle on Arena (each
  battle its own group); the pac rule keeps the study's groups (question, ``question_id``).
* **Splits.** The study's splits by group (:func:`calibration.input_kinds.heldout.group_splits`,
  ``default_rng([seed, i])``,
  half the groups calibrate). On split i the expected rule runs with seed 1000 x seed + i and the alpha's
  index in the study's grid as its uniform's position.
* **Figures** per (dataset, source, mode, alpha), human ties excluded: the mean accept share over splits (over
  all held-out pairs), the mean over splits of the disagreement with the human majority among accepted held-out
  pairs (a split that accepts nothing counts 0: the quantity the expected mode bounds by alpha) and the share of
  calibrations that accept nothing (threshold null).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from calibration.decisions.pairwise import accepted, certify_threshold, disagreements
from calibration.decisions.pairwise_expected import expected_threshold
from offline.build.pairwise import expected_units
from offline.build.pairwise_tables import PANEL, PairTable, bound_starts
from offline.studies.pairwise_decisions.results import ModeRow

__all__ = [
    "MODES",
    "MODE_CHECK_ALPHA",
    "MODE_RULES",
    "mode_check",
    "mode_rows",
    "rule_seed",
]

MODES: tuple[str, ...] = ("expected", "pac")
MODE_CHECK_ALPHA = 0.20

MODE_RULES = {
    "expected_units": "expected mode: Vicuna80 question, Arena battle (each its own group)",
    "expected_seed": "split i of study seed s: the expected rule's seed is 1000 s + i, its position the alpha's "
    "index in the grid",
    "mode_figures": "ties excluded; accept share over all held-out pairs, mean over splits; disagreement among "
    "accepted held-out pairs per split, a split accepting nothing counts 0, mean over splits; share of "
    "calibrations accepting nothing",
}


def rule_seed(seed: int, split: int) -> int:
    """The expected rule's seed on split ``split`` of study seed ``seed``."""
    return 1000 * seed + split


def _threshold(
    table: PairTable, source: str, mode: str, alpha: float, position: int, cal: np.ndarray, seed: int, delta: float
) -> float | None:
    """The threshold calibrated on the counted pairs ``cal`` in ``mode``."""
    signal = table.signals[source]
    if mode == "expected":
        return expected_threshold(
            signal.confidence[cal],
            signal.preferred[cal],
            table.human[cal],
            expected_units(table)[cal],
            alpha=alpha,
            seed=seed,
            position=position,
            cell=f"{source}|{table.dataset}",
        ).threshold
    errors, _ = disagreements(signal.preferred, table.human, "exclude")
    return certify_threshold(
        signal.confidence[cal],
        signal.preferred[cal],
        errors[cal],
        table.groups[cal],
        alpha=alpha,
        delta=delta,
        bound="group_betting",
        group_size_bound=table.group_size_bound,
        starts=bound_starts("group_betting", table, source),
    ).threshold


def _mode_row(
    table: PairTable,
    source: str,
    mode: str,
    alpha: float,
    position: int,
    splits: Sequence[Any],
    seed: int,
    delta: float,
) -> ModeRow:
    signal = table.signals[source]
    errors, counted = disagreements(signal.preferred, table.human, "exclude")
    shares, rates = [], []
    thresholds: Counter[str] = Counter()
    nothing = 0
    for split in splits:
        cal = split.calibration[counted[split.calibration]]
        threshold = _threshold(table, source, mode, alpha, position, cal, rule_seed(seed, split.split), delta)
        thresholds["none" if threshold is None else f"{threshold:.2f}"] += 1
        nothing += threshold is None
        test = split.test
        acc = accepted(signal.preferred[test], signal.confidence[test], threshold)
        shares.append(float(acc.mean()))
        scored = acc & counted[test]
        k = int(scored.sum())
        rates.append(float((scored & errors[test]).sum() / k) if k else 0.0)
    return ModeRow(
        dataset=table.dataset,
        source=source,
        mode=mode,
        alpha=alpha,
        unit=("battle" if table.dataset == "arena_ppr" else "question") if mode == "expected" else "group",
        n_splits=len(splits),
        accept_share=float(np.mean(shares)),
        accept_share_min=float(np.min(shares)),
        accept_share_max=float(np.max(shares)),
        disagreement_mean=float(np.mean(rates)),
        disagreement_max=float(np.max(rates)),
        share_nothing_accepted=nothing / len(splits),
        thresholds=dict(sorted(thresholds.items(), reverse=True)),
    )


def mode_rows(
    table: PairTable,
    sources: Sequence[str],
    alphas: Sequence[float],
    splits: Sequence[Any],
    *,
    seed: int,
    delta: float,
) -> list[ModeRow]:
    """Every (source, mode, alpha) row of one dataset (module rules)."""
    return [
        _mode_row(table, source, mode, float(alpha), position, splits, seed, delta)
        for source in sources
        for mode in MODES
        for position, alpha in enumerate(alphas)
    ]


def mode_check(rows: Sequence[ModeRow]) -> dict[str, Any]:
    """The target, reported as found: the Vicuna80 panel at accept_alpha 0.20 in each mode."""
    out: dict[str, Any] = {
        "check": "Vicuna80, accept_alpha 0.20, held-out questions, 5-judge panel: accept share >= 0.65 and mean "
        "disagreement among accepted <= 0.20",
    }
    for mode in MODES:
        head = [
            r
            for r in rows
            if r.dataset == "vicuna80"
            and r.source == PANEL
            and r.mode == mode
            and abs(r.alpha - MODE_CHECK_ALPHA) < 1e-9
        ]
        if head:
            r = head[0]
            out[mode] = {
                "accept_share": r.accept_share,
                "disagreement_mean": r.disagreement_mean,
                "share_nothing_accepted": r.share_nothing_accepted,
                "met": bool(r.accept_share >= 0.65 and r.disagreement_mean <= 0.20),
            }
    return out
