"""calibration.stats: cross-checks against scipy, hand-built least squares, sklearn and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import OneHotEncoder

from calibration.errors import CalibrationError, EmptyCalibrationError, UnknownMethodError
from calibration.stats import (
    Correlation,
    kendall_tau_b,
    kendall_tau_b_statistic,
    partial_correlation,
    pearson,
    spearman,
)

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=40, deadline=None)


def _grouped_sample(seed: int, n: int = 60, n_levels: int = 4) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """x and y sharing a group effect plus a within-group association; labels 'g0'..'g{L-1}'."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_levels, size=n)
    groups[:n_levels] = np.arange(n_levels)  # every level present
    effect = rng.normal(0, 2, size=n_levels)
    shared = rng.normal(size=n)
    x = effect[groups] + shared + rng.normal(size=n)
    y = 0.5 * effect[groups] + shared + rng.normal(size=n)
    return x, y, [f"g{g}" for g in groups]


def _residuals_drop_first(values: np.ndarray, labels: list[str]) -> tuple[np.ndarray, int]:
    """Independent residualisation: intercept + one indicator per level except the first (sorted)."""
    levels = sorted(set(labels))
    design = np.column_stack(
        [np.ones(len(labels))] + [[1.0 if label == level else 0.0 for label in labels] for level in levels[1:]]
    )
    coefficients = np.linalg.lstsq(design, values, rcond=None)[0]
    return values - design @ coefficients, len(levels) - 1


# ------------------------------------------------------------------------------------ plain correlations


@FAST
@given(seed=SEEDS, n=st.integers(min_value=3, max_value=80))
def test_plain_correlations_agree_with_scipy_including_ties(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 6, size=n).astype(float)  # 1..5 judge-like scores: many ties
    y = x + rng.integers(-2, 3, size=n)
    if np.all(x == x[0]) or np.all(y == y[0]):
        x[0], y[0] = 0.0, -10.0  # keep the sample non-constant
    for ours, theirs in (
        (kendall_tau_b(x, y), scipy_stats.kendalltau(x, y, variant="b")),
        (spearman(x, y), scipy_stats.spearmanr(x, y)),
        (pearson(x, y), scipy_stats.pearsonr(x, y)),
    ):
        assert ours.n == n
        assert ours.statistic == pytest.approx(theirs.statistic, abs=1e-12)
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-15)


def test_tau_b_counts_ties_in_the_denominator() -> None:
    # Hand count: pairs of x = [1,1,2,3], y = [1,2,2,3]: concordant 4, discordant 0, ties in x only 1,
    # ties in y only 1 -> tau_b = 4 / sqrt((4 + 0 + 1) * (4 + 0 + 1)) = 0.8 (tau_a would be 4/6).
    result = kendall_tau_b([1, 1, 2, 3], [1, 2, 2, 3])
    assert result.statistic == pytest.approx(0.8)
    assert result.method == "kendall_tau_b"


def test_nan_rows_are_dropped_and_counted() -> None:
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, 3.0, np.nan, 6.0, 5.0])
    kept = [0, 1, 4, 5]
    for function, reference in ((pearson, scipy_stats.pearsonr), (spearman, scipy_stats.spearmanr)):
        result = function(x, y)
        assert result.n == 4
        assert result.statistic == pytest.approx(reference(x[kept], y[kept]).statistic)


def test_result_is_frozen_typed_struct() -> None:
    result = pearson([1, 2, 3, 5], [2, 1, 4, 3])
    assert isinstance(result, Correlation)
    with pytest.raises(AttributeError):
        result.statistic = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("function", [kendall_tau_b, spearman, pearson])
