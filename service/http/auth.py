"""API keys: ``Authorization: Bearer <key>`` on every non-public path (when API_KEYS is set) and the admin key on
the admin routes (reload, calibration jobs).

Keys are compared with ``hmac.compare_digest`` against every configured key (no early exit), so the time
taken does not tell which key, or which prefix of one, was close.
"""

from __future__ import annotations

import hmac

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from service.config.settings import Settings
from service.errors import ForbiddenError, UnauthorizedError

__all__ = ["bearer_token", "check_api_key", "is_admin", "require_admin_key"]


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value (scheme case-insensitive), else None."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _matches(token: str, keys: tuple[str, ...]) -> bool:
    results = [hmac.compare_digest(token.encode(), key.encode()) for key in keys]
    return any(results)


def check_api_key(settings: Settings, authorization: str | None) -> None:
    """401 unless API_KEYS is unset or the bearer key is one of API_KEYS or ADMIN_API_KEY.

    Called by the outermost ASGI layer (``service.http.edge``) for every request but the public paths (health,
    metrics, spec): a Litestar guard would copy the route handler on every call, which costs more than the
    whole check.
    """
    if not settings.api_keys:
        return
    token = bearer_token(authorization)
    if token is None:
        raise UnauthorizedError("this service requires an API key: send 'Authorization: Bearer <key>'")
    keys = settings.api_keys + ((settings.admin_api_key,) if settings.admin_api_key else ())
    if not _matches(token, keys):
        raise UnauthorizedError("the bearer key is not valid")


def is_admin(settings: Settings, authorization: str | None) -> bool:
    """True when ADMIN_API_KEY is set and ``authorization`` carries it as the bearer key (what may see the server's
    files and addresses)."""
    key = settings.admin_api_key
    token = bearer_token(authorization)
    if not key or token is None:
        return False
    return hmac.compare_digest(token.encode(), key.encode())


async def require_admin_key(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard of the admin routes (reload, calibration jobs): 403 when ADMIN_API_KEY is unset; else 401 without a
    bearer key, 403 if not it.

    A coroutine on purpose: Litestar runs a synchronous guard in a worker thread.
    """
    settings: Settings = connection.app.state.services.settings
    if not settings.admin_api_key:  # said first: no key the caller could send would help
        raise ForbiddenError("no admin key is configured, so this admin operation is disabled: set ADMIN_API_KEY")
    token = bearer_token(connection.headers.get("authorization"))
    if token is None:
        raise UnauthorizedError("this operation requires the admin key: send 'Authorization: Bearer <ADMIN_API_KEY>'")
    if not _matches(token, (settings.admin_api_key,)):
        raise ForbiddenError("this key may not do this admin operation; the admin key is required")
