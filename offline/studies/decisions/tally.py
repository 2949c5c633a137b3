"""The certified-decisions study's tallies: one (cell, kind, setting)'s served decisions over the splits, and the
rows made of them.

:func:`record` adds one split's held-out decisions (a tolerance row or a quality gate of the fitted rule) to a
:class:`Tally`; :func:`tally_row`, :func:`gate_row` and :func:`label_table` turn a tally into the study's rows
(:mod:`offline.studies.decisions.results`) and :func:`headlines` sums the headline cells' rows up. The figures'
rules are stated in :mod:`offline.studies.decisions.study`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.decisions.fit import MIN_LABEL_ITEMS, DecisionData
from calibration.decisions.rule import DecisionRule, decide_gate
from offline.studies.decisions.cells import CellKind, served
from offline.studies.decisions.results import GateRow, Headline, LabelTableRow, Row

__all__ = [
    "OK_SLACK",
    "Tally",
    "gate_row",
    "headlines",
    "label_table",
    "new_tally",
    "record",
    "tally_row",
]

OK_SLACK = 0.02  # a split is "ok" when its error among accepted is <= accept_alpha + 0.02 (0.12 at 0.10)


@dataclass
class Tally:
    """Per (row key): per-split figures, and per-label pooled counts."""

    shares: list[float]
    errors: list[float | None]
    errors_n: list[tuple[int, int]]
    certified: list[float]
    failed: int
    reasons: dict[str, int]
    label_counts: np.ndarray  # (K, 3): items, accepted, errors among accepted


def new_tally(n_labels: int) -> Tally:
    """An empty tally for a cell of ``n_labels`` labels."""
    return Tally([], [], [], [], 0, {}, np.zeros((n_labels, 3), dtype=np.int64))


def record(
    tally: Tally, rule: DecisionRule, test: DecisionData, *, tolerance: int, alpha: float, gate: int | None = None
) -> None:
    """Add one split's held-out decisions to ``tally``: a tolerance row of ``rule``, or its quality gate ``gate``."""
    if gate is None:
        accepted, points = served(rule, test.features, tolerance=tolerance, alpha=alpha)
        row = next(
            (c for c in rule.certifications if c.tolerance == tolerance and abs(c.accept_alpha - alpha) < 1e-9), None
        )
        bad = np.abs(test.labels - points) >= tolerance
        failed, reason, certified = (row.rule_failed, row.reason, row.certified_error) if row else (True, "", None)
    else:
        gate_row = next(
            g for g in rule.quality_gates if g.pass_threshold == gate and abs(g.accept_alpha - alpha) < 1e-9
        )
        accepted = np.array(
            [decide_gate(rule, x, pass_threshold=gate, accept_alpha=alpha).passed for x in test.features.tolist()],
            dtype=bool,
        )
        bad = test.labels < gate
        failed, reason, certified = gate_row.rule_failed, gate_row.reason, gate_row.certified_false_pass
    tally.shares.append(float(accepted.mean()))
    tally.errors_n.append((int(bad[accepted].sum()), int(accepted.sum())))
    tally.errors.append(float(bad[accepted].mean()) if accepted.any() else None)
    if certified is not None and accepted.any():
        tally.certified.append(float(certified))
    if failed:
        tally.failed += 1
    if failed or not accepted.any():
        # grouped by their words: the bound's value (a decimal) differs from split to split
        key = re.sub(r"\d+\.\d+", "#", reason.split(":")[0] if failed else reason)
        tally.reasons[key] = tally.reasons.get(key, 0) + 1
    for label in range(1, test.n_labels + 1):
        mine = test.labels == label
        tally.label_counts[label - 1] += [
            int(mine.sum()),
            int((accepted & mine).sum()),
            int((accepted & mine & bad).sum()),
        ]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _reasons(tally: Tally) -> list[str]:
    return [f"{count} split(s): {reason}" for reason, count in sorted(tally.reasons.items(), key=lambda kv: -kv[1])][:3]