def test_bad_input_raises_named_errors(function) -> None:
    with pytest.raises(EmptyCalibrationError, match="same length; got 3 and 4"):
        function([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(EmptyCalibrationError, match="at least 3 rows.*n=2"):
        function([1, 2, np.nan, 4], [1, 3, 2, np.nan])
    with pytest.raises(CalibrationError, match="x is constant .*= 2.0"):
        function([2, 2, 2, 2], [1, 2, 3, 4])
    with pytest.raises(CalibrationError, match="y is constant"):
        function([1, 2, 3, 4], [7, 7, 7, 7])
    with pytest.raises(CalibrationError, match="infinite value inf at row 1"):
        function([1, np.inf, 3, 4], [1, 2, 3, 4])
    with pytest.raises(CalibrationError, match="sequence of numbers"):
        function(["a", "b", "c"], [1, 2, 3])


# ----------------------------------------------------------------------------------- partial correlation


@FAST
@given(seed=SEEDS, n_levels=st.integers(min_value=1, max_value=6))
def test_partial_matches_hand_built_least_squares_and_t_test(seed: int, n_levels: int) -> None:
    x, y, labels = _grouped_sample(seed, n_levels=n_levels)
    rx, k = _residuals_drop_first(x, labels)
    ry, _ = _residuals_drop_first(y, labels)
    expected_r = float(rx @ ry / math.sqrt((rx @ rx) * (ry @ ry)))
    df = len(x) - 2 - k
    t = expected_r * math.sqrt(df / (1 - expected_r**2))
    expected_p = 2 * scipy_stats.t.sf(abs(t), df)

    result = partial_correlation(x, y, [labels])
    assert result.method == "partial_pearson"
    assert result.n == len(x)
    assert result.statistic == pytest.approx(expected_r, abs=1e-12)
    assert result.p_value == pytest.approx(expected_p, rel=1e-9, abs=0)

    ranked = partial_correlation(x, y, [labels], method="spearman")
    assert ranked.method == "partial_spearman"
    assert ranked.statistic == pytest.approx(scipy_stats.spearmanr(rx, ry).statistic, abs=1e-12)


@FAST
@given(seed=SEEDS)
def test_partial_with_one_binary_covariate_equals_classic_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, size=50)
    z[:2] = [0, 1]
    x = z + rng.normal(size=50)
    y = x + 2 * z + rng.normal(size=50)
    r_xy, r_xz, r_yz = (np.corrcoef(a, b)[0, 1] for a, b in ((x, y), (x, z), (y, z)))
    classic = (r_xy - r_xz * r_yz) / math.sqrt((1 - r_xz**2) * (1 - r_yz**2))
    labels = ["treated" if value else "control" for value in z]
    assert partial_correlation(x, y, [labels]).statistic == pytest.approx(classic, abs=1e-12)


def test_partial_matches_frank_sklearn_procedure() -> None:
    # FRANK's evaluate.py: OneHotEncoder + LinearRegression, then scipy on the residuals.
    x, y, labels = _grouped_sample(7, n=200, n_levels=9)
    encoded = OneHotEncoder().fit_transform(np.array(labels).reshape(-1, 1))
    rx = x - LinearRegression().fit(encoded, x).predict(encoded)
    ry = y - LinearRegression().fit(encoded, y).predict(encoded)
    assert partial_correlation(x, y, [labels]).statistic == pytest.approx(
        scipy_stats.pearsonr(rx, ry).statistic, abs=1e-10
    )
    assert partial_correlation(x, y, [labels], "spearman").statistic == pytest.approx(
        scipy_stats.spearmanr(rx, ry).statistic, abs=1e-10
    )


def test_partial_p_value_equals_ols_coefficient_t_test() -> None:
    # Frisch-Waugh-Lovell: the t-statistic of y's coefficient when x is regressed on [y, 1, dummies] is the
    # partial correlation's t with n - 2 - k degrees of freedom.
    x, y, labels = _grouped_sample(11, n=40, n_levels=5)
    levels = sorted(set(labels))
    design = np.column_stack(
        [y, np.ones(len(y))] + [[1.0 if label == level else 0.0 for label in labels] for level in levels[1:]]
    )
    coefficients, *_ = np.linalg.lstsq(design, x, rcond=None)
    residual = x - design @ coefficients
    df = len(x) - design.shape[1]
    sigma2 = residual @ residual / df
    standard_error = math.sqrt(sigma2 * np.linalg.inv(design.T @ design)[0, 0])
    expected_p = 2 * scipy_stats.t.sf(abs(coefficients[0] / standard_error), df)
    assert partial_correlation(x, y, [labels]).p_value == pytest.approx(expected_p, rel=1e-8, abs=0)


@FAST
@given(seed=SEEDS)
def test_no_covariates_is_plain_correlation(seed: int) -> None:
    x, y, _ = _grouped_sample(seed, n=30)
    plain = scipy_stats.pearsonr(x, y)
    result = partial_correlation(x, y, [])
    assert result.statistic == pytest.approx(plain.statistic, abs=1e-12)
    assert result.p_value == pytest.approx(plain.pvalue, rel=1e-8, abs=0)
    assert partial_correlation(x, y, [], "spearman").statistic == pytest.approx(
        scipy_stats.spearmanr(x, y).statistic, abs=1e-12
    )


@FAST
@given(seed=SEEDS, data=st.data())
def test_invariant_under_relabelling_levels_and_reordering_rows(seed: int, data: st.DataObject) -> None:
    x, y, labels = _grouped_sample(seed, n=40, n_levels=5)
    levels = sorted(set(labels))
    renamed = data.draw(st.permutations([f"system-{i}" for i in range(len(levels))]))
    mapping = dict(zip(levels, renamed, strict=True))
    relabelled = [mapping[label] for label in labels]
    order = np.random.default_rng(seed).permutation(len(x))
    for method in ("pearson", "spearman"):
        base = partial_correlation(x, y, [labels], method)
        again = partial_correlation(x, y, [relabelled], method)
        shuffled = partial_correlation(x[order], y[order], [[labels[i] for i in order]], method)
        for other in (again, shuffled):
            assert other.statistic == pytest.approx(base.statistic, abs=1e-12)
            assert other.p_value == pytest.approx(base.p_value, rel=1e-9, abs=0)
            assert other.n == base.n


@FAST
@given(seed=SEEDS, scale=st.floats(min_value=0.01, max_value=100), shift=st.floats(-100, 100))
def test_sign_follows_scale_and_x_y_symmetry(seed: int, scale: float, shift: float) -> None:
    x, y, labels = _grouped_sample(seed)
    base = partial_correlation(x, y, [labels]).statistic
    assert partial_correlation(scale * x + shift, y, [labels]).statistic == pytest.approx(base, abs=1e-9)
    assert partial_correlation(-scale * x + shift, y, [labels]).statistic == pytest.approx(-base, abs=1e-9)
    assert partial_correlation(y, x, [labels]).statistic == pytest.approx(base, abs=1e-12)


def test_nested_covariate_changes_nothing() -> None:
    # Systems nested in datasets (as in FRANK): adding the dataset column adds no independent column.
    x, y, labels = _grouped_sample(3, n=80, n_levels=6)
    datasets = ["cnndm" if label in ("g0", "g1", "g2") else "bbc" for label in labels]
    alone = partial_correlation(x, y, [labels])
    both = partial_correlation(x, y, [labels, datasets])
    assert both.statistic == pytest.approx(alone.statistic, abs=1e-12)
    assert both.p_value == pytest.approx(alone.p_value, rel=1e-9, abs=0)


def test_two_crossed_covariates_match_hand_built_design() -> None:
    rng = np.random.default_rng(5)
    n = 90
    a = rng.integers(0, 3, size=n)
    b = rng.integers(0, 2, size=n)
    x = a + 2 * b + rng.normal(size=n)
    y = 0.2 * x - a + rng.normal(size=n)  # moderate r: a p-value far from 0
    design = np.column_stack([np.ones(n), a == 1, a == 2, b == 1]).astype(float)
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    result = partial_correlation(x, y, [list(a), list(b)])
    assert result.statistic == pytest.approx(np.corrcoef(rx, ry)[0, 1], abs=1e-12)
    r = result.statistic
    expected_p = 2 * scipy_stats.t.sf(abs(r * math.sqrt((n - 2 - 3) / (1 - r * r))), n - 2 - 3)
    assert result.p_value == pytest.approx(expected_p, rel=1e-9, abs=0)


def test_partial_drops_nan_rows_with_their_labels() -> None:
    x, y, labels = _grouped_sample(2, n=30)
    x_missing = x.copy()
    x_missing[[3, 17]] = np.nan
    y_missing = y.copy()
    y_missing[5] = np.nan
    kept = [i for i in range(30) if i not in (3, 5, 17)]
    result = partial_correlation(x_missing, y_missing, [labels])
    expected = partial_correlation(x[kept], y[kept], [[labels[i] for i in kept]])
    assert result.n == 27
    assert result.statistic == pytest.approx(expected.statistic, abs=1e-12)
    assert result.p_value == pytest.approx(expected.p_value, rel=1e-12)


def test_spearman_of_residuals_keeps_exact_ties() -> None:
    # y's residuals are exactly -0.3/+0.3 in every group, but 0.1 - 0.4 != 0.2 - 0.5 in floating point.
    x = np.array([1.0, 2.0, 5.0, 3.0, 4.0, 7.0])
    y = np.array([0.1, 0.7, 0.2, 0.8, 0.3, 0.9])
    labels = ["a", "a", "b", "b", "c", "c"]
    rx = np.array([-0.5, 0.5, 1.0, -1.0, -1.5, 1.5])
    ry = np.array([-0.3, 0.3, -0.3, 0.3, -0.3, 0.3])
    expected = np.corrcoef(scipy_stats.rankdata(rx), scipy_stats.rankdata(ry))[0, 1]
    assert partial_correlation(x, y, [labels], "spearman").statistic == pytest.approx(expected, abs=1e-12)


def test_partial_bad_input_raises_named_errors() -> None:
    x, y, labels = _grouped_sample(1, n=12, n_levels=3)
    with pytest.raises(UnknownMethodError, match="'kendall'"):
        partial_correlation(x, y, [labels], method="kendall")  # type: ignore[arg-type]
    with pytest.raises(EmptyCalibrationError, match="same length; got 12 and 11"):
        partial_correlation(x, y[:-1], [labels])
    with pytest.raises(EmptyCalibrationError, match=r"covariates\[0\] has 11 labels"):
        partial_correlation(x, y, [labels[:-1]])
    with pytest.raises(CalibrationError, match=r"covariates\[0\] is a string"):
        partial_correlation(x, y, ["abcdefghijkl"])
    with pytest.raises(CalibrationError, match="not a string"):
        partial_correlation(x, y, "abcdefghijkl")  # type: ignore[arg-type]
    with pytest.raises(CalibrationError, match=r"missing label \(None\) at row 4"):
        partial_correlation(x, y, [[*labels[:4], None, *labels[5:]]])
    with pytest.raises(CalibrationError, match="x is constant"):
        partial_correlation(np.ones(12), y, [labels])
    with pytest.raises(CalibrationError, match="x is fully explained by the covariates"):
        partial_correlation([float(label[1]) for label in labels], y, [labels])
    with pytest.raises(CalibrationError, match="no degrees of freedom left: n=4 rows, k=2"):
        partial_correlation([1, 2, 3, 4], [2, 1, 4, 3], [["a", "a", "b", "c"]])
    with pytest.raises(EmptyCalibrationError, match="n=2"):
        partial_correlation([1, np.nan, 3], [1, 2, 4], [["a", "b", "c"]])


def test_kendall_tau_b_statistic_equals_scipy_on_small_vectors_with_ties() -> None:
    """The statistic-only tau-b (used for thousands of 5-candidate rankings) equals scipy's tau-b, ties included."""
    rng = np.random.default_rng(12)
    checked = undefined = 0
    for _ in range(2000):
        n = int(rng.integers(2, 9))
        x = rng.integers(0, 4, size=n).astype(float)
        y = rng.integers(0, 4, size=n) / 2.0
        ours = kendall_tau_b_statistic(x, y)
        theirs = scipy_stats.kendalltau(x, y, variant="b").statistic
        if np.isnan(theirs):
            assert ours is None
            undefined += 1
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)
            checked += 1
    assert checked > 1500 and undefined > 0
    with pytest.raises(CalibrationError):
        kendall_tau_b_statistic([1.0, 2.0], [1.0])


