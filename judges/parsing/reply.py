"""Read a judge's verdict out of its free-text reply.

Shared by the service (live replies) and the offline study (recorded replies), so both read a reply the
same way.

==============================================  =============================================================
call                                            result (``score``, ``rule``, ``value``)
==============================================  =============================================================
``parse_score("4")``                            ``4``, ``"bare"``, ``4.0``
``parse_score("Final score: 5/5 (perfect)")``   ``5``, ``"final_score"``, ``5.0``
``parse_score("... earning a score of 2.")``    ``2``, ``"score_phrase"``, ``2.0``
``parse_score("scoring a one out of five")``    ``1``, ``"out_of"``, ``1.0``
``parse_score("Score: 3.5/5.")``                ``4``, ``"labelled+half_up"``, ``3.5``
``parse_score("Fine on a 1-5 scale.")``         ``None``, ``"no_score_statement"``, ``None``
``parse_preference("A: Summary #1 is ...")``    ``"first"``
==============================================  =============================================================

Rules of ``parse_score``, strongest first (``RULES``):

1. ``bare``: the whole reply is one number ("4", " 4.", "**4**", "4/5").
2. ``final_score``: an explicit final/overall statement ("Final score: 5/5 (perfect coherence)",
   "my overall rating is 3", "final coherence score of 4 out of 5").
3. ``labelled``: a label and a colon ("Score: 3", "Relevance Score: 5/5", "Fluency: 3 (out of 5)").
4. ``out_of``: a number stated against the scale ("4/5", "a 4 out of 5", "one out of five").
5. ``score_phrase``: a scoring word and then the number ("earning a score of 4", "I would rate it a 2",
   "scoring a perfect 5", "I would score the summary as 5").
6. ``is_a``: the summary called a number ("making it a 5 in terms of coherence", "irrelevant (1)").
7. ``leading``: the reply opens with a number on its own ("4\\nThe summary ...", "4 - good").
8. ``final_bare``: a number standing alone after the reply's last sentence ("... on the sentence
   level. 5", "... level.\\n4.", "... level. 3.5"). It decides only when no other rule found a statement; a
   closing number that differs from the statement that did decide ("Score: 4. 5") is a second score, so
   the result is ``score=None`` with rule ``conflicting_scores:<rule>+final_bare:...``.

What is not read as the score:

* mentions of the scale itself: a number that is an end of a range ("1-5", "1 to 5") or that has no
  number in front of it ("out of 5");
* hypothetical or negated numbers, cued in the same sentence ("keeps it from being a perfect 5 out of 5",
  "it's not a 5", "would make it a 5", "a 5 if it included ...");
* numbers that count things ("scored four goals", "217/228 Yazidis") or exceed 10;
* sub-scores in a list ("* Grammar: 5/5"), unless the reply states nothing outside its lists;
* numbers on another scale ("8/10"), unless nothing else is said (then ``score=None`` with the reason).

The first rule (in the order above) with a statement decides. ``final_score`` takes the last such
statement (the judge's closing word); any other rule needs all its statements to agree, otherwise the
result is ``score=None`` with rule ``conflicting_scores:...``. A stated half score (``3.5``) is mapped
half-up onto the integer scale, the way the human target is rounded; the rule name then ends in
``+half_up`` and the stated number stays in ``value``. Any other fraction, a number outside 1..K or no
statement gives ``score=None`` and a rule naming the reason — never a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

import msgspec

__all__ = [
    "ParsedScore",
    "Preference",
    "RULES",
    "parse_preference",
    "parse_rate",
    "parse_score",
]

Preference = Literal["first", "second", "tie"]

_WORDS = MappingProxyType({
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
})  # fmt: skip
_WORD_ALT = "|".join(_WORDS)
# Nouns that show a number counts something rather than scores the summary.
_COUNTED = (
    r"goals?|points?\s+(?:behind|ahead|clear|adrift|from)|times|penalt\w+|runs|tries|wickets|people|persons|"
    r"players|games|matches|years?|months?|days|hours|minutes|sentences?|errors?|mistakes?|facts?|"
    r"details?|words|percent|per\s+cent|of\s+(?:the|his|her|their|its|these|those|them)\b"
)
# A number not glued to other digits/words, not an end of a range ("1-5", "1 to 5"), not a count.
_NUM = (
    r"(?<![\w.$£€/\-–—])(?<!\d\s[-–]\s)(?<!\d\sto\s)"
    rf"(?P<n>\d+(?:\.\d+)?|{_WORD_ALT})(?![\w%])(?!\.\d)"
    rf"(?!\s*(?:-|–|—|to)\s*(?:\d|{_WORD_ALT})\b)(?!\s+(?:{_COUNTED}))"
)
_DEN = rf"\s*(?:/|out\s+of|on\s+a\s+scale\s+of)\s*(?P<d>\d+|{_WORD_ALT})\b"  # "/5", "out of five"
_OPT_DEN = rf"(?:{_DEN})?"
_CRITERIA = r"(?:coherence|consistency|fluency|relevance|faithfulness|factuality|quality)"
_FILLER = (
    r"(?:a|an|the|of|is|be|as|at|to|it|this|that|would|will|i|my|around|about|approximately|roughly|"
    r"perfect|solid|full|high|low|strong|moderate|fair|good|decent|overall|final|score|rating|mark|"
    rf"{_CRITERIA}|summary|for|with|me)"
)
_SCORE_WORD = (
    r"\b(?:score[sd]?|scoring|rate[sd]?|rating|grade[sd]?|grading|give[sn]?|giving|gave|"
    r"assign(?:s|ed|ing)?|award(?:s|ed|ing)?|earn(?:s|ed|ing)?|deserv(?:e|es|ed|ing)|"
    r"receiv(?:e|es|ed|ing)|get(?:s|ting)?|merit(?:s|ed)?)\b"
)
_STATE = r"(?:[:=]|-|–|\bis\b|\bof\b|\bwould\s+be\b|\bwill\s+be\b)?"
_ADJ_CRITERION = r"(?:(?:ir|in|dis)?(?:relevan|coheren|consisten|fluen|faithful)\w*)"

RULES: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = (
    ("bare", (re.compile(rf"^\W*{_NUM}{_OPT_DEN}\W*$"),)),
    (
        "final_score",
        (
            re.compile(
                r"\b(?:final|overall|total)\s+(?:[a-z]+\s+){0,2}?(?:score|rating|grade|verdict|evaluation)"
                rf"(?:\s+(?:for|of|on)\s+(?:the\s+)?[a-z]+)?\s*(?:\([^)]*\)\s*)?{_STATE}\s*(?:\bis\b\s*)?"
                rf"(?:\b(?:a|an)\s+)?(?:\bperfect\s+)?{_NUM}{_OPT_DEN}"
            ),
        ),
    ),
    (
        "labelled",
        (
            re.compile(rf"(?:\b{_CRITERIA}\s+)?\b(?:score|rating|grade)\s*(?:\([^)]*\)\s*)?[:=]\s*{_NUM}{_OPT_DEN}"),
            re.compile(rf"(?:^|[\n.!?]\s*)(?:[-*#>]\s*)*{_CRITERIA}\s*[:=]\s*{_NUM}{_OPT_DEN}"),
        ),
    ),
    ("out_of", (re.compile(rf"{_NUM}{_DEN}"),)),
    (
        "score_phrase",
        (
            re.compile(rf"{_SCORE_WORD}(?:\s+{_FILLER}\b){{0,5}}\s*:?\s*{_NUM}{_OPT_DEN}"),
            re.compile(rf"\b(?:score|rate|grade)\b[^.\d\n]{{0,80}}?\bas\s+(?:an?\s+)?{_NUM}{_OPT_DEN}"),
        ),
    ),
    (
        "is_a",
        (
            re.compile(
                rf"\b(?:is|it|as|be)\s+(?:an?\s+)?(?:perfect\s+|solid\s+|strong\s+)?{_NUM}"
                rf"(?=\s*(?:,|\.|;|\(|\bin\s+terms\b|\bfor\b|\bon\b|\bbecause\b|\bas\b|\bin\s+{_CRITERIA}|$))"
            ),
            re.compile(rf"\b(?:perfect|excellent|good|fair|poor|low|high)?\s*{_CRITERIA},\s*{_NUM}\s*(?:[.;\n]|$)"),
            re.compile(rf"\b(?:{_CRITERIA}|{_ADJ_CRITERION})\s*\(\s*(?:score\s*:?\s*)?{_NUM}{_OPT_DEN}\s*\)"),
        ),
    ),
    ("leading", (re.compile(rf"^\s*{_NUM}{_OPT_DEN}\s*(?:\n|$|[-–:(]\s*)"),)),
    # A number standing alone after the last sentence closes the reply ("... level. 5", "... level.\n4.").
    # The space after the stop keeps "3.5" from reading as a stop and a 5; "[1]" or "point 2." never match.
    ("final_bare", (re.compile(r"(?:[.!?][\s#>]+|\n[\s#>]*)(?P<n>\d+(?:\.\d+)?)[\s.]*$"),)),
)
_FINAL_BARE_RANK = len(RULES) - 1
# Cues, in the same clause and just before a number, that it is hypothetical or negated:
# "keeps it from being a perfect 5", "it's not a 5 out of 5", "would make it a 5", "to elevate it to a 5".
_HYPOTHETICAL = re.compile(
    r"(?:\bfrom\s+(?:being|getting|earning|receiving|reaching|achieving|scoring)"
    r"|\bnot\s+(?:quite\s+|yet\s+)?(?:a|an|get|getting|give|giving|receive|earn|reach|deserve|merit|be|score)"
    r"|n't\s+(?:quite\s+|yet\s+)?(?:a|an|get|give|receive|earn|reach|deserve|merit|be|score)"
    r"|\bwould\s+(?:have\s+)?(?:made|make|been|get|earn|deserve|merit|receive|raise|bring|push|elevate)"
    # "... would provide a fuller overview and score a perfect 5": a conditional joined by "and"
    r"|\bwould\s+(?!score|rate|give|grade|assign|award)\w+[^.;!?\n]{0,80}?\band\s+(?:score|earn|receive|get|be)\b"
    r"|\bcould\s+(?:have\s+)?(?:been|be|get|earn|score|receive|reach|make)"
    r"|\bto\s+(?:make\s+it|get|earn|reach|achieve|receive|be)|\breach(?:ing)?|\binstead\s+of"
    r"|\b(?:elevat|rais|boost|improv|bump|push|lift)\w*\b[^.,;!?\n]{0,30}\bto"
    r"|\bbring\w*\b[^.,;!?\n]{0,30}\bup\s+to"
    r"|\brather\s+than|\bshort\s+of|\bhigher\s+than|\blower\s+than|\bworthy\s+of)\b[^.,;!?\n]{0,25}$"
)
# ... or just after it: "a 5 out of 5 if it included ...", "a score of 1 would indicate ...".
_HYPOTHETICAL_AFTER = re.compile(
    r"[^.,;!?\n(]{0,30}\b(?:if|unless|had\s+it|were\s+it)\b|\s*would\s+(?:indicate|mean|represent|require)\b"
)
_SENTENCE_START = re.compile(r"(?:[.;!?]\s|\n)(?!.*(?:[.;!?]\s|\n))", re.DOTALL)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*•+]|\d{1,2}[.)]|\(\d{1,2}\)|[a-h][.)])\s")
_MAX_PLAUSIBLE = 10  # larger numbers count things; no rating scale we read goes beyond 10


class ParsedScore(msgspec.Struct, frozen=True, kw_only=True):
    """A score read from a reply: ``score`` in 1..K or None, the ``rule`` that decided (or why none did)."""

    score: int | None
    rule: str
    value: float | None = None  # the number as the judge stated it (e.g. 3.5), when one was read
    position: int | None = None  # character offset of that number in the reply, when one was read


class _Candidate(NamedTuple):
    rank: int  # index of the rule in RULES
    position: int
    value: float
    denominator: int | None
    hypothetical: bool
    in_list: bool


def _number(token: str) -> float:
    word = _WORDS.get(token)
    return float(word) if word is not None else float(token)


def _candidates(text: str) -> list[_Candidate]:
    found = []
    for rank, (_, patterns) in enumerate(RULES):
        for pattern in patterns:
            for match in pattern.finditer(text):
                value = _number(match.group("n"))
                den = match.groupdict().get("d")
                denominator = None if den is None else int(_number(den))
                if value > _MAX_PLAUSIBLE or (denominator is not None and denominator < value):
                    continue
                position = match.start("n")
                hypothetical = _is_hypothetical(text, position, match.end())
                found.append(_Candidate(rank, position, value, denominator, hypothetical, _in_list(text, position)))
    return sorted(found, key=lambda c: (c.rank, c.position))


def _is_hypothetical(text: str, start: int, end: int) -> bool:
    prefix = text[max(0, start - 240) : start]
    sentence = _SENTENCE_START.search(prefix)
    if _HYPOTHETICAL.search(prefix[sentence.end() :] if sentence else prefix):
        return True
    return _HYPOTHETICAL_AFTER.match(text, end) is not None


def _in_list(text: str, position: int) -> bool:
    return _LIST_ITEM.match(text, text.rfind("\n", 0, position) + 1) is not None


def _continues_list(text: str, closing: _Candidate) -> bool:
    # "...\n3. Vocabulary: 4/5\n4." is a numbered list cut short, not a closing score of 4.
    if closing.value != int(closing.value) or text.rfind("\n", 0, closing.position) < 0:
        return False
    line_start = text.rfind("\n", 0, closing.position) + 1
    if text[line_start : closing.position].strip(" \t#>"):
        return False
    previous = re.compile(rf"(?m)^[ \t]*{int(closing.value) - 1}[.)]\s")
    return previous.search(text, 0, line_start) is not None


def _decide(rule: str, found: list[_Candidate], n_labels: int, *, exact: bool) -> ParsedScore:
    values = sorted({c.value for c in found})
    if len(values) > 1 and rule != "final_score":
        return ParsedScore(score=None, rule=f"conflicting_scores:{rule}:" + ",".join(map(_fmt, values)))
    chosen = found[-1] if rule == "final_score" else found[0]  # the judge's last word / first statement
    score, note = _to_label(chosen.value, chosen.denominator, n_labels)
    if score is None:
        return ParsedScore(score=None, rule=f"{note}:{rule}", value=chosen.value)
    position = chosen.position if exact else None
    return ParsedScore(score=score, rule=rule + note, value=chosen.value, position=position)


def _to_label(value: float, denominator: int | None, n_labels: int) -> tuple[int | None, str]:
    if denominator is not None and denominator != n_labels:
        return None, f"other_scale:{_fmt(value)}/{denominator}"
    if not 1 <= value <= n_labels:
        return None, f"out_of_range:{_fmt(value)}"
    if value == int(value):
        return int(value), ""
    if value * 2 == int(value * 2):
        return int(math.floor(value + 0.5)), "+half_up"
    return None, f"fractional:{_fmt(value)}"


def _fmt(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _clean(reply: str) -> str:
    # Same length as the reply (markup becomes spaces) so that offsets point into the reply itself.
    text = reply.lower().replace("**", "  ").replace("__", "  ")
    return text.replace("\u2019", "'").replace("\u00a0", " ")


def parse_score(reply: str | None, *, n_labels: int = 5) -> ParsedScore:
    """Read the 1..n_labels score stated in ``reply`` by the module's ranked rules; None + reason if none."""
    if reply is None or not reply.strip():
        return ParsedScore(score=None, rule="empty_reply")
    text = _clean(reply)
    exact = len(text) == len(reply)  # lower() can change the length of a few non-ASCII letters
    found = [c for c in _candidates(text) if not (c.rank == _FINAL_BARE_RANK and _continues_list(text, c))]
    on_scale = [c for c in found if not c.hypothetical and c.denominator in (None, n_labels)]
    tiers = (
        [c for c in on_scale if not c.in_list],  # statements in running text
        on_scale,  # then list items: sub-scores count only when nothing else was said
        [c for c in found if not c.hypothetical],  # then statements on another scale (-> the reason)
    )
    closing = [c for c in found if c.rank == _FINAL_BARE_RANK]
    for tier in tiers:
        for rank, (rule, _) in enumerate(RULES):
            in_rule = [c for c in tier if c.rank == rank]
            if in_rule:
                parsed = _decide(rule, in_rule, n_labels, exact=exact)
                # A closing bare number that differs from the statement that decided is a second score.
                stated = {c.value for c in closing} | {parsed.value}
                if parsed.value is not None and parsed.score is not None and len(stated) > 1:
                    values = ",".join(map(_fmt, sorted(v for v in stated if v is not None)))
                    return ParsedScore(score=None, rule=f"conflicting_scores:{rule}+final_bare:{values}")
                return parsed
    if found:
        return ParsedScore(score=None, rule="only_hypothetical_scores")
    return ParsedScore(score=None, rule="no_score_statement")


