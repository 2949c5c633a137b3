"""The report of ``calibrate --labels``: what the user's cells mean for their pipeline, then the figures behind it.

Written under the report folder: ``index.md`` (opens with "What this means for your pipeline"),
``pipeline/heldout.json`` (per cell and input kind: the default method and its reason, every method's held-out
figures by group at every level, and the served recipe's figures on unseen groups, from
:class:`calibration.input_kinds.fit.InputKindFit` without the fitted predictors) and ``pipeline/coverage.png`` (held-out
coverage and set size against alpha per cell, default method); the caller writes ``conformal/validity.{json,md}``.

A cell is flagged *almost always the full scale* when, with its default method at the headline alpha, at least half
of the held-out sets are the full scale 1..K or the mean set size is >= K - 0.5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from calibration.input_kinds.fit import HeldoutFigures, InputKindFit
from calibration.per_label.rule import LabelRule
from calibration.per_label.summary import rule_words
from offline.jsonfile import write_json
from offline.report.tables import fmt, markdown_table

__all__ = ["FULL_SCALE_SHARE", "TABLE_ALPHAS", "full_scale_flag", "write_labelled_report"]

FULL_SCALE_SHARE = 0.5
TABLE_ALPHAS = (0.05, 0.10, 0.15, 0.20)
FitKey = tuple[str, str, str, str]


def full_scale_flag(figures: HeldoutFigures, n_labels: int) -> bool:
    """True when the sets are (almost) always the whole scale (module rule)."""
    return figures.full_scale_share >= FULL_SCALE_SHARE or figures.set_size >= n_labels - 0.5


def _at(fit: InputKindFit, method: str, alpha: float) -> HeldoutFigures | None:
    return next((f for f in fit.heldout if f.method == method and abs(f.alpha - alpha) < 1e-9), None)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _pipeline(
    fits: Mapping[FitKey, InputKindFit], n_labels: Mapping[tuple[str, str, str], int], alpha: float
) -> list[str]:
    lines = [
        "## The marginal guarantees' sets (opt-in: `guarantee: expected` or `pac`)",
        "",
        f"Per cell and kind of verdict you send (`score` alone, `probabilities` from log-probs), with its "
        f"default method at α = {alpha} (the human label lies in the set for at least {1 - alpha:.0%} of items, "
        "all labels together, with probability 95% over the calibration data), on **documents the fit never saw** "
        "(held-out splits by `group`): of 100 new items, how many get a set of at most two labels, of three or four, "
        "or of the full scale, and how often a set of at most two labels holds the human label. These are set "
        "sizes, not decisions: what `/v1/score` accepts is decided by the certified rules. `recipe` is "
        "the coverage of the whole procedure (default chosen, then fitted) on unseen documents.",
        "",
    ]
    rows, flagged = [], []
    for (judge, family, criterion, kind), fit in fits.items():
        k = n_labels.get((judge, family, criterion), 5)
        method = fit.default.method
        figures = _at(fit, method, alpha)
        recipe = next((p for p in fit.procedure if abs(p.alpha - alpha) < 1e-9), None)
        if figures is None:
            continue
        flag = full_scale_flag(figures, k)
        if flag:
            flagged.append(f"{judge} / {criterion} ({kind})")
        rows.append(
            [
                judge,
                family,
                criterion,
                kind,
                f"1..{k}",
                f"`{method}`",
                fmt(figures.coverage),
                fmt(figures.coverage_p5),
                "n/a" if recipe is None else fmt(recipe.mean_coverage),
                fmt(figures.set_size, 2),
                _pct(figures.accept_share),
                _pct(figures.review_share),
                _pct(figures.escalate_share),
                _pct(figures.accept_accuracy),
                "**sets are (almost) always the full scale**" if flag else "",
            ]
        )
    lines.append(
        markdown_table(
            [
                "judge",
                "prompt family",
                "criterion",
                "kind",
                "scale",
                "method",
                "coverage",
                "5th pct",
                "recipe",
                "set size",
                "sets ≤ 2 labels",
                "sets of 3-4",
                "full scale",
                "small sets holding the human label",
                "flag",
            ],
            rows,
        )
    )
    if flagged:
        lines += [
            f"Flagged ({', '.join(flagged)}): the judge's verdict says little about the human label at this "
            "level; expect escalation, collect more labels, try a larger alpha, or improve the prompt.",
            "",
        ]
    lines += [
        "Pick α knowingly: a larger α gives smaller sets (more accepts) and a weaker guarantee. The artifact "
        "holds every α from 0.01 to 0.30; the table below shows four.",
        "",
    ]
    return lines


def _figures_table(fits: Mapping[FitKey, InputKindFit]) -> str:
    rows = []
    for (judge, _, criterion, kind), fit in fits.items():
        for f in sorted(fit.heldout, key=lambda f: (f.alpha, f.method)):
            if not any(abs(f.alpha - a) < 1e-9 for a in TABLE_ALPHAS):
                continue
            mark = " (default)" if f.method == fit.default.method else ""
            rows.append(
                [
                    judge,
                    criterion,
                    kind,
                    fmt(f.alpha, 2),
                    f"`{f.method}`{mark}",
                    fmt(f.coverage),
                    fmt(f.coverage_p5),
                    fmt(f.set_size, 2),
                    _pct(f.empty_share),
                    _pct(f.full_scale_share),
                    _pct(f.accept_share),
                    _pct(f.review_share),
                    _pct(f.escalate_share),
                    _pct(f.accept_accuracy),
                    fmt(f.min_label_coverage),
                ]
            )
    return markdown_table(
        [
            "judge",
            "criterion",
            "kind",
            "α",
            "method",
            "coverage",
            "5th pct",
            "set size",
            "empty",
            "full scale",
            "sets ≤ 2 labels",
            "sets of 3-4",
            "full scale",
            "small set holds label",
            "min label cov.",
        ],
        rows,
    )


def _coverage_figure(
    fits: Mapping[FitKey, InputKindFit], n_labels: Mapping[tuple[str, str, str], int], path: Path
) -> Path:
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    cover, size = figure.subplots(1, 2)
    for (judge, family, criterion, kind), fit in fits.items():
        k = n_labels.get((judge, family, criterion), 5)
        points = sorted((f.alpha, f.coverage, f.set_size / k) for f in fit.heldout if f.method == fit.default.method)
        if not points:
            continue
        label = f"{judge} / {criterion} / {kind} ({fit.default.method})"
        cover.plot([1 - a for a, _, _ in points], [c for _, c, _ in points], marker=".", label=label)
        size.plot([a for a, _, _ in points], [s for _, _, s in points], marker=".", label=label)
    cover.plot([0.7, 1.0], [0.7, 1.0], color="grey", linestyle="--", linewidth=0.8)
    cover.set_xlabel("1 − α (target)")
    cover.set_ylabel("held-out coverage (by group)")
    size.set_xlabel("α")
    size.set_ylabel("mean set size / K")
    size.legend(fontsize=6)
    figure.suptitle("Your cells on unseen documents (default method)", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110, format="png")
    return path


def _per_label(rules: Sequence[LabelRule]) -> list[str]:
    """The default guarantee's figures per cell and kind: the rule's own held-out summary, as every view shows it."""
    if not rules:
        return []
    rows = []
    for rule in rules:
        figures = rule.summary
        per_label = (
            "; ".join(
                f"{f.label}: {_pct(f.coverage)} / {_pct(f.wrongly_accepted)} ({f.n_items})" for f in figures.labels
            )
            if figures is not None
            else "-"
        )
        rows.append(
            [
                rule.judge,
                rule.prompt_family,
                rule.criterion,
                rule.input_kind,
                "yes" if rule.skill.skilled else "**no**",
                "-" if figures is None else fmt(figures.set_size, 2),
                "-" if figures is None else _pct(figures.accept_share),
                per_label,
            ]
        )
    return [
        "## The default guarantee: per human label",
        "",
        "What `/v1/score` answers by default (`guarantee: per_label`): for every human label, its items' labels lie "
        "in the set at least 90% of the time and at most 10% of its items are accepted with a point 2 or more away "
        "(alpha = accept_alpha = 0.10, tolerance 2; documents as the unit). Figures held out on 5 folds by `group`, "
        "answered by the service's own function; `skill`: does the judge beat the label distribution alone "
        "(a judge that does not is never accepted).",
        "",
        markdown_table(
            [
                "judge",
                "prompt family",
                "criterion",
                "kind",
                "skill",
                "set size",
                "accepted",
                "per label: coverage / wrongly accepted (items)",
            ],
            rows,
        ),  # fmt: skip
        *(f"- {rule.judge} / {rule.criterion} ({rule.input_kind}): {rule_words(rule)}" for rule in rules),
        "",
    ]


def write_labelled_report(
    out: Path,
    fits: Mapping[FitKey, InputKindFit],
    *,
    n_labels: Mapping[tuple[str, str, str], int],
    warnings: Sequence[str],
    headline_alpha: float,
    thresholds: Path,
    files: Sequence[Path],
    label_rules: Sequence[LabelRule] = (),
) -> tuple[Path, Path, Path]:
    """Write index.md, pipeline/heldout.json and pipeline/coverage.png; return their paths (module layout)."""
    heldout = out / "pipeline" / "heldout.json"
    heldout.parent.mkdir(parents=True, exist_ok=True)
    stripped = [
        {
            "judge": key[0],
            "prompt_family": key[1],
            "criterion": key[2],
            "input_kind": key[3],
            "n_labels": n_labels.get(key[:3], 5),
            **msgspec.to_builtins(msgspec.structs.replace(fit, fitted={})),
        }
        for key, fit in fits.items()
    ]
    write_json(stripped, heldout)
    figure = _coverage_figure(fits, n_labels, out / "pipeline" / "coverage.png")
    lines = [
        "# Calibration report — your labelled data",
        "",
        f"Labelled files: {', '.join(f'`{p}`' for p in files)}. Artifact (only these cells): `{thresholds}`; "
        "serve it by copying it into ARTIFACTS_DIR, or `POST /v1/calibration/reload` with a `name` (README).",
        "",
    ]
    lines += _per_label(label_rules)
    lines += _pipeline(fits, n_labels, headline_alpha)
    if warnings:
        lines += ["## Too few labels", "", *(f"- {w}" for w in warnings), ""]
    lines += [
        "## Held-out figures by group",
        "",
        "Means over seeded splits by `group` (all items of a document on one side); `empty` sets are "
        "escalated, never accepted.",
        "",
        _figures_table(fits),
        "![coverage and set size against alpha](pipeline/coverage.png)",
        "",
        "## Default method per cell and kind, and why",
        "",
        markdown_table(
            ["judge", "prompt family", "criterion", "kind", "method", "reason"],
            [[*key, f"`{fit.default.method}`", fit.default.reason] for key, fit in fits.items()],
        ),
        "Details: [conformal/validity.md](conformal/validity.md), [pipeline/heldout.json](pipeline/heldout.json).",
        "",
    ]
    index = out / "index.md"
    index.write_text("\n".join(lines))
    return index, heldout, figure
