"""The judge's score distribution over 1..K, read from the log-probs of its reply tokens.

Rule (``score_distribution``):

1. The score token is the reply token that carries the score the parser read (``ParsedScore.position``);
   for a one-number reply ("4") that is the first token. When the parser's offset cannot be mapped onto
   the tokens (their texts do not add up to the reply), the first token whose text is a score digit is
   used instead.
2. If that token is not a single score digit ("four", "4/5" as one token) there is no distribution.
3. The candidates at that position are its ``top_logprobs`` plus the token itself. Token texts are read
   with surrounding white space removed, so " 4" and "4" both mean label 4 (their probabilities add).
4. Labels absent from the candidates get probability 0; the rest are renormalised to sum to 1 over 1..K.
   If none of the K labels is among the candidates the result is ``(None, None)``.

``logprobs`` keeps the log-probs as the endpoint gave them (not renormalised), ``None`` for absent labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

__all__ = ["TokenLogprobs", "score_distribution"]


class TokenLogprobs(msgspec.Struct, frozen=True, kw_only=True):
    """One generated token: its text, its log-prob, and the alternatives the endpoint listed for it."""

    token: str
    logprob: float
    top_logprobs: dict[str, float]


def _score_token(tokens: Sequence[TokenLogprobs], text: str, position: int | None, labels: set[str]) -> int | None:
    if position is not None and "".join(t.token for t in tokens) == text:
        offset = 0
        for index, token in enumerate(tokens):
            offset += len(token.token)
            if offset > position:
                return index
        return None
    return next((i for i, t in enumerate(tokens) if t.token.strip() in labels), None)


def score_distribution(
    tokens: Sequence[TokenLogprobs] | None, text: str, position: int | None, *, n_labels: int = 5
) -> tuple[list[float] | None, dict[str, float | None] | None]:
    """(probabilities over 1..n_labels, raw log-probs by label) at the score token by the module's rule."""
    if not tokens:
        return None, None
    labels = {str(k) for k in range(1, n_labels + 1)}
    index = _score_token(tokens, text, position, labels)
    if index is None or tokens[index].token.strip() not in labels:
        return None, None
    chosen = tokens[index]
    candidates = dict(chosen.top_logprobs)
    candidates.setdefault(chosen.token, chosen.logprob)
    by_label: dict[str, list[float]] = {}
    for token, logprob in candidates.items():
        label = token.strip()
        if label in labels and math.isfinite(logprob):
            by_label.setdefault(label, []).append(logprob)
    if not by_label:
        return None, None
    merged = {label: _logsumexp(values) for label, values in by_label.items()}
    top = max(merged.values())
    weights = {label: math.exp(value - top) for label, value in merged.items()}  # no underflow at the top
    total = sum(weights.values())
    ordered = [str(k) for k in range(1, n_labels + 1)]
    probabilities = [weights.get(label, 0.0) / total for label in ordered]
    return probabilities, {label: merged.get(label) for label in ordered}


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))
