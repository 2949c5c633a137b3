"""A small synthetic report folder for the results-page tests: every JSON file the page reads, with the fields it
reads and values chosen so each figure is recognisable on the page (two judges, two criteria, two alphas)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JUDGES = ("judge-a", "judge-b")
CRITERIA = ("coherence", "fluency")
ALPHAS = (0.1, 0.2)


def _write(root: Path, path: str, value: Any) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(value), encoding="utf-8")


def _heldout(method: str, alpha: float, size: float, empty: float = 0.0) -> dict[str, Any]:
    return {
        "method": method,
        "alpha": alpha,
        "set_size": size,
        "empty_share": empty,
        "non_interval_share": 0.0125 if method == "learned_lac" else 0.004,
        "accept_share": 0.0163,
        "review_share": 0.4671,
        "escalate_share": 0.5166,
    }


def _validity_cell(judge: str, criterion: str, kind: str, index: int) -> dict[str, Any]:
    return {
        "judge": judge,
        "criterion": criterion,
        "kind": kind,
        "default_method": "mondrian_residual" if index % 2 else "residual",
        "default_qualified": index != 0,
        "n_items": 197 + index,
        "procedure": [
            {
                "alpha": a,
                "mean_coverage": 0.9412 + 0.001 * index + (0.05 if a < 0.15 else 0),
                "p5_coverage": 0.8761 + 0.001 * index,
                "mean_set_size": 3.5 + 0.1 * index,
            }
            for a in ALPHAS
        ],
        "heldout": [
            *(_heldout("residual", a, 4.25 + 0.01 * index) for a in ALPHAS),
            *(_heldout("learned_lac", a, 2.0, empty=0.1034 if index == 3 and a == 0.2 else 0.0) for a in ALPHAS),
        ],
    }


def _conformal() -> dict[str, Any]:
    cells = [
        {
            "judge": j,
            "criterion": c,
            "method": m,
            "alpha": a,
            "set_size": 3.35 + 0.5 * i + 0.25 * k,
            "coverage": 0.905 if (m, a) == ("residual", 0.1) else 0.95,
            "valid_coverage": True,
            "n_items": 1600,
        }
        for i, j in enumerate(JUDGES)
        for k, c in enumerate(CRITERIA)
        for m in ("residual", "lac")
        for a in ALPHAS
    ]
    return {
        "cells": cells,
        "variance": [{"method": "residual", "eta2_criterion": 0.2412, "eta2_judge": 0.2817, "judges": list(JUDGES)}],
        "pooled_width_error": [
            {"criterion": "all", "correlation": {"statistic": 0.2914, "n": 31997}},
            {"criterion": "coherence", "correlation": {"statistic": -0.1234, "n": 15000}},
            {"criterion": "fluency", "correlation": {"statistic": 0.4511, "n": 15000}},
        ],
        "inter_judge": [
            {"criterion": c, "correlation": {"statistic": s}} for c, s in zip(CRITERIA, (0.031, 0.138), strict=True)
        ],
        "headline": [
            {
                "criterion": c,
                "marginal_ratio": r,
                "ratio": q,
                "per_judge": [{"marginal_best_min_label_coverage": 0.0}, {"marginal_best_min_label_coverage": 0.5}],
            }
            for c, r, q in zip(CRITERIA, (0.79, 0.42), (0.97, 1.02), strict=True)
        ],
    }


def _vicuna80() -> dict[str, Any]:
    rows = [
        {
            "judge": j,
            "aggregation": a,
            "mean": 0.006 * (i + 1) * (10 if a != "both_orders" else 1),
            "median": 0.0,
            "max": 0.2 * (i + 1),
            "share_with_cycle": 0.0625 * (i + 1) * (3 if a != "both_orders" else 1),
            "n_tied_pairs": 487 + i,
        }
        for i, j in enumerate([*JUDGES, "panel"])
        for a in ("both_orders", "order_a", "order_b")
    ]
    rows.append(
        {
            "judge": "human",
            "aggregation": "both_orders",
            "mean": 0.055,
            "median": 0.0,
            "max": 0.3,
            "share_with_cycle": 0.35,
            "n_tied_pairs": 3,
        }
    )
    methods = {"mfas_copeland": 0.51, "win_rate": 0.5, "mfas_ilp": 0.35}
    rankings = [
        {
            "scope": scope,
            "reference": "same_method",
            "judge": j,
            "method": m,
            "std_tau": 0.35 + 0.1 * i,
            "mean_tau": 1.0 if scope == "pooled" and j == "judge-a" else 0.8,
        }
        for i, j in enumerate([*JUDGES, "panel"])
        for m in methods
        for scope in ("per_question", "pooled")
    ]
    return {
        "n_questions": 80,
        "assistants": ["a1", "a2", "a3", "a4", "a5"],
        "judges": list(JUDGES),
        "parse": [
            {"judge": "judge-a", "parse_rate": 1.0, "agreement_with_label": 0.982, "rules": {}},
            {"judge": "judge-b", "parse_rate": 0.932, "agreement_with_label": 1.0, "rules": {"empty_reply": 18}},
        ],
        "human_votes_left_out": {"guanaco-7b": 5280},
        "n_human_votes_left_out": 5280,
        "rows": rows,
        "best_method": {"same_method": {"method": "mfas_copeland", "mean_tau_over_judges": methods}},
        "rankings": rankings,
        "mfas_vs_copeland": {
            "same_method": {
                "ilp_minus_copeland": {"judge-a": -0.1, "judge-b": -0.2, "panel": -0.1},
                "copeland_better": ["judge-a", "judge-b", "panel"],
                "ilp_better": [],
            }
        },
        "position_bias": [
            {"judge": "judge-a", "consistency": 0.7012, "first_win_rate": 0.4931},
            {"judge": "judge-b", "consistency": 0.3712, "first_win_rate": 0.8129},
        ],
    }


def _sentences() -> dict[str, Any]:
    corr = {"judge-a": (0.5203, 0.5081), "judge-b": (0.3201, 0.3342)}
    rows = []
    for j, (p, s) in corr.items():
        rows.append(
            {
                "judge": j,
                "dataset": "all",
                "n": 199,
                "partial_pearson": p,
                "partial_spearman": s,
                "p_value": 2e-5,
                "recorded_partial_pearson": p - 0.04,
                "partial_pearson_ci": [p - 0.1, p + 0.1],
            }
        )
        rows.append(
            {"judge": j, "dataset": "bbc", "n": 80, "partial_pearson": None, "partial_spearman": None, "p_value": None}
        )
        rows.append(
            {
                "judge": j,
                "dataset": "cnndm",
                "n": 119,
                "partial_pearson": p + 0.2,
                "partial_spearman": s,
                "p_value": 0.01,
            }
        )
    return {
        "judges": list(JUDGES),
        "parse": [
            {
                "judge": j,
                "n_rows": 200,
                "n_wrong_count": 3 + i,
                "parse_rate": 1.0,
                "recorded_row_agreement": 0.99 + 0.01 * i,
            }
            for i, j in enumerate(JUDGES)
        ],
        "rows": rows,
        "baselines": [
            {"judge": j, "metric": m, "partial_pearson": v, "partial_spearman": v / 2}
            for j in JUDGES
            for m, v in (("FactCC", 0.168), ("BertScore P Art", 0.3211), ("QAGS", -0.019))
        ],
        "sentence_agreement": [
            {"judge": "judge-a", "f1": 0.86, "precision": 0.9, "recall": 0.83},
            {"judge": "judge-b", "f1": 0.64, "precision": 0.48, "recall": 0.96},
        ],
        "ablation": [
            {"category": c, "delta_pearson": d}
            for c, d in (("EntE", 0.15), ("EntE", 0.27), ("OutE", 0.12), ("RelE", 0.01))
        ],
        "error_types": [{"error_type": t, "recall": r} for t, r in (("CorefE", 0.0), ("LinkE", 0.33), ("EntE", 0.8))],
    }


def write_synthetic_reports(root: Path) -> Path:
    """Write the synthetic report folder under ``root``; return it."""
    cells = [_validity_cell(j, c, "score", 2 * i + k) for i, j in enumerate(JUDGES) for k, c in enumerate(CRITERIA)]
    cells.append(_validity_cell("judge-b", "fluency", "probabilities", 5))
    _write(
        root,
        "ingest/summary.json",
        {
            "judges": [
                {"judge": "judge-a", "task": "direct", "rows": 4800, "parse_rate": 1.0, "unparsed": 0},
                {"judge": "judge-b", "task": "direct", "rows": 4800, "parse_rate": 0.9998, "unparsed": 1},
                {"judge": "judge-a", "task": "pairwise", "rows": 4400, "parse_rate": 1.0, "unparsed": 0},
            ]
        },
    )
    _write(
        root,
        "conformal/validity.json",
        {
            "seed": 7,
            "n_splits": 20,
            "delta": 0.05,
            "alphas": [0.01 * k for k in range(1, 31)],
            "report_alphas": list(ALPHAS),
            "cells": cells,
        },
    )
    _write(
        root,
        "conformal/halves.json",
        {
            "n_documents": [50, 50],
            "n_checked": 193,
            "n_below_floor": 0,
            "share_at_target": 0.9871,
            "n_empty_accepted": 0,
            "n_logprobs_larger": 0,
            "rows": [{"alpha": a, "coverage": c} for a in (0.05, *ALPHAS) for c in (0.9243 + a / 10, 0.99)]
            + [{"alpha": 0.1, "coverage": None}],
        },
    )
    _write(root, "conformal/summary.json", _conformal())
    _write(
        root,
        "position_bias/summary.json",
        {
            "rows": [
                {
                    "judge": "judge-a",
                    "criterion": "all",
                    "consistency": 0.6481,
                    "consistency_ci": [0.61, 0.68],
                    "n_pairs_both_orders": 4400,
                    "tie_rate": 0.0352,
                    "first_win_rate": 0.4961,
                },
                {
                    "judge": "judge-a",
                    "criterion": "coherence",
                    "consistency": 0.1,
                    "n_pairs_both_orders": 1,
                    "tie_rate": 0.0,
                    "first_win_rate": 0.0,
                },
            ]
        },
    )
    _write(root, "transitivity/summary.json", {"simulated": True, "rows": [{"mean": 0.0}, {"mean": 0.1114}]})
    _write(
        root,
        "factuality/baselines.json",
        {
            "FactCC": {"pearson": 0.2039, "spearman": 0.3041, "n": 2246},
            "BertScore P Art": {"pearson": 0.2711, "spearman": 0.2432, "n": 2246},
            "QAGS": {"pearson": 0.0650, "spearman": 0.0814, "n": 2246},
        },
    )
    _write(root, "transitivity/vicuna80.json", _vicuna80())
    _write(root, "factuality/llm_sentences.json", _sentences())
    _write(
        root,
        "factuality/llm_sentences_validity.json",
        {
            "n_splits": 20,
            "delta": 0.05,
            "cells": [_validity_cell(j, "faithfulness", "score", i) for i, j in enumerate(JUDGES)],
        },
    )
    _write(
        root, "factuality/faithfulness.json", {"parts": [{"n_fit": 52, "n_test": 146}, {"n_fit": 70, "n_test": 127}]}
    )
    return root
