"""Calibrating a conformal predictor: ``FittedConformal`` (everything needed to form sets) and the fit.

A fit has a level-free part, ``calibration_scores`` (the learned model, if any, and the nonconformity scores of the
true labels with their groups), and ``fit_from_scores``, the thresholds at one level (alpha; delta for PAC). One
``CalibrationScores`` serves every level; ``fit_conformal`` does both steps. The method's registered score and
Mondrian grouping (:mod:`calibration.conformal.methods`) decide the scores and what shares a threshold.

Unit. With ``groups`` (one document id per item) and a ``delta``, the thresholds are the document-level PAC rule of
:mod:`calibration.conformal.group_pac` (documents i.i.d., items inside one arbitrarily dependent) and the predictor
records ``pac_unit = "group"``; with ``groups`` and no ``delta``, the in-expectation rule with documents as the unit
(:mod:`calibration.conformal.document_crc`), also recorded as ``pac_unit = "group"``; without ``groups`` they are
the item-level rank (``pac_unit`` unset: items are the unit, as in artifacts written before the field existed). With
groups, ``learned_lac`` and ``label_conditional`` fit their model on whole documents (``model_fraction`` of the
documents), so that no document lends items to both the model and the threshold (with a single document, by item as
without groups: one document can never certify a PAC threshold, so its sets are the full scale either way).

Group fallback (``mondrian_residual``): a group (judge score) whose calibration count is too small for a
finite threshold, or that never occurs in calibration, gets the full scale, which keeps the per-group guarantee;
it is never silently given the pooled threshold. Likewise (``label_conditional``) a human label with too few
calibration items for a finite threshold is always in the set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from calibration.conformal.document_crc import document_crc_thresholds, keyed_document_crc_levels
from calibration.conformal.group_pac import (
    PAC_UNIT_GROUP,
    document_codes,
    group_pac_thresholds,
    keyed_group_pac_levels,
)
from calibration.conformal.inputs import as_labels, check_alpha, check_delta, check_method, judge_inputs
from calibration.conformal.learned_model import fit_learned_matrix, judge_weights
from calibration.conformal.methods import conformal_method
from calibration.conformal.quantile import conformal_quantile, group_quantiles
from calibration.errors import EmptyCalibrationError, ScoreOutOfRangeError

__all__ = [
    "CalibrationScores",
    "FittedConformal",
    "calibration_scores",
    "fit_conformal",
    "fit_from_scores",
    "fits_from_scores",
]


class FittedConformal(msgspec.Struct, frozen=True, kw_only=True):
    """A calibrated conformal predictor: everything needed to form sets, and nothing else.

    ``threshold`` is ``None`` when the calibration set is too small for the level (every set is the full scale).
    ``group_thresholds`` maps a group to its threshold (``None`` = full scale for a judge-score group, or an
    always-included label); ``grouping`` says what the groups are: ``"judge_score"`` (``mondrian_residual``)
    or ``"label"`` (``label_conditional``).
    ``learned_matrix`` (``learned_lac``) is the K x K table ``M[s - 1][y - 1] = P(human = y | judge score s)``.
    """

    method: str
    alpha: float
    n_labels: int
    n_cal: int
    threshold: float | None
    group_thresholds: dict[int, float | None] | None = None
    group_sizes: dict[int, int] | None = None
    learned_matrix: list[list[float]] | None = None
    n_model_fit: int = 0
    grouping: str | None = None
    delta: float | None = None  # None: marginal threshold; else PAC (coverage >= 1-alpha w.p. >= 1-delta)
    # "group": the PAC probability is over calibration documents (calibration.conformal.group_pac); unset: over
    # items. UNSET (not None) so that an item-level predictor encodes byte for byte as before the field existed.
    pac_unit: str | msgspec.UnsetType = msgspec.UNSET


@dataclass(frozen=True)
class CalibrationScores:
    """What a fit computes before any level is chosen: the true labels' nonconformity scores and their groups.

    ``true_scores[i]`` is the score of ``labels[i]`` on threshold item i; ``group_keys`` holds what the method
    groups by (judge score or human label; None for an ungrouped method); ``learned`` the fitted table of a
    learned method. One ``CalibrationScores`` serves every alpha (and delta): see :func:`fit_from_scores`.
    """

    method: str
    n_labels: int
    true_scores: np.ndarray
    group_keys: np.ndarray | None
    learned_matrix: np.ndarray | None
    n_model_fit: int
    documents: np.ndarray | None = None  # document code per threshold item (None: items are the PAC unit)


def calibration_scores(
    method: str,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_labels: int = 5,
    rng: np.random.Generator | None = None,
    model_fraction: float = 0.5,
    groups: object | None = None,
) -> CalibrationScores:
    """The level-free part of a fit (see fit_conformal): learned model (if any) and the true labels' scores;
    with ``groups`` (a document id per item) the document of every threshold item, for the group PAC rule."""
    spec = conformal_method(method)
    if n_labels < 2:
        raise ScoreOutOfRangeError(f"n_labels={n_labels} must be at least 2")
    y = as_labels(labels, n_labels, "labels")
    if y.size == 0:
        raise EmptyCalibrationError("the calibration set is empty: fitting needs at least one labelled item")
    scores, probs = judge_inputs(method, n_labels, judge_scores, probabilities, y.size)
    generator = rng if rng is not None else np.random.default_rng(0)
    codes = None
    if groups is not None:
        codes = document_codes(groups)
        if codes.size != y.size:
            raise EmptyCalibrationError(f"{codes.size} group ids for {y.size} labelled items")

    learned = None
    n_model = 0
    threshold_scores = scores
    if spec.score.learned:
        if y.size < 2:
            raise EmptyCalibrationError(f"{method} needs at least 2 calibration items (model and threshold)")
        if codes is None or int(codes.max()) < 1:  # one document: nothing to split by (no PAC threshold anyway)
            order = generator.permutation(y.size)
            n_model = min(max(1, int(round(model_fraction * y.size))), y.size - 1)
            model_part, threshold_part = order[:n_model], order[n_model:]
        else:
            model_part, threshold_part = _document_halves(codes, model_fraction, generator)
            n_model = model_part.size
        weights = judge_weights(scores, probs, n_labels)
        learned = fit_learned_matrix(weights[model_part], y[model_part], n_labels)
        calibration_labels = y[threshold_part]
        threshold_scores = None if scores is None else scores[threshold_part]
        matrix_scores = spec.score.matrix(
            n_labels=n_labels,
            judge_scores=threshold_scores,
            probabilities=None if probs is None else probs[threshold_part],
            learned_matrix=learned,
        )
        if codes is not None:
            codes = codes[threshold_part]
    else:
        uniforms = generator.uniform(size=y.size) if spec.score.randomised else None
        matrix_scores = spec.score.matrix(
            n_labels=n_labels, judge_scores=scores, probabilities=probs, uniforms=uniforms
        )
        calibration_labels = y
    true_scores = matrix_scores[np.arange(calibration_labels.size), calibration_labels - 1]
    keys = spec.grouping.keys(calibration_labels, threshold_scores)
    return CalibrationScores(
        method=method,
        n_labels=n_labels,
        true_scores=true_scores,
        group_keys=keys,
        learned_matrix=learned,
        n_model_fit=int(n_model),
        documents=codes,
    )


def _document_halves(
    codes: np.ndarray, model_fraction: float, generator: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Item indices of the model part (``model_fraction`` of the documents, at least 1, at most all but 1,
    drawn by a permutation of the sorted document ids) and of the threshold part."""
    n_documents = int(codes.max()) + 1
    order = generator.permutation(n_documents)
    n_model = min(max(1, int(round(model_fraction * n_documents))), n_documents - 1)
    in_model = np.zeros(n_documents, dtype=bool)
    in_model[order[:n_model]] = True
    member = in_model[codes]
    return np.flatnonzero(member), np.flatnonzero(~member)


