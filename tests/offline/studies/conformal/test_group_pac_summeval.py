"""Document resampling on the recorded SummEval judges: the document-level PAC rule keeps its promise on real
clustered data (16 summaries per article), for every method of a log-prob cell."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.input_kinds.fit import cell_kind_data
from calibration.input_kinds.verdicts import methods_for_input_kind
from tests.calibration.reference.resampling import document_resampling, mc_error

ALPHA, DELTA, DRAWS, DOCUMENTS = 0.10, 0.05, 200, 100
CELLS = (("gpt-4o-mini-2024-07-18", "coherence"), ("qwen2.5-72b-instruct", "fluency"))


def summeval_kind(cells, judge: str, criterion: str, kind: str):
    """The recorded cell's items as verdicts of ``kind`` with their document ids (as the validity study reads them)."""
    (cell,) = [c for c in cells if c.judge == judge and c.criterion == criterion]
    groups = list(cell.groups) if cell.groups is not None else [i.split("/", 1)[0] for i in cell.item_ids]
    (data,) = [
        d
        for d in cell_kind_data(cell.labels, cell.judge_scores, cell.probabilities, cell.means, groups, cell.n_labels)
        if d.kind == kind
    ]
    return data


@pytest.mark.parametrize(("judge", "criterion"), CELLS)
@pytest.mark.parametrize("method", methods_for_input_kind("probabilities"))
def test_group_rule_fails_at_most_delta_plus_three_mc_errors(recorded_cells, judge: str, criterion: str, method: str):
    data = summeval_kind(recorded_cells, judge, criterion, "probabilities")
    assert np.unique(data.groups).size == 100 and data.labels.size == 1600
    result = document_resampling(
        method,
        data.labels,
        judge_scores=data.judge_scores,
        probabilities=data.probabilities,
        groups=data.groups,
        alpha=ALPHA,
        delta=DELTA,
        rule="group",
        n_draws=DRAWS,
        n_documents=DOCUMENTS,
        seed=0,
    )
    assert result.worst_failure_rate <= DELTA + 3 * mc_error(DELTA, DRAWS), result


# ---- The before/after figures of the report: ``PYTHONPATH=$PWD python -m
# tests.offline.studies.conformal.test_group_pac_summeval heldout|resampling [splits_or_draws]``: every recorded cell
# and input kind, every method, item rule vs group rule.


def _kinds(cells):
    for cell in cells:
        groups = list(cell.groups) if cell.groups is not None else [i.split("/", 1)[0] for i in cell.item_ids]
        for data in cell_kind_data(
            cell.labels, cell.judge_scores, cell.probabilities, cell.means, groups, cell.n_labels
        ):
            yield cell, data


