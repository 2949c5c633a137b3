"""What the service served for each labelled verdict of a stream: the study's one coupling to the artifact.

For a cell of an artifact (:mod:`artifact.thresholds`) and labelled verdicts (a
:class:`offline.build.cell_data.JudgeCriterionData`, possibly shifted or swapped), each item is served as
the service serves it: the set by :func:`offline.validation.artifact.serve_item` (:func:`artifact.serving.choose_entry`:
input kind, the largest calibrated alpha <= the asked one, the kind's default method; the interval hull of the conformal
set) and the decision by :func:`calibration.decisions.rule.decide` on the cell's rule for the first of the verdict's
kinds that has one (the service's ``find_rule`` order), at the asked tolerance and the largest calibrated accept_alpha
<= the asked one; as in ``service.scoring.policy``, an empty set, a failed row and a cell whose default method is a
fallback never accept. Outcomes per item: covered (human label in the served set), accepted, error among accepted
(``|human - point| >= tolerance``). The guarantees watched are the served ones: coverage at the served alpha, and accept
error at the served row when the row accepts at least one bin (a rule that accepts nothing promises nothing).
Re-pointing the study at another artifact shape changes this module only.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np

from artifact.thresholds import ThresholdIndex, ThresholdsArtifact
from calibration.decisions.rule import DecisionRule, certification_at, decide, feature_of
from calibration.monitoring import GuaranteeSpec
from offline.build.cell_data import JudgeCriterionData
from offline.validation.artifact import INPUTS, serve_item

__all__ = ["ServedLevels", "ServedOutcomes", "serve_outcomes", "watched_guarantees"]

_FALLBACK = "fallback to "


class ServedLevels(msgspec.Struct, frozen=True, kw_only=True):
    """What each verdict of the stream asks: the input sent and the levels (the service's defaults)."""

    input: str = "score"  # a key of offline.validation.artifact.INPUTS
    alpha: float = 0.10
    tolerance: int = 2
    accept_alpha: float = 0.10


@dataclass(frozen=True)
class ServedOutcomes:
    """Per item: its document, whether the served set covered the human label, accepted, error among accepted;
    the levels actually served (None: the calibration serves no accept guarantee at the asked row)."""

    groups: np.ndarray
    covered: np.ndarray
    accepted: np.ndarray
    errors: np.ndarray
    served_alpha: float
    served_accept_alpha: float | None
    tolerance: int


def _rule(artifact: ThresholdsArtifact, cell: tuple[str, str, str], kinds: tuple[str, ...]) -> DecisionRule | None:
    rules = {(r.judge, r.prompt_family, r.criterion, r.input_kind): r for r in artifact.decision_rules}
    return next((rules[(*cell, kind)] for kind in kinds if (*cell, kind) in rules), None)


def _selection_failed(artifact: ThresholdsArtifact, cell: tuple[str, str, str], kind: str) -> bool:
    return any(
        (d.judge, d.prompt_family, d.criterion, d.input_kind) == (*cell, kind) and d.reason.startswith(_FALLBACK)
        for d in artifact.default_methods
    )


def serve_outcomes(
    artifact: ThresholdsArtifact, cell: tuple[str, str, str], data: JudgeCriterionData, levels: ServedLevels
) -> ServedOutcomes:
    """Serve every item of ``data`` under ``cell``'s name (module rules); ValueError when the artifact does not
    calibrate the cell for the input sent, or the verdicts lack what the input needs."""
    kinds = INPUTS[levels.input]
    if "probabilities" in kinds and data.probabilities is None:
        raise ValueError(f"input {levels.input!r} needs log-probs, which these verdicts lack")
    index = ThresholdIndex(artifact)
    rule = _rule(artifact, cell, kinds)
    row = None if rule is None else certification_at(rule, levels.tolerance, levels.accept_alpha)
    serves_accept = row is not None and not row.rule_failed and bool(row.accepted_bins)
    covered, accepted, errors = [], [], []
    served_alpha = None
    for position, label in enumerate(data.labels):
        probabilities = None if data.probabilities is None else [float(p) for p in data.probabilities[position]]
        sent = probabilities if "probabilities" in kinds else None
        item = serve_item(
            index,
            cell,
            kinds,
            levels.alpha,
            judge_score=int(data.judge_scores[position]),
            probabilities=sent,
            n_labels=data.n_labels,
        )
        if item.labels is None or item.served is None:
            raise ValueError(f"the artifact does not calibrate {cell} for {levels.input} verdicts")
        served_alpha = item.served.alpha
        covered.append(int(label) in item.labels)
        ok = False
        if (
            serves_accept
            and rule is not None
            and item.labels
            and not _selection_failed(artifact, cell, item.served.kind)
        ):
            value = feature_of(rule.feature, score=int(data.judge_scores[position]), probabilities=sent, mean=None)
            decision = decide(rule, value, tolerance=levels.tolerance, accept_alpha=levels.accept_alpha)
            ok = decision.accepted
            errors.append(ok and abs(int(label) - decision.point) >= levels.tolerance)
        else:
            errors.append(False)
        accepted.append(ok)
    assert served_alpha is not None
    return ServedOutcomes(
        groups=np.asarray(data.groups if data.groups is not None else data.item_ids),
        covered=np.asarray(covered, dtype=bool),
        accepted=np.asarray(accepted, dtype=bool),
        errors=np.asarray(errors, dtype=bool),
        served_alpha=served_alpha,
        served_accept_alpha=row.accept_alpha if serves_accept and row is not None else None,
        tolerance=levels.tolerance,
    )


def watched_guarantees(outcomes: ServedOutcomes, max_items: int) -> list[GuaranteeSpec]:
    """The served guarantees a cell's monitor watches (module rules), sized for documents of <= max_items labels."""
    specs = [GuaranteeSpec(guarantee="coverage", level=outcomes.served_alpha, max_items=max_items)]
    if outcomes.served_accept_alpha is not None:
        specs.append(
            GuaranteeSpec(
                guarantee="accept_error",
                level=outcomes.served_accept_alpha,
                tolerance=outcomes.tolerance,
                max_items=max_items,
            )
        )
    return specs