def fit_from_scores(prepared: CalibrationScores, alpha: float, delta: float | None = None) -> FittedConformal:
    """Thresholds at level alpha (marginal, or PAC at ``delta``) from level-free calibration scores."""
    (fitted,) = fits_from_scores(prepared, [alpha], delta)
    return fitted


def fits_from_scores(
    prepared: CalibrationScores, alphas: Sequence[float], delta: float | None = None
) -> list[FittedConformal]:
    """:func:`fit_from_scores` at each of ``alphas`` (the same predictors); with documents, the document-level
    rule (PAC at ``delta``, else in expectation) with its per-document counts computed once for all of them."""
    for alpha in alphas:
        check_alpha(alpha)
    check_delta(delta)
    by_documents = prepared.documents is not None
    if by_documents and prepared.true_scores.size == 0:
        raise EmptyCalibrationError("the calibration set is empty: a threshold needs at least one score")
    keyed: list[tuple[dict[int, float | None], dict[int, int]] | tuple[None, None]] = [(None, None)] * len(alphas)
    if by_documents and delta is None:
        assert prepared.documents is not None
        if prepared.group_keys is not None:
            tables, sizes = keyed_document_crc_levels(
                prepared.true_scores, prepared.group_keys, prepared.documents, prepared.n_labels, alphas
            )
            keyed = [(table, dict(sizes)) for table in tables]
        thresholds = document_crc_thresholds(prepared.true_scores, prepared.documents, alphas)
    elif by_documents:
        assert delta is not None and prepared.documents is not None
        levels = [(alpha, delta) for alpha in alphas]
        if prepared.group_keys is not None:
            tables, sizes = keyed_group_pac_levels(
                prepared.true_scores, prepared.group_keys, prepared.documents, prepared.n_labels, levels
            )
            keyed = [(table, dict(sizes)) for table in tables]
        thresholds = group_pac_thresholds(prepared.true_scores, prepared.documents, levels)
    else:
        if prepared.group_keys is not None:
            keyed = [
                group_quantiles(prepared.true_scores, prepared.group_keys, prepared.n_labels, alpha, delta)
                for alpha in alphas
            ]
        thresholds = [conformal_quantile(prepared.true_scores, alpha, delta) for alpha in alphas]
    return [
        _fitted(prepared, alpha, delta, threshold, group_thresholds, group_sizes, by_documents=by_documents)
        for alpha, threshold, (group_thresholds, group_sizes) in zip(alphas, thresholds, keyed, strict=True)
    ]


