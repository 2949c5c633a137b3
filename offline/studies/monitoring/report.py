"""The monitoring study's files: ``monitoring.json`` (settings, rows, checks, example streams), ``monitoring.md``
(the tables docs/monitoring.md quotes) and one PNG per example stream (the detectors and the running error with
its confidence sequence over labels), all under ``<out>/monitoring/``."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from offline.studies.monitoring.checks import HEADLINE_TARGET, StudyChecks, study_checks
from offline.studies.monitoring.example import ExampleStream
from offline.studies.monitoring.study import MonitoringStudy, ScenarioRow

__all__ = ["MonitoringReport", "markdown_tables", "write_monitoring_report"]

DPI = 110
LABELS = {"none": "no shift", "harsher": "one label harsher", "lenient": "one label more lenient"}
LABELS |= {"swap": "model swap", "abstractive": "abstractive (own)", "new_input": "extractive (new input)"}


class MonitoringReport(msgspec.Struct, frozen=True, kw_only=True):
    """What ``monitoring.json`` holds."""

    study: MonitoringStudy
    checks: StudyChecks
    figures: list[str]


def _labels(value: float | None) -> str:
    return "> horizon" if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _line(r: ScenarioRow) -> str:
    bound = "met" if r.information_labels is None else f"{r.information_labels:,.0f}"
    harm = ", ".join(r.harms) if r.harms else "harmless"
    plain = "" if r.plain_median_labels is None and r.plain_alarm_rate is None else _labels(r.plain_median_labels)
    return (
        f"| {LABELS[r.kind]} | {r.judge} / {r.criterion} | {r.verdicts_of} | {r.coverage:.3f} | "
        f"{r.accept_share:.2f} | {_rate(r.error_among_accepted)} | {harm} | {r.alarm_rate:.1%} | "
        f"{_labels(r.median_labels) if r.alarm_rate else '-'} | {_labels(r.p90_labels) if r.alarm_rate else '-'} | "
        f"{bound} | {plain} |"
    )


def markdown_tables(study: MonitoringStudy, checks: StudyChecks) -> str:
    """The harmful shifts (and the headline cell), then every row; then the checks in words."""
    s = study.settings
    head = (
        "| scenario | cell (judge / criterion) | verdicts of | coverage | accept share | error among accepted | harm "
        "| alarmed | median labels | p90 labels | information bound | plain median |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    shown = [r for r in study.rows if r.harmful or (r.judge, r.criterion) == ("gpt-4o-mini-2024-07-18", "relevance")]
    lines = [
        f"Streams: {s.streams} seeded document orders per row (seed {s.seed}), horizon {s.horizon:,} labels, "
        f"delta {s.delta}, verdicts sent as `{s.levels.input}`, asked alpha {s.levels.alpha}, tolerance "
        f"{s.levels.tolerance}, accept_alpha {s.levels.accept_alpha}.",
        "",
        "### Harmful shifts, and every scenario of gpt-4o-mini / relevance",
        "",
        head,
        *(_line(r) for r in shown),
        "",
        "### Checks",
        "",
        f"- False alarms: {checks.null_rows} rows whose population meets the guarantees (no shift, and harmless "
        f"shifts); the most alarmed {checks.null_max_alarm_rate:.1%} of streams (limit {checks.null_alarm_limit:.1%}: "
        f"delta + Monte-Carlo error): {'pass' if checks.false_alarms_ok else 'FAIL'}.",
        f"- Headline (gpt-4o-mini / relevance, one label harsher): median {_labels(checks.headline_median_labels)} "
        f"labels, 90th percentile {_labels(checks.headline_p90_labels)} (target <= {HEADLINE_TARGET}): "
        f"{'pass' if checks.headline_ok else 'FAIL'}.",
        f"- Harmful shifts detected in >= 90% of streams within {s.horizon:,} labels: {checks.harmful_detected} of "
        f"{checks.harmful_rows}."
        + (
            " Not: "
            + "; ".join(
                f"{LABELS[m.kind]} {m.judge} / {m.criterion} ({m.alarm_rate:.0%}; information bound "
                f"{_labels(m.information_labels)} labels)"
                for m in checks.missed
            )
            + "."
            if checks.missed
            else ""
        ),
        f"- Harmless shifts (reported as harmless, the null holds): {checks.harmless_shifted_rows} rows.",
        "",
        "### Every row",
        "",
        head,
        *(_line(r) for r in study.rows),
        "",
    ]
    return "\n".join(lines)


def _figure(example: ExampleStream, path: Path) -> Path:
    figure = Figure(figsize=(7.5, 5.6))
    top, bottom = figure.subplots(2, 1, sharex=True)
    top.plot(example.labels, example.cell_e_value, color="black", label="cell detector")
    for name, level, values in zip(example.guarantees, example.levels, example.e_values, strict=True):
        top.plot(example.labels, values, alpha=0.7, label=f"{name.replace('_', ' ')} at {level:g}")
    top.axhline(example.threshold, color="red", linestyle="--", label=f"1/delta = {example.threshold:g}")
    if example.alarm_label is not None:
        top.axvline(example.alarm_label, color="red", alpha=0.4)
    top.set_yscale("log")
    top.set_ylabel("e-value")
    top.legend(fontsize=7, loc="upper left")
    rates = [math.nan if v is None else v for v in example.rate]
    bottom.plot(example.labels, rates, color="tab:blue", label="running rate")
    bottom.fill_between(example.labels, example.rate_low, example.rate_high, alpha=0.2, label="confidence sequence")
    what = "error among accepted" if example.guarantees[-1] == "accept_error" else "miss rate of the set"
    bottom.axhline(example.levels[-1], color="red", linestyle="--", label=f"promised {example.levels[-1]:g}")
    if example.true_rate is not None:
        bottom.axhline(example.true_rate, color="gray", linestyle=":", label=f"true {example.true_rate:.3f}")
    bottom.set_ylim(0, max(0.4, 2 * example.levels[-1]))
    bottom.set_ylabel(what)
    bottom.set_xlabel("labels")
    bottom.legend(fontsize=7, loc="upper right")
    source = "" if example.verdicts_of == example.judge else f" (verdicts of {example.verdicts_of})"
    figure.suptitle(f"{LABELS[example.kind]}: {example.judge} / {example.criterion}{source}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=DPI, format="png")
    return path


def write_monitoring_report(study: MonitoringStudy, out: Path) -> MonitoringReport:
    """Write the JSON, the tables and the figures under ``out/monitoring``; return what the JSON holds."""
    folder = Path(out) / "monitoring"
    folder.mkdir(parents=True, exist_ok=True)
    checks = study_checks(study.rows, delta=study.settings.delta, streams=study.settings.streams)
    figures = [_figure(e, folder / f"stream_{e.kind}.png").name for e in study.examples]
    report = MonitoringReport(study=study, checks=checks, figures=figures)
    (folder / "monitoring.json").write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=1) + b"\n")
    (folder / "monitoring.md").write_text(markdown_tables(study, checks))
    return report
