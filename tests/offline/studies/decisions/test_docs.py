"""The operating curve in docs/certified-decisions.md: generated from a study's JSON, never hand-copied.

A small synthetic ``decisions.json`` checks the curve's rules and the page rewrite (fast; the study itself is not
run here); the committed region must equal what the generator makes from the committed curve points."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from offline.build.inputs.errors import DataError
from offline.cli import main
from offline.studies.decisions.docs import (
    BEGIN,
    CURVE_JSON,
    CURVE_PNG,
    END,
    curve_of_report,
    curve_points,
    load_curve,
    region,
    replace_region,
    write_docs,
)

DOCS = Path(__file__).resolve().parents[4] / "docs"


def _row(
    judge: str,
    kind: str,
    tolerance: int,
    alpha: float,
    share: float,
    error: float | None,
    certified: float | None,
    **changes: object,
) -> dict:
    row = dict(
        judge=judge,
        prompt_family="f",
        criterion="coherence",
        kind=kind,
        headline=True,
        bound="betting",
        signal="fit_error",
        cal_fraction=0.5,
        tolerance=tolerance,
        accept_alpha=alpha,
        mean_accept_share=share,
        mean_error=error,
        pooled_error=error,
        share_ok=1.0,
        splits_accepting=3,
        mean_certified_error=certified,
        failed_splits=0,
        reasons=[],
    )
    return row | changes


def _report() -> dict:
    rows = [
        _row("a", "probabilities", 2, 0.1, 0.6, 0.05, 0.08),
        _row("b", "probabilities", 2, 0.1, 0.2, 0.11, 0.06),
        _row("c", "score", 2, 0.1, 0.0, None, None),  # accepts nothing: in the share, not in the errors
        _row("a", "probabilities", 1, 0.2, 0.3, 0.15, 0.18),
        _row("b", "probabilities", 1, 0.2, 0.1, 0.05, 0.12),
        _row("c", "score", 1, 0.2, 0.5, 0.20, 0.19),
        # rows the curve must ignore: not headline, another bound, another signal, another calibration share
        _row("a", "score", 2, 0.1, 0.9, 0.9, 0.9, headline=False),
        _row("a", "probabilities", 2, 0.1, 0.9, 0.9, 0.9, bound="clopper_pearson_items"),
        _row("a", "probabilities", 2, 0.1, 0.9, 0.9, 0.9, signal="spread"),
        _row("a", "probabilities", 2, 0.1, 0.9, 0.9, 0.9, cal_fraction=0.8),
    ]
    # the study's other tables ride along in the real file and are ignored
    return {
        "seed": 0,
        "n_splits": 7,
        "delta": 0.05,
        "rules": {},
        "rows": rows,
        "labels": [],
        "gates": [],
        "headlines": [{"logprob_mean_accept_share": None}],
        "resampling": [],
    }


def _write_report(out: Path) -> Path:
    path = out / "decisions" / "decisions.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(msgspec.json.encode(_report()))
    return path


def test_curve_points_follow_the_module_rules(tmp_path) -> None:
    curve = curve_of_report(_write_report(tmp_path))
    assert (curve.n_splits, curve.seed, curve.delta) == (7, 0, 0.05)
    points = {(p.group, p.tolerance, p.accept_alpha): p for p in curve.points}
    assert set(points) == {(g, t, a) for g in ("all", "logprob") for t, a in ((1, 0.2), (2, 0.1))}
    every = points[("all", 2, 0.1)]
    assert every.n_cells == 3
    assert every.accept_share == pytest.approx((0.6 + 0.2 + 0.0) / 3)
    assert every.error_mean == pytest.approx((0.05 + 0.11) / 2)  # cell c accepts nothing
    assert every.error_worst == pytest.approx(0.11)
    assert every.certified_mean == pytest.approx(0.07)
    logprob = points[("logprob", 1, 0.2)]
    assert logprob.n_cells == 2 and logprob.accept_share == pytest.approx(0.2)
    assert logprob.error_worst == pytest.approx(0.15)
    assert curve_points([]) == []


def test_write_docs_replaces_only_the_region_and_draws_the_figure(tmp_path) -> None:
    _write_report(tmp_path / "reports")
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "certified-decisions.md"
    page.write_text(f"# Title\n\nbefore\n\n{BEGIN}\nstale table\n{END}\n\nafter\n")
    paths = write_docs(tmp_path / "reports", docs)
    text = page.read_text()
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert "stale table" not in text
    assert "| 2 | 0.1 | 26.7% | 40.0% | 0.080 | 0.110 | 0.070 |" in text
    assert "| 1 | 0.2 | 30.0% | 20.0% | 0.133 | 0.200 | 0.163 |" in text
    assert f"]({CURVE_PNG})" in text
    assert load_curve(docs / CURVE_JSON) == curve_of_report(tmp_path / "reports" / "decisions" / "decisions.json")
    assert (docs / CURVE_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths == (docs / CURVE_JSON, docs / CURVE_PNG, page)
    write_docs(tmp_path / "reports", docs)
    assert page.read_text() == text  # generating twice changes nothing


def test_docs_option_of_the_cli_and_its_errors(tmp_path, capsys) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "certified-decisions.md").write_text("no markers here\n")
    assert main(["decisions", "--out", str(tmp_path / "reports"), "--docs", str(docs)]) == 2
    assert "run `python -m offline decisions` first" in capsys.readouterr().err
    _write_report(tmp_path / "reports")
    assert main(["decisions", "--out", str(tmp_path / "reports"), "--docs", str(docs)]) == 2
    assert "no operating-curve region" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no operating-curve region"):
        replace_region("text", "generated")
    (tmp_path / "bad.json").write_text('{"rows": 3}')
    with pytest.raises(DataError, match="not a decision study"):
        curve_of_report(tmp_path / "bad.json")


def test_committed_region_is_what_the_generator_makes() -> None:
    page = (DOCS / "certified-decisions.md").read_text()
    start, end = page.index(BEGIN), page.index(END) + len(END)
    assert page[start:end] == region(load_curve(DOCS / CURVE_JSON))
    figure = DOCS / CURVE_PNG
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size < 150_000
