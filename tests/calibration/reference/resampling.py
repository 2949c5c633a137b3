"""Document resampling: how often a PAC fit's coverage on the population falls below 1 - alpha.

A PAC threshold promises coverage >= 1 - alpha with probability >= 1 - delta over the calibration draw. This
checks the promise when the unit drawn is the document: the given items are the population, and each draw

* samples ``n_documents`` documents **with replacement** from the population's documents (each drawn copy a new
  document id, so documents are i.i.d. from the population's empirical law: the model the group rule assumes);
* fits the method on the drawn items (``fit_conformal``, PAC at delta) with documents as the PAC unit
  (``rule="group"``: :mod:`calibration.conformal.group_pac`) or items (``rule="item"``: the item PAC rank, the
  learned methods' model half drawn by item, as before documents were counted);
* measures the coverage of the fitted sets on **every population item** (item-weighted: the population's
  miscoverage), and, for a grouped method, within every key value (judge score or human label) of the population.

A draw fails when that coverage is < 1 - alpha (beyond 1e-12); for grouped methods per key. Randomness: draw r uses
``numpy.random.default_rng([seed, r])`` for the documents, then for the fit (learned split, tie uniforms), then for
the population's tie uniforms (``aps_randomized``). The Monte-Carlo standard error of a failure rate p over R draws
is sqrt(p (1 - p) / R).
"""

from __future__ import annotations

import math

import msgspec
import numpy as np

from calibration.conformal.fit import fit_conformal
from calibration.conformal.group_pac import document_codes
from calibration.conformal.methods import conformal_method
from calibration.conformal.sets import predict_sets

__all__ = ["RULES", "ResamplingResult", "document_resampling", "mc_error"]

RULES = ("group", "item")
_SLACK = 1e-12


class ResamplingResult(msgspec.Struct, frozen=True, kw_only=True):
    """Failure rates of one (method, rule, alpha, delta) over document draws (module rules)."""

    method: str
    rule: str
    alpha: float
    delta: float
    n_draws: int
    n_documents: int
    failure_rate: float  # population coverage < 1 - alpha
    key_failure_rates: dict[int, float] | None  # grouped methods: per key value present in the population
    worst_failure_rate: float  # the largest of failure_rate and every key's rate
    mean_coverage: float
    mean_set_size: float
    full_scale_share: float  # share of population sets that are the full scale, over draws


def mc_error(rate: float, n_draws: int) -> float:
    """Monte-Carlo standard error of a rate over n_draws draws: sqrt(rate (1 - rate) / n_draws)."""
    return math.sqrt(rate * (1.0 - rate) / n_draws)


def document_resampling(
    method: str,
    labels: np.ndarray,
    *,
    judge_scores: np.ndarray | None,
    probabilities: np.ndarray | None,
    groups: object,
    alpha: float,
    delta: float,
    rule: str,
    n_draws: int,
    n_documents: int,
    n_labels: int = 5,
    seed: int = 0,
) -> ResamplingResult:
    """Failure rate of ``method`` fitted with ``rule`` on ``n_documents`` documents drawn with replacement from the
    population's documents, coverage measured on the whole population (module rules)."""
    if rule not in RULES:
        raise ValueError(f"rule {rule!r} is not one of {', '.join(RULES)}")
    codes = document_codes(groups)
    members = [np.flatnonzero(codes == d) for d in range(int(codes.max()) + 1)]
    keys = conformal_method(method).grouping.keys(labels, judge_scores)
    key_values = [] if keys is None else [int(k) for k in np.unique(keys)]
    fails = 0
    key_fails = dict.fromkeys(key_values, 0)
    coverages, sizes, full = [], [], []
    for draw in range(n_draws):
        rng = np.random.default_rng([seed, draw])
        chosen = rng.integers(0, len(members), size=n_documents)
        index = np.concatenate([members[d] for d in chosen])
        drawn_groups = np.repeat(np.arange(n_documents), [members[d].size for d in chosen])
        fitted = fit_conformal(
            method,
            alpha,
            labels[index],
            judge_scores=None if judge_scores is None else judge_scores[index],
            probabilities=None if probabilities is None else probabilities[index],
            n_labels=n_labels,
            rng=rng,
            delta=delta,
            groups=drawn_groups if rule == "group" else None,
        )
        sets = predict_sets(fitted, judge_scores=judge_scores, probabilities=probabilities, rng=rng)
        covered = sets[np.arange(labels.size), labels - 1]
        coverage = float(covered.mean())
        coverages.append(coverage)
        set_sizes = sets.sum(axis=1)
        sizes.append(float(set_sizes.mean()))
        full.append(float((set_sizes == n_labels).mean()))
        fails += coverage < 1.0 - alpha - _SLACK
        for key in key_values:
            assert keys is not None
            key_fails[key] += float(covered[keys == key].mean()) < 1.0 - alpha - _SLACK
    rate = fails / n_draws
    key_rates = None if keys is None else {k: v / n_draws for k, v in key_fails.items()}
    worst = max([rate, *([] if key_rates is None else key_rates.values())])
    return ResamplingResult(
        method=method,
        rule=rule,
        alpha=float(alpha),
        delta=float(delta),
        n_draws=n_draws,
        n_documents=n_documents,
        failure_rate=rate,
        key_failure_rates=key_rates,
        worst_failure_rate=worst,
        mean_coverage=float(np.mean(coverages)),
        mean_set_size=float(np.mean(sizes)),
        full_scale_share=float(np.mean(full)),
    )
