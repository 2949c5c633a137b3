"""What a judge call returns: ``DirectVerdict`` (a score), ``PreferenceVerdict`` (a pairwise verdict) and
``Completion`` (a raw chat completion)."""

from __future__ import annotations

import msgspec

from judges.parsing.distribution import TokenLogprobs
from judges.parsing.reply import Preference

__all__ = ["Completion", "DirectVerdict", "PreferenceVerdict"]


class DirectVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """A judge's 1..5 score of one summary, with its score distribution when log-probs came back."""

    judge_score: int
    probabilities: list[float] | None  # K floats summing to 1 over labels 1..K, or None
    logprobs: dict[str, float | None] | None  # "1".."K" -> log-prob at the score token (None: not in top-k)
    raw_reply: str
    parse_rule: str
    prompt_tokens: int  # every completion of the verdict (a format retry included), from the replies' usage
    completion_tokens: int
    reply_model: str | None = None  # the ``model`` the reply reported (None: it reported none)


class PreferenceVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """A judge's pairwise verdict: "first" / "second" = the summary shown as A / B won, "tie" = equal."""

    outcome: Preference
    raw_reply: str
    prompt_tokens: int  # every completion of the verdict (a format retry included), from the replies' usage
    completion_tokens: int
    reply_model: str | None = None  # the ``model`` the reply reported (None: it reported none)


class Completion(msgspec.Struct, frozen=True, kw_only=True):
    """A raw chat completion: text, per-token log-probs (None unless requested and given) and usage."""

    text: str
    tokens: list[TokenLogprobs] | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    model: str | None = None  # the model the reply says answered (the provider's name, maybe a dated snapshot)
