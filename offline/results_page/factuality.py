"""The page's fourth section: factuality on real LLM judges (FRANK, the recorded sentence-level fact-checkers).

Figures from ``factuality/llm_sentences.json``, ``factuality/llm_sentences_validity.json`` and
``factuality/faithfulness.json`` (all written by ``calibrate``).
"""

from __future__ import annotations

from statistics import mean
from typing import Any

from offline.results_page.figures import Figures
from offline.results_page.page import Section
from offline.results_page.reports import Reports

__all__ = ["factuality_section"]

BASELINES = ("FactCC", "BertScore P Art", "QAGS")
HEADLINE = 0.10
# FRANK's fine error types (the ablation also reports their groups, which the page leaves to the report).
ERROR_TYPES = ("RelE", "EntE", "CircE", "CorefE", "LinkE", "OutE", "GramE")
# The paper's bar ("none of the approaches showed a significant correlation > 0.3 ... for most LLMs"), cited.
PAPER_BAR = 0.3


def _overall(s: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [r for r in s["rows"] if r["dataset"] == "all"]
    return sorted(rows, key=lambda r: (r["partial_pearson"] is None, -(r["partial_pearson"] or 0.0), r["judge"]))


def _intro(s: dict[str, Any], f: Figures) -> str:
    parse = {p["judge"]: p for p in s["parse"]}
    return (
        "`make calibrate` reads `../shared/data/frank/llm/finesure/`: "
        f"{f.count(len(s['judges']))} real LLMs, each on its own random "
        f"{f.span([p['n_rows'] for p in parse.values()], 0)} "
        "FRANK items, one verdict per summary sentence with a category from FRANK's error typology. **These are "
        "FineSurE-prompt recordings (Song et al., ACL 2024, re-run since), not the prompts or models of the paper "
        "(`001_28fcba38908e213a.txt`), which asked GPT-3.5, GPT-4 and PaLM-2 for a direct 1-5 score or ran a QA "
        "pipeline.** Outputs: `reports/factuality/llm_sentences.{json,md}`, the confusion figure "
        "`llm_sentences_confusion.png`, a section of `reports/index.md`. Rules (also in the JSON): our own parser "
        "reads each raw reply (a JSON list, fenced or not; the invalid escape `\\'` some models write is read as `'` "
        "and flagged; a cut-off list keeps only its complete objects); a reply whose verdict count differs from the "
        "sentence count is excluded and counted, never padded ("
        + ", ".join(f"{f.name(j)} {f.count(p['n_wrong_count'])}" for j, p in parse.items())
        + f" rows); parse rate {f.span([p['parse_rate'] for p in parse.values()], 1, pct=True)}, agreement with the "
        "recorded `pred_error`/`pred_error_type` "
        f"{f.span([p['recorded_row_agreement'] for p in parse.values()], 1, pct=True)} of rows. Item score = share of "
        "sentences judged error-free; partial correlation with FRANK `Factuality` controlling for the system "
        "(one-hot, least squares; a test recomputes it independently with `numpy.linalg.lstsq`). The baselines are "
        "correlated on exactly each LLM's included items.\n"
    )


def _pair(row: dict[str, Any], f: Figures) -> str:
    return f"{f.field(row, 'partial_pearson', 3)} / {f.field(row, 'partial_spearman', 3)}"


def _table(s: dict[str, Any], f: Figures) -> str:
    base = {(b["judge"], b["metric"]): b for b in s["baselines"]}
    agree = {a["judge"]: a for a in s["sentence_agreement"]}
    rows = _overall(s)
    lines = [
        f"| LLM (n = {f.span([r['n'] for r in rows], 0)}) | partial Pearson / Spearman | "
        + " | ".join(f.name(m) for m in BASELINES)
        + " | sentence F1 (P / R) |",
        "|---|---|" + "---|" * len(BASELINES) + "---|",
    ]
    for r in rows:
        a = agree.get(r["judge"])
        cells = [_pair(base[r["judge"], m], f) if (r["judge"], m) in base else "—" for m in BASELINES]
        f1 = f"{f.num(a['f1'])} ({f.num(a['precision'])} / {f.num(a['recall'])})" if a else "—"
        lines.append(
            f"| {f.name(r['judge'])} | **{f.field(r, 'partial_pearson', 3)}** / {f.field(r, 'partial_spearman', 3)} | "
            + " | ".join(cells)
            + f" | {f1} |"
        )
    recorded = [r for r in rows if r.get("recorded_partial_pearson") is not None]
    if recorded:
        lines.append(
            "\n(The same partial Pearson computed from the recorder's own verdicts (`pred_error`, on the rows it "
            "scored) — "
            + ", ".join(f"{f.name(r['judge'])} {f.num(r['recorded_partial_pearson'])}" for r in recorded)
            + " — differs from ours by "
            + f.span([abs(r["partial_pearson"] - r["recorded_partial_pearson"]) for r in recorded])
            + "; the recorder's row-exclusion rule is not documented, ours is stated above, so the cause is not "
            "established.)"
        )
    return "\n".join(lines) + "\n"


def _beats_baselines(s: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, tuple[str, float]]]:
    """Who beats all three baselines on their own items; for the others, the best baseline and its value."""
    best: dict[str, tuple[str, float]] = {}
    for b in s["baselines"]:
        if b["partial_pearson"] is not None and b["partial_pearson"] > best.get(b["judge"], ("", -9.0))[1]:
            best[b["judge"]] = (b["metric"], b["partial_pearson"])
    rows = _overall(s)
    beat = [
        r
        for r in rows
        if r["partial_pearson"] is not None and r["partial_pearson"] > best.get(r["judge"], ("", -9.0))[1]
    ]
    return beat, best


