"""The page's opening and its first section: what the artifact serves, on documents it was not fitted on.

Figures from ``conformal/validity.json`` (the validity study run by ``calibrate``), ``conformal/halves.json``
(``python -m offline halves``) and ``ingest/summary.json``.
"""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from offline.results_page.figures import Figures
from offline.results_page.page import Section
from offline.results_page.reports import Reports

__all__ = ["headline_ratios", "opening", "served_section"]

HEADLINE = 0.10


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-9


def _procedure(cell: dict[str, Any], alpha: float) -> dict[str, Any]:
    return next(p for p in cell["procedure"] if _close(p["alpha"], alpha))


def _heldout(cell: dict[str, Any], method: str, alpha: float) -> dict[str, Any] | None:
    return next((h for h in cell["heldout"] if h["method"] == method and _close(h["alpha"], alpha)), None)


def direct_judges(ingest: dict[str, Any]) -> list[str]:
    """The judges with direct-scoring rows in the answer store."""
    return sorted({r["judge"] for r in ingest["judges"] if r["task"] == "direct" and r["rows"] > 0})


def opening(reports: Reports, f: Figures) -> Section:
    """The page's first paragraph."""
    judges = direct_judges(reports["ingest"])
    validity = reports["validity"]
    body = (
        f"`make calibrate` ingests the recorded answers of {f.count(len(judges))} real judges on SummEval "
        "(`../shared/data`), runs the studies and writes `reports/index.md` (read it first), tables, figures and "
        "`artifact/thresholds.json`. Target y* = expert mean rounded to the nearest integer; seed "
        f"{f.count(validity['seed'])}.\n"
    )
    return Section("", ("ingest", "validity"), body)


def headline_ratios(cells: list[dict[str, Any]], alpha: float = HEADLINE) -> list[tuple[str, float, float]]:
    """Per criterion: (criterion, served mean set size, the paper's ``residual`` size under the same rules), means
    over judges; a judge's served size is the smaller over its input kinds (the service serves a verdict carrying
    both with the smaller set)."""
    rows = []
    for criterion in sorted({c["criterion"] for c in cells}):
        served, paper = [], []
        for judge in sorted({c["judge"] for c in cells if c["criterion"] == criterion}):
            mine = [c for c in cells if c["criterion"] == criterion and c["judge"] == judge]
            score = next((c for c in mine if c["kind"] == "score"), None)
            residual = None if score is None else _heldout(score, "residual", alpha)
            if residual is None:
                continue
            served.append(min(_procedure(c, alpha)["mean_set_size"] for c in mine))
            paper.append(residual["set_size"])
        if served:
            rows.append((criterion, mean(served), mean(paper)))
    return rows


def _served_bullet(v: dict[str, Any], f: Figures) -> str:
    cells = v["cells"]
    alphas = v["report_alphas"]
    rows = {a: [_procedure(c, a) for c in cells] for a in alphas}
    at = " / ".join(f.num(a) for a in alphas)
    return (
        "- **The served recipe on unseen documents** (the default chosen and fitted inside the calibration "
        f"documents only, evaluated on the other documents, {f.count(v['n_splits'])} splits per cell): mean "
        "coverage "
        + ", ".join(f"{f.span([p['mean_coverage'] for p in rows[a]], 3)} at α = {f.num(a)}" for a in alphas)
        + "; cells at or above 1 − α on average: "
        + " / ".join(f"{f.count(sum(p['mean_coverage'] >= 1 - a for p in rows[a]))}" for a in alphas)
        + f" of {f.count(len(cells))} at α = {at}; the 5th percentile over splits is ≥ "
        + " / ".join(f.num(min(p["p5_coverage"] for p in rows[a]), 3) for a in alphas)
        + "; cells whose 5th percentile dips below 1 − α − 0.02: "
        + " / ".join(f.count(sum(p["p5_coverage"] < 1 - a - 0.02 for p in rows[a])) for a in alphas)
        + " (the items of a document are correlated, so a split by document varies more than the binomial law)."
    )


def _halves_bullet(h: dict[str, Any], alphas: list[float], f: Figures) -> str:
    by_alpha = {
        a: [r["coverage"] for r in h["rows"] if _close(r["alpha"], a) and r["coverage"] is not None] for a in alphas
    }
    at = " / ".join(f.num(a) for a in alphas)
    return (
        "- **Fit on one half of the documents, serve the other, both ways** (`python -m offline halves`, the "
        "artifact built by the `make calibrate` recipe from "
        + " and ".join(f.count(n) for n in h["n_documents"])
        + " documents and every item of the other half served exactly as the service serves it): "
        f"{f.count(h['n_checked'])} judge × criterion × input × α cells, **{f.count(h['n_below_floor'])} below "
        f"1 − α − 0.02, {f.pct(h['share_at_target'])} at or above 1 − α** (lowest "
        + " / ".join(f.num(min(by_alpha[a], default=None), 3) for a in alphas)
        + f" at α = {at}; means "
        + " / ".join(f.num(mean(by_alpha[a]) if by_alpha[a] else None, 3) for a in alphas)
        + f"), {f.count(h['n_empty_accepted'])} empty sets accepted, and log-probs beside the score gave a larger "
        f"mean set than the score alone (beyond sampling noise) in {f.count(h['n_logprobs_larger'])} cells. A test "
        "asserts these checks on the real data (`tests/offline/studies/conformal/test_validity.py`)."
    )


