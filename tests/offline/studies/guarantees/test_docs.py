"""docs/guarantees.md's generated region (offline.studies.guarantees.docs, guarantees_summary): the summary's rules on
hand-made study runs, the committed region equal to the one the committed summary renders, and the CLI writing
the page, its figure and its JSON from study files."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import msgspec
import pytest

from offline.cli import main
from offline.studies.guarantees.docs import BEGIN, END, region, replace_region
from offline.studies.guarantees.report import report_name
from offline.studies.guarantees.study import GuaranteeRow, GuaranteesStudy, LabelFigures, SetRow
from offline.studies.guarantees.summary import decision_point, documents_needed, load_summary, summarise

DOCS = Path(__file__).resolve().parents[4] / "docs"


def _row(mode: str, judge: str, kind: str, share: float, error: float, alpha: float = 0.1) -> GuaranteeRow:
    return GuaranteeRow(
        mode=mode,
        judge=judge,
        criterion="coherence",
        kind=kind,
        tolerance=2,
        accept_alpha=alpha,
        accept_share=[share, share],
        error_among_accepted=[error, error],
        document_error=[error, error],
        mean_accept_share=share,
        mean_error=error,
        mean_document_error=error,
        none_accepted_share=0.0 if share else 1.0,
    )


def _set(mode: str, judge: str, kind: str, size: float, coverage: float) -> SetRow:
    return SetRow(
        mode=mode,
        judge=judge,
        criterion="coherence",
        kind=kind,
        alpha=0.1,
        coverage=[coverage],
        set_size=[size],
        mean_coverage=coverage,
        mean_set_size=size,
    )


def study(n: int, logprob_share: float) -> GuaranteesStudy:
    """Two judges: ``lp`` with log-probs (score and probabilities rows), ``plain`` with the score only."""
    decisions = [
        _row("expected", "lp", "probabilities", logprob_share, 0.08),
        _row("expected", "lp", "score", 0.9, 0.3),  # never in "all": the log-probs row stands for lp
        _row("expected", "plain", "score", 0.2, 0.06),
        _row("pac", "lp", "probabilities", 0.0, 0.0),
        _row("pac", "lp", "score", 0.0, 0.0),
        _row("pac", "plain", "score", 0.0, 0.0),
    ]
    sets = [
        _set(mode, judge, kind, size, cov)
        for mode, (size, cov) in (("expected", (3.5, 0.91)), ("pac", (4.5, 0.99)))
        for judge, kind in (("lp", "probabilities"), ("lp", "score"), ("plain", "score"))
    ]
    labels = [
        LabelFigures(
            mode="expected",
            kind="probabilities",
            label=3,
            n_items=160,
            coverage=0.95,
            accept_share=0.8,
            error_among_accepted=0.04,
        )
    ]
    return GuaranteesStudy(
        seed=0,
        n_splits=2,
        inner_splits=4,
        calibration_documents=n,
        served_documents=100 - n,
        delta=0.05,
        rules={},
        sets=sets,
        decisions=decisions,
        per_label=labels,
    )


def test_the_summary_takes_one_kind_per_judge_and_criterion_and_the_worst_cell() -> None:
    summary = summarise([study(80, 0.85), study(50, 0.7), study(20, 0.3)])
    assert [r.calibration_documents for r in summary.runs] == [20, 50, 80]
    every = decision_point(summary, "expected", 50, "all", 2, 0.1)
    logprob = decision_point(summary, "expected", 50, "logprob", 2, 0.1)
    assert every is not None and logprob is not None
    assert (every.n_cells, logprob.n_cells) == (2, 1)
    assert every.accept_share == pytest.approx((0.7 + 0.2) / 2)  # lp's score row (0.9) is left out
    assert (every.error_worst, every.worst_cell) == (0.08, "lp coherence probabilities")
    assert logprob.accept_share == pytest.approx(0.7)
    assert decision_point(summary, "pac", 50, "all", 2, 0.1).none_accepted == 1.0
    assert documents_needed(summary, "expected", "logprob", 0.7) == 50
    assert documents_needed(summary, "expected", "logprob", 0.25) == 20
    assert documents_needed(summary, "expected", "logprob", 0.9) is None
    assert documents_needed(summary, "pac", "all", 0.25) is None
    assert summary.per_label == study(50, 0.7).per_label  # the 50-document run's


def test_the_region_states_each_figure_of_the_summary() -> None:
    text = region(summarise([study(50, 0.7), study(80, 0.85)]))
    assert text.startswith(BEGIN) and text.endswith(END)
    assert "| `expected` | 70.0% | 45.0% | 0.080 (lp coherence probabilities) | 0.0% | 3.500 | 0.910" in text
    assert "| `pac` | 0.0% | 0.0% | 0.000" in text
    assert "| `expected` | log-prob | 70.0% | 85.0% | 50 | 50 | 50 |" in text  # documents for 25%, 50%, 70%
    assert "| `pac` | all | 0.0% | 0.0% | more than 80 | more than 80 | more than 80 |" in text
    assert "| `expected` | probabilities | 3 | 160 | 0.950 | 80.0% | 0.040 |" in text
    with pytest.raises(ValueError, match="no guarantees region"):
        replace_region("no markers here", text)


def test_the_committed_page_is_the_region_of_the_committed_summary() -> None:
    page = (DOCS / "guarantees.md").read_text()
    summary = load_summary(DOCS / "figures" / "guarantees.json")
    assert replace_region(page, region(summary)) == page, "run `python -m offline guarantees --docs`"
    assert (DOCS / "figures" / "guarantees_curve.png").stat().st_size > 10_000
    assert {r.calibration_documents for r in summary.runs} >= {50, 80}


def test_the_cli_writes_the_page_figure_and_summary_from_the_study_files(tmp_path: Path) -> None:
    out, docs = tmp_path / "reports", tmp_path / "docs"
    (out / "guarantees").mkdir(parents=True)
    (docs / "figures").mkdir(parents=True)
    for n, share in ((50, 0.7), (80, 0.85)):
        (out / "guarantees" / f"{report_name(n)}.json").write_bytes(msgspec.json.encode(study(n, share)))
    (docs / "guarantees.md").write_text(f"# Title\n\nhand-written\n\n{BEGIN}\nold\n{END}\n\nafter\n")
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main(["guarantees", "--out", str(out), "--docs", str(docs)]) == 0
    page = (docs / "guarantees.md").read_text()
    assert page.startswith("# Title\n\nhand-written\n\n" + BEGIN) and page.endswith(END + "\n\nafter\n")
    assert "\nold\n" not in page and "| `expected` | 70.0% |" in page
    assert load_summary(docs / "figures" / "guarantees.json") == summarise([study(50, 0.7), study(80, 0.85)])
    assert (docs / "figures" / "guarantees_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "guarantees.md" in printed.getvalue()
    # no study file: a data error naming the command, not a traceback
    assert main(["guarantees", "--out", str(tmp_path / "empty"), "--docs", str(docs)]) != 0


def test_the_committed_figures_keep_each_expected_promise_and_the_headline() -> None:
    """What docs/guarantees.md states, on the committed study runs: in the expected mode the worst cell's mean error
    among accepted stays at or below accept_alpha (0.02 of split noise allowed), the 50-document headline (tolerance
    2, accept_alpha 0.10) accepts >= 0.70 of log-prob verdicts and >= 0.40 over the 24 judge x criterion cells, and
    the sets at alpha 0.10 average <= 4.0 labels on log-prob cells with every cell's mean coverage >= 0.90."""
    summary = load_summary(DOCS / "figures" / "guarantees.json")
    expected = [p for p in summary.decisions if p.mode == "expected"]
    assert expected and all(p.error_worst <= p.accept_alpha + 0.02 for p in expected)
    logprob = decision_point(summary, "expected", 50, "logprob", 2, 0.1)
    every = decision_point(summary, "expected", 50, "all", 2, 0.1)
    assert logprob is not None and every is not None and every.n_cells == 24 and logprob.n_cells == 8
    assert logprob.accept_share >= 0.70 and every.accept_share >= 0.40 and every.error_worst <= 0.10
    sets = [s for s in summary.sets if (s.mode, s.calibration_documents, s.alpha) == ("expected", 50, 0.1)]
    assert next(s for s in sets if s.group == "logprob").set_size <= 4.0
    assert all(s.coverage_lowest >= 0.90 for s in sets)
