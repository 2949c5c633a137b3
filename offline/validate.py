"""Validate a fixed artifact on labelled data: every item scored exactly as the service scores it.

``python -m offline validate --thresholds FILE [--labels FILE ...] [--data-dir D] [--out reports/validate]``
scores every labelled item (the user's own held-out labelled files with ``--labels``, format
:mod:`artifact.labels`; else the recorded SummEval judges, which are in-sample for the shipped artifact) of
every judge the artifact calibrates, three ways per item (what a caller can send): the integer
score alone (``score``), the log-probs alone (``logprobs``) and both (``score+logprobs``). Each verdict is served
by the service's own rule (:func:`artifact.serving.choose_entry`: input kind, next smaller calibrated level,
the default method of the kind with the smaller held-out sets) and the set by
:func:`calibration.conformal.prediction_set` on the kind's inputs (:func:`calibration.verdicts.verdict_inputs`),
the same pure functions ``service.scoring.score`` calls; the decision is the service's default rule (empty set or
size >= min(5, K) -> escalate; size <= 2 -> accept; else review; :func:`calibration.kind_fit.decision_shares`).

Per (judge, prompt family, criterion, input, alpha): n, marginal coverage with its 95% Clopper-Pearson interval
(scipy's beta quantiles), coverage per human label and per judge score, mean set size, empty sets, the shares of
accept / review / escalate and the accuracy of accepted verdicts (human label in the set); uncalibrated items
are counted apart.

**Certified decisions** (the artifact's ``decision_rules``): per (judge, prompt family, criterion, input kind) with a
rule whose kind the items carry, every item is served by :func:`calibration.decision_rule.decide` on
:func:`calibration.decision_rule.feature_of` of its verdict, at every (tolerance, accept_alpha) row of the rule:
n, accept share, errors among accepted (|y - point| >= tolerance) with their exact 95% Clopper-Pearson interval
(item-level: an honest interval only when the file's items are independent; several items per group widen the
truth), the rule's certified bound and whether the observed error exceeds it; the same per human label (never
pooled) and per quality gate (:func:`calibration.decision_rule.decide_gate`; false passes among accepted
passes). Writes ``validate.json``, ``validate.md`` and ``coverage.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from artifact.serving import ServedEntry, choose_entry, interval_hull
from artifact.thresholds import ThresholdIndex, ThresholdsArtifact
from calibration.conformal import prediction_set
from calibration.decision_rule import DecisionRule, decide, decide_gate, feature_of
from calibration.kind_fit import decision_shares
from calibration.verdicts import verdict_inputs
from offline.jsonfile import write_json
from offline.studies.cell_data import JudgeCriterionData

__all__ = [
    "INPUTS",
    "DecisionCheck",
    "ValidationCell",
    "ValidationReport",
    "check_decisions",
    "clopper_pearson",
    "recorded_datasets",
    "serve_item",
    "validate_artifact_on",
    "write_validation",
]

# What a caller sends -> the kinds its verdict carries (the service's rule in service.scoring.score).
INPUTS: dict[str, tuple[str, ...]] = {
    "score": ("score",),
    "logprobs": ("probabilities",),
    "score+logprobs": ("probabilities", "score"),
}
VALIDATE_ALPHAS: tuple[float, ...] = (0.05, 0.10, 0.20)


class GroupRow(msgspec.Struct, frozen=True, kw_only=True):
    """Coverage within one group (a human label or a judge score)."""

    group: int
    n: int
    coverage: float


class ValidationCell(msgspec.Struct, frozen=True, kw_only=True):
    """One (judge, prompt family, criterion, input, alpha) of the validation."""

    judge: str
    prompt_family: str
    criterion: str
    input: str
    alpha: float
    alpha_served: float | None
    kind: str | None
    method: str | None
    n: int
    n_uncalibrated: int
    coverage: float | None
    ci_low: float | None
    ci_high: float | None
    mean_set_size: float | None
    empty_sets: int
    accept_share: float | None
    review_share: float | None
    escalate_share: float | None
    accept_accuracy: float | None
    by_label: list[GroupRow]
    by_judge_score: list[GroupRow]


class DecisionLabel(msgspec.Struct, frozen=True, kw_only=True):
    """One human label of a decision check: items, accepted, errors among accepted."""

    label: int
    n: int
    accepted: int
    errors: int


class DecisionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One certified-decision row of the artifact checked on labelled items (a certification or a quality gate)."""

    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    kind: str  # "accept" (tolerance row) | "gate" (quality gate row)
    tolerance: int | None
    pass_threshold: int | None
    accept_alpha: float
    rule_failed: bool
    certified: float | None  # the artifact's certified error (or false-pass) bound
    n: int
    accept_share: float
    error_among_accepted: float | None
    ci_low: float | None
    ci_high: float | None
    above_alpha: bool  # observed error among accepted > accept_alpha
    by_label: list[DecisionLabel]


