"""``python -m offline validate --labels FILE --thresholds ARTIFACT``: an artifact's certified decisions checked on a
user's own labelled file (here: one recorded judge's cell written in the labelled format)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np

from calibration.decisions.rule import decide
from offline.build.export import DEFAULT_THRESHOLDS, replace_decision_rules
from offline.build.rules import export_rules
from offline.cli import main
from offline.studies.decisions.cells import cell_input_kinds


def _write_labels(cell, path: Path) -> None:
    with path.open("w") as stream:
        for position, item_id in enumerate(cell.item_ids):
            logprobs = {str(k + 1): math.log(p) for k, p in enumerate(cell.probabilities[position]) if p > 0}
            stream.write(
                json.dumps(
                    {
                        "item_id": item_id,
                        "criterion": cell.criterion,
                        "judge": cell.judge,
                        "prompt_family": cell.prompt_family,
                        "human": int(cell.labels[position]),
                        "judge_score": int(cell.judge_scores[position]),
                        "judge_logprobs": logprobs,
                        "group": cell.groups[position],
                    }
                )
                + "\n"
            )


def test_validate_labels_checks_every_decision_row_as_decide_serves_it(recorded_cells, tmp_path: Path) -> None:
    cell = next(c for c in recorded_cells if c.judge == "qwen2.5-72b-instruct" and c.criterion == "relevance")
    rules = export_rules([cell])
    artifact = tmp_path / "thresholds.json"
    shutil.copyfile(DEFAULT_THRESHOLDS, artifact)
    replace_decision_rules(artifact, rules)
    labels = tmp_path / "mine.jsonl"
    _write_labels(cell, labels)
    out = tmp_path / "validate"
    assert main(["validate", "--thresholds", str(artifact), "--labels", str(labels), "--out", str(out)]) == 0
    report = json.loads((out / "validate.json").read_text())
    assert report["labels"].startswith("labelled files")
    checks = report["decisions"]
    kinds = {(c["input_kind"], c["kind"], c["tolerance"], c["pass_threshold"], c["accept_alpha"]) for c in checks}
    assert kinds == {
        (r.input_kind, "accept", c.tolerance, None, c.accept_alpha) for r in rules for c in r.certifications
    } | {(r.input_kind, "gate", None, g.pass_threshold, g.accept_alpha) for r in rules for g in r.quality_gates}
    # one row recomputed independently: the probabilities rule at tolerance 2, alpha 0.2, served item by item
    rule = next(r for r in rules if r.input_kind == "probabilities")
    features = cell_input_kinds(cell)[1].data.features
    outcomes = [decide(rule, float(x), tolerance=2, accept_alpha=0.2) for x in features]
    accepted = np.array([o.accepted for o in outcomes])
    errors = np.abs(cell.labels - np.array([o.point for o in outcomes])) >= 2
    row = next(
        c
        for c in checks
        if c["input_kind"] == "probabilities"
        and c["kind"] == "accept"
        and c["tolerance"] == 2
        and c["accept_alpha"] == 0.2
    )
    assert row["accept_share"] == accepted.mean() and row["n"] == cell.labels.size
    assert row["error_among_accepted"] == (errors[accepted].mean() if accepted.any() else None)
    assert [b["n"] for b in row["by_label"]] == np.bincount(cell.labels, minlength=6)[1:].tolist()
    assert "## Certified decisions" in (out / "validate.md").read_text()
