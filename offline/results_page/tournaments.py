"""The page's third section: transitivity on real tournaments (Vicuna80), from ``transitivity/vicuna80.json``."""

from __future__ import annotations

from math import comb
from typing import Any

from offline.results_page.figures import Figures
from offline.results_page.page import Section
from offline.results_page.reports import Reports

__all__ = ["tournaments_section"]

PANEL, HUMAN = "panel", "human"
ONE_ORDER = ("order_a", "order_b")
METHOD_NAMES = {
    "mfas_copeland": "Copeland",
    "win_rate": "win rate",
    "bradley_terry": "Bradley-Terry",
    "schulze": "Schulze",
    "mfas_ilp": "exact MFAS",
}
# The paper's figures (SummEval, four judges, k = 3), cited for comparison.
PAPER = {"mean": "0.8–4.1%", "share": "33–67%", "max": "30.4% / 0%"}


def _intro(s: dict[str, Any], f: Figures) -> str:
    parse = s["parse"]
    empty = [p for p in parse if p["rules"].get("empty_reply")]
    left_out = ", ".join(f.name(k) for k in s["human_votes_left_out"])
    return (
        "`make calibrate` also runs the paper's transitivity study on real round-robin tournaments "
        f"(`../shared/data/pairwise/vicuna80`, PRD): {f.count(s['n_questions'])} questions × "
        f"{f.count(len(s['assistants']))} assistants, every pair in both orders, judged by "
        f"{f.count(len(s['judges']))} recorded LLMs, with human votes on the same pairs "
        "(`reports/transitivity/vicuna80.json`, tables appended to `reports/transitivity/tables.md`, two figures, a "
        "section in `reports/index.md`). Verdicts: our `parse_choice` reads the prompt's final choice (and the prose "
        "or score pairs some judges write instead) — parse rate "
        + ", ".join(
            f"{f.name(p['judge'])} {f.pct(p['parse_rate'])}" for p in sorted(parse, key=lambda p: -p["parse_rate"])
        )
        + "".join(f" ({f.name(p['judge'])}: {f.count(p['rules']['empty_reply'])} empty replies)" for p in empty)
        + f", agreeing with the dataset's label on {f.span([p['agreement_with_label'] for p in parse], 1, pct=True)} "
        "of what parses; the recorded label is used for the rest (counted per judge). Rules: one tournament per "
        "(question, judge); `both_orders` = net votes over both orders and repetitions (zero net or a tie: no edge); "
        "`order_a` / `order_b` = only the verdicts shown in one presentation order (`first` sorting before / after "
        "`second`); `panel` pools the judges; human = majority of the human votes per pair (each pair was shown to "
        f"humans in one order only, so humans have `both_orders` only; the {f.count(s['n_human_votes_left_out'])} "
        f"votes involving {left_out}, which no item answers, are left out and counted). Kendall τ-b per question "
        "between a method's scores on the judge's tournament and on the human tournament (same method, or human win "
        "rate), ties kept; ρ = three-cycles / C(k, 3) for k assistants.\n"
    )


def _table(s: dict[str, Any], rows: dict[tuple[str, str], dict[str, Any]], f: Figures) -> str:
    judges = s["judges"]
    both = [rows[j, "both_orders"] for j in judges if (j, "both_orders") in rows]
    one = [rows[j, a] for j in judges for a in ONE_ORDER if (j, a) in rows]
    panel, human = rows.get((PANEL, "both_orders")), rows.get((HUMAN, "both_orders"))

    def maxima(group: list[dict[str, Any]]) -> str:
        return f"{f.span([r['max'] for r in group], 0, pct=True)} / {f.span([r['median'] for r in group], 0, pct=True)}"

    lines = [
        "| | paper (SummEval) | Vicuna80, both orders | Vicuna80, one order alone |",
        "|---|---|---|---|",
        f"| mean ρ̄ per judge | {f.cited(PAPER['mean'])} | {f.span([r['mean'] for r in both], 1, pct=True)} | "
        f"{f.span([r['mean'] for r in one], 1, pct=True)} |",
        f"| inputs with ≥ 1 cycle | {f.cited(PAPER['share'])} | "
        f"{f.span([r['share_with_cycle'] for r in both], 1, pct=True)}"
        + (f" (panel {f.pct(panel['share_with_cycle'])})" if panel else "")
        + f" | {f.span([r['share_with_cycle'] for r in one], 1, pct=True)} |",
        f"| max ρ(x) / median | {f.cited(PAPER['max'])} | {maxima(both)} | {maxima(one)} |",
    ]
    if human:
        lines.append(
            f"| human votes | — | ρ̄ {f.pct(human['mean'])}, {f.pct(human['share_with_cycle'], 0)} of questions with "
            "a cycle | — |"
        )
    return "\n".join(lines) + "\n"


