"""The report page in a real browser: headless Chromium (Debian's package) loads the page of a shipped judge and of
a bring-your-own calibration job from the app on a loopback port; every figure the browser's DOM shows
(``data-figure``) equals the JSON's, a screenshot is taken, and the page passes the accessibility checks below.

Accessibility checks (our own, on the DOM the browser built; no checker is fetched from the network): the document
has a language and a title; one h1 and no skipped heading level; every image has a text alternative; every SVG has
``role="img"`` and an accessible name from ``aria-labelledby`` ids that exist and hold text; every table has a
caption and header cells; text colours (the page's CSS and the SVG text) reach a 4.5:1 contrast ratio on the white
background and SVG marks 3:1 (WCAG 2.1, 1.4.3 and 1.4.11).

The browser is driven over the DevTools protocol on a pipe (``tests/chromium.py``), which sends the admin key the
job's page needs. Chromium missing: the test skips, except under ``CI=true`` (``.ci/run`` installs it), where it
fails.
``UPDATE_DOCS_FIGURES=1`` also writes the shipped judge's screenshot to ``docs/figures/report_card.png``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.config.settings import Settings
from tests.chromium import Chromium
from tests.service.servers import serve_in_thread

ROOT = Path(__file__).resolve().parents[3]
SHIPPED_JUDGE, SHIPPED_CRITERION = "gpt-4o-mini-2024-07-18", "consistency"
ADMIN = "admin-key"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: .ci/run installs Debian's package (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI=true makes this a failure")
    return found


class _Page(HTMLParser):
    """What the checks read from the DOM: figures, headings, images, SVGs, tables, ids, colours."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, str] = {}
        self.lang = ""
        self.title = ""
        self.headings: list[int] = []
        self.images: list[dict[str, str | None]] = []
        self.svgs: list[dict[str, str | None]] = []
        self.tables = 0
        self.captions = 0
        self.table_headers = 0
        self.ids: dict[str, str] = {}
        self.styles = ""
        self.svg_text_fills: list[str] = []
        self.svg_mark_colours: list[str] = []
        self._open: list[tuple[str, str | None]] = []  # (tag, data-figure or id being read)
        self._in_svg = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.lang = a.get("lang") or ""
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))
        if tag == "img":
            self.images.append(a)
        if tag == "svg":
            self.svgs.append(a)
            self._in_svg += 1
        if self._in_svg and tag == "text" and a.get("fill"):
            self.svg_text_fills.append(a["fill"])  # type: ignore[arg-type]
        if self._in_svg and tag in ("rect", "polyline", "circle"):
            colour = a.get("fill") if a.get("fill") not in (None, "none") else a.get("stroke")
            if colour:
                self.svg_mark_colours.append(colour)
        self.tables += tag == "table"
        self.captions += tag == "caption"
        self.table_headers += tag == "th"
        self._open.append((tag, a.get("data-figure") or (("#" + a["id"]) if a.get("id") else None)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._in_svg -= 1
        while self._open and self._open[-1][0] != tag:
            self._open.pop()
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for _tag, key in reversed(self._open):
            if key is not None:
                if key.startswith("#"):
                    self.ids[key[1:]] = self.ids.get(key[1:], "") + data
                else:
                    self.figures[key] = self.figures.get(key, "") + data
                break
        if self._open and self._open[-1][0] == "title" and not self._in_svg:
            self.title += data
        if self._open and self._open[-1][0] == "style":
            self.styles += data


def _value(document: Any, path: str) -> Any:
    for part in path.split("."):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _assert_figures_equal_the_json(page: _Page, report: dict[str, Any]) -> int:
    assert page.figures, "the page shows no figure"
    for path, shown in page.figures.items():
        value = _value(report, path)
        if value is None:
            assert shown == "n/a", (path, shown)
        elif isinstance(value, bool) or isinstance(value, int):
            assert shown == str(value), (path, shown, value)
        else:
            digits = len(shown.partition(".")[2])
            assert abs(float(shown) - value) <= 0.5 * 10**-digits + 1e-12, (path, shown, value)
    return len(page.figures)


def _luminance(colour: str) -> float:
    colour = colour.lstrip("#")
    channels = [int(colour[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast_on_white(colour: str) -> float:
    return 1.05 / (_luminance(colour) + 0.05)


def _assert_accessible(page: _Page) -> None:
    assert page.lang == "en" and page.title.strip()
    assert page.headings.count(1) == 1 and page.headings[0] == 1
    assert all(b - a <= 1 for a, b in zip(page.headings, page.headings[1:], strict=False)), page.headings
    assert all((image.get("alt") or "").strip() for image in page.images)
    assert page.svgs
    for svg in page.svgs:
        assert svg.get("role") == "img"
        names = (svg.get("aria-labelledby") or "").split()
        assert names and all(page.ids.get(name, "").strip() for name in names), svg
    assert page.tables and page.captions == page.tables and page.table_headers >= page.tables
    text_colours = re.findall(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", page.styles) + page.svg_text_fills
    assert text_colours
    for colour in text_colours:
        assert _contrast_on_white(colour) >= 4.5, colour
    assert page.svg_mark_colours
    for colour in page.svg_mark_colours:
        assert _contrast_on_white(colour) >= 3.0, colour


def _byo_rows(n_documents: int = 30) -> str:
    """A labelled JSON Lines file as a new user's: one judge, one criterion, 4 items per document."""
    import numpy as np

    rng = np.random.default_rng(43)
    lines = []
    for d in range(n_documents):
        for part in range(4):
            human = int(rng.integers(1, 6))
            score = int(np.clip(human + rng.choice([0, 0, 0, 1, -1]), 1, 5))
            lines.append(
                f'{{"item_id": "doc{d}/{part}", "criterion": "helpfulness", "judge": "my-judge", "human": {human}, '
                f'"judge_score": {score}, "group": "doc{d}"}}'
            )
    return "\n".join(lines) + "\n"


def _check(browser: Chromium, base: str, page_path: str, json_path: str, headers: dict[str, str]) -> bytes:
    """Load the page, compare its figures with the JSON, run the accessibility checks; the screenshot."""
    report = httpx.get(base + json_path, headers=headers, timeout=60).json()
    dom, shot = browser.load(base + page_path, headers=headers)
    page = _Page()
    page.feed(dom)
    shown = _assert_figures_equal_the_json(page, report)
    assert shown > 50, shown
    _assert_accessible(page)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    return shot


def test_the_report_pages_show_the_jsons_figures_in_a_real_browser(tmp_path: Path) -> None:
    chromium = _chromium()
    settings = Settings(thresholds_path=ROOT / "artifact" / "thresholds.json", admin_api_key=ADMIN)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with serve_in_thread(settings) as served, Chromium(chromium, tmp_path / "profile") as browser:
        base = f"http://127.0.0.1:{served.port}"
        query = f"?criterion={SHIPPED_CRITERION}"
        shot = _check(browser, base, f"/v1/judges/{SHIPPED_JUDGE}/report.html{query}",
                      f"/v1/judges/{SHIPPED_JUDGE}/report{query}", {})  # fmt: skip
        (tmp_path / "shipped.png").write_bytes(shot)
        if os.environ.get("UPDATE_DOCS_FIGURES") == "1":
            (ROOT / "docs" / "figures" / "report_card.png").write_bytes(shot)

        submitted = httpx.post(base + "/v1/calibrations", content=_byo_rows(),
                               headers={"Content-Type": "application/x-ndjson", **admin}, timeout=60)  # fmt: skip
        assert submitted.status_code == 202, submitted.text
        job = submitted.json()
        deadline = time.monotonic() + 600
        while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
            time.sleep(1)
            job = httpx.get(f"{base}/v1/calibrations/{job['id']}", headers=admin, timeout=60).json()
        assert job["status"] == "done", job
        assert job["report"] == f"/v1/calibrations/{job['id']}/report.html"  # one click from the job's answer
        _check(browser, base, job["report"], job["report"].removesuffix(".html"), admin)
