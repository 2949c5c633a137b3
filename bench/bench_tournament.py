"""Tournament checks against naive baselines: 3-cycle statistics at n = 100 and exact MFAS at n = 10.

Run: ``.venv/bin/python -m bench.bench_tournament``.

* 3-cycle statistics (``count_three_cycles`` + ``violation_rate``, vectorised numpy) beside a naive pure-Python
  O(n^3) loop over every triple of the same majority graph; target <= 5 ms at n = 100. The tournament is built
  once outside the timing (building from 14,850 verdicts is not part of the statistic).
* Exact MFAS (``rank_mfas_ilp``: CBC linear-ordering ILP plus the deterministic tie-break) beside brute force
  over every permutation in pure Python, which is only feasible up to n = 8 (10! = 3.6 million orders);
  target <= 1 s at n = 10.
* The service's MFAS under its time limit (``service.comparing.mfas_limit.rank_mfas_within``, 2 s: a killable worker
  process, the heuristic past the limit) on random 20-candidate tournaments (one fair verdict per pair, the
  red-team case), beside the uncapped exact solve of the same tournaments; target: the limit plus 0.5 s.
"""

from __future__ import annotations

import itertools

import numpy as np

from bench.table import BenchRow, median_seconds, print_table
from calibration.tournaments.ranking import feedback_weight, rank_mfas_ilp
from calibration.tournaments.tournament import (
    PairwiseVerdict,
    Tournament,
    build_tournament,
    count_three_cycles,
    three_cycles,
    violation_rate,
)


def random_tournament(n: int, *, k: int, seed: int, p_tie: float = 0.0, p_missing: float = 0.0) -> Tournament:
    """k verdicts per pair in random presentation order; each pair has its own random bias."""
    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(n)]
    verdicts = []
    for a, b in itertools.combinations(names, 2):
        if rng.random() < p_missing:
            continue
        p_a = rng.random()
        for _ in range(k):
            winner = None if rng.random() < p_tie else a if rng.random() < p_a else b
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            outcome = "tie" if winner is None else "first" if winner == first else "second"
            verdicts.append(PairwiseVerdict(first=first, second=second, outcome=outcome))
    return build_tournament(names, verdicts)


def naive_cycle_stats(t: Tournament) -> tuple[int, float]:
    """Pure-Python O(n^3): test every triple of the majority graph for a directed cycle."""
    beats = {(p.winner, p.b if p.winner == p.a else p.a) for p in t.pairs if p.winner is not None}
    count = 0
    triples = 0
    for a, b, c in itertools.combinations(t.candidates, 3):
        triples += 1
        if ((a, b) in beats and (b, c) in beats and (c, a) in beats) or (
            (b, a) in beats and (c, b) in beats and (a, c) in beats
        ):
            count += 1
    return count, count / triples


def naive_cycle_list(t: Tournament) -> list[tuple[str, str, str]]:
    """Pure-Python O(n^3) listing, each cycle rotated to start at its earliest candidate."""
    beats = {(p.winner, p.b if p.winner == p.a else p.a) for p in t.pairs if p.winner is not None}
    found = []
    for a, b, c in itertools.combinations(t.candidates, 3):
        if (a, b) in beats and (b, c) in beats and (c, a) in beats:
            found.append((a, b, c))
        elif (b, a) in beats and (c, b) in beats and (a, c) in beats:
            found.append((a, c, b))
    return found


def brute_force_mfas(t: Tournament) -> float:
    """Minimum total reversed majority margin over all n! orders (pure Python)."""
    wins = t.wins_matrix()
    n = t.n_candidates
    margins = [[max(int(wins[i, j] - wins[j, i]), 0) for j in range(n)] for i in range(n)]
    arcs = [(i, j, margins[i][j]) for i in range(n) for j in range(n) if margins[i][j]]
    best = None
    for order in itertools.permutations(range(n)):
        position = [0] * n
        for slot, candidate in enumerate(order):
            position[candidate] = slot
        cost = sum(weight for i, j, weight in arcs if position[i] > position[j])
        if best is None or cost < best:
            best = cost
    return float(best)