def tally_row(
    cell: CellKind, tally: Tally, *, bound: str, signal: str, cal_fraction: float, tolerance: int, alpha: float
) -> Row:
    """One (cell, kind, setting)'s row over the splits (module rules of :mod:`offline.studies.decisions.study`)."""
    errors = [e for e in tally.errors if e is not None]
    bad, accepted = (sum(x) for x in zip(*tally.errors_n, strict=True))
    return Row(
        judge=cell.judge,
        prompt_family=cell.prompt_family,
        criterion=cell.criterion,
        kind=cell.kind,
        headline=cell.headline,
        bound=bound,
        signal=signal,
        cal_fraction=cal_fraction,
        tolerance=tolerance,
        accept_alpha=alpha,
        mean_accept_share=float(np.mean(tally.shares)),
        mean_error=_mean(errors),
        pooled_error=bad / accepted if accepted else None,
        share_ok=float(np.mean([e is None or e <= alpha + OK_SLACK + 1e-12 for e in tally.errors])),
        splits_accepting=len(errors),
        mean_certified_error=_mean(tally.certified),
        failed_splits=tally.failed,
        reasons=_reasons(tally),
    )


def label_table(
    cell: CellKind, tally: Tally, *, bound: str, tolerance: int, alpha: float, n_splits: int
) -> list[LabelTableRow]:
    """The per-label table of a tally: items per served half, accept share, error among accepted."""
    out = []
    for label, (items, accepted, bad) in enumerate(tally.label_counts.tolist(), start=1):
        out.append(
            LabelTableRow(
                judge=cell.judge,
                criterion=cell.criterion,
                kind=cell.kind,
                bound=bound,
                tolerance=tolerance,
                accept_alpha=alpha,
                label=label,
                items_per_split=items / n_splits,
                accept_share=accepted / items if items else None,
                error_among_accepted=bad / accepted if accepted else None,
                certifiable=items / n_splits >= MIN_LABEL_ITEMS,
            )
        )
    return out


def headlines(rows: Sequence[Row]) -> list[Headline]:
    """Per (bound, cal_fraction, tolerance, accept_alpha): the headline cells' figures summed up."""
    out = []
    keys = sorted({(r.bound, r.cal_fraction, r.tolerance, r.accept_alpha) for r in rows if r.signal == "fit_error"})
    for bound, fraction, tolerance, alpha in keys:
        chosen = [
            r
            for r in rows
            if r.headline
            and r.signal == "fit_error"
            and r.bound == bound
            and r.cal_fraction == fraction
            and r.tolerance == tolerance
            and r.accept_alpha == alpha
        ]
        logprob = [r.mean_accept_share for r in chosen if r.kind == "probabilities"]
        out.append(
            Headline(
                bound=bound,
                cal_fraction=fraction,
                tolerance=tolerance,
                accept_alpha=alpha,
                logprob_mean_accept_share=float(np.mean(logprob)) if logprob else math.nan,
                all_mean_accept_share=float(np.mean([r.mean_accept_share for r in chosen])),
                cells_mean_error_ok=sum(r.mean_error is None or r.mean_error <= alpha + 1e-12 for r in chosen),
                cells_share_ok=sum(r.share_ok >= 0.95 for r in chosen),
                n_cells=len(chosen),
            )
        )
    return out


def gate_row(cell: CellKind, tally: Tally, *, bound: str, gate: int, alpha: float) -> GateRow:
    """One quality gate's row of a (cell, kind) over the splits."""
    bad, accepted = (sum(x) for x in zip(*tally.errors_n, strict=True))
    return GateRow(
        judge=cell.judge,
        criterion=cell.criterion,
        kind=cell.kind,
        bound=bound,
        pass_threshold=gate,
        accept_alpha=alpha,
        mean_pass_share=float(np.mean(tally.shares)),
        pooled_false_pass=bad / accepted if accepted else None,
        mean_certified_false_pass=_mean(tally.certified),
        failed_splits=tally.failed,
        reasons=_reasons(tally),
    )
