"""Split conformal prediction sets over an ordinal label scale 1..K (K = 5 for Likert judges).

Every method is one registered object whose score gives, for each item, the nonconformity score of every
candidate label (an (n, K) matrix; one item's row by the same rule). Calibration takes the score of the true
label; the prediction set of a new item is ``{y : score(y) <= q_hat}``. This one shape serves all methods, so
that calibration and prediction can never disagree about a score.

The package, one concept per module; its public API is re-exported here (``from calibration.conformal import
fit_conformal``), and each rule is stated once, in the module that applies it:

===================== ==========================================================================================
``methods``           the registry of methods (``METHODS``): each a nonconformity score with a Mondrian
                      grouping and the set rule, looked up by name (no other module branches on a name)
``kernels``           each score's rule written once, run on one item (floats) and on n items (arrays); the
                      label-tie rule
``mondrian``          the groupings: marginal, by judge score, by human label
``learned_model``     the learned methods' model of the human label given the judge's output
``inputs``            alpha, delta, method, labels, judge scores and probabilities: checks and refusals;
                      log-probabilities -> probabilities
``quantile``          the threshold: an order statistic of the calibration scores, overall and per group; the
                      quantile rule (the ranks themselves, marginal and PAC, are :mod:`calibration.order_statistics`)
``fit``               ``FittedConformal`` and the fit: level-free calibration scores, then thresholds per level;
                      the group fallback; the PAC unit (items, or documents when ``groups`` are given)
``group_pac``         the PAC threshold with documents as the unit: a fixed-sequence walk down the calibration
                      scores, each step a document-level betting test (:mod:`calibration.decisions.risk_control`)
``sets``              prediction sets from a fitted predictor, vectorised and for one item; the comparison rule
``evaluate``          coverage and set size of sets, per group; repeated seeded splits and their seed rule
===================== ==========================================================================================

One rule spans the package:

- **Randomness.** Only ``aps_randomized`` (tie-breaking uniforms) and ``learned_lac`` (which part of the
  calibration half fits the model) draw random numbers, from the ``rng`` argument; ``rng=None`` means
  ``numpy.random.default_rng(0)``, so results are reproducible unless the caller says otherwise.
"""

from __future__ import annotations

from calibration.conformal.evaluate import (
    GroupCoverage,
    SetEvaluation,
    SplitResult,
    SplitStudy,
    coverage_by_group,
    evaluate_sets,
    repeated_splits,
)
from calibration.conformal.fit import (
    CalibrationScores,
    FittedConformal,
    calibration_scores,
    fit_conformal,
    fit_from_scores,
)
from calibration.conformal.inputs import probabilities_from_logprobs
from calibration.conformal.methods import LEARNED_METHODS, METHODS, PROBABILITY_METHODS, SCORE_METHODS
from calibration.conformal.quantile import conformal_quantile
from calibration.conformal.sets import predict_sets, prediction_set

__all__ = [
    "LEARNED_METHODS",
    "METHODS",
    "PROBABILITY_METHODS",
    "SCORE_METHODS",
    "CalibrationScores",
    "FittedConformal",
    "GroupCoverage",
    "SetEvaluation",
    "SplitResult",
    "SplitStudy",
    "calibration_scores",
    "conformal_quantile",
    "coverage_by_group",
    "evaluate_sets",
    "fit_conformal",
    "fit_from_scores",
    "predict_sets",
    "prediction_set",
    "probabilities_from_logprobs",
    "repeated_splits",
]
