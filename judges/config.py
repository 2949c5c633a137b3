"""Judge configuration: ``JudgeConfig`` (how to reach and call one judge) and ``load_judge_configs``, with the
constants the client's call policy shares (the no-key placeholder, the top-log-probs count, the reply cap)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import msgspec

from judges.errors import JudgeConfigError
from judges.prompts.families import PROMPT_FAMILIES

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "JudgeConfig", "NO_KEY_PLACEHOLDER", "TOP_LOGPROBS", "load_judge_configs"]

NO_KEY_PLACEHOLDER = "not-needed"
TOP_LOGPROBS = 20  # how many alternatives per token to ask for (the OpenAI maximum)
# A judge answers a few tokens (a score, a letter; with top-20 log-probs a few KB per token): 256 KiB is far
# above any honest reply and far below what stalls an event loop.
DEFAULT_MAX_REPLY_BYTES = 256 * 1024


class JudgeConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How to reach and call one judge; ``name`` is the judge's name in the artifact and the API."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    model: Annotated[str, msgspec.Meta(min_length=1)]
    base_url: Annotated[str, msgspec.Meta(min_length=1)]
    api_key_env: str | None = None
    prompt_family: str = "paper"
    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.0
    logprobs: bool = True
    max_concurrency: Annotated[int, msgspec.Meta(ge=1)] = 8
    timeout_s: Annotated[float, msgspec.Meta(gt=0.0)] = 30.0  # the deadline of one verdict, all attempts included
    attempt_timeout_s: Annotated[float, msgspec.Meta(gt=0.0)] | None = None  # None: what is left of timeout_s
    max_retries: Annotated[int, msgspec.Meta(ge=0)] = 3
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 256
    backoff_base_s: Annotated[float, msgspec.Meta(ge=0.0)] = 0.5
    backoff_max_s: Annotated[float, msgspec.Meta(ge=0.0)] = 8.0
    max_retry_after_s: Annotated[float, msgspec.Meta(ge=0.0)] = 60.0
    # US dollars per million prompt / completion tokens, for the service's cost counter (both or neither).
    price_in_per_mtok: Annotated[float, msgspec.Meta(ge=0.0)] | None = None
    price_out_per_mtok: Annotated[float, msgspec.Meta(ge=0.0)] | None = None

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The price of these tokens in US dollars, or None when the judge has no prices."""
        if self.price_in_per_mtok is None or self.price_out_per_mtok is None:
            return None
        return (prompt_tokens * self.price_in_per_mtok + completion_tokens * self.price_out_per_mtok) / 1e6


_CONFIG_DECODER = msgspec.json.Decoder(list[JudgeConfig] | dict[str, dict[str, Any]])


def load_judge_configs(path: str | os.PathLike[str]) -> dict[str, JudgeConfig]:
    """Read judge configs from one JSON file (a list, or an object keyed by name) -> {name: config}.

    Raises ``JudgeConfigError`` naming the file and the problem (unreadable, invalid field, unknown
    prompt family, duplicate or mismatched name).
    """
    file = Path(path)
    try:
        data = _CONFIG_DECODER.decode(file.read_bytes())
    except OSError as exc:
        raise JudgeConfigError(f"{file}: cannot read judge configs: {exc.strerror or exc}") from exc
    except msgspec.DecodeError as exc:
        raise JudgeConfigError(f"{file}: invalid judge configs: {exc}") from exc
    if isinstance(data, dict):
        configs = []
        for key, entry in data.items():
            if entry.get("name", key) != key:
                raise JudgeConfigError(f"{file}: entry {key!r} has a different name {entry['name']!r}")
            try:
                configs.append(msgspec.convert({**entry, "name": key}, JudgeConfig))
            except msgspec.ValidationError as exc:
                raise JudgeConfigError(f"{file}: judge {key!r}: {exc}") from exc
    else:
        configs = data
    result: dict[str, JudgeConfig] = {}
    for config in configs:
        if config.name in result:
            raise JudgeConfigError(f"{file}: judge {config.name!r} is configured twice")
        if (config.price_in_per_mtok is None) != (config.price_out_per_mtok is None):
            raise JudgeConfigError(
                f"{file}: judge {config.name!r}: give both price_in_per_mtok and price_out_per_mtok, or neither"
            )
        if config.prompt_family not in PROMPT_FAMILIES:
            raise JudgeConfigError(
                f"{file}: judge {config.name!r}: unknown prompt_family {config.prompt_family!r}; "
                f"known: {', '.join(PROMPT_FAMILIES)}"
            )
        result[config.name] = config
    return result
