"""/schema/redoc: the API reference as an HTML page that works offline, and /schema/redoc.standalone.js, its script.

Litestar's Redoc plugin loads Redoc, a favicon and Google fonts from CDNs, so offline it renders blank. This page
loads only the Redoc bundle vendored in ``service/http/static/redoc/`` (MIT; version and hashes in its README),
served by the service itself at a relative URL, and inlines the same JSON document as /schema/openapi.json (with
the deployment's current names and scales: ``service.http.spec_values.spec_document``). Both paths are public,
like the JSON document (``service.http.edge.PUBLIC_PATHS``).

Every value placed in the page is escaped for where it goes: the title by ``html.escape``; the inlined JSON by
``script_safe_json``, which writes ``<``, ``>``, ``&`` and U+2028/U+2029 as JSON ``\\uXXXX`` escapes, so no name
a deployment carries (a judge or criterion named ``rd<!--<script>``) can end the script, open an HTML comment
inside it or break the JavaScript; the document parses back to the same JSON.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

from litestar import Request, Response, Router, get
from litestar.openapi.plugins import RedocRenderPlugin

from service.http.spec_values import spec_document

__all__ = ["ASSET", "OfflineRedoc", "REDOC_BUNDLE", "script_safe_json"]

REDOC_BUNDLE = Path(__file__).resolve().parent / "static" / "redoc" / "redoc.standalone.js"
ASSET = "redoc.standalone.js"  # under the OpenAPI router (/schema); the page names it relatively
_CACHE_CONTROL = "public, max-age=86400"
# Characters that mean something to the HTML parser inside <script> ("</script", "<!--") or end a JavaScript
# line (U+2028, U+2029), written as JSON escapes; JSON puts them only inside strings, where the escape is the same.
_SCRIPT_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def script_safe_json(document: bytes) -> bytes:
    """A UTF-8 JSON text safe inside an inline ``<script>``: the same JSON value, without ``<``, ``>``, ``&``,
    U+2028 or U+2029."""
    for raw, escaped in _SCRIPT_ESCAPES:
        document = document.replace(raw, escaped)
    return document


@cache
def _bundle() -> bytes:
    """The vendored Redoc bundle's bytes (read once; the file ships with the package)."""
    return REDOC_BUNDLE.read_bytes()


@get(f"/{ASSET}", media_type="text/javascript", sync_to_thread=False, include_in_schema=False)
def redoc_bundle() -> Response[bytes]:
    """The vendored Redoc script."""
    return Response(
        _bundle(),
        media_type="text/javascript",
        headers={"Cache-Control": _CACHE_CONTROL, "X-Content-Type-Options": "nosniff"},
    )


class OfflineRedoc(RedocRenderPlugin):
    """Redoc at /schema/redoc with the vendored script, no fonts or favicon from a CDN, the live document inlined."""

    def __init__(self) -> None:
        super().__init__(js_url=ASSET, google_fonts=False, path="/redoc", favicon="")

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        """The page on the deployment's live document; the script is named relative to the page (a trailing slash
        on the page's path goes up one level), so the page also works behind a path prefix."""
        script = ("../" if request.url.path.endswith("/") else "") + ASSET
        document = script_safe_json(self.render_json(request, spec_document(request.app)))
        title = html.escape(str(openapi_schema["info"]["title"]))
        return b"".join(
            [
                f'<!DOCTYPE html><html><head><title>{title}</title><meta charset="utf-8"/>'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<script src="{script}"></script>{self.style}</head>'
                '<body><div id="redoc-container"></div><script>Redoc.init('.encode(),
                document,
                b",{},document.getElementById('redoc-container'))</script></body></html>",
            ]
        )

    def receive_router(self, router: Router) -> None:
        """Serve the script beside the page (/schema/redoc.standalone.js)."""
        router.register(redoc_bundle)
