"""The report's first section: what the artifact serves, measured on documents it was not fitted on.

Figures come from :mod:`offline.studies.conformal.validity` (``conformal/validity.json``) and, when ``python -m offline
halves`` has run into the same folder, from its fit-on-one-half / serve-the-other check
(``conformal/halves.json``).

The headline ratio per criterion (alpha = 0.10): the served recipe's mean set size on unseen documents (the
default chosen and fitted inside the calibration documents only; for a judge with log-probs, the smaller of its
two input kinds, as the service serves a verdict carrying both) over the paper's ``residual`` under the same
rules (PAC thresholds, splits by document), both averaged over judges.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from offline.studies.conformal.validity import KindCell, ValiditySummary

__all__ = ["FIGURE_FILE", "HeadlineRatio", "headline_ratios", "validity_figure", "validity_section"]

FIGURE_FILE = "conformal/validity_coverage.png"
HEADLINE = 0.10


class HeadlineRatio:
    """One criterion's served size, the paper method's size under the same rules, and their ratio."""

    def __init__(self, criterion: str, served: float, paper: float, n_judges: int) -> None:
        self.criterion = criterion
        self.served = served
        self.paper = paper
        self.ratio = served / paper
        self.n_judges = n_judges


def _procedure_size(cell: KindCell, alpha: float) -> float:
    return next(p.mean_set_size for p in cell.procedure if abs(p.alpha - alpha) < 1e-9)


def headline_ratios(summary: ValiditySummary, alpha: float = HEADLINE) -> list[HeadlineRatio]:
    """Per criterion: served size (min over the judge's kinds) / residual size (score kind), means over judges."""
    rows = []
    for criterion in sorted({c.criterion for c in summary.cells}):
        served, paper = [], []
        for judge in sorted({c.judge for c in summary.cells if c.criterion == criterion}):
            cells = [c for c in summary.cells if c.criterion == criterion and c.judge == judge]
            score = next((c for c in cells if c.kind == "score"), None)
            residual = None if score is None else score.figures("residual", alpha)
            if residual is None:
                continue
            served.append(min(_procedure_size(c, alpha) for c in cells))
            paper.append(residual.set_size)
        if served:
            rows.append(HeadlineRatio(criterion, float(np.mean(served)), float(np.mean(paper)), len(served)))
    return rows


def validity_section(summary: ValiditySummary, halves: dict | None = None) -> str:
    """Markdown: the served artifact's promise, checked on unseen documents."""
    delta = summary.delta
    rule = (
        f"PAC thresholds (δ = {delta}: coverage ≥ 1−α with probability ≥ {1 - delta:.2f} over the calibration data)"
        if delta is not None
        else "marginal thresholds"
    )
    lines = [
        "## What the artifact serves, on documents it was not fitted on\n",
        f"Every judge × criterion is calibrated per input kind (score alone; log-probs where recorded) with "
        f"{rule}, splits by document, and a default method chosen by cross-fitting by document "
        "(`conformal/validity.md` has every cell and each default's reason).\n",
    ]
    bullets = []
    for alpha in summary.report_alphas:
        rows = [p for c in summary.cells for p in c.procedure if abs(p.alpha - alpha) < 1e-9]
        if not rows:
            continue
        means = [p.mean_coverage for p in rows]
        p5 = [p.p5_coverage for p in rows]
        bullets.append(
            f"- **α = {alpha:.2f}** — the served recipe (selection + fit inside the calibration "
            f"documents) on unseen documents, over {len(rows)} (cell, kind) × {summary.n_splits} splits: "
            f"mean coverage {min(means):.3f}–{max(means):.3f} (target {1 - alpha:.2f}); 5th percentile "
            f"≥ {min(p5):.3f}; {sum(m >= 1 - alpha for m in means)} of {len(means)} cells at or above "
            "target on average."
        )
    ratios = headline_ratios(summary)
    if ratios:
        bullets.append(
            "- **Headline (α = 0.10)**: served mean set size / the paper's `residual` under the same rules "
            "(PAC, by document): "
            + ", ".join(f"{r.criterion} {r.served:.2f}/{r.paper:.2f} = ×{r.ratio:.2f}" for r in ratios)
            + "."
        )
    counts = Counter((c.kind, c.default_method) for c in summary.cells)
    bullets.append(
        "- **Defaults** per (cell, input kind): "
        + ", ".join(f"`{m}` × {n} ({k})" for (k, m), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        + f"; {sum(not c.default_qualified for c in summary.cells)} fell back to `residual` (no method qualified)."
    )
    empty = [(c, h) for c in summary.cells for h in c.heldout if h.empty_share > 0]
    worst = max(empty, key=lambda ch: ch[1].empty_share, default=None)
    bullets.append(
        "- **Empty sets** (answered `escalate`, never `accept`): "
        + (
            f"{len(empty)} (cell, kind, method, α) rows have some; most: {worst[0].judge}/{worst[0].criterion}/"
            f"{worst[0].kind} `{worst[1].method}` at α = {worst[1].alpha} ({worst[1].empty_share:.1%} of items)."
            if worst is not None
            else "none in any held-out cell."
        )
    )
    holes = [h for c in summary.cells for h in c.heldout if abs(h.alpha - HEADLINE) < 1e-9]
    by_method: dict[str, list[float]] = {}
    for h in holes:
        by_method.setdefault(h.method, []).append(h.non_interval_share)
    bullets.append(
        "- **Sets with a hole** ({2, 4}) at α = 0.10, mean share per method: "
        + ", ".join(f"`{m}` {np.mean(v):.1%}" for m, v in by_method.items())
        + "."
    )
    if halves is not None:
        bullets.append(
            f"- **Fit on half the documents, serve the other half** (`python -m offline halves`, both ways, "
            f"{halves['n_checked']} judge × criterion × input × α cells): {halves['n_below_floor']} below "
            f"1−α−0.02, {halves['share_at_target']:.1%} at or above 1−α, {halves['n_empty_accepted']} empty sets "
            f"accepted, {halves['n_logprobs_larger']} cells where log-probs beside the score gave a larger mean set "
            "(beyond 0.1 labels of sampling noise)."
        )
    return "\n".join(lines + bullets) + "\n"


def validity_figure(summary: ValiditySummary, path: Path) -> Path:
    """Coverage of the served recipe on unseen documents per (cell, kind): mean and 5th percentile vs 1 − α."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    alphas = list(summary.report_alphas)
    fig, axes = plt.subplots(1, len(alphas), figsize=(5 * len(alphas), 7), squeeze=False, sharey=True)
    labels = [f"{c.judge[:18]} {c.criterion[:5]} {c.kind[:5]}" for c in summary.cells]
    y = np.arange(len(summary.cells))
    for axis, alpha in zip(axes[0], alphas, strict=True):
        rows = [next(p for p in c.procedure if abs(p.alpha - alpha) < 1e-9) for c in summary.cells]
        means = np.array([r.mean_coverage for r in rows])
        p5 = np.array([r.p5_coverage for r in rows])
        axis.hlines(y, p5, means, color="grey", linewidth=1)
        axis.plot(means, y, "o", ms=4, label="mean over splits")
        axis.plot(p5, y, "|", ms=8, color="black", label="5th percentile")
        axis.axvline(1 - alpha, color="red", linestyle="--", label=f"1 − α = {1 - alpha:.2f}")
        axis.set_title(f"α = {alpha:.2f}: served recipe on unseen documents")
        axis.set_xlabel("coverage")
        axis.legend(fontsize=7, loc="lower left")
    axes[0][0].set_yticks(y, labels, fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
