"""The floor of the HTTP benchmarks: a bare Litestar app whose POST /v1/score returns the JSON body it received.

``python -m bench.echo_app`` serves it exactly as ``python -m service`` serves the service (``service.http.server``:
the same uvicorn protocol with its deadlines, HOST and PORT from the environment), so the two differ only in the app.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar, Request, post

__all__ = ["baseline_app", "main"]


@post("/v1/score", status_code=200)
async def _echo(request: Request) -> Any:
    return await request.json()


def baseline_app() -> Litestar:
    """A bare Litestar app whose POST /v1/score returns the JSON body it received."""
    return Litestar(route_handlers=[_echo], openapi_config=None)


def main() -> None:
    """Serve ``baseline_app()`` with the service's own server code and settings (HOST, PORT, the deadlines)."""
    from service.config.settings import Settings
    from service.http.server import serve

    serve(Settings.from_env(), baseline_app())


if __name__ == "__main__":
    main()
