"""`python -m offline calibrate` (the build, then the studies) end to end on the real data into a temporary folder,
then `report`."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from artifact.pairwise import DEFAULT_PATH as SHIPPED_PAIRWISE
from artifact.thresholds import load_artifact
from calibration.conformal import METHODS
from calibration.input_kinds.mean_panel import is_panel_family
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.cli import main
from offline.report.index import NO_LLM_FACTUALITY

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """(exit status, stdout, out folder) of one calibrate run with 2 splits, the fewest it takes (coverage is checked
    elsewhere)."""
    out = tmp_path_factory.mktemp("calibrate") / "reports"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(
            [
                "calibrate",
                "--data-dir",
                str(data_dir),
                "--out",
                str(out),
                "--thresholds",
                str(out / "thresholds.json"),
                "--pairwise",
                str(out / "pairwise_decisions.json"),
                "--splits",
                "2",
                "--seed",
                "0",
                "--no-progress",
            ]
        )
    return status, stdout.getvalue(), out


def test_calibrate_writes_report_summaries_figures_and_thresholds(run) -> None:
    status, stdout, out = run
    assert status == 0
    # the build's pairwise artifact: not a study's, and it does not depend on the splits
    assert (out / "pairwise_decisions.json").read_bytes() == SHIPPED_PAIRWISE.read_bytes()
    assert f"pairwise:    {out / 'pairwise_decisions.json'}" in stdout
    index = (out / "index.md").read_text()
    assert index.startswith("# Conformal Judge") and "Coverage held" in index and "Parse rate" in index
    assert "Position consistency" in index and "Beyond the paper" in index
    summary = json.loads((out / "conformal" / "summary.json").read_text())
    cells_per_alpha = 8 * len(METHODS) + 16 * len(SCORE_ONLY_METHODS)  # 8 log-prob cells, 16 text-judge cells
    assert len(summary["cells"]) == cells_per_alpha * 4 and summary["n_splits"] == 2
    figures = sorted((out / "conformal").glob("*.png")) + sorted((out / "transitivity").glob("*.png"))
    # 5 conformal (paper), the validity figure, the simulated transitivity figure, 2 of the real Vicuna80 tournaments
    assert len(figures) == 9
    for figure in figures:
        data = figure.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000
        assert figure.relative_to(out).as_posix() in index
    baselines = json.loads((out / "factuality" / "baselines.json").read_text())
    assert baselines
    # The shipped data holds no direct/QA LLM factuality answers: nothing is written for them and the index says
    # so; the recorded sentence-level fact-checks (frank/llm/finesure) get their study and faithfulness cells.
    assert NO_LLM_FACTUALITY in index
    assert not (out / "factuality" / "llm.json").exists() and (out / "factuality" / "faithfulness.json").exists()
    assert "FineSurE-prompt recordings, not the paper's prompts" in index
    assert len(json.loads((out / "factuality" / "llm_sentences.json").read_text())["judges"]) == 8
    assert (out / "factuality" / "llm_sentences_confusion.png").read_bytes().startswith(PNG_MAGIC)
    transitivity = json.loads((out / "transitivity" / "summary.json").read_text())
    assert transitivity["simulated"] is True  # the shipped pairwise chain has no triangles
    vicuna80 = json.loads((out / "transitivity" / "vicuna80.json").read_text())
    cells = {(r["judge"], r["aggregation"]) for r in vicuna80["rows"]}
    assert {("gpt-4", "order_a"), ("panel", "order_b"), ("human", "both_orders")} <= cells
    assert "Transitivity on real tournaments (Vicuna80)" in index
    assert json.loads((out / "position_bias" / "summary.json").read_text())["simulated"] is False
    artifact = load_artifact(out / "thresholds.json")
    # What is served comes first: the SummEval cells per input kind, PAC, from the validity study
    assert index.index("What the artifact serves") < index.index("Read first")
    validity = json.loads((out / "conformal" / "validity.json").read_text())
    assert len(validity["cells"]) == 24 + 8 and validity["delta"] == 0.05
    summeval = [e for e in artifact.entries if e.criterion != "faithfulness" and not is_panel_family(e.prompt_family)]
    # the issue-14 panel and its 10 sub-panels, 4 criteria each, input-matched (offline.studies.panels.study)
    panels = {
        (d.judge, d.prompt_family, d.criterion) for d in artifact.default_methods if is_panel_family(d.prompt_family)
    }
    assert len(panels) == 44 and {d.kind for d in artifact.default_methods if is_panel_family(d.prompt_family)} == {
        "mean"
    }
    assert {e.input_kind for e in summeval} == {"score", "probabilities"}
    # both guarantee modes: pac at delta 0.05 and expected (no delta), the same cells and one default each
    assert all(e.fitted.delta == {"pac": 0.05, "expected": None}[e.mode] for e in summeval)
    assert all(e.heldout_coverage_p5 is not None for e in summeval)
    assert sum(e.mode == "pac" for e in summeval) == sum(e.mode == "expected" for e in summeval) > 0
    summeval_defaults = [
        d for d in artifact.default_methods if d.criterion != "faithfulness" and not is_panel_family(d.prompt_family)
    ]
    assert sorted(Counter(d.mode for d in summeval_defaults).items()) == [("expected", 24 + 8), ("pac", 24 + 8)]
    faithful = [e for e in artifact.entries if e.criterion == "faithfulness"]
    # direct/qa: uncalibrated until collected; the sentence-level cells under the validity rules (PAC, by article)
    assert {(e.prompt_family, e.input_kind) for e in faithful} == {("factuality_sentences", "score")}
    assert len({e.judge for e in faithful}) == 8
    assert all((e.fitted.delta is not None) == (e.mode == "pac") for e in faithful)
    sentence_defaults = [d for d in artifact.default_methods if d.prompt_family == "factuality_sentences"]
    assert sorted(Counter(d.mode for d in sentence_defaults).items()) == [("expected", 8), ("pac", 8)]
    assert (out / "factuality" / "llm_sentences_validity.md").exists()
    assert (out / "answers.sqlite").exists()
    for line in ("report:", "thresholds:", "wall time:"):
        assert line in stdout
    assert str(out / "index.md") in stdout


def test_report_rebuilds_from_saved_summaries(run) -> None:
    _, _, out = run
    before = (out / "index.md").read_text()
    (out / "index.md").unlink()
    (out / "conformal" / "width_error.png").unlink()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", "--out", str(out)]) == 0
    assert (out / "index.md").read_text() == before
    assert (out / "conformal" / "width_error.png").read_bytes().startswith(PNG_MAGIC)


def test_results_page_generated_from_a_real_calibrate_run(run, tmp_path: Path) -> None:
    """The page's generator reads calibrate's real reports (their schema, not a synthetic copy); halves.json, which
    ``calibrate`` does not write, comes from the synthetic folder of ``results_reports.py``."""
    from offline.results_page.page import check_page
    from tests.offline.results_reports import write_synthetic_reports

    _, _, out = run
    synthetic = write_synthetic_reports(tmp_path / "synthetic")
    halves = out / "conformal" / "halves.json"
    halves.write_bytes((synthetic / "conformal" / "halves.json").read_bytes())
    page = tmp_path / "results.md"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["results-page", "--reports", str(out), "--out", str(page)]) == 0
    finally:
        halves.unlink()
    text = page.read_text(encoding="utf-8")
    assert check_page(text) == []
    validity = json.loads((out / "conformal" / "validity.json").read_text())
    assert f"{len(validity['cells'])} cells)" in text
    assert "## Transitivity on real tournaments (Vicuna80)" in text and "n/a" not in text.split("## Factuality")[0]


def test_missing_data_directory_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "nowhere"))
    assert main(["calibrate", "--out", str(tmp_path / "r")]) == 2
    assert "DATA_DIR" in capsys.readouterr().err
    assert main(["report", "--out", str(tmp_path / "empty")]) == 2


def test_module_entry_point_and_collect_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "offline", "collect", "--help"], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0
    for flag in (
        "--judges-file",
        "--judge",
        "--task",
        "--repetitions",
        "--both-orders",
        "--limit",
        "--split",
        "--seed",
        "--store",
    ):
        assert flag in result.stdout
