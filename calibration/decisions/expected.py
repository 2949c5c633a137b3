"""The ``expected`` rows of a decision rule: accept and quality-gate rows by selective risk control in expectation
(:mod:`calibration.decisions.selective_risk`), on the same FIT / CERTIFY parts, bins, points and confidence order as the
pac rows of :mod:`calibration.decisions.fit`.

Rules, stated once: the region is :func:`calibration.decisions.selective_risk.choose_prefix` over the row's FIT order;
it is tested on one item per CERTIFY document (:func:`calibration.decisions.selective_risk.one_per_document`, seed
``[seed, 4]``) with the row's uniform (:func:`calibration.decisions.selective_risk.row_uniform`, position = the row's
number among the rule's accept rows, or among its gates, cell = "judge|prompt family|criterion|input kind"). An accepted
region's bins are the row's accepted bins. The row fails (``rule_failed``) when the CERTIFY part has fewer than
``MIN_DRAWN_DOCUMENTS`` documents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.decisions.rule import Certification, QualityGate, SelectiveEvidence
from calibration.decisions.selective_risk import choose_prefix, one_per_document, row_uniform, selective_test

__all__ = ["MIN_DRAWN_DOCUMENTS", "DrawnPart", "expected_certification", "expected_gate"]

MIN_DRAWN_DOCUMENTS = 10


@dataclass(frozen=True)
class DrawnPart:
    """The CERTIFY items drawn one per document: their bins and labels, and the item count of the whole part."""

    bins: np.ndarray
    labels: np.ndarray
    n_items: int
    seed: int
    cell: str  # the rule's judge | prompt family | criterion | input kind: its rows' uniforms are its own
    uniform_seed: int  # seeds the rows' uniforms (a calibration job draws it afresh; recorded in each row)

    @classmethod
    def of(
        cls,
        bins: np.ndarray,
        labels: np.ndarray,
        group_index: np.ndarray,
        n_groups: int,
        seed: int,
        cell: str,
        uniform_seed: int,
    ) -> DrawnPart:
        """One item per CERTIFY document (module rules)."""
        drawn = one_per_document(group_index, n_groups, seed, keys=(labels, bins))
        return cls(
            bins=bins[drawn],
            labels=labels[drawn],
            n_items=int(bins.size),
            seed=seed,
            cell=cell,
            uniform_seed=uniform_seed,
        )

    @property
    def n_drawn(self) -> int:
        """The number of drawn items (= CERTIFY documents)."""
        return int(self.bins.size)


def _tested(
    part: DrawnPart, region: list[int], bad: np.ndarray, alpha: float, kind: str, position: int
) -> tuple[list[int], SelectiveEvidence]:
    uniform = row_uniform(part.uniform_seed, kind, position, part.cell)
    outcome = selective_test(bad, np.isin(part.bins, region), alpha, uniform)
    evidence = SelectiveEvidence(
        tested_bins=region,
        n_drawn=part.n_drawn,
        n_in_region=outcome.n_in_region,
        n_errors=outcome.n_errors,
        acceptance_probability=outcome.acceptance_probability,
        uniform=outcome.uniform,
        seed=part.uniform_seed,
    )
    return (region if outcome.accepted else []), evidence


def _failure(part: DrawnPart) -> str:
    if part.n_drawn < MIN_DRAWN_DOCUMENTS:
        return f"only {part.n_drawn} certification documents (< {MIN_DRAWN_DOCUMENTS})"
    return ""


def _words(evidence: SelectiveEvidence, accepted: bool, alpha: float) -> str:
    if not evidence.tested_bins:
        return f"no prefix of the FIT order has a FIT error rate <= {alpha:g}: nothing tested, nothing accepted"
    verdict = "accepted" if accepted else "not accepted"
    return (
        f"{len(evidence.tested_bins)} bin(s) tested: {evidence.n_errors} errors among {evidence.n_in_region} of "
        f"{evidence.n_drawn} drawn items, acceptance probability {evidence.acceptance_probability:.3f}: {verdict}"
    )


def expected_certification(
    part: DrawnPart,
    sequence: Sequence[int],
    fit_bins: np.ndarray,
    fit_bad: np.ndarray,
    drawn_bad: np.ndarray,
    *,
    tolerance: int,
    alpha: float,
    position: int,
    accept_share_of: np.ndarray,
) -> Certification:
    """One expected accept row (module rules); ``accept_share_of`` holds every CERTIFY item's bin."""
    row = Certification(
        tolerance=tolerance,
        accept_alpha=alpha,
        delta=None,
        mode="expected",
        n_groups=part.n_drawn,
        n_items=part.n_items,
        bound="selective_test",
        accepted_bins=[],
        certified_error=None,
        accept_share=0.0,
    )
    failed = _failure(part)
    if failed:
        return msgspec.structs.replace(row, rule_failed=True, reason=failed)
    region = choose_prefix(sequence, fit_bins, fit_bad, alpha, part.n_drawn)
    accepted, evidence = _tested(part, region, drawn_bad, alpha, "accept", position)
    return msgspec.structs.replace(
        row,
        accepted_bins=accepted,
        reason=_words(evidence, bool(accepted), alpha),
        accept_share=float(np.isin(accept_share_of, accepted).mean()) if accepted else 0.0,
        test=evidence,
    )


def expected_gate(
    part: DrawnPart,
    sequence: Sequence[int],
    fit_bins: np.ndarray,
    fit_failing: np.ndarray,
    drawn_failing: np.ndarray,
    *,
    tau: int,
    alpha: float,
    position: int,
    n_failing_items: int,
) -> QualityGate:
    """One expected quality gate (module rules): an accepted pass errs when the human label is < tau."""
    gate = QualityGate(
        pass_threshold=tau,
        accept_alpha=alpha,
        delta=None,
        mode="expected",
        n_groups=part.n_drawn,
        n_failing_items=n_failing_items,
        bound="selective_test",
        pass_bins=[],
        certified_false_pass=None,
    )
    failed = _failure(part)
    if failed:
        return msgspec.structs.replace(gate, rule_failed=True, reason=failed)
    if not sequence:
        return msgspec.structs.replace(gate, reason=f"no bin's point is >= {tau}: nothing can pass")
    region = choose_prefix(sequence, fit_bins, fit_failing, alpha, part.n_drawn)
    accepted, evidence = _tested(part, region, drawn_failing, alpha, "gate", position)
    return msgspec.structs.replace(
        gate, pass_bins=accepted, reason=_words(evidence, bool(accepted), alpha), test=evidence
    )
