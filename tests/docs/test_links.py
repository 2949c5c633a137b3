"""Every relative link of README.md and docs/*.md resolves: the file exists, and a ``#fragment`` into a Markdown file
names one of its headings (GitHub's anchor rule) or an explicit ``<a id>``/``<a name>``.

Links inside code (fenced blocks, inline code spans) are not links and are skipped; absolute URLs (``https:``,
``mailto:``) are not checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+(\S+)", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: its text (links and code marks dropped) lower-cased, every character but
    letters, digits, ``_``, ``-`` and spaces removed, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors a Markdown text defines: its headings' (a repeated one gets ``-1``, ``-2``, ...) and explicit."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in _HEADING.finditer(_FENCE.sub("", markdown)):
        anchor = github_anchor(match.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found | set(_EXPLICIT_ANCHOR.findall(markdown))


def broken_links(document: Path) -> list[str]:
    """The relative links of ``document`` that do not resolve, each with what is wrong."""
    text = _INLINE_CODE.sub("", _FENCE.sub("", document.read_text(encoding="utf-8")))
    broken = []
    for target in [*_LINK.findall(text), *_REFERENCE.findall(text)]:
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("//"):
            continue  # an absolute URL
        path, _, fragment = target.partition("#")
        destination = (document.parent / path).resolve() if path else document
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md":
            if fragment not in anchors(destination.read_text(encoding="utf-8")):
                broken.append(f"{target}: no heading or anchor #{fragment} in {destination.name}")
    return broken


@pytest.mark.parametrize("document", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    assert broken_links(document) == []


def test_the_anchor_rule_and_a_broken_link_are_caught(tmp_path: Path) -> None:
    assert github_anchor("Estimates from a job") == "estimates-from-a-job"
    assert github_anchor("`POST /v1/score`: one verdict, a set (and why)") == "post-v1score-one-verdict-a-set-and-why"
    assert github_anchor("[Getting](x.md) the data") == "getting-the-data"
    assert anchors('# A\n## A\n```\n# not a heading\n```\n<a id="here"></a>\n') == {"a", "a-1", "here"}
    (tmp_path / "other.md").write_text("# Title\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#title) [gone](missing.md) [bad](other.md#nowhere) [self](#top) `[code](nope.md)`\n"
        "[web](https://example.org/x.md) [mail](mailto:a@b.c)\n\n# Top\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading or anchor #nowhere in other.md",
    ]
