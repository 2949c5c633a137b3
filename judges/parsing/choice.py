"""Read a "1, 2 or 3" pairwise choice (Vicuna-bench's prompt) out of a judge's free-text reply.

Shared by the service and the offline studies, like ``judges.parsing.reply`` (verdict scores and A/B preferences), whose
``Preference`` values the outcome uses. The rules are stated in ``parse_choice``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from judges.parsing.reply import Preference

__all__ = ["ParsedChoice", "parse_choice"]


class ParsedChoice(msgspec.Struct, frozen=True, kw_only=True):
    """A pairwise choice read from a reply: ``outcome`` ("first"/"second"/"tie") or None, and the deciding rule."""

    outcome: Preference | None
    rule: str


_CHOICE_DIGITS: Mapping[str, Preference] = MappingProxyType({"1": "first", "2": "second", "3": "tie"})
# The prompt's last line: the number alone, maybe labelled or marked up ("2", "[1]", "Output: 3", "Choice: 2.").
_CHOICE_FINAL_LINE = re.compile(
    r"^[\W_]*(?:(?i:(?:final\s+)?(?:output|answer|choice|verdict|decision|selection))\s*(?i:is)?\s*[:=\-]?\s*)?"
    r"[\"'\[(]{0,2}(?P<d>[123])[\"'\]).]{0,3}\s*$"
)
_CHOICE_ASSISTANT = r"(?:assistant|answer|response)\s*#?\s*(?P<a>[12])(?!\d|\.\d)"
# "I choose 2", "I choose Assistant 1", "my choice is: 3", "the output is: 1" (the last one counts).
_CHOICE_STATEMENT = re.compile(
    r"(?i:\b(?:i\s+(?:would\s+|will\s+)?(?:choose|chose|select|pick|output)"
    r"|my\s+(?:final\s+)?(?:choice|answer|output|selection)\s+(?:is|would\s+be)"
    r"|the\s+output\s+is|therefore,?\s+(?:the\s+)?(?:output|answer|choice)\s+is)\s*:?\s*)"
    r"[\"'(]{0,2}(?:(?i:" + _CHOICE_ASSISTANT + r")|(?P<d>[123])(?!\d|\.\d))"
)
# Vicuna-bench's own format: the reply opens with the two scores ("7 8", "8/10 9/10").
_CHOICE_OPENING_SCORES = re.compile(
    r"^\s*(?P<x>\d{1,2}(?:\.\d)?)(?:\s*/\s*10)?\s*[ ,;]\s*(?P<y>\d{1,2}(?:\.\d)?)(?:\s*/\s*10)?\s*$"
)
# "Assistant 1's score: 8/10 ... Assistant 2: 9/10" (one score per assistant).
_CHOICE_LABELLED_SCORE = re.compile(
    r"(?i:\bassistant\s*(?P<a>[12])(?:'s)?(?:\s+(?:overall\s+)?score)?\s*[:=]\s*(?P<s>\d{1,2}(?:\.\d)?)"
    r"(?:\s*/\s*10)?)(?!\d|\.\d)"
)
# Prose: "Assistant 2's answer is the better one", "I would recommend Assistant 1", "the better answer is Assistant 1".
_CHOICE_BETTER = re.compile(
    r"(?i:\bassistant\s*(?P<a>[12])(?:'s)?(?:\s+(?:answer|response|review|solution|code|reply))?\s+"
    r"(?:is|was|provides|provided|gives|gave)\s+(?:the\s+|a\s+|slightly\s+|clearly\s+|much\s+)?"
    r"(?:better|stronger|superior|more\s+helpful|winner|preferred|best))"
    r"|(?i:\bi\s+(?:would\s+)?(?:recommend|suggest|prefer|choose|select|pick|give|rate)\s+"
    r"(?:using\s+|choosing\s+|the\s+answer\s+(?:of|from)\s+)?assistant\s*(?P<b>[12])\b)"
    r"|(?i:\b(?:the\s+)?(?:better|stronger|winning|preferred)\s+(?:answer|response|one|choice|assistant)\s+"
    r"(?:is|was)\s+(?:from\s+|that\s+of\s+)?assistant\s*(?P<c>[12])\b)"
)
_CHOICE_EQUIVALENT = re.compile(
    r"(?i:\b(?:both|the\s+two)\s+(?:assistants|answers|responses)\s+(?:are|were|seem|appear)\s+(?:to\s+be\s+)?"
    r"(?:roughly\s+|about\s+|essentially\s+)?(?:equivalent|equally\s+(?:good|helpful|strong)|equal)\b)"
)


def _by_scores(x: float, y: float) -> Preference:
    """The preference the two assistants' scores imply (equal: a tie)."""
    return "first" if x > y else "second" if y > x else "tie"


def parse_choice(reply: str | None) -> ParsedChoice:
    """Read a "1, 2 or 3" pairwise choice (1 = first shown better, 2 = second, 3 = equivalent); None + reason if none.

    Rules, strongest first: ``final_line`` (the last line is the number, as the prompt asks); ``opening_scores``
    (the reply opens with two scores, Vicuna-bench style: the higher wins, equal is a tie); ``choice_statement``
    (the last "I choose 2" / "my choice is: Assistant 1"); ``labelled_scores`` (exactly one "Assistant k: s/10"
    per assistant); ``better_statement`` (every "Assistant k is better"-type statement names the same k; two
    different ks -> ``conflicting_choices``); ``equivalent_statement`` ("both answers are equivalent" and no
    better statement). Never a guess: otherwise ``outcome`` is None with rule ``no_choice_statement``.
    """
    if reply is None or not reply.strip():
        return ParsedChoice(outcome=None, rule="empty_reply")
    text = reply.replace("**", "").replace("__", "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    final = _CHOICE_FINAL_LINE.match(lines[-1])
    if final:
        return ParsedChoice(outcome=_CHOICE_DIGITS[final.group("d")], rule="final_line")
    opening = _CHOICE_OPENING_SCORES.match(lines[0])
    if opening:
        return ParsedChoice(outcome=_by_scores(float(opening["x"]), float(opening["y"])), rule="opening_scores")
    stated = list(_CHOICE_STATEMENT.finditer(text))
    if stated:
        return ParsedChoice(outcome=_CHOICE_DIGITS[stated[-1]["d"] or stated[-1]["a"]], rule="choice_statement")
    scores: dict[str, set[float]] = {}
    for match in _CHOICE_LABELLED_SCORE.finditer(text):
        scores.setdefault(match["a"], set()).add(float(match["s"]))
    if set(scores) == {"1", "2"} and all(len(values) == 1 for values in scores.values()):
        (x,), (y,) = scores["1"], scores["2"]
        return ParsedChoice(outcome=_by_scores(x, y), rule="labelled_scores")
    better = {match["a"] or match["b"] or match["c"] for match in _CHOICE_BETTER.finditer(text)}
    if len(better) == 1:
        return ParsedChoice(outcome=_CHOICE_DIGITS[better.pop()], rule="better_statement")
    if better:
        return ParsedChoice(outcome=None, rule="conflicting_choices")
    if _CHOICE_EQUIVALENT.search(text):
        return ParsedChoice(outcome="tie", rule="equivalent_statement")
    return ParsedChoice(outcome=None, rule="no_choice_statement")
