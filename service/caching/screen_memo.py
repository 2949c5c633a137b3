"""The process's memo of injection-screen findings: text -> the rules it trips, an LRU keyed by the text's digest.

The screen (``service.screening.injection``) is a pure function of the text and costs about as much as the rest
of a cache-hit ``/v1/score`` request (0.3-0.6 ms for a summary and its document: the text views, then some 30
pattern checks). A repeated request (a cache hit, a retried batch, many summaries of one article) screens its
texts once per process instead of once per request. Keys are BLAKE2b-128 digests, so the memo holds at most
``capacity`` x ~200 bytes whatever the texts' sizes; a collision would need a second preimage of a 128-bit digest.
Findings are the screen's own output, so what a caller sends cannot change another text's findings.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

__all__ = ["SCREEN_MEMO_CAPACITY", "ScreenMemo"]

SCREEN_MEMO_CAPACITY = 4096  # texts remembered per process (least recently used evicted)


class ScreenMemo:
    """At most ``capacity`` texts' findings, least recently used evicted (``get`` / ``[text] = rules``)."""

    def __init__(self, capacity: int = SCREEN_MEMO_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._entries: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()

    def __len__(self) -> int:
        """Texts remembered."""
        return len(self._entries)

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, text: str) -> list[str] | None:
        """The rules ``text`` trips when remembered (a fresh list), else None."""
        key = self._key(text)
        rules = self._entries.get(key)
        if rules is None:
            return None
        self._entries.move_to_end(key)
        return list(rules)

    def __setitem__(self, text: str, rules: list[str]) -> None:
        """Remember ``rules`` for ``text``, evicting the least recently used text when full."""
        key = self._key(text)
        self._entries[key] = tuple(rules)
        self._entries.move_to_end(key)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