def test_each_correlation_names_its_method_and_counts_its_rows():
    x = [1.0, 2.0, 3.0, 4.0, float("nan")]
    y = [2.0, 1.0, 4.0, 3.0, 5.0]
    assert (spearman(x, y).method, spearman(x, y).n) == ("spearman", 4)
    assert (pearson(x, y).method, pearson(x, y).n) == ("pearson", 4)
    assert (kendall_tau_b(x, y).method, kendall_tau_b(x, y).n) == ("kendall_tau_b", 4)
    # by hand on the 4 complete rows: Spearman rho = 1 - 6 * 4 / (4 * 15) = 0.6; tau-b = (4 - 2) / 6 = 1/3
    assert spearman(x, y).statistic == pytest.approx(0.6)
    assert kendall_tau_b(x, y).statistic == pytest.approx(1 / 3)


def test_covariate_refusals_word_for_word_and_float_labels():
    x, y = [1.0, 2.0, 4.0, 3.0, 5.0, 7.0], [2.0, 1.0, 3.0, 5.0, 4.0, 6.0]
    with pytest.raises(CalibrationError) as refused:
        partial_correlation(x, y, "abcdef")  # type: ignore[arg-type]
    assert str(refused.value) == "covariates must be a sequence of covariate columns, not a string"
    with pytest.raises(CalibrationError) as refused:
        partial_correlation(x, y, ["abcdef"])
    assert str(refused.value) == (
        "covariates[0] is a string ('abcdef'); pass a list of columns, e.g. [model_names] rather than model_names"
    )
    with pytest.raises(CalibrationError) as refused:
        partial_correlation(x, y, [[0.5, 0.5, float("nan"), 1.5, 1.5, 1.5]])
    assert str(refused.value) == "covariates[0] has a missing label (nan) at row 2"
    # float labels are labels like any other: the same result as the equivalent string labels
    as_floats = partial_correlation(x, y, [[0.5, 0.5, 0.5, 1.5, 1.5, 1.5]])
    as_strings = partial_correlation(x, y, [["a", "a", "a", "b", "b", "b"]])
    assert as_floats.statistic == pytest.approx(as_strings.statistic) and as_floats.n == 6