def _findings(s: dict[str, Any], rows: dict[tuple[str, str], dict[str, Any]], f: Figures) -> list[str]:
    judges = s["judges"]
    one = [rows[j, a] for j in judges for a in ONE_ORDER if (j, a) in rows]
    both = [rows[j, "both_orders"] for j in judges if (j, "both_orders") in rows]
    tied = sorted(both, key=lambda r: -r["n_tied_pairs"])[:2]
    pairs = s["n_questions"] * comb(len(s["assistants"]), 2)
    human = rows.get((HUMAN, "both_orders"))
    return [
        "- **Agrees:** the largest median ρ over every judge and rule is "
        f"{f.num(max(r['median'] for r in rows.values()), 2)}, and a minority of inputs carries all cycles; taken "
        "one presentation order at a time, the per-input picture is the paper's "
        f"({f.span([r['share_with_cycle'] for r in one], 0, pct=True)} of questions cycle, up to ρ = "
        f"{f.num(max(r['max'] for r in one), 1)}).",
        "- **Differs:** with both orders pooled, cycles almost vanish (ρ̄ ≤ "
        f"{f.pct(max(r['mean'] for r in both))}): a judge's order-driven verdicts cancel into ties instead ("
        + " and ".join(f"{f.name(r['judge'])} {f.count(r['n_tied_pairs'])}" for r in tied)
        + f' of {f.count(pairs)} pairs tied), so "both orders" hides position bias rather than removing it.'
        + (
            f" The human votes cycle on {f.pct(human['share_with_cycle'], 0)} of questions"
            + (
                ", the least transitive source here."
                if human["share_with_cycle"] >= max(r["share_with_cycle"] for r in rows.values())
                else "."
            )
            if human
            else ""
        ),
    ]


def _rankings(s: dict[str, Any], f: Figures) -> str:
    means = s["best_method"]["same_method"]["mean_tau_over_judges"]
    ranked = sorted(means.items(), key=lambda kv: -(kv[1] if kv[1] is not None else -9))
    per_question = [r for r in s["rankings"] if r["scope"] == "per_question" and r["reference"] == "same_method"]
    pooled = [r for r in s["rankings"] if r["scope"] == "pooled" and r["reference"] == "same_method"]
    perfect = [
        j
        for j in [*s["judges"], PANEL]
        if (mine := [r for r in pooled if r["judge"] == j]) and all(r["mean_tau"] == 1.0 for r in mine)
    ]
    versus = s["mfas_vs_copeland"]["same_method"]
    n_sources = len(versus["ilp_minus_copeland"])
    return (
        "- **Rankings vs humans** (mean τ-b per question over the judges, human ranked by the same method): "
        + ", ".join(f"{f.name(METHOD_NAMES.get(m, m))} {f.num(v)}" for m, v in ranked)
        + f" (std over questions {f.span([r['std_tau'] for r in per_question])}); Copeland beats exact MFAS for "
        f"{f.count(len(versus['copeland_better']))} of {f.count(n_sources)} sources (judges and the panel), exact "
        f"MFAS beats Copeland for {f.count(len(versus['ilp_better']))}. Part of the gap is the rule: exact MFAS "
        "always returns a strict order, while the many tied pairs leave the other methods' scores tied, which τ-b "
        f"does not penalise. Pooled over all {f.count(s['n_questions'])} questions (one tournament per judge) the "
        f"rankings match the humans' order of the assistants at τ = {f.span([r['mean_tau'] for r in pooled], 1)}"
        + (f" (perfect agreement with every method for {f.names(perfect)})" if perfect else "")
        + "."
    )


def tournaments_section(reports: Reports, f: Figures) -> Section:
    """Transitivity, rankings and position bias on the Vicuna80 tournaments."""
    s = reports["vicuna80"]
    rows = {(r["judge"], r["aggregation"]): r for r in s["rows"]}
    position = sorted(s["position_bias"], key=lambda p: -(p["consistency"] or 0))
    bullets = [
        *_findings(s, rows, f),
        _rankings(s, f),
        "- **Position consistency** (verdict survives the swap; first-shown wins among decisive verdicts): "
        + ", ".join(
            f"{f.name(p['judge'])} {f.field(p, 'consistency')} ({f.field(p, 'first_win_rate')})" for p in position
        )
        + ".",
        "- **The service on the same verdicts:** `/v1/compare` with each question's verdicts as "
        "`{first, second, verdict}` returns the study's `n_cycles`, `violation_rate`, cycles and five rankings, and "
        "its position consistency sums to the study's (a test, for two of the judges).",
    ]
    return Section(
        "Transitivity on real tournaments (Vicuna80)",
        ("vicuna80",),
        _intro(s, f) + "\n" + _table(s, rows, f) + "\n" + "\n".join(bullets) + "\n",
    )
