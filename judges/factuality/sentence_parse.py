"""Reader of sentence-level fact-check replies: a JSON list of ``{sentence, reason, category}``, one per sentence.

The format is FineSurE's fact-checking reply (Song et al., ACL 2024) and the one our own sentence prompt asks
for (``judges.factuality.sentence_check``). Categories are FRANK's error typology (Pagnoni et al., 2021), written
out as words, plus ``other error`` and ``no error``.

| call                                                  | result                                               |
|-------------------------------------------------------|------------------------------------------------------|
| ``parse_sentence_verdicts(reply, n_sentences=3)``     | ``ParsedSentences``: verdicts or None, rule, problem |
| ``category_code("predicate error")``                  | ``"RelE"`` (FRANK's code; PredE in the papers)       |

Reading rules (each outcome is named by ``rule``; a reply that fails a rule gets ``verdicts=None``):

1. ``no_reply``: the reply is empty. A Markdown code fence (```json ... ```, the closing fence possibly missing)
   is removed first; text before the first ``[`` is ignored.
2. ``no_list``: no ``[`` in the reply. ``not_json``: the list closes but holds text that is not JSON.
3. The list is read with ``json``; when that fails and the text holds ``\\'`` (not a JSON escape, but models
   write it), it is read again with ``\\'`` as ``'`` (``escapes_repaired=True``). If it still does not close
   (the reply was cut off), the complete objects before the cut are read one by one (``truncated=True``):
   they are kept as read, never completed or padded.
4. ``bad_entry``: an element that is not an object with a string ``category`` (``sentence`` and ``reason``
   must be strings when present; a missing one reads as "").
5. ``unknown_category``: a category that is not one of :data:`CATEGORIES` after lower-casing and collapsing
   white space (FRANK's codes such as ``EntE`` are accepted too). Never mapped to a nearest name.
6. ``wrong_count``: with ``n_sentences`` given, a list (truncated or not) whose length differs. The verdicts
   are not aligned to the sentences then, so none is returned.

Otherwise ``rule`` is ``"json_list"`` and ``verdicts`` holds one :class:`SentenceVerdict` per element, in order;
``error`` is True for every category except ``no error``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import msgspec

__all__ = [
    "CATEGORIES",
    "CATEGORY_CODES",
    "NO_ERROR",
    "PARSE_RULES",
    "ParsedSentences",
    "SentenceVerdict",
    "category_code",
    "parse_sentence_verdicts",
]

NO_ERROR = "no error"
# Category words -> FRANK's codes (RelE is the semantic-frame predicate error, PredE in the papers).
CATEGORY_CODES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "out-of-context error": "OutE",
        "predicate error": "RelE",
        "entity error": "EntE",
        "circumstantial error": "CircE",
        "grammatical error": "GramE",
        "coreference error": "CorefE",
        "linking error": "LinkE",
        "other error": "OtherE",
        NO_ERROR: "NoE",
    }
)
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_CODES)
PARSE_RULES: tuple[str, ...] = (
    "json_list", "no_reply", "no_list", "not_json", "bad_entry", "unknown_category", "wrong_count",
)  # fmt: skip
_BY_CODE = {code.lower(): word for word, code in CATEGORY_CODES.items()}
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?")
_SPACE = re.compile(r"\s+")
_QUOTE_ESCAPE = re.compile(r"(?<!\\)\\'")


class SentenceVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One sentence's verdict: the sentence as the judge quoted it, error or not, its category, the reason."""

    sentence: str
    error: bool
    category: str  # one of CATEGORIES
    reason: str


class ParsedSentences(msgspec.Struct, frozen=True, kw_only=True):
    """What a reply yields: the verdicts (None when a rule failed), the rule, and what went wrong."""

    verdicts: list[SentenceVerdict] | None
    rule: str  # one of PARSE_RULES
    truncated: bool = False  # the list did not close; only complete objects were read
    n_read: int = 0  # list elements read (before the count check)
    escapes_repaired: bool = False  # the invalid escape \\' was read as '
    problem: str = ""

    @property
    def ok(self) -> bool:
        """True when the reply gave one verdict per sentence."""
        return self.verdicts is not None


