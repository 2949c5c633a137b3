"""The judge side's own exceptions.

=======================  ===============================================================================
exception                raised when
=======================  ===============================================================================
``JudgeError``           base class of everything below
``JudgeCallError``       the judge could not be reached or refused the call (HTTP error, timeout) after
                         the retry policy was spent; carries ``status`` (HTTP status or None) and
                         ``attempts``
``JudgeReplyError``      the judge answered but no verdict could be read; carries ``raw_reply`` and
                         ``reason`` (the parser's rule)
``UnknownPromptError``   a criterion or prompt family that ``prompts`` does not know (also a ValueError)
``JudgeConfigError``     a judge configuration (file or environment) is unusable (also a ValueError)
=======================  ===============================================================================
"""

from __future__ import annotations

__all__ = ["JudgeCallError", "JudgeConfigError", "JudgeError", "JudgeReplyError", "UnknownPromptError"]


class JudgeError(Exception):
    """Base class of the judge side's errors."""


class JudgeCallError(JudgeError):
    """The call to the judge failed (HTTP error status, timeout, connection) once retries were spent."""

    def __init__(self, message: str, *, judge: str, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.judge = judge
        self.status = status
        self.attempts = attempts


class JudgeReplyError(JudgeError):
    """The judge replied, but its reply holds no readable verdict; ``raw_reply`` keeps the text as sent."""

    def __init__(self, message: str, *, judge: str, raw_reply: str, reason: str) -> None:
        super().__init__(message)
        self.judge = judge
        self.raw_reply = raw_reply
        self.reason = reason


class UnknownPromptError(JudgeError, ValueError):
    """A criterion or prompt family with no prompt; the message lists the known ones."""


class JudgeConfigError(JudgeError, ValueError):
    """A judge configuration that cannot be used; the message names the file (or variable) and the problem."""