def _fitted(
    prepared: CalibrationScores,
    alpha: float,
    delta: float | None,
    threshold: float | None,
    group_thresholds: dict[int, float | None] | None,
    group_sizes: dict[int, int] | None,
    *,
    by_documents: bool,
) -> FittedConformal:
    # the learned table and its fit size when the method learns one, else the struct's defaults (None, 0)
    learned = prepared.learned_matrix
    return FittedConformal(
        method=prepared.method,
        alpha=float(alpha),
        n_labels=prepared.n_labels,
        n_cal=int(prepared.true_scores.size),
        threshold=threshold,
        group_thresholds=group_thresholds,
        group_sizes=group_sizes,
        grouping=conformal_method(prepared.method).grouping.name,
        delta=None if delta is None else float(delta),
        pac_unit=PAC_UNIT_GROUP if by_documents else msgspec.UNSET,
        learned_matrix=None if learned is None else learned.tolist(),
        n_model_fit=0 if learned is None else prepared.n_model_fit,
    )


def fit_conformal(
    method: str,
    alpha: float,
    labels: object,
    *,
    judge_scores: object | None = None,
    probabilities: object | None = None,
    n_labels: int = 5,
    rng: np.random.Generator | None = None,
    model_fraction: float = 0.5,
    delta: float | None = None,
    groups: object | None = None,
) -> FittedConformal:
    """Calibrate one method at level alpha on labelled items (labels and judge scores in 1..n_labels).

    ``delta`` None gives the marginal split-conformal threshold; a delta in (0, 1) the PAC threshold (coverage
    >= 1 - alpha with probability >= 1 - delta over the calibration data), per group for grouped methods.
    Raises InvalidAlphaError, EmptyCalibrationError, ScoreOutOfRangeError, InvalidProbabilitiesError,
    UnknownMethodError. ``learned_lac`` fits its model on ``model_fraction`` of the items (drawn with ``rng``)
    and its threshold on the rest. ``groups`` (a document id per item) makes the PAC rule count documents, not
    items (module rules); it changes nothing when ``delta`` is None except the learned methods' split by document.
    """
    check_method(method)
    check_alpha(alpha)
    check_delta(delta)
    prepared = calibration_scores(
        method,
        labels,
        judge_scores=judge_scores,
        probabilities=probabilities,
        n_labels=n_labels,
        rng=rng,
        model_fraction=model_fraction,
        groups=groups,
    )
    return fit_from_scores(prepared, alpha, delta)
