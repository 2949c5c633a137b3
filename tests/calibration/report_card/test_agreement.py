"""Agreement from contingency tables: each figure against an independent implementation on the expanded items, and
the document bootstrap against calibration.unit_bootstrap (the same draw)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.report_card.agreement import (
    agreement_within,
    document_tables,
    quadratic_kappa,
    spearman_of_tables,
    table_interval,
)
from calibration.unit_bootstrap import ratio_interval

K = 5


def _items(seed: int, n: int = 300, documents: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, K + 1, n)
    judge = np.clip(human + rng.integers(-2, 3, n), 1, K)
    groups = np.array([f"doc{g}" for g in rng.integers(0, documents, n)])
    return judge, human, groups


@given(st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_each_figure_of_the_summed_table_equals_the_figure_of_the_items(seed: int) -> None:
    judge, human, groups = _items(seed)
    table = document_tables(judge, human, groups, K).sum(axis=0)
    assert table.sum() == judge.size
    assert quadratic_kappa(table) == pytest.approx(cohen_kappa_score(judge, human, weights="quadratic"), abs=1e-12)
    assert spearman_of_tables(table) == pytest.approx(spearmanr(judge, human).statistic, abs=1e-12)
    assert agreement_within(1)(table) == pytest.approx(np.mean(judge == human))
    assert agreement_within(2)(table) == pytest.approx(np.mean(np.abs(judge - human) < 2))


def test_document_tables_count_each_document_apart() -> None:
    tables = document_tables([1, 2, 2, 5], [1, 3, 3, 5], ["b", "a", "b", "a"], K)
    assert tables.shape == (2, K, K)  # documents in order of first appearance: b, a
    assert tables[0, 0, 0] == 1 and tables[0, 1, 2] == 1
    assert tables[1, 1, 2] == 1 and tables[1, 4, 4] == 1
    assert tables.sum() == 4


def test_a_constant_judge_has_kappa_zero_and_no_spearman() -> None:
    tables = document_tables([3, 3, 3], [1, 2, 3], ["a", "b", "c"], K)
    table = tables.sum(axis=0)
    assert quadratic_kappa(table) == pytest.approx(cohen_kappa_score([3, 3, 3], [1, 2, 3], weights="quadratic"))
    assert quadratic_kappa(table) == 0.0 and np.isnan(spearman_of_tables(table))
    with pytest.raises(EmptyCalibrationError):
        table_interval(tables, spearman_of_tables)
    same = document_tables([2, 2], [2, 2], ["a", "b"], K).sum(axis=0)
    assert np.isnan(quadratic_kappa(same))  # both sides on one label: no expected disagreement


def test_perfect_agreement_has_kappa_and_rho_one() -> None:
    labels = np.array([1, 2, 3, 4, 5, 3])
    table = document_tables(labels, labels, list("abcdef"), K).sum(axis=0)
    assert quadratic_kappa(table) == pytest.approx(1.0) and spearman_of_tables(table) == pytest.approx(1.0)


@pytest.mark.parametrize("tolerance", [1, 2])
def test_the_agreement_interval_is_unit_bootstraps_ratio_interval_of_the_same_draw(tolerance: int) -> None:
    judge, human, groups = _items(3)
    tables = document_tables(judge, human, groups, K)
    ours = table_interval(tables, agreement_within(tolerance), n_resamples=500, seed=11)
    # the same figure as a pooled share of per-document counts, resampled by calibration.unit_bootstrap
    names = list(dict.fromkeys(groups.tolist()))
    near = np.abs(judge - human) < tolerance
    counts = [near[groups == name].sum() for name in names]
    totals = [(groups == name).sum() for name in names]
    theirs = ratio_interval(counts, totals, n_resamples=500, seed=11)
    assert (ours.estimate, ours.low, ours.high) == pytest.approx((theirs.estimate, theirs.low, theirs.high))
    assert ours.n_units == len(names) and ours.n_dropped == 0


def test_the_kappa_interval_resamples_documents_whole() -> None:
    judge, human, groups = _items(5)
    tables = document_tables(judge, human, groups, K)
    interval = table_interval(tables, quadratic_kappa, n_resamples=400, seed=2)
    # the percentile interval of kappas of documents drawn with replacement, written out item by item
    names = list(dict.fromkeys(groups.tolist()))
    draws = np.random.default_rng(2).integers(0, len(names), (400, len(names)))
    kappas = []
    for draw in draws:
        pick = np.concatenate([np.flatnonzero(groups == names[d]) for d in draw])
        kappas.append(cohen_kappa_score(judge[pick], human[pick], weights="quadratic"))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-9)
    assert interval.low < interval.estimate < interval.high


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(CalibrationError):
        document_tables([1, 6], [1, 2], ["a", "b"], K)
    with pytest.raises(CalibrationError):
        document_tables([1, 2], [1], ["a", "b"], K)
    with pytest.raises(EmptyCalibrationError):
        document_tables([], [], [], K)
    with pytest.raises(CalibrationError):
        agreement_within(0)
