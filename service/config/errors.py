"""The settings layer's one exception type (a leaf: every settings module raises it, none imports another for it)."""

from __future__ import annotations

__all__ = ["SettingsError"]


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use; the message names it."""