def test_a_perfect_partial_correlation_has_p_value_zero():
    result = partial_correlation([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0], [])
    assert result.statistic == 1.0 and result.p_value == 0.0
    negative = partial_correlation([1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 8.0, 6.0, 4.0, 2.0], [])
    assert negative.statistic == -1.0 and negative.p_value == 0.0


def test_input_refusals_name_the_variable():
    ok = [1.0, 2.0, 3.0, 4.0]
    for function in (pearson, spearman, kendall_tau_b, lambda a, b: partial_correlation(a, b, [])):
        with pytest.raises(CalibrationError) as refused:
            function([[1.0, 2.0], [3.0, 4.0]], ok)
        assert str(refused.value) == "x must be one-dimensional; got shape (2, 2)"
        with pytest.raises(CalibrationError) as refused:
            function(ok, [1.0, float("-inf"), 2.0, 3.0])
        assert str(refused.value) == "y holds an infinite value -inf at row 1"
        with pytest.raises(CalibrationError) as refused:
            function(ok, ["a", "b", "c", "d"])
        assert str(refused.value) == "y must be a sequence of numbers; got ['a', 'b', 'c', 'd']"
        with pytest.raises(CalibrationError) as refused:
            function([1.0, float("inf"), 2.0, 3.0], ok)
        assert str(refused.value) == "x holds an infinite value inf at row 1"