def heldout_table(cells, *, n_splits: int = 20, alphas=(0.05, 0.10, 0.20), delta: float = DELTA, seed: int = 0):
    """Per (method, alpha, rule): mean set size, mean coverage, coverage per human label (pooled over every cell,
    split and test item), share of (cell, split) below 1 - alpha; splits by document as in fit_input_kind."""
    from calibration.input_kinds.heldout import evaluate_split, group_splits

    sums: dict = {}
    for _, data in _kinds(cells):
        codes = np.unique(data.groups, return_inverse=True)[1]
        splits = group_splits(codes, n_splits=n_splits, seed=seed)
        for method in methods_for_input_kind(data.kind):
            for rule in ("item", "group"):
                for split in splits:
                    result = evaluate_split(
                        method,
                        data.labels,
                        split,
                        levels=[(a, delta) for a in alphas],
                        judge_scores=data.judge_scores,
                        probabilities=data.probabilities,
                        n_labels=data.n_labels,
                        rng=np.random.default_rng([seed, 1, split.split]),
                        groups=codes if rule == "group" else None,
                    )
                    y = data.labels[split.test]
                    for position, alpha in enumerate(alphas):
                        row = sums.setdefault(
                            (method, alpha, rule),
                            {"size": [], "cov": [], "below": [], "label_hits": np.zeros(6), "label_n": np.zeros(6)},
                        )
                        covered = result.covered[position]
                        row["size"].append(result.set_sizes[position].mean())
                        row["cov"].append(covered.mean())
                        row["below"].append(covered.mean() < 1 - alpha)
                        row["label_hits"] += np.bincount(y, weights=covered, minlength=6)[:6]
                        row["label_n"] += np.bincount(y, minlength=6)[:6]
    lines = [
        "| method | alpha | rule | mean set size | coverage | below 1-alpha | label 1 | 2 | 3 | 4 | 5 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (method, alpha, rule), row in sorted(sums.items()):
        labels = " | ".join(f"{h / n:.3f}" for h, n in zip(row["label_hits"][1:], row["label_n"][1:], strict=True))
        lines.append(
            f"| {method} | {alpha} | {rule} | {np.mean(row['size']):.2f} | {np.mean(row['cov']):.3f} | "
            f"{np.mean(row['below']):.3f} | {labels} |"
        )
    return "\n".join(lines)


def resampling_table(cells, *, n_draws: int = 100, alpha: float = ALPHA, delta: float = DELTA):
    """Per (method, rule): failure rates over document draws (100 documents with replacement), every cell."""
    from tests.calibration.reference.resampling import RULES

    rows: dict = {}
    for cell, data in _kinds(cells):
        n_documents = int(np.unique(data.groups).size)
        for method in methods_for_input_kind(data.kind):
            for rule in RULES:
                r = document_resampling(
                    method,
                    data.labels,
                    judge_scores=data.judge_scores,
                    probabilities=data.probabilities,
                    groups=data.groups,
                    alpha=alpha,
                    delta=delta,
                    rule=rule,
                    n_draws=n_draws,
                    n_documents=n_documents,
                    seed=0,
                )
                rows.setdefault((method, rule), []).append((r, f"{cell.judge}/{cell.criterion}/{data.kind}"))
                print(
                    f"{cell.judge} {cell.criterion} {data.kind} {method} {rule} fail={r.failure_rate:.3f} "
                    f"worst={r.worst_failure_rate:.3f} cov={r.mean_coverage:.3f} size={r.mean_set_size:.2f}",
                    flush=True,
                )
    lines = [
        f"alpha={alpha}, delta={delta}, {n_draws} draws per cell; failure = population coverage < 1 - alpha "
        "(grouped methods: worst key)",
        "| method | rule | cells | mean failure | max failure (cell) | cells above delta + 3 MC SE | "
        "mean coverage | mean set size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    bound = delta + 3 * mc_error(delta, n_draws)
    for (method, rule), results in sorted(rows.items()):
        worst = [r.worst_failure_rate for r, _ in results]
        top = max(results, key=lambda x: x[0].worst_failure_rate)
        lines.append(
            f"| {method} | {rule} | {len(results)} | {np.mean(worst):.3f} | {max(worst):.3f} ({top[1]}) | "
            f"{sum(w > bound for w in worst)} | {np.mean([r.mean_coverage for r, _ in results]):.3f} | "
            f"{np.mean([r.mean_set_size for r, _ in results]):.2f} |"
        )
    return "\n".join(lines)


def selection_table(
    cells,
    *,
    n_splits: int = 10,
    selection_repeats: int = 2,
    nested_repeats: int = 2,
    alphas=(0.05, 0.10, 0.20),
    delta: float = DELTA,
    seed: int = 0,
    fixed: str = "mondrian_residual",
):
    """Nested held-out evaluation by document of the served recipe (selection inside the calibration documents,
    fit_input_kind's ``procedure``) vs one fixed method on the same outer splits (fit_input_kind's ``heldout``),
    per rule."""
    from calibration.input_kinds.fit import fit_input_kind

    rows: dict = {}
    for cell, data in _kinds(cells):
        for rule in ("item", "group"):
            fit = fit_input_kind(
                data,
                alphas=alphas,
                delta=delta,
                report_alphas=alphas,
                n_splits=n_splits,
                selection_repeats=selection_repeats,
                nested_repeats=nested_repeats,
                seed=seed,
                group_pac=rule == "group",
            )
            for proc in fit.procedure:
                fixed_row = next(h for h in fit.heldout if h.method == fixed and abs(h.alpha - proc.alpha) < 1e-9)
                rows.setdefault((proc.alpha, rule), []).append(
                    (
                        proc.mean_set_size,
                        proc.mean_coverage,
                        fixed_row.set_size,
                        fixed_row.coverage,
                        float(np.mean([c < 1 - proc.alpha for c in proc.coverage])),
                        float(fixed_row.coverage_p5),
                        proc.p5_coverage,
                    )
                )
            print(
                cell.judge,
                cell.criterion,
                data.kind,
                rule,
                [(p.alpha, round(p.mean_set_size, 2), round(p.mean_coverage, 3)) for p in fit.procedure],
                flush=True,
            )
    lines = [
        f"| alpha | rule | cells | selection: set size | coverage | fixed {fixed}: set size | coverage | "
        "cells where selection is smaller |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (alpha, rule), values in sorted(rows.items()):
        v = np.array(values)
        lines.append(
            f"| {alpha} | {rule} | {len(values)} | {v[:, 0].mean():.3f} | {v[:, 1].mean():.3f} | "
            f"{v[:, 2].mean():.3f} | {v[:, 3].mean():.3f} | {int((v[:, 0] < v[:, 2] - 1e-9).sum())} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    from offline.validation.artifact import recorded_datasets
    from tests.conftest import resolve_data_dir

    recorded = recorded_datasets(resolve_data_dir())
    what = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else None
    if what == "heldout":
        print(heldout_table(recorded, n_splits=count or 20))
    elif what == "selection":
        print(selection_table(recorded, n_splits=count or 10))
    else:
        print(resampling_table(recorded, n_draws=count or 100))
