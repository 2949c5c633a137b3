"""The exceptions the client raises: an API problem (RFC 9457), a transport failure, a job that took too long."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

__all__ = ["ApiError", "ConformalJudgeError", "JobTimeout", "TransportError", "api_error"]


class ConformalJudgeError(Exception):
    """Base of every exception this client raises."""


class ApiError(ConformalJudgeError):
    """The service answered with an error status; the fields of its problem+json body (RFC 9457).

    ``raw`` is the whole problem object (``errors``, ``allowed``, ``checks`` ... when the service sent them);
    a body that was not a problem object gives ``type`` ``about:blank`` and the reason phrase as ``title``.
    """

    def __init__(
        self,
        *,
        status: int,
        type: str,  # noqa: A002 - the RFC 9457 member's name
        title: str,
        detail: str,
        instance: str | None = None,
        retry_after: float | None = None,
        raw: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.retry_after = retry_after
        self.raw: Mapping[str, Any] = raw if raw is not None else {}

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The per-field validation errors of a 422 (``[]`` when the problem has none)."""
        return list(self.raw.get("errors") or [])

    @property
    def allowed(self) -> list[str]:
        """The values the service would accept, when it named them (``[]`` otherwise)."""
        return list(self.raw.get("allowed") or [])


class TransportError(ConformalJudgeError):
    """No answer from the service (connection refused or lost, timeout) after the retries the call allowed."""


class JobTimeout(ConformalJudgeError):
    """A job was still unfinished when the caller's timeout passed; ``last`` is its last status seen."""

    def __init__(self, message: str, last: Any) -> None:
        super().__init__(message)
        self.last = last


def api_error(response: httpx.Response, retry_after: float | None = None) -> ApiError:
    """The ``ApiError`` of an error response, from its problem+json body when it has one."""
    body: Any = None
    if response.content:
        try:
            body = response.json()
        except ValueError:
            body = None
    if isinstance(body, dict) and isinstance(body.get("title"), str):
        return ApiError(
            status=int(body.get("status") or response.status_code),
            type=str(body.get("type") or "about:blank"),
            title=body["title"],
            detail=str(body.get("detail") or ""),
            instance=body.get("instance"),
            retry_after=retry_after,
            raw=body,
        )
    return ApiError(
        status=response.status_code,
        type="about:blank",
        title=response.reason_phrase or "error",
        detail=response.text[:500],
        retry_after=retry_after,
        raw={},
    )
