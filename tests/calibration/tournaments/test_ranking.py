"""Rankings: exact MFAS against brute force, Bradley-Terry against choix, Schulze on published examples,
hand-checked win rate and Copeland, relabelling invariance and bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import choix
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibration.tournaments.ranking as ranking_module
from calibration.errors import CalibrationError, ConvergenceError
from calibration.tournaments.ranking import (
    Ranking,
    feedback_weight,
    rank_all,
    rank_bradley_terry,
    rank_mfas_copeland,
    rank_mfas_ilp,
    rank_schulze,
    rank_win_rate,
    schulze_strongest_paths,
)
from calibration.tournaments.tournament import PairwiseVerdict, Tournament, build_tournament

GOLDEN = Path(__file__).parents[1] / "golden" / "schulze_cases.json"
HYPOTHESIS = settings(database=None, deadline=None, max_examples=25)
METHODS = ("win_rate", "bradley_terry", "schulze", "mfas_ilp", "mfas_copeland")


def verdict(first: str, second: str, outcome: str) -> PairwiseVerdict:
    return PairwiseVerdict(first=first, second=second, outcome=outcome)


def tournament_from_counts(names: list[str], wins: np.ndarray, ties: np.ndarray | None = None) -> Tournament:
    """wins[i, j] repetitions i won against j (alternating presentation order), ties[i, j] for i < j."""
    verdicts = []
    for i, j in itertools.permutations(range(len(names)), 2):
        for r in range(int(wins[i, j])):
            shown = (names[i], names[j]) if r % 2 == 0 else (names[j], names[i])
            verdicts.append(verdict(*shown, "first" if shown[0] == names[i] else "second"))
        if ties is not None and i < j:
            verdicts.extend(verdict(names[i], names[j], "tie") for _ in range(int(ties[i, j])))
    return build_tournament(names, verdicts)


def random_counts(rng: np.random.Generator, n: int, *, k: int, p_missing: float, p_tie: float):
    wins = np.zeros((n, n), dtype=int)
    ties = np.zeros((n, n), dtype=int)
    for i, j in itertools.combinations(range(n), 2):
        if rng.random() < p_missing:
            continue
        p_i = rng.random()
        for _ in range(k):
            if rng.random() < p_tie:
                ties[i, j] += 1
            elif rng.random() < p_i:
                wins[i, j] += 1
            else:
                wins[j, i] += 1
    return wins, ties


def random_tournament(seed: int, n: int, *, k: int = 3, p_missing: float = 0.0, p_tie: float = 0.0) -> Tournament:
    wins, ties = random_counts(np.random.default_rng(seed), n, k=k, p_missing=p_missing, p_tie=p_tie)
    return tournament_from_counts([f"c{i}" for i in range(n)], wins, ties)


def brute_force_mfas(margins: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """Minimum total reversed margin over all permutations, and the optimal order whose position vector
    (position of candidate 0, then 1, ...) is lexicographically smallest."""
    n = margins.shape[0]
    best_cost, best_positions = None, None
    for order in itertools.permutations(range(n)):
        positions = [0] * n
        for slot, candidate in enumerate(order):
            positions[candidate] = slot
        cost = sum(
            int(margins[i, j]) for i in range(n) for j in range(n) if margins[i, j] and positions[i] > positions[j]
        )
        key = (cost, positions)
        if best_cost is None or key < (best_cost, best_positions):
            best_cost, best_positions = cost, positions
    return best_cost, tuple(sorted(range(n), key=lambda c: best_positions[c]))


# --- MFAS --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_mfas_ilp_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    k = int(rng.integers(1, 6))
    wins, ties = random_counts(rng, n, k=k, p_missing=0.15 * (seed % 3), p_tie=0.2 * (seed % 2))
    names = [f"c{i}" for i in range(n)]
    t = tournament_from_counts(names, wins, ties)
    margins = np.maximum(wins - wins.T, 0)
    best_cost, best_order = brute_force_mfas(margins)
    result = rank_mfas_ilp(t)
    assert feedback_weight(t, result.order) == best_cost
    # the stated tie-break among optimal orders, too
    assert result.order == tuple(names[i] for i in best_order)
    assert sorted(result.scores.values()) == list(map(float, range(n)))


def test_mfas_ilp_on_a_seven_cycle_with_equal_margins() -> None:
    # Every rotation of the 7-cycle costs the same: the tie-break alone picks the order.
    n = 7
    wins = np.zeros((n, n), dtype=int)
    for i in range(n):
        wins[i, (i + 1) % n] = 2
    names = [f"c{i}" for i in range(n)]
    t = tournament_from_counts(names, wins)
    best_cost, best_order = brute_force_mfas(np.maximum(wins - wins.T, 0))
    assert best_cost == 2
    result = rank_mfas_ilp(t)
    assert feedback_weight(t, result.order) == 2
    assert result.order == tuple(names[i] for i in best_order) == tuple(names)


def test_mfas_ilp_on_acyclic_majorities_is_a_canonical_topological_order() -> None:
    # D > B and C > A only; everything else tied or missing: cost 0, many optimal orders.
    names = ["A", "B", "C", "D"]
    wins = np.zeros((4, 4), dtype=int)
    wins[3, 1] = 2
    wins[2, 0] = 1
    ties = np.zeros((4, 4), dtype=int)
    ties[0, 1] = 2
    t = tournament_from_counts(names, wins, ties)
    _, best_order = brute_force_mfas(np.maximum(wins - wins.T, 0))
    result = rank_mfas_ilp(t)
    assert feedback_weight(t, result.order) == 0
    assert result.order == tuple(names[i] for i in best_order) == ("C", "A", "D", "B")


def test_feedback_weight_counts_reversed_margins() -> None:
    t = tournament_from_counts(["A", "B", "C"], np.array([[0, 3, 0], [0, 0, 2], [1, 0, 0]]))
    assert feedback_weight(t, ["A", "B", "C"]) == 1  # reverses C > A (margin 1)
    assert feedback_weight(t, ["C", "B", "A"]) == 5
    with pytest.raises(CalibrationError, match="'Z'"):
        feedback_weight(t, ["A", "B", "Z"])


# --- Bradley-Terry -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("l2", [0.01, 0.5])
def test_bradley_terry_matches_choix(seed: int, l2: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    wins, ties = random_counts(rng, n, k=int(rng.integers(1, 5)), p_missing=0.2, p_tie=0.15)
    if seed % 2:  # candidate 0 never loses: not strongly connected, the MLE alone would diverge
        wins[0] += wins[:, 0]
        wins[:, 0] = 0
    t = tournament_from_counts([f"c{i}" for i in range(n)], wins, ties)
    ours = rank_bradley_terry(t, l2=l2)
    # choix's objective is alpha * |theta|^2 + sum over comparisons of -log sigmoid(winner - loser);
    # doubling every win and entering each tie as one win each way reproduces ours times 2.
    data = [(i, j) for i, j in itertools.permutations(range(n), 2) for _ in range(2 * int(wins[i, j]))]
    data += [
        pair
        for i, j in itertools.combinations(range(n), 2)
        for _ in range(int(ties[i, j]))
        for pair in ((i, j), (j, i))
    ]
    reference = choix.opt_pairwise(n, data, alpha=2 * l2, method="Newton-CG", tol=1e-12, max_iter=1000)
    theta = np.array([ours.scores[f"c{i}"] for i in range(n)])
    np.testing.assert_allclose(theta - theta.mean(), reference - reference.mean(), atol=1e-4)
    assert abs(theta.sum()) < 1e-8  # the L2 penalty centres the solution
    assert list(ours.order) == sorted(ours.order, key=lambda c: (-round(ours.scores[c], 9), int(c[1:])))


def test_bradley_terry_reports_non_convergence() -> None:
    t = random_tournament(3, 6)
    with pytest.raises(ConvergenceError, match="max_iter=1"):
        rank_bradley_terry(t, max_iter=1)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_bradley_terry_rejects_bad_l2(bad: float) -> None:
    with pytest.raises(CalibrationError, match=f"got {bad!r}"):
        rank_bradley_terry(random_tournament(0, 3), l2=bad)


# --- Schulze -----------------------------------------------------------------------------------------


def golden_cases() -> list[dict]:
    return json.loads(GOLDEN.read_text())["cases"]


@pytest.mark.parametrize("case", golden_cases(), ids=lambda case: case["name"])
def test_schulze_published_examples(case: dict) -> None:
    names = case["candidates"]
    d = np.zeros((len(names), len(names)), dtype=int)
    for count, ballot in case["ballots"]:
        for better, worse in itertools.combinations(ballot, 2):
            d[names.index(better), names.index(worse)] += count
    assert d.tolist() == case["d"]  # the golden matrix is the one the ballots give

    strength = schulze_strongest_paths(d)
    if "p" in case:
        assert strength.astype(int).tolist() == case["p"]
    better = {
        (names[i], names[j]) for i in range(len(names)) for j in range(len(names)) if strength[i, j] > strength[j, i]
    }
    if "ranking" in case:
        layers = [candidate for layer in case["ranking"] for candidate in layer]
        expected = {(x, y) for x, y in itertools.combinations(layers, 2)}
        assert better == expected
    if "strict_relations" in case:
        assert better == {tuple(pair) for pair in case["strict_relations"]}
    if "potential_winners" in case:
        winners = [x for i, x in enumerate(names) if all(strength[i, j] >= strength[j, i] for j in range(len(names)))]
        assert winners == case["potential_winners"]

    result = rank_schulze(tournament_from_counts(names, d))
    assert result.order == tuple(case["order"])


def test_schulze_ignores_tie_verdicts() -> None:
    # A beats B 2:1 with many ties; B beats C; C beats A weakly. Ties must not change the counts.
    wins = np.array([[0, 2, 0], [1, 0, 3], [2, 0, 0]])
    ties = np.array([[0, 5, 5], [0, 0, 5], [0, 0, 0]])
    names = ["A", "B", "C"]
    assert (
        rank_schulze(tournament_from_counts(names, wins, ties)).order
        == rank_schulze(tournament_from_counts(names, wins)).order
    )


# --- win rate and Copeland -----------------------------------------------------------------------------


def test_win_rate_counts_ties_as_half() -> None:
    names = ["A", "B", "C", "D"]
    wins = np.array([[0, 2, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    ties = np.zeros((4, 4), dtype=int)
    ties[0, 2] = 2
    ties[1, 2] = 1
    result = rank_win_rate(tournament_from_counts(names, wins, ties))
    # A: 2 wins + 2 ties of 5; B: 1 win + 1 tie of 4; C: 3 ties of 3; D never judged -> 0.5
    assert result.scores == pytest.approx({"A": 3 / 5, "B": 1.5 / 4, "C": 0.5, "D": 0.5})
    assert result.order == ("A", "C", "D", "B")
    assert result.method == "win_rate"


def test_copeland_counts_majorities_and_breaks_ties_by_input_order() -> None:
    names = ["A", "B", "C", "D"]
    wins = np.array([[0, 0, 3, 0], [2, 0, 0, 0], [0, 2, 0, 0], [0, 1, 1, 0]])  # A>C, B>A, C>B, D>B, D>C
    ties = np.zeros((4, 4), dtype=int)
    ties[0, 3] = 1  # A-D tied
    result = rank_mfas_copeland(tournament_from_counts(names, wins, ties))
    assert result.scores == {"A": 0.0, "B": -1.0, "C": -1.0, "D": 2.0}
    assert result.order == ("D", "A", "B", "C")


# --- all methods ---------------------------------------------------------------------------------------


@HYPOTHESIS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 7))
def test_every_method_recovers_a_transitive_tournament(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    hidden = [f"c{i}" for i in rng.permutation(n)]  # best first
    position = {name: rank for rank, name in enumerate(hidden)}
    names = [f"c{i}" for i in range(n)]
    wins = np.zeros((n, n), dtype=int)
    for i, j in itertools.permutations(range(n), 2):
        if position[names[i]] < position[names[j]]:
            wins[i, j] = 3
    rankings = rank_all(tournament_from_counts(names, wins))
    assert set(rankings) == set(METHODS)
    for method, ranking in rankings.items():
        assert ranking.method == method
        assert ranking.order == tuple(hidden), method


@HYPOTHESIS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 7), p_missing=st.sampled_from([0.0, 0.3]))
def test_rankings_survive_relabelling(seed: int, n: int, p_missing: float) -> None:
    rng = np.random.default_rng(seed)
    wins, ties = random_counts(rng, n, k=3, p_missing=p_missing, p_tie=0.2)
    names = [f"c{i}" for i in range(n)]
    original = rank_all(tournament_from_counts(names, wins, ties))

    # Same input order, new names: every result maps exactly.
    new_names = [f"renamed-{int(i)}" for i in rng.permutation(n)]
    rename = dict(zip(names, new_names, strict=True))
    renamed = rank_all(tournament_from_counts(new_names, wins, ties))
    for method in METHODS:
        assert renamed[method].order == tuple(rename[c] for c in original[method].order), method
        assert renamed[method].scores == pytest.approx({rename[c]: s for c, s in original[method].scores.items()})

    # New input order as well: scores map (the tie-break may legitimately move tied candidates).
    permutation = rng.permutation(n)
    shuffled_names = [new_names[i] for i in permutation]
    shuffled_wins = wins[np.ix_(permutation, permutation)]
    shuffled_ties = ties + ties.T
    shuffled_ties = np.triu(shuffled_ties[np.ix_(permutation, permutation)])
    t_shuffled = tournament_from_counts(shuffled_names, shuffled_wins, shuffled_ties)
    shuffled = rank_all(t_shuffled)
    for method in ("win_rate", "bradley_terry", "schulze", "mfas_copeland"):
        expected = {rename[c]: s for c, s in original[method].scores.items()}
        assert shuffled[method].scores == pytest.approx(expected, abs=1e-7), method
        distinct = len({round(s, 6) for s in expected.values()}) == n
        if distinct:
            assert shuffled[method].order == tuple(rename[c] for c in original[method].order), method
    t_original = tournament_from_counts(names, wins, ties)
    assert feedback_weight(t_shuffled, shuffled["mfas_ilp"].order) == feedback_weight(
        t_original, original["mfas_ilp"].order
    )


def test_ranking_is_a_frozen_struct() -> None:
    ranking = rank_win_rate(random_tournament(1, 3))
    assert isinstance(ranking, Ranking)
    with pytest.raises(AttributeError):
        ranking.method = "other"  # type: ignore[misc]


def test_all_lists_the_public_names() -> None:
    public = {
        name
        for name, value in vars(ranking_module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == ranking_module.__name__
    }
    assert public == set(ranking_module.__all__)
    assert ranking_module.__all__ == sorted(ranking_module.__all__)


def test_refusals_read_exactly() -> None:
    t = build_tournament(["A", "B"], [PairwiseVerdict(first="A", second="B", outcome="first")])
    with pytest.raises(CalibrationError) as caught:
        feedback_weight(t, ["A", "Z"])
    assert str(caught.value) == "order ['A', 'Z'] is not a permutation of the candidates ['A', 'B']"
    with pytest.raises(CalibrationError) as caught:
        feedback_weight(t, ["A"])
    assert str(caught.value) == "order ['A'] is not a permutation of the candidates ['A', 'B']"
    with pytest.raises(CalibrationError) as caught:
        rank_bradley_terry(t, l2=0)
    assert str(caught.value) == "Bradley-Terry l2 must be a finite number > 0, got 0"
    # the first Newton step from theta = 0, by hand: gradient (-0.5, 0.5), Hessian [[0.27, -0.25], [-0.25, 0.27]]
    # (l2 = 0.01), so the step is (-a, a) with 0.52 a = 0.5: max-norm 0.9615...
    with pytest.raises(ConvergenceError) as caught:
        rank_bradley_terry(t, max_iter=1)
    assert str(caught.value) == (
        "Bradley-Terry did not converge in max_iter=1 Newton steps: last step max-norm 0.962 >= tol=1e-10"
    )
    assert rank_bradley_terry(t, l2=1).scores["A"] > 0  # an int l2 is accepted


@pytest.mark.parametrize("seed", range(6))
def test_bradley_terry_solves_its_stated_objective_to_first_order(seed: int) -> None:
    # the gradient of  -sum_ij w_ij log sigmoid(theta_i - theta_j) + l2 |theta|^2  vanishes at the returned theta
    # (w_ij = wins + half the ties), written out here term by term
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 8))
    wins, ties = random_counts(rng, n, k=3, p_missing=0.2, p_tie=0.2)
    t = tournament_from_counts([f"c{i}" for i in range(n)], wins, ties)
    l2 = [0.01, 0.3][seed % 2]
    theta = np.array([rank_bradley_terry(t, l2=l2).scores[f"c{i}"] for i in range(n)])
    w = wins + 0.5 * (ties + ties.T)  # ties holds each pair once (i < j)
    gradient = np.zeros(n)
    for i in range(n):
        for j in range(n):
            if i != j:
                gradient[i] -= w[i, j] / (1 + np.exp(theta[i] - theta[j]))
                gradient[i] += w[j, i] / (1 + np.exp(theta[j] - theta[i]))
        gradient[i] += 2 * l2 * theta[i]
    assert np.max(np.abs(gradient)) < 1e-9


def test_win_rate_of_a_single_repetition_is_its_outcome() -> None:
    t = build_tournament(["A", "B", "C"], [PairwiseVerdict(first="B", second="A", outcome="first")])
    assert rank_win_rate(t).scores == {"A": 0.0, "B": 1.0, "C": 0.5}


def test_bradley_terry_with_no_step_allowed_reports_an_infinite_last_step() -> None:
    t = build_tournament(["A", "B"], [PairwiseVerdict(first="A", second="B", outcome="first")])
    with pytest.raises(ConvergenceError) as caught:
        rank_bradley_terry(t, max_iter=0)
    assert str(caught.value) == (
        "Bradley-Terry did not converge in max_iter=0 Newton steps: last step max-norm inf >= tol=1e-10"
    )


def test_bradley_terry_returns_the_newton_update_of_its_last_iterate() -> None:
    # with a loose tol the loop stops early; the returned theta is the last iterate minus the (small) Newton step,
    # which Newton's quadratic convergence puts within ~step^2 of the optimum
    t = random_tournament(3, 5)
    exact = rank_bradley_terry(t).scores
    loose = rank_bradley_terry(t, tol=0.05).scores
    assert max(abs(loose[c] - exact[c]) for c in exact) < 1e-4


def test_schulze_strongest_paths_by_hand_with_an_even_split() -> None:
    # A-B split 1:1 (no link either way), A beats C 2:0, C beats B 2:0: links A->C (2), C->B (2)
    d = np.array([[0, 1, 2], [1, 0, 0], [0, 2, 0]])
    np.testing.assert_array_equal(schulze_strongest_paths(d), [[0, 2, 2], [0, 0, 0], [0, 2, 0]])
    names = ["A", "B", "C"]
    t = tournament_from_counts(names, d)
    ranking = rank_schulze(t)
    assert ranking.scores == {"A": 2.0, "B": 0.0, "C": 1.0} and ranking.order == ("A", "C", "B")


def test_a_transitive_majority_of_six_is_placed_slot_by_slot() -> None:
    # acyclic: ordered without the solver; every candidate's slot is checked (the last two slots too)
    names = ["c0", "c1", "c2", "c3", "c4", "c5"]
    strength = [2, 5, 0, 4, 1, 3]
    wins = np.array([[2 if strength[i] > strength[j] else 0 for j in range(6)] for i in range(6)])
    ranking = rank_mfas_ilp(tournament_from_counts(names, wins))
    assert ranking.order == ("c1", "c3", "c5", "c0", "c4", "c2")
    assert ranking.scores == {"c0": 2.0, "c1": 5.0, "c2": 0.0, "c3": 4.0, "c4": 1.0, "c5": 3.0}


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (-1, "CBC reported the MFAS linear ordering problem infeasible"),
        (0, "CBC did not solve the MFAS linear ordering problem: status 'Not Solved'"),
        (-3, "CBC did not solve the MFAS linear ordering problem: status 'Undefined'"),
    ],
)
def test_a_solver_failure_is_reported(monkeypatch: pytest.MonkeyPatch, status: int, message: str) -> None:
    # fault injection: the solver answers this status for the first (cyclic, so solver-bound) problem
    import pulp

    monkeypatch.setattr(pulp.LpProblem, "solve", lambda self, solver=None, **kwargs: status)
    t = tournament_from_counts(["A", "B", "C"], np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]))  # a 3-cycle
    with pytest.raises(ConvergenceError) as caught:
        rank_mfas_ilp(t)
    assert str(caught.value) == message


def _mfas_optimum_by_subsets(margins: np.ndarray) -> int:
    """Exact minimum feedback weight by dynamic programming over the set of candidates placed first (O(2^n n)): placing
    v below the set S reverses every majority v holds over a member of S."""
    n = margins.shape[0]
    best = [0] + [None] * ((1 << n) - 1)
    for placed in range(1 << n):
        if best[placed] is None:
            continue
        for v in range(n):
            if not placed >> v & 1:
                cost = best[placed] + sum(int(margins[v, u]) for u in range(n) if placed >> u & 1)
                after = placed | 1 << v
                if best[after] is None or cost < best[after]:
                    best[after] = cost
    return best[-1]


def test_mfas_ilp_is_optimal_where_the_lp_relaxation_is_not() -> None:
    # twelve candidates, one verdict per pair: an instance whose triangle-inequality LP relaxation rounds to a worse
    # order (weight 22), checked against the exact optimum by dynamic programming over subsets (16)
    t = random_tournament(6, 12, k=1)
    optimum = _mfas_optimum_by_subsets(ranking_module._margins(t))
    assert optimum == 16
    assert feedback_weight(t, rank_mfas_ilp(t).order) == optimum


def test_bradley_terry_halves_a_step_that_would_raise_the_objective(monkeypatch: pytest.MonkeyPatch) -> None:
    # an instance (7 candidates, up to 3,000 repetitions a pair, a few ties) where full Newton steps from theta = 0
    # overshoot: some iterations evaluate the objective 2-3 times (step halved to 1/2, 1/4) before it does not rise;
    # the result still zeroes the gradient of the stated objective
    rng = np.random.default_rng(82)
    n = int(rng.integers(2, 9))
    scale = rng.choice([1, 10, 100, 1000], (n, n))
    wins = (rng.integers(0, 4, (n, n)) * scale * (rng.random((n, n)) < 0.5)).astype(int)
    np.fill_diagonal(wins, 0)
    ties = np.triu((rng.integers(0, 3, (n, n)) * (rng.random((n, n)) < 0.3)).astype(int), 1)
    l2 = float(rng.choice([1e-1, 1e-2, 1e-3]))
    t = tournament_from_counts([f"c{i}" for i in range(n)], wins, ties)
    calls = {"objective": 0, "iterations": 0}
    objective, sigmoid = ranking_module._bt_objective, ranking_module._sigmoid

    def counted_objective(*args):
        calls["objective"] += 1
        return objective(*args)

    def counted_sigmoid(x):
        calls["iterations"] += 1
        return sigmoid(x)

    monkeypatch.setattr(ranking_module, "_bt_objective", counted_objective)
    monkeypatch.setattr(ranking_module, "_sigmoid", counted_sigmoid)
    result = rank_bradley_terry(t, l2=l2)
    # one evaluation at theta = 0, one per accepted step, one more per halving; the last iteration takes no step
    assert calls["objective"] - 1 > calls["iterations"] - 1
    theta = np.array([result.scores[f"c{i}"] for i in range(n)])
    w = wins + 0.5 * (ties + ties.T)
    p = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :])))
    gradient = -(w * (1 - p)).sum(axis=1) + (w.T * (1 - p.T)).sum(axis=1) + 2 * l2 * theta
    assert np.max(np.abs(gradient)) < 1e-8