# The verdict letter must be a capital at the start ("A", "**B**", "Answer: C", "'A'"), so that an opening
# article ("a good summary ...") is not read as a vote; "Summary #1"/"Summary #2" name the position directly.
_PREFERENCE = re.compile(
    r"[\W_]*(?:(?i:answer|verdict|choice|preference|output|winner)\s*[:=]?\s*)?(?:(?i:summary)\s*)?"
    r"[\"'‘“*]{0,2}(?:(?P<x>[ABC])|#\s*(?P<n>[12]))[\"'’”*]{0,2}(?=$|[\s:.,;)\-!])"
)
# A reason-then-answer reply closes with a labelled verdict ("... so B is clearer.\nAnswer: B").
_LABELLED_PREFERENCE = re.compile(
    r"(?i:answer|verdict|final\s+answer|choice|winner)\s*(?:(?i:is)\s*)?[:=]?\s*[\"'‘“*]{0,2}(?P<x>[ABC])"
    r"(?![\w-])"
)
_OUTCOMES: Mapping[str, Preference] = MappingProxyType(
    {"A": "first", "B": "second", "C": "tie", "1": "first", "2": "second"}
)


def parse_preference(reply: str | None) -> Preference | None:
    """Read a pairwise verdict: A / #1 -> "first", B / #2 -> "second", C -> "tie"; None when unreadable.

    The verdict is the last labelled answer ("... Answer: C") or, failing that, the reply's opening letter
    ("A", "B: Summary #2 is more fluent."); a lower-case "a" is an article, never a vote.
    """
    if reply is None:
        return None
    text = reply.strip()
    labelled = list(_LABELLED_PREFERENCE.finditer(text))
    if labelled:
        return _OUTCOMES[labelled[-1].group("x")]
    match = _PREFERENCE.match(text)
    return None if match is None else _OUTCOMES[match.group("x") or match.group("n")]


def parse_rate(replies: Iterable[str | None], *, n_labels: int = 5) -> float:
    """Share (0..1) of ``replies`` from which ``parse_score`` reads a score; nan when there are none."""
    total = parsed = 0
    for reply in replies:
        total += 1
        parsed += parse_score(reply, n_labels=n_labels).score is not None
    return parsed / total if total else math.nan
