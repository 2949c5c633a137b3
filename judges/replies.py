"""The judge's side of the chat-completions wire: the reply structs it reads (unknown fields ignored), the request
encoder, ``decode_chat`` (body -> ``ChatCompletion``), ``tokens`` (reply log-probs -> ``TokenLogprobs``) and
``usage`` (a verdict's token counts)."""

from __future__ import annotations

import msgspec

from judges.parsing.distribution import TokenLogprobs
from judges.results import Completion
from judges.transport import UnusableReply

__all__ = [
    "REQUEST_ENCODER",
    "ChatCompletion",
    "Choice",
    "ChoiceLogprobs",
    "ReplyMessage",
    "ReplyUsage",
    "TokenLogprob",
    "TopLogprob",
    "decode_chat",
    "tokens",
    "usage",
]


class TopLogprob(msgspec.Struct):
    token: str
    logprob: float


class TokenLogprob(msgspec.Struct):
    token: str
    logprob: float
    top_logprobs: list[TopLogprob] | None = None


class ChoiceLogprobs(msgspec.Struct):
    content: list[TokenLogprob] | None = None


class ReplyMessage(msgspec.Struct):
    content: str | None = None


class Choice(msgspec.Struct):
    message: ReplyMessage
    finish_reason: str | None = None
    logprobs: ChoiceLogprobs | None = None


class ReplyUsage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatCompletion(msgspec.Struct):
    """The part of an OpenAI chat-completions reply that the judge reads; unknown fields are ignored."""

    choices: list[Choice]
    usage: ReplyUsage | None = None
    model: str | None = None


REQUEST_ENCODER = msgspec.json.Encoder()
_CHAT_DECODER = msgspec.json.Decoder(ChatCompletion)


def decode_chat(content: bytes) -> ChatCompletion:
    """Decode a chat-completions body; an unusable body raises _UnusableReply (a JudgeReplyError for callers)."""
    try:
        return _CHAT_DECODER.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UnusableReply(f"not a chat-completions reply: {exc}", content) from exc


def tokens(logprobs: ChoiceLogprobs | None) -> list[TokenLogprobs] | None:
    content = logprobs.content if logprobs is not None else None
    if not content:
        return None
    return [
        TokenLogprobs(
            token=item.token,
            logprob=item.logprob,
            top_logprobs={alt.token: alt.logprob for alt in (item.top_logprobs or [])},
        )
        for item in content
    ]


def usage(first: Completion, last: Completion) -> tuple[int, int]:
    """(prompt, completion) tokens of a verdict: its one completion, or both when a format retry asked again."""
    if first is last:
        return first.prompt_tokens, first.completion_tokens
    return first.prompt_tokens + last.prompt_tokens, first.completion_tokens + last.completion_tokens
