"""Answer similarity for the QA-based factuality pipeline: SQuAD-style normalisation, token F1, exact match.

| call                               | result                                            |
|------------------------------------|---------------------------------------------------|
| ``normalize_answer("The  U.S.!")`` | ``"us"``                                          |
| ``token_f1("the cat sat", "cat")`` | ``0.666...`` (precision 1, recall 1/2)            |
| ``exact_match("A cat.", "cat")``   | ``1.0``                                           |
| ``token_f1("", "")``               | ``1.0`` (both empty agree, the SQuAD convention)  |
| ``token_f1("", "cat")``            | ``0.0`` (one empty side never matches)            |

Normalisation follows the SQuAD evaluation script's recipe, written anew: lower-case, delete punctuation
(ASCII punctuation as SQuAD does, plus every Unicode punctuation character, because LLM replies carry curly
quotes and dashes), delete the articles "a", "an", "the" as whole words, and collapse whitespace. Deleting
punctuation joins the pieces it separated ("U.S." -> "us", "3,000" -> "3000"), as in SQuAD.

Two additions for tokenised news text (FRANK's and SummEval's summaries are PTB-tokenised, their articles
are not): a space before an English clitic is dropped first ("jolie 's" = "Jolie's", "do n't" = "don't"),
and the PTB bracket tokens ``-lrb-``, ``-rrb-``, ``-lsb-``, ``-rsb-``, ``-lcb-``, ``-rcb-`` count as
punctuation. Without them a summary's "jolie 's" and the article's "Jolie's" would share no token.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

__all__ = ["exact_match", "normalize_answer", "token_f1"]

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_CLITIC_SPACE = re.compile(r"\s+(?=(?:['\u2019](?:s|re|ve|ll|d|m)|n['\u2019]t)\b)")
_PTB_BRACKETS = re.compile(r"-[lr][rsc]b-")


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """Lower-case, join clitics, drop punctuation and whole-word a/an/the, collapse whitespace (module rules)."""
    lowered = _PTB_BRACKETS.sub(" ", _CLITIC_SPACE.sub("", text.lower()))
    without_punctuation = "".join(char for char in lowered if not _is_punctuation(char))
    without_articles = _ARTICLES.sub(" ", without_punctuation)
    return " ".join(without_articles.split())


def token_f1(a: str, b: str) -> float:
    """Harmonic mean of token precision and recall after normalize_answer, in [0, 1]; symmetric in a and b.

    Tokens are counted as a multiset (a repeated token matches at most as often as it occurs on both sides).
    Both sides empty after normalisation -> 1.0; exactly one side empty -> 0.0 (SQuAD convention).
    """
    tokens_a = normalize_answer(a).split()
    tokens_b = normalize_answer(b).split()
    if not tokens_a or not tokens_b:
        return 1.0 if tokens_a == tokens_b else 0.0
    common = sum((Counter(tokens_a) & Counter(tokens_b)).values())
    if common == 0:
        return 0.0
    precision = common / len(tokens_a)
    recall = common / len(tokens_b)
    return 2.0 * precision * recall / (precision + recall)


def exact_match(a: str, b: str) -> float:
    """1.0 when a and b are equal after normalize_answer (two empty strings are equal), else 0.0."""
    return 1.0 if normalize_answer(a) == normalize_answer(b) else 0.0
