"""``python -m offline results-page``: docs/results.md generated from the JSON reports, never hand-copied.

(a) On a synthetic report folder (``results_reports.py``): each figure appears on the page as the formatting rules
state, ``_ci`` intervals are printed beside their figure, a missing report or field stops the generator with a
clear error, and the page's fixed text holds no number. (b) The committed ``docs/results.md`` is the generator's
output: its digest matches and it names every report file the generator reads. The real reports' schema is
checked in ``test_cli.py`` (the page generated from a real calibrate run).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from offline.build.inputs.errors import DataError
from offline.cli import main
from offline.results_page import build_page, generate
from offline.results_page.figures import MASK, Figures
from offline.results_page.page import NOTATION, check_page, stray_numbers
from offline.results_page.reports import SOURCES, ReportMissing
from offline.validation.halves import HalvesReport, HalvesRow
from tests.offline.results_reports import write_synthetic_reports

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "results.md"


@pytest.fixture()
def reports(tmp_path: Path) -> Path:
    return write_synthetic_reports(tmp_path / "reports")


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def test_page_carries_each_figure_as_formatted(reports: Path) -> None:
    page = build_page(reports)
    halves = json.loads((reports / "conformal/halves.json").read_text())
    baselines = json.loads((reports / "factuality/baselines.json").read_text())
    expected = [
        # halves: counts, a share, and per-alpha minimum / mean over the defined rows
        f"{halves['n_checked']} judge × criterion × input × α cells",
        f"**{halves['n_below_floor']} below 1 − α − 0.02, {_pct(halves['share_at_target'])} at or above 1 − α**",
        "(lowest 0.934 / 0.944 at α = 0.10 / 0.20; means 0.962 / 0.967)",
        # validity: served decisions at alpha = 0.10, empty sets, defaults, the grid
        "at most two labels for 1.6% of items, three or four labels for 46.7% and the full scale (or none) for 51.7%",
        "at most 10.34% of items, judge-b fluency `learned_lac` at α = 0.20",
        "`mondrian_residual` 3, `residual` 2 of 5; 1 fell back",
        "over 30 levels beside 2",
        "seed 7.",
        # item level: eta², pooled width correlation with thousands separators and signs
        "η² = 0.24 of the variance in set size, the judge 0.28",
        "does not reproduce on these 2 judges and all 1,600 items",
        "= +0.29 (n = 31,997",
        "coherence −0.12",
        "0.79× (coherence), 0.42× (fluency)",
        "100.00% (judge-a), 99.98% (judge-b: 1 unparsed",
        "0.000–0.111",
        *(f"{m} {baselines[m]['pearson']:.3f} / {baselines[m]['spearman']:.3f}" for m in ("FactCC", "QAGS")),
        "all 2,246 rows",
        # Vicuna80
        "80 questions × 5 assistants",
        "the 5,280 votes involving guanaco-7b",
        "judge-b 488 and judge-a 487 of 800 pairs tied",
        "Copeland 0.51, win rate 0.50, exact MFAS 0.35",
        "judge-a 0.70 (0.49), judge-b 0.37 (0.81)",
        "ρ̄ 5.5%, 35% of questions with a cycle",
        # FRANK sentence-level
        "(judge-a 3, judge-b 4 rows)",
        "| judge-b | **0.320 [0.220, 0.420]** / 0.334 | 0.168 / 0.084 | 0.321 / 0.161 | −0.019 / −0.009 | "
        "0.64 (0.48 / 0.96) |",
        "judge-b 0.320 against BertScore P Art 0.321",
        "largest p-value 2e-05",
        "EntE (0.15–0.27) and OutE (0.12)",
        "fit on 52–70 `valid` items, test on 127–146",
    ]
    missing = [text for text in expected if text not in page]
    assert not missing, missing


def test_interval_printed_beside_its_figure_only_when_the_report_has_it(reports: Path) -> None:
    page = build_page(reports)
    assert "0.648 [0.610, 0.680] of 4,400 pairs" in page  # consistency_ci present
    assert "ties 3.5%;" in page  # no tie_rate_ci: the figure alone
    bias = reports / "position_bias/summary.json"
    data = json.loads(bias.read_text())
    data["rows"][0]["tie_rate_ci"] = [0.03, 0.041]
    bias.write_text(json.dumps(data))
    assert "ties 3.5% [3.0%, 4.1%];" in build_page(reports)


def test_tournament_shares_carry_their_intervals_when_the_report_has_them(reports: Path) -> None:
    """The panel's and the humans' cycle shares and the humans' mean rho (whose interval the report names
    ``violation_rate_ci``) are printed with their intervals."""
    path = reports / "transitivity/vicuna80.json"
    data = json.loads(path.read_text())
    rows = {(r["judge"], r["aggregation"]): r for r in data["rows"]}
    human, panel = rows["human", "both_orders"], rows["panel", "both_orders"]
    human |= {"violation_rate_ci": [0.04, 0.07], "share_with_cycle_ci": [0.25, 0.46]}
    panel["share_with_cycle_ci"] = [0.1, 0.2]
    path.write_text(json.dumps(data))
    page = build_page(reports)
    assert "ρ̄ 5.5% [4.0%, 7.0%], 35% [25%, 46%] of questions with a cycle" in page
    assert f"(panel {_pct(panel['share_with_cycle'])} [10.0%, 20.0%])" in page


def test_formatter_rules() -> None:
    f = Figures()
    assert (f.num(-0.1234), f.num(0.1234, 3, signed=True), f.num(-0.0001)) == ("−0.12", "+0.123", "0.00")
    assert (f.pct(0.4671), f.count(31997), f.num(None)) == ("46.7%", "31,997", "n/a")
    assert (f.span([0.3, 0.1, None]), f.span([0.5, 0.5]), f.span([0.06, 0.39], 0, pct=True)) == (
        "0.10–0.30",
        "0.50",
        "6–39%",
    )
    assert f.field({"x": 0.5, "x_ci": [0.25, 0.75]}, "x") == "0.50 [0.25, 0.75]"
    assert (
        f.field({"x": 0.5, "x_ci": [0.2, 0.8], "y_ci": [0.25, 0.75]}, "x", interval_key="y_ci") == "0.50 [0.25, 0.75]"
    )
    masked = Figures(masked=True)
    assert {masked.num(1.0), masked.count(3), masked.name("gpt-4"), masked.cited("0.3")} == {MASK}


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_missing_report_is_a_clear_error(reports: Path, key: str) -> None:
    (reports / SOURCES[key].path).unlink()
    with pytest.raises(ReportMissing) as caught:
        build_page(reports)
    message = str(caught.value)
    assert SOURCES[key].path in message
    assert f"run `{SOURCES[key].command}` first" in message


def test_missing_report_exits_2_naming_the_command(reports: Path, tmp_path: Path) -> None:
    (reports / "conformal/halves.json").unlink()
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = main(["results-page", "--reports", str(reports), "--out", str(tmp_path / "results.md")])
    assert status == 2
    assert "halves.json" in stderr.getvalue() and "python -m offline halves" in stderr.getvalue()
    assert not (tmp_path / "results.md").exists()


def test_missing_field_names_the_section_and_reports(reports: Path) -> None:
    path = reports / "conformal/halves.json"
    data = json.loads(path.read_text())
    del data["share_at_target"]
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"served_section: .*share_at_target.*halves\.json"):
        build_page(reports)


def test_fixed_text_holds_no_number(reports: Path) -> None:
    masked = build_page(reports, masked=True)
    assert stray_numbers(masked) == []
    # the check finds a number planted in the fixed text, and ignores code spans and notation
    assert stray_numbers(masked + "\nsix judges, 42 cells\n") != []
    assert stray_numbers(masked + "\n`x = 42` " + NOTATION[0] + "\n") == []


def test_generate_writes_a_page_that_passes_the_committed_page_check(reports: Path, tmp_path: Path) -> None:
    stdout = io.StringIO()
    out = tmp_path / "docs" / "results.md"
    with contextlib.redirect_stdout(stdout):
        assert main(["results-page", "--reports", str(reports), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert check_page(text) == []
    assert text == build_page(reports, reports_label=str(reports))
    edited = text.replace("98.7%", "99.7%")
    assert edited != text
    assert any("edited after it was generated" in p for p in check_page(edited))


def test_generate_refuses_fixed_text_with_a_number(reports: Path, tmp_path: Path, monkeypatch) -> None:
    from offline.results_page import page

    monkeypatch.setattr(page, "TITLE", "# Results on 6 real judges")
    with pytest.raises(ValueError, match="come from no report"):
        generate(reports, tmp_path / "results.md")


def test_halves_fields_read_exist_in_its_report_type() -> None:
    read = {"n_documents", "n_checked", "n_below_floor", "share_at_target", "n_empty_accepted", "n_logprobs_larger"}
    assert read <= set(HalvesReport.__struct_fields__)
    assert {"alpha", "coverage"} <= set(HalvesRow.__struct_fields__)


def test_committed_page_was_generated() -> None:
    text = COMMITTED.read_text(encoding="utf-8")
    assert check_page(text) == [], "docs/results.md: regenerate it with `make results`"
    for source in SOURCES.values():
        assert f"`reports/{source.path}`" in text
