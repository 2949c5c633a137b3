"""``python -m offline calibrate --labels``: a judge and criterion the shipped data lacks, on a 1..7 scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifact.labels import min_items_for
from artifact.thresholds import load_artifact
from offline.cli import main
from tests.labelled_data import write_labelled_file


@pytest.fixture(scope="module")
def labelled(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "acme.jsonl"
    assert write_labelled_file(data_dir, path, k=7) > 1000
    return path


def test_calibrate_labels_writes_report_and_an_artifact_of_only_these_cells(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main(["calibrate", "--labels", str(labelled), "--out", str(out), "--splits", "4", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "acme-judge-v1 / custom / helpfulness  (scale 1..7" in printed
    artifact = load_artifact(out / "thresholds.json")
    assert {(e.judge, e.prompt_family, e.criterion) for e in artifact.entries} == {
        ("acme-judge-v1", "custom", "helpfulness")
    }
    assert artifact.label_scale == list(range(1, 8))
    assert all(e.fitted.n_labels == 7 and e.heldout_coverage is not None for e in artifact.entries)
    # one default method per guarantee mode (both are fitted)
    assert sorted((d.criterion, d.mode) for d in artifact.default_methods) == [
        ("helpfulness", "expected"),
        ("helpfulness", "pac"),
    ]
    assert {e.mode for e in artifact.entries} == {"expected", "pac"}
    # the user's cells get certified decision rules too (fitted on all their groups), or a stated failure
    [rule] = artifact.decision_rules
    assert (rule.judge, rule.criterion, rule.input_kind, rule.n_labels) == ("acme-judge-v1", "helpfulness", "score", 7)
    assert {(c.tolerance, c.accept_alpha, c.mode) for c in rule.certifications} >= {
        (2, 0.1, "pac"),
        (1, 0.1, "pac"),
        (2, 0.1, "expected"),
    }
    for row in rule.certifications:
        assert row.rule_failed or row.n_groups > 0
        if row.mode == "pac":
            assert not row.accepted_bins or (
                row.certified_error is not None and row.certified_error <= row.accept_alpha
            )
        else:  # an expected row names its test, unless it failed
            assert row.rule_failed or row.test is not None
    assert {label.label for label in rule.per_label} <= set(range(1, 8))
    index = (out / "index.md").read_text()
    assert index.startswith("# Calibration report") and "## The default guarantee: per human label" in index
    assert (out / "pipeline" / "coverage.png").read_bytes()[:4] == b"\x89PNG"
    heldout = json.loads((out / "pipeline" / "heldout.json").read_text())
    [cell] = heldout  # score-only verdicts: one input kind
    assert (cell["n_labels"], cell["n_groups"], cell["input_kind"], cell["fitted"]) == (7, 100, "score", {})
    assert {e.input_kind for e in artifact.entries} == {"score"}
    for figures in cell["heldout"]:
        if figures["method"] == cell["default"]["method"]:
            # documents never seen by the fit (PAC thresholds): the validity rule's floor
            assert figures["coverage"] >= 1 - figures["alpha"] - 0.02, figures


def _run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    status = main(["calibrate", "--labels", str(path), "--out", str(tmp_path / "r"), "--no-progress", *extra])
    return status, capsys.readouterr().err


def _row(**fields: object) -> str:
    row: dict[str, object] = {"item_id": "a", "criterion": "tone", "judge": "j", "human": 3, "judge_score": 3}
    row.update(fields)
    return json.dumps(row) + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "bad.jsonl: holds no labelled row"),
        (
            _row() + '{"item_id": "b", "criterion": "tone", "judge": "j", "judge_score": 3}\n',
            "bad.jsonl:2: human: Object missing required field `human`",
        ),
        (_row() + _row(item_id="b", human=6), "bad.jsonl:2: human: 6.0 is outside the scale 1..5"),
        (_row() + _row(human=4), "bad.jsonl:2: item_id: 'a' is repeated for judge 'j' and criterion 'tone'"),
    ],
)
def test_bad_labelled_files_stop_with_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    status, err = _run(tmp_path, text, capsys)
    assert status == 2
    assert expected in err
    assert not (tmp_path / "r" / "thresholds.json").exists()


def test_scale_flag_and_too_few_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "".join(
        _row(item_id=f"i{i}", human=1 + i % 10, judge_score=1 + i % 10, group=f"d{i // 2}") for i in range(20)
    )
    assert _run(tmp_path, text, capsys)[0] == 2  # 1..10 values on the default 1..5 scale
    path = tmp_path / "ten.jsonl"
    path.write_text(text)
    out = tmp_path / "ten"
    assert (
        main(["calibrate", "--labels", str(path), "--scale", "10", "--out", str(out), "--splits", "2", "--no-progress"])
        == 0
    )
    printed = capsys.readouterr().out
    assert f"alpha=0.01 needs at least {min_items_for(0.01, 0.05)}" in printed
    assert load_artifact(out / "thresholds.json").label_scale == list(range(1, 11))


def test_mean_of_samples_judges_are_calibrated_as_the_mean_kind(tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    rows = []
    for i in range(200):
        human = int(rng.integers(1, 6))
        mean = float(np.clip(human + rng.normal(0, 0.7), 1, 5))
        rows.append(
            {
                "item_id": f"i{i}",
                "criterion": "tone",
                "judge": "sampler",
                "human": human,
                "mean_of_samples": round(mean, 3),
                "group": f"d{i // 5}",
            }
        )
    path = tmp_path / "means.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "r"
    assert main(["calibrate", "--labels", str(path), "--out", str(out), "--splits", "3", "--no-progress"]) == 0
    artifact = load_artifact(out / "thresholds.json")
    assert {e.input_kind for e in artifact.entries} == {"mean"}
