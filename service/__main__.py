"""``python -m service``: serve the app with uvicorn on HOST:PORT (default 127.0.0.1:8000).

Prints a curl example that works on a fresh machine (the caller's own verdict needs no judge) and the address of
a shipped judge's report page.
"""

from __future__ import annotations

import sys

from service.config.settings import Settings, SettingsError
from service.http.app import create_app
from service.http.server import serve

__all__ = ["curl_example", "main", "report_example"]


def curl_example(settings: Settings) -> str:
    """A curl command scoring a caller-supplied verdict against this server (with the bearer header if needed)."""
    auth = ' -H "Authorization: Bearer $API_KEY"' if settings.api_keys else ""
    body = '{"criterion": "coherence", "judge": "gpt-4o-mini-2024-07-18", "judge_score": 4}'
    return (
        f"curl -s -X POST http://{settings.host}:{settings.port}/v1/score"
        f" -H 'Content-Type: application/json'{auth} -d '{body}'"
    )


def report_example(settings: Settings) -> str:
    """The report page of the shipped G-Eval judge on this server (``docs/report-cards.md``)."""
    return f"http://{settings.host}:{settings.port}/v1/judges/gpt-4o-mini-2024-07-18/report.html"


def main() -> int:
    """Read settings, print where to reach the service, and run uvicorn until interrupted."""
    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    workers = settings.limits.workers
    app = create_app(settings) if workers == 1 else None  # several workers build their own apps
    print(
        f"Conformal Judge on http://{settings.host}:{settings.port}  ({workers} worker process(es); "
        "OpenAPI: /schema/openapi.json, health: /readyz)"
    )
    print("Try:")
    print(f"  {curl_example(settings)}")
    print(f"A judge's report card (open in a browser): {report_example(settings)}")
    sys.stdout.flush()
    serve(settings, app)  # header/body read timeouts, keep-alive limit, WORKERS (service/http/server.py)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