def cycle_rows() -> list[BenchRow]:
    rows = []
    complete = random_tournament(100, k=3, seed=1)
    partial = random_tournament(100, k=3, seed=2, p_tie=0.2, p_missing=0.1)
    for label, t in (("complete, closed form", complete), ("ties + missing pairs, enumeration", partial)):
        assert (count_three_cycles(t), violation_rate(t)) == naive_cycle_stats(t)
        ours = median_seconds(lambda t=t: (count_three_cycles(t), violation_rate(t)), repeat=30, inner=5)
        baseline = median_seconds(lambda t=t: naive_cycle_stats(t), repeat=3)
        rows.append(
            BenchRow(
                name=f"3-cycle count + violation_rate, n=100 ({label})",
                ours=ours * 1e3,
                baseline_name="naive O(n^3) Python triple loop",
                baseline=baseline * 1e3,
                unit="ms",
                target="<= 5 ms",
                met=ours <= 0.005,
            )
        )
    assert sorted(three_cycles(complete)) == sorted(naive_cycle_list(complete))
    ours = median_seconds(lambda: three_cycles(complete), repeat=10)
    baseline = median_seconds(lambda: naive_cycle_list(complete), repeat=3)
    rows.append(
        BenchRow(
            name=f"three_cycles listing, n=100 complete ({len(three_cycles(complete))} cycles)",
            ours=ours * 1e3,
            baseline_name="naive O(n^3) Python triple loop",
            baseline=baseline * 1e3,
            unit="ms",
            target="faster than baseline",
            met=ours < baseline,
        )
    )
    return rows


def mfas_rows() -> list[BenchRow]:
    small = random_tournament(8, k=3, seed=8)
    large = random_tournament(10, k=3, seed=10)
    assert count_three_cycles(small) > 0 and count_three_cycles(large) > 0  # the solver path, not the DAG path
    brute = brute_force_mfas(small)
    assert feedback_weight(small, rank_mfas_ilp(small).order) == brute
    baseline = median_seconds(lambda: brute_force_mfas(small), repeat=3)
    rows = []
    for n, t in ((8, small), (10, large)):
        ours = median_seconds(lambda t=t: rank_mfas_ilp(t), repeat=5)
        rows.append(
            BenchRow(
                name=f"exact MFAS rank_mfas_ilp, n={n} (k=3, {count_three_cycles(t)} 3-cycles)",
                ours=ours * 1e3,
                baseline_name="brute force over 8! orders (pure Python), n=8",
                baseline=baseline * 1e3,
                unit="ms",
                target="<= 1 s",
                met=ours <= 1.0,
            )
        )
    return rows


def mfas_limit_rows(limit_s: float = 2.0, seeds: tuple[int, ...] = (0, 1, 2)) -> list[BenchRow]:
    """rank_mfas_within(limit) vs the uncapped exact solve on random n = 20 tournaments: worst wall time."""
    import time

    from service.comparing.mfas_limit import rank_mfas_within

    capped, uncapped, exact, extra = [], [], 0, []
    for seed in seeds:
        t = random_tournament(20, k=1, seed=100 + seed)
        started = time.perf_counter()
        ranking, was_exact = rank_mfas_within(t, limit_s)
        capped.append(time.perf_counter() - started)
        started = time.perf_counter()
        optimum = rank_mfas_ilp(t)
        uncapped.append(time.perf_counter() - started)
        exact += was_exact
        extra.append(feedback_weight(t, ranking.order) - feedback_weight(t, optimum.order))
    return [
        BenchRow(
            name=(
                f"MFAS with MFAS_TIME_LIMIT_S={limit_s:g}, n=20 random, worst of {len(seeds)} "
                f"({exact} exact; heuristic weight above optimum: {', '.join(f'{e:g}' for e in extra)})"
            ),
            ours=max(capped) * 1e3,
            baseline_name="uncapped exact rank_mfas_ilp, same tournaments (worst)",
            baseline=max(uncapped) * 1e3,
            unit="ms",
            target=f"<= {limit_s + 0.5:g} s",
            met=max(capped) <= limit_s + 0.5,
        )
    ]


def main() -> None:
    """Print the tournament benchmark tables."""
    print_table("Tournament: 3-cycle statistics (n = 100)", cycle_rows())
    print_table("Ranking: exact minimum feedback arc set", mfas_rows())
    print_table("Ranking: MFAS under the service's time limit (n = 20)", mfas_limit_rows())


if __name__ == "__main__":
    main()