def test_a_y_the_covariates_explain_is_refused_by_name_and_one_degree_of_freedom_suffices():
    groups = [["a", "a", "b", "b", "c", "c"]]
    x = [1.0, 2.0, 4.0, 3.0, 5.0, 7.0]
    y = [1234567.891, 1234567.891, 2345678.912, 2345678.912, 3456789.123, 3456789.123]  # a function of the group
    with pytest.raises(CalibrationError) as refused:
        partial_correlation(x, y, groups)
    assert str(refused.value) == (
        "y is fully explained by the covariates (all residuals are zero): partial correlation undefined"
    )
    # n = 4, two levels: k = 1, df = 4 - 2 - 1 = 1, the least the t-test needs
    result = partial_correlation([1.0, 2.0, 4.0, 3.0], [2.0, 1.0, 3.0, 5.0], [["a", "a", "b", "b"]])
    assert result.n == 4 and -1.0 <= result.statistic <= 1.0 and 0.0 <= result.p_value <= 1.0


def test_kendall_statistic_reads_unsigned_integers_as_numbers():
    rising = np.array([1, 2, 3], dtype=np.uint8)  # differences computed on uint8 would wrap around (1 - 2 = 255)
    assert kendall_tau_b_statistic(rising, [3, 2, 1]) == -1.0
    assert kendall_tau_b_statistic([3, 2, 1], rising) == -1.0
    # by hand: pairs (1,2) (1,3) concordant, (2,3) tied in y: (2 - 0) / sqrt(3 * 2)
    assert kendall_tau_b_statistic(rising, [1.0, 2.0, 2.0]) == 2 / np.sqrt(3 * 2)
    for x, y in (([1.0], [2.0]), ([1.0, 2.0], [1.0, 2.0, 3.0]), ([[1.0, 2.0]], [[2.0, 1.0]])):
        with pytest.raises(CalibrationError) as refused:
            kendall_tau_b_statistic(x, y)
        assert str(refused.value) == (
            f"x and y must be 1-D of equal length >= 2, got shapes {np.shape(x)} and {np.shape(y)}"
        )


