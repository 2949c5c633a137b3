"""/schema/redoc: the API reference as an HTML page that works offline, and /schema/redoc.standalone.js, its script.

Litestar's Redoc plugin loads Redoc, a favicon and Google fonts from CDNs, so offline it renders blank. This page
loads only the Redoc bundle vendored in ``service/http/static/redoc/`` (MIT; version and hashes in its README),
served by the service itself at a relative URL, and inlines the same JSON document as /schema/openapi.json (with
the deployment's current names and scales: ``service.http.spec_values.spec_document``). Both paths are public,
like the JSON document (``service.http.edge.PUBLIC_PATHS``).
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

from litestar import Request, Response, Router, get
from litestar.openapi.plugins import RedocRenderPlugin

from service.http.spec_values import spec_document

__all__ = ["ASSET", "OfflineRedoc", "REDOC_BUNDLE"]

REDOC_BUNDLE = Path(__file__).resolve().parent / "static" / "redoc" / "redoc.standalone.js"
ASSET = "redoc.standalone.js"  # under the OpenAPI router (/schema); the page names it relatively
_CACHE_CONTROL = "public, max-age=86400"


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
        document = self.render_json(request, spec_document(request.app)).replace(b"</", b"<\\/")
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
