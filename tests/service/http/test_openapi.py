"""The committed OpenAPI spec is fresh, deterministic and describes problem+json errors."""

from __future__ import annotations

import json
from pathlib import Path

from service.config.limits import LimitSettings
from service.config.settings import Settings, default_thresholds_path
from service.openapi_export import DEFAULT_PATH, main, render_openapi
from tests.service.conftest import STAND_IN


def test_committed_spec_is_fresh():
    committed = DEFAULT_PATH.read_text(encoding="utf-8")
    assert committed == render_openapi(), "openapi/openapi.json is stale: run `python -m service.openapi_export`"


def test_export_is_deterministic_and_sorted(tmp_path: Path):
    target = tmp_path / "spec.json"
    assert main([str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert text == render_openapi() and text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_spec_matches_what_make_serve_serves(start_app):
    # make serve: the shipped calibration, no judges, rubrics, panels or keys
    served = start_app(Settings(thresholds_path=default_thresholds_path())).client.get("/schema/openapi.json")
    assert served.json() == json.loads(render_openapi())


def test_the_served_spec_names_this_deployments_values_and_follows_a_reload(start_app, make_settings, tmp_path: Path):
    limits = LimitSettings(reload_dir=tmp_path, max_artifact_bytes=10_000_000)
    harness = start_app(make_settings(admin_api_key="admin", limits=limits))
    score = harness.client.get("/schema/openapi.json").json()["components"]["schemas"]["ScoreRequest"]
    assert STAND_IN in score["properties"]["judge"]["enum"]  # the test artifact's judge, not the shipped ones
    assert "gpt-4o-mini-2024-07-18" not in score["properties"]["judge"]["enum"]
    assert score["properties"]["criterion"]["enum"] == [
        "coherence",
        "consistency",
        "faithfulness",
        "fluency",
        "relevance",
    ]
    assert score["properties"]["panel"]["enum"] == [None]  # no PANELS_FILE: no panel can be named
    (integer,) = [b for b in score["properties"]["judge_score"]["anyOf"] if b.get("type") == "integer"]
    assert integer["maximum"] == 5
    # a reloaded calibration with another judge and criterion: the served spec follows it
    text = harness.services.settings.thresholds_path.read_text(encoding="utf-8")
    (tmp_path / "other.json").write_text(
        text.replace(f'"{STAND_IN}"', '"judge-b"').replace('"relevance"', '"helpfulness"')
    )
    reload = harness.client.post(
        "/v1/calibration/reload", json={"path": "other.json"}, headers={"Authorization": "Bearer admin"}
    )
    assert reload.status_code == 200, reload.text
    score = harness.client.get("/schema/openapi.json").json()["components"]["schemas"]["ScoreRequest"]
    assert "judge-b" in score["properties"]["judge"]["enum"] and STAND_IN not in score["properties"]["judge"]["enum"]
    assert "helpfulness" in score["properties"]["criterion"]["enum"]
    # a criterion only the calibration covers needs the caller's verdict (no live call can ask about it)
    assert any(
        rule.get("anyOf", [{}])[0].get("not", {}).get("properties", {}).get("criterion", {}).get("enum")
        == ["helpfulness"]
        for rule in score["allOf"]
    )


def test_the_offline_reference_page_and_its_script_load_without_any_external_url(start_app, make_settings):
    import re

    from service.http.docs_page import REDOC_BUNDLE

    harness = start_app(make_settings(api_keys=("k1",)))  # public like the JSON document: no key sent
    page = harness.client.get("/schema/redoc")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert not re.search(r"(?i)(https?:)?//[a-z0-9.-]+\.[a-z]", html.split("Redoc.init(")[0]), "external URL in <head>"
    sources = re.findall(r"<(?:script|link|img)[^>]*(?:src|href)=\"([^\"]*)\"", html)
    assert sources == ["redoc.standalone.js"]  # relative: /schema/redoc -> /schema/redoc.standalone.js
    assert "fonts.googleapis" not in html and "cdn." not in html and "jsdelivr" not in html
    # the document inlined is the live one served at /schema/openapi.json, safe inside <script>
    inlined = html.split("Redoc.init(", 1)[1].rsplit(",{},document.getElementById", 1)[0]
    assert "</" not in inlined
    assert json.loads(inlined) == harness.client.get("/schema/openapi.json").json()
    script = harness.client.get("/schema/redoc.standalone.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert script.content == REDOC_BUNDLE.read_bytes() and len(script.content) < 2_000_000
    assert b"e.Redoc=" in script.content[:2000]  # the UMD header sets the global Redoc the page calls
    licence = REDOC_BUNDLE.parent / "LICENSE"
    assert "MIT License" in licence.read_text()
