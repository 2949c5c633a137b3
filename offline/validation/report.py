"""The validation's report: ``validate.json``, the ``validate.md`` tables (coverage of the served sets, certified
decisions) and the ``coverage.png`` figure (:mod:`offline.validation.artifact`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from offline.jsonfile import write_json
from offline.validation.artifact import ValidationCell, ValidationReport

__all__ = [
    "markdown",
    "write_validation",
]


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def markdown(report: ValidationReport) -> str:
    """The validation table."""
    lines = [
        "# Validation of a fixed artifact on labelled data (served exactly as the service serves)",
        "",
        f"Artifact: `{report.artifact}` (calibration id {report.calibration_id}); labels: {report.labels}.",
        "",
        "| judge | criterion | input | alpha | served as | n | coverage [95% CI] | set size | empty | "
        "accept / review / escalate | accept accuracy | min label coverage |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in report.cells:
        served = "uncalibrated" if c.kind is None else f"{c.kind} / {c.method} @ {c.alpha_served}"
        ci = "" if c.ci_low is None else f" [{c.ci_low:.3f}, {c.ci_high:.3f}]"
        min_label = min((g.coverage for g in c.by_label), default=None)
        shares = (
            "n/a" if c.accept_share is None else f"{c.accept_share:.0%} / {c.review_share:.0%} / {c.escalate_share:.0%}"
        )
        lines.append(
            f"| {c.judge} | {c.criterion} | {c.input} | {c.alpha} | {served} | {c.n} | "
            f"{_fmt(c.coverage)}{ci} | {_fmt(c.mean_set_size, '.2f')} | {c.empty_sets} | {shares} | "
            f"{_fmt(c.accept_accuracy)} | {_fmt(min_label, '.2f')} |"
        )
    if report.decisions:
        lines += [
            "",
            "## Certified decisions (the artifact's decision_rules served with decide())",
            "",
            "| judge | criterion | input kind | row | accept_alpha | rule failed | certified | n | "
            "accept share | error among accepted [95% CP, item-level] | above alpha | "
            "per label: accepted / n (errors) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for d in report.decisions:
            row = f"tolerance {d.tolerance}" if d.kind == "accept" else f"gate tau {d.pass_threshold}"
            ci = "" if d.ci_low is None else f" [{d.ci_low:.3f}, {d.ci_high:.3f}]"
            labels = ", ".join(f"{b.label}: {b.accepted}/{b.n} ({b.errors})" for b in d.by_label)
            lines.append(
                f"| {d.judge} | {d.criterion} | {d.input_kind} | {row} | {d.accept_alpha:g} | "
                f"{'yes' if d.rule_failed else 'no'} | {_fmt(d.certified)} | {d.n} | {d.accept_share:.3f} | "
                f"{_fmt(d.error_among_accepted)}{ci} | {'YES' if d.above_alpha else 'no'} | {labels} |"
            )
    return "\n".join(lines) + "\n"


def _bar(cell: ValidationCell) -> tuple[float, float, float]:
    """A covered cell's coverage and the distances from it down and up to its interval's ends."""
    coverage, low, high = cell.coverage, cell.ci_low, cell.ci_high
    if coverage is None or low is None or high is None:
        raise ValueError(f"cell {cell.judge}/{cell.criterion} has no coverage interval")
    return coverage, coverage - low, high - coverage


def _figure(report: ValidationReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c for c in report.cells if c.coverage is not None and c.input == "score"]
    alphas = sorted({c.alpha for c in cells})
    fig, axes = plt.subplots(1, max(1, len(alphas)), figsize=(5 * max(1, len(alphas)), 5), squeeze=False)
    for axis, alpha in zip(axes[0], alphas, strict=False):
        chosen = [c for c in cells if c.alpha == alpha]
        y = np.arange(len(chosen))
        values = np.array([_bar(c)[0] for c in chosen])
        errors = np.array([_bar(c)[1:] for c in chosen]).T
        axis.errorbar(values, y, xerr=errors, fmt="o", ms=3)
        axis.axvline(1 - alpha, color="red", linestyle="--", label=f"1 - alpha = {1 - alpha:.2f}")
        axis.set_yticks(y, [f"{c.judge[:18]} {c.criterion[:4]}" for c in chosen], fontsize=6)
        axis.set_xlabel("coverage (95% Clopper-Pearson)")
        axis.set_title(f"score-only verdicts, alpha = {alpha}")
        axis.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_validation(report: ValidationReport, out: Path) -> tuple[Path, ...]:
    """Write ``validate.json``, ``validate.md`` and ``coverage.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = out / "validate.json", out / "validate.md", out / "coverage.png"
    write_json(report, json_path)
    md_path.write_text(markdown(report))
    _figure(report, png_path)
    return json_path, md_path, png_path
