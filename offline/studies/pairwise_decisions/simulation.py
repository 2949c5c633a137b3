"""The pairwise-decisions study's validity simulation: the full dataset as the population, calibration halves
drawn from it with replacement, and each bound's failure rate against delta.

The rule is stated in :mod:`offline.studies.pairwise_decisions.study`; the rows are
:class:`offline.studies.pairwise_decisions.results.SimulationRow`.
"""

from __future__ import annotations

import numpy as np

from calibration.decisions.pairwise import BOUNDS, DEFAULT_LEVELS, Ties, accepted, certify_threshold, disagreements
from offline.build.pairwise_tables import PairTable, bound_starts
from offline.studies.pairwise_decisions.results import SimulationRow

__all__ = [
    "population_risks",
    "simulation_rows",
]


def population_risks(table: PairTable, source: str, ties: Ties) -> dict[float, float]:
    """Error among accepted counted pairs of the whole dataset at every level (0 when nothing is accepted)."""
    signal = table.signals[source]
    errors, counted = disagreements(signal.preferred, table.human, ties)
    risks = {}
    for level in DEFAULT_LEVELS:
        acc = accepted(signal.preferred, signal.confidence, level) & counted
        risks[level] = float((acc & errors).sum() / acc.sum()) if acc.any() else 0.0
    return risks


def simulation_rows(
    table: PairTable, source: str, ties: Ties, alpha: float, delta: float, *, n_draws: int, n_groups: int, seed: int
) -> list[SimulationRow]:
    """Each bound's failure rate over ``n_draws`` draws of ``n_groups`` groups (module rules; draw i seeded
    ``default_rng([seed, 1000 + i])``)."""
    signal = table.signals[source]
    errors, counted = disagreements(signal.preferred, table.human, ties)
    keep = np.flatnonzero(counted)
    order = keep[np.argsort(table.groups[keep], kind="stable")]
    codes = table.groups[order]
    starts = np.searchsorted(codes, np.arange(table.groups.max() + 2))
    present = np.flatnonzero(np.diff(starts) > 0)  # groups holding a counted pair
    all_groups = table.groups.max() + 1
    population = population_risks(table, source, ties)
    fails = dict.fromkeys(BOUNDS, 0)
    accepts: dict[str, list[float]] = {b: [] for b in BOUNDS}
    for draw in range(n_draws):
        rng = np.random.default_rng([seed, 1000 + draw])
        # Draw among all groups (a group of only human ties contributes no counted pair), as a calibration half.
        chosen = rng.integers(0, all_groups, size=n_groups)
        chosen = chosen[np.isin(chosen, present)]
        lengths = starts[chosen + 1] - starts[chosen]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        index = order[np.repeat(starts[chosen], lengths) + offsets]
        labels = np.repeat(np.arange(chosen.size), lengths)
        if index.size == 0:
            continue
        for bound in BOUNDS:
            cert = certify_threshold(
                signal.confidence[index],
                signal.preferred[index],
                errors[index],
                labels,
                alpha=alpha,
                delta=delta,
                bound=bound,
                group_size_bound=table.group_size_bound,
                starts=bound_starts(bound, table, source),
            )
            if cert.threshold is not None and population[cert.threshold] > alpha:
                fails[bound] += 1
            accepts[bound].append(
                float(accepted(signal.preferred[keep], signal.confidence[keep], cert.threshold).mean())
            )
    se = float(np.sqrt(delta * (1 - delta) / n_draws))
    return [
        SimulationRow(
            dataset=table.dataset,
            source=source,
            ties=ties,
            bound=b,
            alpha=alpha,
            delta=delta,
            n_draws=n_draws,
            n_groups_per_draw=n_groups,
            failures=fails[b],
            failure_rate=fails[b] / n_draws,
            mc_se=se,
            within_delta=fails[b] / n_draws <= delta + 2 * se,
            accept_share_mean=float(np.mean(accepts[b])) if accepts[b] else 0.0,
        )
        for b in BOUNDS
    ]
