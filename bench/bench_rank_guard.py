"""The rankings' under-labelled guard on Chatbot Arena battles: joint coverage of the all-human ranking when one
model has only c labelled battles (run: python -m bench.bench_rank_guard; about 15 s; needs the shared data).

Data: ``pairwise/arena_ppr`` (12 models, the offline estimates study's loader), judge gpt-4-0125-preview; the
truth is the ranking by the all-human win rates of every battle (ties count 0). Run j (240 per c, seed
``default_rng([11, c, j])``): the rare model is model ``j mod 12``; the labelled set is 1,000 uniform battles not
involving it plus c uniform battles involving it, the unlabelled set every other battle. Rank sets: ellipsoid,
alpha = 0.05, PPR and human-only, with the guard at 0 (off), 10, 20 and 30 labelled battles per model. Each cell:
coverage (all 12 true ranks inside their sets) / mean rank-set size. Target: with the service's default floor
(``MIN_LABELLED_BATTLES_PER_MODEL`` = 20) coverage >= 0.95 at every c.
"""

from __future__ import annotations

import numpy as np

from calibration.estimates.rank_sets import ppr_win_rates, rank_sets, true_ranks, win_rates
from offline.data.paths import resolve_data_dir
from offline.studies.estimates.arena import load_arena

RARE_COUNTS = (3, 5, 10, 15, 20, 30, 40)
FLOORS = (0, 10, 20, 30)
RUNS = 240
DEFAULT_FLOOR = 20


def simulate() -> dict[tuple[int, str, int], tuple[float, float]]:
    """(c, method, floor) -> (coverage, mean set size) over RUNS runs (module docstring)."""
    data = load_arena(resolve_data_dir())
    human, judge = data.human, data.judges["gpt-4-0125-preview"]
    k, total = len(data.models), len(data.human)
    truth = true_ranks(win_rates(human, k).theta)
    cells: dict[tuple[int, str, int], list[tuple[float, float]]] = {}
    for c in RARE_COUNTS:
        for j in range(RUNS):
            rare = j % k
            rng = np.random.default_rng([11, c, j])
            touches = (human.model_a == rare) | (human.model_b == rare)
            labelled = np.r_[
                rng.permutation(np.flatnonzero(~touches))[:1000], rng.permutation(np.flatnonzero(touches))[:c]
            ]
            unlabelled = np.setdiff1d(np.arange(total), labelled)
            estimates = {
                "ppr": ppr_win_rates(human.take(labelled), judge.take(labelled), judge.take(unlabelled), k),
                "human only": win_rates(human.take(labelled), k),
            }
            for method, estimate in estimates.items():
                for floor in FLOORS:
                    sets = rank_sets(estimate, 0.05, min_labelled=floor)
                    cells.setdefault((c, method, floor), []).append(
                        (float(sets.covers(truth).all()), float(sets.size.mean()))
                    )
    means = {key: np.mean(values, axis=0) for key, values in cells.items()}
    return {key: (float(mean[0]), float(mean[1])) for key, mean in means.items()}


def main() -> None:
    """Print the table (coverage / mean set size) and whether the default floor meets the target."""
    cells = simulate()
    print("\n### Rank-set guard on Arena: one model with c labelled battles (coverage / mean set size)\n")
    heads = [f"{method} @{floor}" for method in ("ppr", "human only") for floor in FLOORS]
    print("| c | " + " | ".join(heads) + " |")
    print("|---:|" + "---:|" * len(heads))
    for c in RARE_COUNTS:
        row = [cells[(c, method, floor)] for method in ("ppr", "human only") for floor in FLOORS]
        print(f"| {c} | " + " | ".join(f"{cov:.3f} / {size:.2f}" for cov, size in row) + " |")
    met = all(cells[(c, method, DEFAULT_FLOOR)][0] >= 0.95 for c in RARE_COUNTS for method in ("ppr", "human only"))
    print(f"\ndefault floor {DEFAULT_FLOOR}: coverage >= 0.95 at every c: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
