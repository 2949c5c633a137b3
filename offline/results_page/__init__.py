"""``docs/results.md`` generated from the JSON reports under ``reports/`` (``python -m offline results-page``).

================================  ===================================================================
module                            holds
================================  ===================================================================
``reports.py``                    the report files read, the command writing each, loading them
``figures.py``                    the one formatter of every figure (and its masked form)
``page.py``                       header, digest, sections; the checks a committed page passes
``served.py``                     the opening and the served artifact on unseen documents
``item_level.py``                 the paper's item-level reproduction and its neighbours
``tournaments.py``                transitivity on the Vicuna80 tournaments
``factuality.py``                 the recorded sentence-level fact-checkers on FRANK
``studies.py``                    the table of the other studies' commands
================================  ===================================================================
"""

from __future__ import annotations

from pathlib import Path

from offline.results_page.factuality import factuality_section
from offline.results_page.item_level import item_level_section
from offline.results_page.page import SectionBuilder, render_page, stray_numbers, write_page
from offline.results_page.reports import Reports
from offline.results_page.served import opening, served_section
from offline.results_page.studies import studies_section
from offline.results_page.tournaments import tournaments_section

__all__ = ["SECTIONS", "build_page", "generate"]

SECTIONS: tuple[SectionBuilder, ...] = (
    opening,
    served_section,
    item_level_section,
    tournaments_section,
    factuality_section,
    studies_section,
)


def build_page(reports_dir: Path, *, reports_label: str = "reports", masked: bool = False) -> str:
    """The page from the reports under ``reports_dir`` (``masked``: figures masked, for the fixed-text check)."""
    return render_page(Reports(reports_dir), SECTIONS, reports_label=reports_label, masked=masked)


def generate(reports_dir: Path, out: Path, *, reports_label: str = "reports") -> Path:
    """Write the page to ``out``; refuse (``ValueError``) when its fixed text holds a number that is no figure."""
    page = build_page(reports_dir, reports_label=reports_label)
    stray = stray_numbers(build_page(reports_dir, reports_label=reports_label, masked=True))
    if stray:
        raise ValueError("the page's fixed text holds numbers that come from no report: " + " | ".join(stray))
    return write_page(out, page)