def category_code(category: str) -> str:
    """FRANK's code of a category word (``"entity error"`` -> ``"EntE"``); KeyError for an unknown word."""
    return CATEGORY_CODES[category]


def _normalise_category(value: str) -> str | None:
    text = _SPACE.sub(" ", value.strip().lower())
    if text in CATEGORY_CODES:
        return text
    return _BY_CODE.get(text)


def _strip_fence(reply: str) -> str:
    return _FENCE.sub("", reply)


def _read_list(text: str) -> tuple[list[object] | None, bool, str]:
    """(elements, truncated, problem) of the first JSON list in ``text``."""
    start = text.find("[")
    if start < 0:
        return None, False, "no '[' in the reply"
    decoder = json.JSONDecoder()
    try:
        value, _ = decoder.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    else:
        return value, False, ""  # a value starting with '[' is a list
    # Not a complete list: read the complete elements up to the first one that does not decode.
    elements: list[object] = []
    position = start + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            element, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break
        elements.append(element)
    closed = position < len(text) and text[position] == "]"
    if closed:  # it closed after all, so something inside was not JSON
        return None, False, "the list holds text that is not JSON"
    return elements, True, ""


def parse_sentence_verdicts(reply: str | None, *, n_sentences: int | None = None) -> ParsedSentences:
    """Read the verdicts of a sentence-level fact-check reply by the module's rules 1-6; never raises on text."""
    if reply is None or not reply.strip():
        return ParsedSentences(verdicts=None, rule="no_reply", problem="the reply is empty")
    text = _strip_fence(reply)
    elements, truncated, problem = _read_list(text)
    repaired = False
    if (elements is None or truncated) and _QUOTE_ESCAPE.search(text):
        retry = _read_list(_QUOTE_ESCAPE.sub("'", text))
        if retry[0] is not None and not retry[1]:
            (elements, truncated, problem), repaired = retry, True
    if elements is None:
        rule = "no_list" if problem.startswith("no '['") else "not_json"
        return ParsedSentences(verdicts=None, rule=rule, problem=problem)
    verdicts: list[SentenceVerdict] = []
    for index, element in enumerate(elements):
        if not isinstance(element, dict) or not isinstance(element.get("category"), str):
            return ParsedSentences(
                verdicts=None,
                rule="bad_entry",
                truncated=truncated,
                n_read=len(elements),
                escapes_repaired=repaired,
                problem=f"element {index} is not an object with a string 'category'",
            )
        sentence, reason = element.get("sentence", ""), element.get("reason", "")
        if not isinstance(sentence, str) or not isinstance(reason, str):
            return ParsedSentences(
                verdicts=None,
                rule="bad_entry",
                truncated=truncated,
                n_read=len(elements),
                escapes_repaired=repaired,
                problem=f"element {index}: 'sentence' and 'reason' must be strings",
            )
        category = _normalise_category(element["category"])
        if category is None:
            return ParsedSentences(
                verdicts=None,
                rule="unknown_category",
                truncated=truncated,
                n_read=len(elements),
                escapes_repaired=repaired,
                problem=f"element {index}: unknown category {element['category'][:60]!r}",
            )
        verdicts.append(
            SentenceVerdict(sentence=sentence, error=category != NO_ERROR, category=category, reason=reason)
        )
    if n_sentences is not None and len(verdicts) != n_sentences:
        cut = " (the list was cut off)" if truncated else ""
        return ParsedSentences(
            verdicts=None,
            rule="wrong_count",
            truncated=truncated,
            n_read=len(verdicts),
            escapes_repaired=repaired,
            problem=f"{len(verdicts)} verdicts for {n_sentences} sentences{cut}",
        )
    return ParsedSentences(
        verdicts=verdicts, rule="json_list", truncated=truncated, n_read=len(verdicts), escapes_repaired=repaired
    )