def test_a_nearly_explained_y_far_from_zero_is_not_refused_and_a_shift_changes_nothing():
    # y = 1000 + a group effect + e, e summing to 0 within each group (so e is the residual), |e| = 2e-8: far above
    # the 1e-10 relative zero of y's spread around its mean (about 2.4), far below 1e-10 of |y| itself (about 2450)
    groups = ["a", "a", "b", "b", "c", "c"]
    e = np.array([1e-8, -1e-8, -1e-8, 1e-8, 1e-8, -1e-8])
    effect = {"a": 0.0, "b": 1.5, "c": -1.0}
    y = 1000.0 + np.array([effect[g] for g in groups]) + e
    x = np.array([0.3, 1.2, 2.0, 5.5, -1.0, 0.1])
    x_residuals = x - np.array([x[[i for i, h in enumerate(groups) if h == g]].mean() for g in groups])
    expected = scipy_stats.pearsonr(x_residuals, e).statistic
    result = partial_correlation(x, y, [groups])
    assert result.statistic == pytest.approx(expected, abs=1e-6)
    assert partial_correlation(x, y - 1000.0, [groups]).statistic == pytest.approx(expected, abs=1e-6)


def test_residuals_equal_to_twelve_significant_digits_are_ranked_as_ties():
    # no covariate: the residuals are x - mean(x); the first two differ by 8e-13 (the largest is about 4: twelve
    # significant digits are 11 decimals, at which both round to 0), so spearman sees a tie there, as with exact zeros
    x = np.array([0.0, 8e-13, 2.0, 3.0, -1.0, -4.0])
    y = np.array([5.0, 1.0, 2.0, 3.0, 4.0, 6.0])
    tied = scipy_stats.spearmanr([0.0, 0.0, 2.0, 3.0, -1.0, -4.0], y).statistic
    untied = scipy_stats.spearmanr(x, y).statistic
    assert tied != pytest.approx(untied)
    assert partial_correlation(x, y, [], method="spearman").statistic == pytest.approx(tied, abs=1e-12)