class ValidationReport(msgspec.Struct, frozen=True, kw_only=True):
    """Every validated cell, with where the artifact and the labels came from."""

    artifact: str
    calibration_id: str
    labels: str
    cells: list[ValidationCell]
    decisions: list[DecisionCheck] = []


def recorded_datasets(data_dir: Path) -> list[JudgeCriterionData]:
    """Every recorded SummEval judge's direct answers as study arrays (ingested into a temporary answer store,
    exactly as ``make calibrate`` ingests them)."""
    import tempfile

    from offline.data.summeval import load_summeval
    from offline.ingest import ingest_recorded
    from offline.store import AnswerStore
    from offline.studies.cell_data import cell_data_from_store

    summeval = load_summeval(data_dir)
    with tempfile.TemporaryDirectory() as folder, AnswerStore(Path(folder) / "answers.sqlite") as store:
        ingest_recorded(store, data_dir)
        return cell_data_from_store(store, summeval.items)


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval for a binomial proportion."""
    from scipy.stats import beta

    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high


@dataclass(frozen=True)
class ServedItem:
    """One item's answer: the set (None when uncalibrated) and what served it."""

    labels: tuple[int, ...] | None
    served: ServedEntry | None


def serve_item(
    index: ThresholdIndex,
    cell: tuple[str, str, str],
    kinds: tuple[str, ...],
    alpha: float,
    *,
    judge_score: int,
    probabilities: list[float] | None,
    n_labels: int,
    mean: float | None = None,
) -> ServedItem:
    """The set the service gives this verdict (module rules)."""
    served = choose_entry(index, cell, kinds, alpha)
    if not isinstance(served, ServedEntry):
        return ServedItem(labels=None, served=None)
    score, probs = verdict_inputs(
        served.kind, n_labels, judge_score=judge_score, probabilities=probabilities, mean=mean
    )
    return ServedItem(
        labels=interval_hull(prediction_set(served.entry.fitted, judge_score=score, probabilities=probs)), served=served
    )


def _groups(covered: np.ndarray, keys: np.ndarray) -> list[GroupRow]:
    return [
        GroupRow(group=int(k), n=int((keys == k).sum()), coverage=float(covered[keys == k].mean()))
        for k in np.unique(keys)
    ]


def validate_artifact_on(
    artifact: ThresholdsArtifact,
    datasets: Sequence[JudgeCriterionData],
    *,
    alphas: Sequence[float] = VALIDATE_ALPHAS,
    source: str = "",
    labels: str = "",
    accept_max: int = 2,
    escalate_min: int = 5,
) -> ValidationReport:
    """Score every item of ``datasets`` with ``artifact`` as the service would (module rules)."""
    index = ThresholdIndex(artifact)
    cells = []
    for data in datasets:
        cell = (data.judge, data.prompt_family, data.criterion)
        if not index.kinds(*cell):
            continue
        inputs = {"mean": ("mean",)} if data.means is not None else INPUTS
        for name, kinds in inputs.items():
            if "probabilities" in kinds and data.probabilities is None:
                continue
            for alpha in alphas:
                cells.append(_validate_cell(index, data, cell, name, kinds, float(alpha), accept_max, escalate_min))
    return ValidationReport(
        artifact=source,
        calibration_id=index.calibration_id,
        labels=labels,
        cells=cells,
        decisions=check_decisions(artifact, datasets),
    )


def _features(rule: DecisionRule, data: JudgeCriterionData) -> np.ndarray | None:
    """The rule's feature of every item, as the service computes it; None when the items lack the rule's kind."""
    if rule.input_kind == "probabilities" and data.probabilities is None:
        return None
    if rule.input_kind == "mean" and data.means is None:
        return None
    if rule.input_kind == "score" and data.means is not None:
        return None
    values = []
    for position in range(data.labels.size):
        probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
        values.append(
            feature_of(
                rule.feature,
                score=int(data.judge_scores[position]),
                probabilities=probabilities,
                mean=None if data.means is None else float(data.means[position]),
            )
        )
    return np.asarray(values)


def _check(
    base: dict, accepted: np.ndarray, bad: np.ndarray, labels: np.ndarray, n_labels: int, alpha: float, **row: Any
) -> DecisionCheck:
    taken = int(accepted.sum())
    errors = int((bad & accepted).sum())
    low, high = clopper_pearson(errors, taken) if taken else (None, None)
    by_label = [
        DecisionLabel(
            label=k,
            n=int((labels == k).sum()),
            accepted=int((accepted & (labels == k)).sum()),
            errors=int((accepted & bad & (labels == k)).sum()),
        )
        for k in range(1, n_labels + 1)
    ]
    error = errors / taken if taken else None
    return DecisionCheck(
        **base,
        **row,
        accept_alpha=alpha,
        n=int(labels.size),
        accept_share=taken / labels.size,
        error_among_accepted=error,
        ci_low=low,
        ci_high=high,
        above_alpha=error is not None and error > alpha + 1e-12,
        by_label=by_label,
    )


