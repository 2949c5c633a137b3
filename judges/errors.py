"""The judge side's own exceptions.

=======================  ===============================================================================
exception                raised when
=======================  ===============================================================================
``JudgeError``           base class of everything below
``JudgeCallError``       the judge could not be reached or refused the call (HTTP error, timeout) after
                         the retry policy was spent; carries ``status`` (HTTP status or None: timeout or
                         connection failure) and ``attempts``; ``provider_fault`` says whether it tells
                         of the provider's health (see there)
``JudgeReplyError``      the judge answered but no verdict could be read; carries ``raw_reply`` and
                         ``reason`` (the parser's rule, ``not_a_chat_completion`` or ``unusable_response``)
``JudgeReplyTooLarge``   a JudgeReplyError: the reply's body passed the size cap, so it was not read on
                         (``reason`` ``reply_too_large``, ``max_bytes``)
``UnknownPromptError``   a criterion or prompt family that ``prompts`` does not know (also a ValueError)
``JudgeConfigError``     a judge configuration (file or environment) is unusable (also a ValueError)
=======================  ===============================================================================
"""

from __future__ import annotations

__all__ = [
    "JudgeCallError",
    "JudgeConfigError",
    "JudgeError",
    "JudgeReplyError",
    "JudgeReplyTooLarge",
    "PROVIDER_FAULT_STATUSES",
    "UnknownPromptError",
]

# HTTP statuses that say the provider is unwell (timing out, overloaded, failing), not that one request was bad.
PROVIDER_FAULT_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


class JudgeError(Exception):
    """Base class of the judge side's errors."""


class JudgeCallError(JudgeError):
    """The call to the judge failed (HTTP error status, timeout, connection) once retries were spent."""

    def __init__(self, message: str, *, judge: str, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.judge = judge
        self.status = status
        self.attempts = attempts

    @property
    def provider_fault(self) -> bool:
        """True when the failure tells of the provider's health: a timeout or connection failure (no status),
        408, 429 or a 5xx. False for a refusal of this call's own input (400 "context too long", 401, 404 ...)."""
        return self.status is None or self.status in PROVIDER_FAULT_STATUSES


class JudgeReplyError(JudgeError):
    """The judge replied, but its reply holds no readable verdict; ``raw_reply`` keeps the text as sent."""

    def __init__(self, message: str, *, judge: str, raw_reply: str, reason: str) -> None:
        super().__init__(message)
        self.judge = judge
        self.raw_reply = raw_reply
        self.reason = reason


class JudgeReplyTooLarge(JudgeReplyError):
    """The reply's body passed the size cap; the read stopped there (``raw_reply`` is empty)."""

    def __init__(self, message: str, *, judge: str, max_bytes: int) -> None:
        super().__init__(message, judge=judge, raw_reply="", reason="reply_too_large")
        self.max_bytes = max_bytes


class UnknownPromptError(JudgeError, ValueError):
    """A criterion or prompt family with no prompt; the message lists the known ones."""


class JudgeConfigError(JudgeError, ValueError):
    """A judge configuration that cannot be used; the message names the file (or variable) and the problem."""