def _headline_bullet(v: dict[str, Any], f: Figures) -> str:
    cells = v["cells"]
    defaults = [_heldout(c, c["default_method"], HEADLINE) for c in cells]
    shares = {k: mean(d[f"{k}_share"] for d in defaults if d is not None) for k in ("accept", "review", "escalate")}
    return (
        f"- **Headline — set size under these rules** (α = {f.num(HEADLINE)}, served mean set size over the "
        "paper's `residual` under the same PAC + document rules, mean over judges): "
        + ", ".join(
            f"{f.name(cr)} {f.num(served)}/{f.num(paper)} = ×{f.num(served / paper)}"
            for cr, served, paper in headline_ratios(cells)
        )
        + f". The sets are honest and wide: at α = {f.num(HEADLINE)} the served defaults' held-out sets hold at "
        f"most two labels for {f.pct(shares['accept'])} of items, three or four labels for "
        f"{f.pct(shares['review'])} and the full scale (or none) for {f.pct(shares['escalate'])}; `accept` and "
        "`escalate` come from the certified decision rules ([guarantees](guarantees.md)), not from the set's size. "
        "One judge's score carries little information about the human label; the item-level figures below are the "
        "paper's reproduction, with marginal thresholds and item-level splits, which is why "
        "they look smaller."
    )


def _sets_bullets(v: dict[str, Any], f: Figures) -> list[str]:
    cells = v["cells"]
    counts = Counter(c["default_method"] for c in cells)
    empty = [(c, h) for c in cells for h in c["heldout"] if h["empty_share"] > 0]
    holes: dict[str, list[float]] = {}
    for c in cells:
        for h in c["heldout"]:
            if _close(h["alpha"], HEADLINE):
                holes.setdefault(h["method"], []).append(h["non_interval_share"])
    lines = [
        "- **Defaults** per (cell, kind): "
        + ", ".join(f"`{f.name(m)}` {f.count(n)}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        + f" of {f.count(len(cells))}; {f.count(sum(not c['default_qualified'] for c in cells))} fell back to "
        "`residual` because no method qualified (each reason is in the artifact and `validity.md`)."
    ]
    if empty:
        cell, worst = max(empty, key=lambda ch: ch[1]["empty_share"])
        lines.append(
            "- **Empty sets** occur only for "
            + ", ".join(f"`{f.name(m)}`" for m in sorted({h["method"] for _, h in empty}))
            + f" (at most {f.pct(worst['empty_share'], 2)} of items, {f.name(cell['judge'])} "
            f"{f.name(cell['criterion'])} `{f.name(worst['method'])}` at α = {f.num(worst['alpha'])}) and are "
            "answered `escalate`."
        )
    else:
        lines.append("- **Empty sets** occur in no held-out cell.")
    ranked = sorted(holes.items(), key=lambda kv: -mean(kv[1]))
    lines.append(
        f"- **Sets with a hole** ({{2, 4}}), mean share of items at α = {f.num(HEADLINE)}: "
        + ", ".join(f"`{f.name(m)}` {f.pct(mean(s))}" for m, s in ranked)
        + "."
    )
    lines.append(
        f"- **Cost of the finer grid:** see the bench table (the validity study over {f.count(len(v['alphas']))} "
        f"levels beside {f.count(len({h['alpha'] for h in cells[0]['heldout']}))})."
    )
    return lines


def served_section(reports: Reports, f: Figures) -> Section:
    """The promise, on documents the artifact was not fitted on."""
    v, h = reports["validity"], reports["halves"]
    cells = v["cells"]
    with_logprobs = sorted({c["judge"] for c in cells if c["kind"] != "score"})
    n_judges = len({c["judge"] for c in cells})
    intro = (
        "What is shipped and served: every judge × criterion calibrated per input kind (score alone for all "
        f"{f.count(n_judges)} judges; log-probs too for {f.names(with_logprobs)}: {f.count(len(cells))} cells), "
        + (f"PAC thresholds at δ = {f.num(v['delta'])}" if v["delta"] is not None else "marginal thresholds")
        + ", splits by document, the default method chosen by cross-fitting by document "
        "(`reports/conformal/validity.md`).\n"
    )
    bullets = [
        _served_bullet(v, f),
        _halves_bullet(h, v["report_alphas"], f),
        _headline_bullet(v, f),
        *_sets_bullets(v, f),
    ]
    return Section(
        "The promise, on documents the artifact was not fitted on",
        ("validity", "halves"),
        intro + "\n" + "\n".join(bullets) + "\n",
    )