def check_decisions(artifact: ThresholdsArtifact, datasets: Sequence[JudgeCriterionData]) -> list[DecisionCheck]:
    """Every decision rule of the artifact whose cell the labelled items hold, checked row by row (module rules)."""
    by_cell = {(d.judge, d.prompt_family, d.criterion): d for d in datasets}
    checks = []
    for rule in artifact.decision_rules:
        data = by_cell.get((rule.judge, rule.prompt_family, rule.criterion))
        features = None if data is None or data.labels.size == 0 else _features(rule, data)
        if data is None or features is None:
            continue
        labels = np.asarray(data.labels)
        base = dict(
            judge=rule.judge, prompt_family=rule.prompt_family, criterion=rule.criterion, input_kind=rule.input_kind
        )
        for row in rule.certifications:
            outcomes = [
                decide(rule, float(x), tolerance=row.tolerance, accept_alpha=row.accept_alpha) for x in features
            ]
            accepted = np.array([o.accepted for o in outcomes])
            bad = np.abs(labels - np.array([o.point for o in outcomes])) >= row.tolerance
            checks.append(
                _check(
                    base,
                    accepted,
                    bad,
                    labels,
                    rule.n_labels,
                    row.accept_alpha,
                    kind="accept",
                    tolerance=row.tolerance,
                    pass_threshold=None,
                    rule_failed=row.rule_failed,
                    certified=row.certified_error,
                )
            )
        for gate in rule.quality_gates:
            accepted = np.array(
                [
                    decide_gate(
                        rule, float(x), pass_threshold=gate.pass_threshold, accept_alpha=gate.accept_alpha
                    ).passed
                    for x in features
                ],
                dtype=bool,
            )
            checks.append(
                _check(
                    base,
                    accepted,
                    labels < gate.pass_threshold,
                    labels,
                    rule.n_labels,
                    gate.accept_alpha,
                    kind="gate",
                    tolerance=None,
                    pass_threshold=gate.pass_threshold,
                    rule_failed=gate.rule_failed,
                    certified=gate.certified_false_pass,
                )
            )
    return checks


def _validate_cell(
    index: ThresholdIndex,
    data: JudgeCriterionData,
    cell: tuple[str, str, str],
    name: str,
    kinds: tuple[str, ...],
    alpha: float,
    accept_max: int,
    escalate_min: int,
) -> ValidationCell:
    sets: list[tuple[int, ...]] = []
    used: list[int] = []
    served_by: ServedEntry | None = None
    for position in range(data.labels.size):
        probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
        item = serve_item(
            index,
            cell,
            kinds,
            alpha,
            judge_score=int(data.judge_scores[position]),
            probabilities=probabilities,
            n_labels=data.n_labels,
            mean=None if data.means is None else float(data.means[position]),
        )
        if item.labels is not None:
            sets.append(item.labels)
            used.append(position)
            served_by = item.served
    n_uncalibrated = int(data.labels.size) - len(used)
    base: dict[str, Any] = dict(
        judge=data.judge,
        prompt_family=data.prompt_family,
        criterion=data.criterion,
        input=name,
        alpha=alpha,
        n=len(used),
        n_uncalibrated=n_uncalibrated,
    )
    if not used:
        return ValidationCell(
            **base,
            alpha_served=None,
            kind=None,
            method=None,
            coverage=None,
            ci_low=None,
            ci_high=None,
            mean_set_size=None,
            empty_sets=0,
            accept_share=None,
            review_share=None,
            escalate_share=None,
            accept_accuracy=None,
            by_label=[],
            by_judge_score=[],
        )
    index_used = np.asarray(used)
    labels = data.labels[index_used]
    covered = np.array([label in s for label, s in zip(labels, sets, strict=True)])
    sizes = np.array([len(s) for s in sets])
    accept, review, escalate = decision_shares(sizes, data.n_labels, accept_max=accept_max, escalate_min=escalate_min)
    low, high = clopper_pearson(int(covered.sum()), covered.size)
    assert served_by is not None
    return ValidationCell(
        **base,
        alpha_served=served_by.alpha,
        kind=served_by.kind,
        method=served_by.method,
        coverage=float(covered.mean()),
        ci_low=low,
        ci_high=high,
        mean_set_size=float(sizes.mean()),
        empty_sets=int((sizes == 0).sum()),
        accept_share=float(accept.mean()),
        review_share=float(review.mean()),
        escalate_share=float(escalate.mean()),
        accept_accuracy=float(covered[accept].mean()) if accept.any() else None,
        by_label=_groups(covered, labels),
        by_judge_score=_groups(covered, data.judge_scores[index_used]),
    )


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
