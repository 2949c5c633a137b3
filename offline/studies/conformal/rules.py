"""The conformal study's rules: its alphas and their text; the paper's method, the coverage slacks and the bin rule
are the build's (:mod:`offline.build.cell_figures`), which the faithfulness fits share.

``RULES`` is the same text written into ``conformal/summary.json`` under ``rules``; the reasoning behind each rule
is in :mod:`offline.studies.conformal.study`.
"""

from __future__ import annotations

from offline.build.cell_figures import BIN_SLACK, COVERAGE_SLACK, HEADLINE_ALPHA, MIN_BIN_ITEMS, PAPER_METHOD

__all__ = [
    "ALPHAS",
    "BIN_SLACK",
    "COVERAGE_SLACK",
    "HEADLINE_ALPHA",
    "MIN_BIN_ITEMS",
    "PAPER_METHOD",
    "RULES",
]

ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20)

RULES = {
    "items": "every item the judge answered; items with a missing or unreadable judge score excluded and counted",
    "target": "y* = expert mean rounded to the nearest integer (halves up)",
    "splits": "n_splits seeded 50/50 splits; split i permutes with numpy.random.default_rng([seed, i])",
    "width_error": "Spearman(width, |judge_score - y*|) with one observation per item: its set size averaged "
    "over the splits whose test half holds it (so n counts distinct items and the p-value is not inflated by "
    "repeats); reliability diagrams (mean error per set size) use the test half of split 0",
    "valid_coverage": f"mean coverage >= 1 - alpha - {COVERAGE_SLACK}",
    "within_bins": f"per judge-score bin and per human label: coverage on the test halves averaged over splits; "
    f"bins with >= {MIN_BIN_ITEMS} test items on average count; keeps coverage when the min over counted "
    f"judge-score bins and the min over counted human labels are both >= 1 - alpha - {BIN_SLACK}",
    "default_method": f"at alpha={HEADLINE_ALPHA}: smallest mean set size among methods with valid coverage that "
    "keep coverage within bins (ties: METHODS order); else residual",
    "inter_judge": f"items both judges answered, common seeded splits, {PAPER_METHOD} at alpha={HEADLINE_ALPHA} "
    "per judge; Spearman of the two judges' per-item mean widths (one observation per item tested)",
    "variance": f"two-way decomposition (no interaction) of cell mean set sizes at alpha={HEADLINE_ALPHA}",
}