def _findings(s: dict[str, Any], f: Figures) -> list[str]:
    rows = _overall(s)
    above = [r for r in rows if (r["partial_pearson"] or 0) > PAPER_BAR]
    beat, best = _beats_baselines(s)
    losers = [r for r in rows if r not in beat]
    by_spearman = sorted(rows, key=lambda r: -(r["partial_spearman"] or -9))
    per = {
        ds: [r for r in s["rows"] if r["dataset"] == ds] for ds in sorted({r["dataset"] for r in s["rows"]} - {"all"})
    }
    return [
        f"- **Against the paper's conclusion** (\"none of the approaches showed a significant correlation > "
        f'{f.cited(str(PAPER_BAR))} ... for most LLMs", a "fundamental limitation"): with a sentence-level prompt '
        f"{f.count(len(above))} of {f.count(len(rows))} LLMs exceed it (largest p-value "
        f"{f.sci(max((r['p_value'] for r in above), default=None))}), "
        f"and {f.count(len(beat))} of {f.count(len(rows))} beat all three baselines on their own items"
        + (
            " ("
            + ", ".join(
                f"{f.name(r['judge'])} {f.num(r['partial_pearson'], 3)} against {f.name(best[r['judge']][0])} "
                f"{f.num(best[r['judge']][1], 3)}"
                for r in losers
            )
            + ")"
            if losers
            else ""
        )
        + ". The paper's pessimism does not carry over to sentence-level fact-checking by these models; it may be "
        "a property of its prompts (a single score, the QA pipeline) and of 2023 models. Its method advice — "
        "control for the system — is what these numbers use; without it they would be inflated by the system "
        "confound it warns about.",
        "- **Ordering:** by partial Pearson "
        + ", ".join(f"{f.name(r['judge'])} {f.num(r['partial_pearson'])}" for r in rows)
        + "; Spearman orders them differently ("
        + ", ".join(f"{f.name(r['judge'])} {f.num(r['partial_spearman'])}" for r in by_spearman)
        + f"), so only large gaps are robust at n ≈ {f.count(round(mean(r['n'] for r in rows)))}.",
        "- **Per dataset** (partial Pearson): "
        + "; ".join(
            f"{f.name(ds)} "
            + (
                f.span([r["partial_pearson"] for r in group], 2)
                if any(r["partial_pearson"] is not None for r in group)
                else "undefined"
            )
            + (
                f", undefined for {f.names(r['judge'] for r in group if r['partial_pearson'] is None)}"
                if any(r["partial_pearson"] is None for r in group)
                else ""
            )
            for ds, group in per.items()
        )
        + ". BBC/XSum summaries are mostly one sentence, so the item score is nearly binary there.",
        _error_types(s, f),
    ]


