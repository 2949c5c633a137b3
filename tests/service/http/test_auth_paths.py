"""API keys cannot be spelled around (issue 22, D1): every route of the committed spec and of the app's route
table, under every spelling that the router or uvicorn maps back onto it (``//``, ``%2F``, a trailing slash,
``/./``, ``..``, case), for every method, over real HTTP with the target sent byte for byte.

With API_KEYS set, a request without a valid key is answered 401 unless it names a public path (health,
metrics, the spec) exactly; with the right key the canonical spelling of every route is let through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.config.settings import Settings
from tests.service.servers import raw_request, serve_in_thread

ROOT = Path(__file__).resolve().parents[3]
KEY = "k1"
ADMIN = "admin-key"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
SAMPLE_ID = "0" * 32
# answered without a key (service/http/routes/health.py and the spec document), on exactly this spelling
PUBLIC_PATHS = frozenset(
    {
        "/healthz",
        "/readyz",
        "/metrics",
        "/schema",
        "/schema/openapi.json",
        "/schema/redoc",
        "/schema/redoc.standalone.js",
    }
)
_PARAMETER = re.compile(r"\{[^}]*\}")


def _spec_paths() -> set[str]:
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    return {_PARAMETER.sub(SAMPLE_ID, path) for path in spec["paths"]}


def _route_paths(app) -> set[str]:
    return {_PARAMETER.sub(SAMPLE_ID, route.path) for route in app.routes}


def spellings(path: str, port: int) -> list[str]:
    """``path`` and spellings of it that the router or uvicorn may map back onto the same route."""
    inner = path[1:]
    variants = [
        path,
        "/" + path,  # //v1/score
        "//" + path,  # ///v1/score
        "/%2F" + inner,
        "/%2f" + inner,
        path.replace("/", "%2F"),
        path.replace("/", "//"),  # //v1//score
        path + "/",
        path + "//",
        path + "?x=1",
        "/./" + inner,
        path.replace("/", "/./"),
        "/v1/../" + inner,
        "/x/.." + path,
        "/%2e/" + inner,
        path.upper(),
        path.replace("v1", "V1"),
        path.title(),
        "/" + "%" + format(ord(inner[0]), "02X") + inner[1:],  # the first letter %-encoded
        f"http://127.0.0.1:{port}{path}",  # absolute form
        f"http://127.0.0.1:{port}/{path}",
    ]
    return list(dict.fromkeys(variants))


@pytest.fixture(scope="module")
def keyed_server(artifact_path: Path) -> Iterator[tuple[int, set[str]]]:
    """A uvicorn server (the service's protocol) with API_KEYS=k1 and an admin key; yields (port, route paths)."""
    settings = Settings(thresholds_path=artifact_path, api_keys=(KEY,), admin_api_key=ADMIN)
    with serve_in_thread(settings) as served:
        yield served.port, _route_paths(served.app.inner) | _spec_paths()


def test_the_spec_and_the_route_table_agree_on_what_is_public(keyed_server):
    _, paths = keyed_server
    assert _spec_paths() <= paths
    # every route outside /v1 is public, and nothing else is (the allow-list names only real routes)
    outside = {path for path in paths if not path.startswith("/v1/") and SAMPLE_ID not in path}
    assert outside <= PUBLIC_PATHS | {"/schema/" + SAMPLE_ID}, outside
    assert PUBLIC_PATHS <= paths


@pytest.mark.parametrize("authorization", [None, "Bearer wrong"])  # other malformed headers: test_auth_limits
def test_no_spelling_of_any_route_answers_without_a_valid_key(keyed_server, authorization: str | None):
    port, paths = keyed_server
    headers = {} if authorization is None else {"Authorization": authorization}
    leaks = []
    for path in sorted(paths):
        for target in spellings(path, port):
            for method in METHODS:
                status, _ = raw_request(port, method, target, headers)
                public = target.partition("?")[0] in PUBLIC_PATHS
                if status == 500 or (not public and status != 401):
                    leaks.append((method, target, status))
    # the worst first: answers given without a key, on /v1 routes
    answered = sorted((leak for leak in leaks if leak[2] < 400), key=lambda leak: "v1" not in leak[1].lower())
    assert not leaks, (len(leaks), answered[:40], leaks[:40])


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "//v1/score"),
        ("POST", "///v1/score"),
        ("POST", "/%2Fv1/score"),
        ("POST", "//v1//score"),
        ("GET", "//v1/calibration"),
        ("POST", "//v1/jobs"),
        ("GET", f"//v1/jobs/{SAMPLE_ID}/results"),
    ],
)
def test_the_reported_bypasses_are_401(keyed_server, method: str, target: str):
    port, _ = keyed_server
    body = b'{"criterion": "relevance", "judge": "stand-in", "judge_score": 3}' if method == "POST" else b""
    status, reply = raw_request(port, method, target, {"Content-Type": "application/json"}, body)
    assert status == 401, reply[:400]
    assert b"application/problem+json" in reply and b"www-authenticate: bearer" in reply.lower()


def test_public_paths_stay_open_on_their_canonical_spelling_only(keyed_server):
    port, _ = keyed_server
    for path in sorted(PUBLIC_PATHS):
        assert raw_request(port, "GET", path)[0] == 200, path
        for target in ("/" + path, path + "/", "/%2F" + path[1:], path.upper(), "/." + path):
            assert raw_request(port, "GET", target)[0] == 401, target


def test_the_right_key_passes_on_every_route(keyed_server):
    port, paths = keyed_server
    bearer = {"Authorization": f"Bearer {KEY}"}
    for path in sorted(paths):
        for method in METHODS:
            status, reply = raw_request(port, method, path, bearer)
            assert status != 500, (method, path, reply[:400])
            admin_only = path == "/v1/calibration/reload" and method == "POST"
            if not admin_only:
                assert status != 401, (method, path, reply[:400])
