"""/schema/redoc: every value placed in the inline script or the HTML is escaped for where it goes."""

from __future__ import annotations

import html.parser
import json
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from service.config.settings import Settings
from service.http.docs_page import script_safe_json
from tests.service.conftest import AppHarness

HOSTILE = "rd<!--<script>"


class _Tags(html.parser.HTMLParser):
    """The page as an HTML parser reads it: its tags, its comments and each script's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.comments: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        self._in_script = False

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20))
def test_the_inlined_json_is_the_same_value_with_nothing_html_or_js_can_misread(value: object):
    encoded = script_safe_json(json.dumps(value, ensure_ascii=False).encode())
    text = encoded.decode()
    assert not any(c in text for c in "<>&\u2028\u2029")
    assert json.loads(text) == value


def test_a_judge_named_to_break_the_page_stays_a_string_in_it(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings], tmp_path: Path
):
    judges = tmp_path / "judges.json"
    judges.write_text(json.dumps([{"name": HOSTILE, "model": "m</script>", "base_url": "http://127.0.0.1:9/v1"}]))
    harness = start_app(make_settings(judges_file=judges))
    document = harness.client.get("/schema/openapi.json").json()
    assert HOSTILE in json.dumps(document, ensure_ascii=False)  # the name reaches the spec (the judge enum)
    page = harness.client.get("/schema/redoc")
    assert page.status_code == 200
    parsed = _Tags()
    parsed.feed(page.text)
    assert parsed.comments == []  # "<!--" in the document would open a comment inside the script
    assert [t for t in parsed.tags if t.endswith("script")] == ["script", "/script", "script", "/script"]
    assert parsed.tags[-3:] == ["/script", "/body", "/html"]  # the inline script ends where the page means it to
    inline = parsed.scripts[-1]
    # A browser reading "<!--" then "<script" inside a script enters its "double escaped" state, where the page's
    # own "</script>" no longer ends the script (HTML Living Standard, 13.2.5.20-29): none of them may be inside.
    assert "<!--" not in inline and "<script" not in inline.lower() and "</" not in inline
    assert inline.startswith("Redoc.init(") and inline.endswith(",{},document.getElementById('redoc-container'))")
    assert json.loads(inline.removeprefix("Redoc.init(").split(",{},document.getElementById")[0]) == document