def _error_types(s: dict[str, Any], f: Figures) -> str:
    drops: dict[str, list[float]] = {}
    for a in s["ablation"]:
        if a["delta_pearson"] is not None and a["category"] in ERROR_TYPES:
            drops.setdefault(a["category"], []).append(a["delta_pearson"])
    ranked = sorted(drops.items(), key=lambda kv: -mean(kv[1]))[:2]
    recall: dict[str, list[float]] = {}
    for e in s["error_types"]:
        recall.setdefault(e["error_type"], []).append(e["recall"])
    rare = [t for t in ("CorefE", "LinkE") if t in recall]
    flagger = min(s["sentence_agreement"], key=lambda a: a["precision"] if a["precision"] is not None else 9)
    return (
        "- **Error types:** the ablation (FRANK's `Flip_<type>` targets) lowers the correlation most for "
        + " and ".join(f"{f.name(c)} ({f.span(v, 2)})" for c, v in ranked)
        + " errors: the LLMs' correlation rests on the errors they name best; "
        + (
            f"{' and '.join(f.name(t) for t in rare)} errors are rarely recognised as such (recall "
            f'{f.span([x for t in rare for x in recall[t]], 2)}; most are called "no error" or another type). '
            if rare
            else ""
        )
        + f"{f.name(flagger['judge'])} over-flags most (lowest precision {f.num(flagger['precision'])}, recall "
        f"{f.num(flagger['recall'])})."
    )


def _calibration(v: dict[str, Any], faith: dict[str, Any], f: Figures) -> list[str]:
    head = [next(p for p in c["procedure"] if abs(p["alpha"] - HEADLINE) < 1e-9) for c in v["cells"]]
    parts = faith["parts"]
    return [
        "- **Calibration:** the sentence-level score maps to a verdict `1 + round_half_up(4 × share)` and is "
        "calibrated per LLM for the target `round_half_up(1 + 4 × Factuality)` under prompt family "
        "`factuality_sentences`, by the same validity rules as the SummEval cells "
        "(`offline.studies.conformal.validity`: input "
        f"kind `score`, {f.count(v['n_splits'])} splits that keep each FRANK article on one side, "
        + (f"PAC thresholds at δ = {f.num(v['delta'])}" if v["delta"] is not None else "marginal thresholds")
        + f", the default chosen inside the calibration articles): on unseen articles at α = {f.num(HEADLINE)} the "
        f"served recipe covers {f.span([p['mean_coverage'] for p in head], 3)} on average (5th percentile ≥ "
        f"{f.num(min(p['p5_coverage'] for p in head), 3)}) with {f.span([p['mean_set_size'] for p in head], 1)} "
        "labels (`reports/factuality/llm_sentences_validity.md`) — wide sets, since "
        f"{f.span([c['n_items'] for c in v['cells']], 0)} items per LLM leave PAC thresholds little room. FRANK's own "
        "valid/test split is also reported (`reports/factuality/faithfulness.md`: fit on "
        f"{f.span([p['n_fit'] for p in parts], 0)} `valid` items, test on {f.span([p['n_test'] for p in parts], 0)}, "
        "marginal thresholds).",
        '- **The service** answers `criterion: "faithfulness"` with `factuality_method: "sentences"`: the live '
        "judge gets our own sentence-level prompt (`judges/factuality/sentence_check.py`; the summary is split after "
        '`.`/`!`/`?` and at line breaks), and the answer carries per-sentence `evidence` (`{kind: "sentence", '
        "sentence, error, category, reason}`), `sentence_score`, the mapped `judge_score` and the calibrated set. A "
        "caller may send its own `sentence_verdicts` (`[{sentence, category, reason}]`, categories as above) "
        "instead. A reply that is not a list, has the wrong count or an unknown category is a `502` "
        "`judge-reply-unreadable` for that item (`sentences_<rule>` in the detail), never a guessed score. "
        "`python -m offline collect --task factuality_sentences` collects live answers into the same store.",
    ]


def factuality_section(reports: Reports, f: Figures) -> Section:
    """The recorded sentence-level fact-checkers on FRANK."""
    s = reports["sentences"]
    bullets = [*_findings(s, f), *_calibration(reports["sentences_validity"], reports["faithfulness"], f)]
    return Section(
        "Factuality on real LLM judges (FRANK, recorded sentence-level fact-checkers)",
        ("sentences", "sentences_validity", "faithfulness"),
        _intro(s, f) + "\n" + _table(s, f) + "\n" + "\n".join(bullets) + "\n",
    )
