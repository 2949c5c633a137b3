"""The views of a text that the prompt-injection rules (``service.screening.injection_rules``) are matched against.

Every rule is matched against several *views* of a text, so that spelling tricks do not hide an attack:

* ``clean``: NFKC, invisible characters (zero-width, bidi controls, tag characters, soft hyphens, variation
  selectors) removed: what the judge is shown (``judges.prompts.normalise.clean``);
* ``skeleton``: the clean text with confusables folded to ASCII (Cyrillic/Greek/Armenian/Cherokee look-alikes,
  fullwidth and mathematical letters via NFKC), accents dropped, angle look-alikes as ``<``/``>``;
* leet (``1gn0r3`` -> ``ignore``, only in tokens mixing letters and digits), letters separated by spaces or
  symbols joined (``i g n o r e`` -> ``ignore``), rot13 (when the text mentions it), and the text reversed when it
  carries bidi controls or mentions reversing;
* decoded pieces: base64 and hex runs that decode to text, percent-encoding, HTML entities;
* hidden pieces: Unicode tag characters decoded, HTML comments, elements hidden by style or attribute, Markdown
  link-comments (``[//]: # (...)``). Hidden pieces also feed ``hidden_instructions``.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from judges.prompts.normalise import clean, fold, skeleton

__all__ = ["TextViews", "View", "text_views"]

_OTHER_SCRIPTS = re.compile(
    "[\u0370-\u03ff\u0590-\u05ff\u0400-\u052f\u0600-\u06ff\u0900-\u097f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)
_WORD = re.compile(r"[a-z]+")
_LEET_TOKEN = re.compile(r"\b(?:[a-z]+[013457@$]|[013457@$]+[a-z])[\w@$]*")
_LEET = str.maketrans("013457@$", "oieastas")
_SPACED = re.compile(r"\b(?:[a-z][^\w\n]{1,3}){3,}[a-z]\b")
_NOT_LETTER = re.compile(r"[^a-z]")
_WINDOW = 200  # characters kept on each side of a leet or spaced-out token (the rules look within a sentence)
_REVERSE_HINT = re.compile(r"\b(?:revers\w*|backwards?|right to left)\b")
_ROT13_HINT = re.compile(r"rot-? ?13|caesar|rotate")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+);", re.IGNORECASE)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_TAGS = re.compile("[\U000e0020-\U000e007e]{2,}")
_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.DOTALL)
_HIDDEN_ELEMENT = re.compile(
    r"<(\w+)\b[^>]*?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0|\bhidden\b|"
    r"aria-hidden)[^>]*>(.*?)</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)
_MARKDOWN_COMMENT = re.compile(r"^[ \t]*\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*\((.*)\)[ \t]*$", re.MULTILINE)


def _printable_text(data: bytes) -> str | None:
    """``data`` as UTF-8 text when it decodes and is mostly letters and spaces, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    return text if text and letters / len(text) >= 0.7 else None


def _decoded_pieces(text: str) -> list[str]:
    """Base64 and hex runs that decode to text, and the text percent-decoded or HTML-unescaped when it has any."""
    pieces: list[str] = []
    long_tokens = " ".join(token for token in text.split() if len(token) >= 16)
    for run in _BASE64.findall(long_tokens):
        try:
            data = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if (decoded := _printable_text(data)) is not None:
            pieces.append(decoded)
    for run in _HEX.findall(long_tokens):
        if (decoded := _printable_text(bytes.fromhex(run))) is not None:
            pieces.append(decoded)
    if _PERCENT.search(text):
        pieces.append(urllib.parse.unquote(text))
    if _ENTITY.search(text):
        pieces.append(html.unescape(text))
    return pieces


def _hidden_pieces(text: str, shown: str) -> list[str]:
    """Parts of ``text`` (``shown`` once cleaned) a reader does not see: tag characters, comments, hidden elements."""
    pieces = ["".join(chr(ord(c) - 0xE0000) for c in run) for run in _TAGS.findall(text)]
    pieces += [m.group(1) for m in _HTML_COMMENT.finditer(shown)]
    pieces += [m.group(2) for m in _HIDDEN_ELEMENT.finditer(shown)]
    pieces += [m.group(1) for m in _MARKDOWN_COMMENT.finditer(shown)]
    return [piece for piece in pieces if piece.strip()]


def _changed_windows(text: str, pattern: re.Pattern[str], rewrite: Callable[[re.Match[str]], str]) -> str:
    """The stretches of ``text`` around each ``pattern`` match (a sentence or two), rewritten: a short view ("" when
    nothing matches), so that a long article with one "2nd" in it is not matched twice in full."""
    spans: list[list[int]] = []
    for match in pattern.finditer(text):
        start, end = max(0, match.start() - _WINDOW), min(len(text), match.end() + _WINDOW)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return "\n".join(pattern.sub(rewrite, text[start:end]) for start, end in spans)


@dataclass(frozen=True)
class View:
    """One view of a text and the set of its lower-case ASCII words (for the checks' gates)."""

    text: str
    words: frozenset[str]


def _view(text: str) -> View:
    """The view of ``text`` with its words."""
    return View(text=text, words=frozenset(_WORD.findall(text)))


@dataclass(frozen=True)
class TextViews:
    """The views of one text the rules are matched against (module docstring), by kind (``Check.views``)."""

    latin: list[View]  # lower-cased skeleton, leet, joined letters, rot13 (hinted), reversed (bidi), decoded, hidden
    script: list[View]  # the clean text, when it holds letters of a script other than Latin
    hidden: list[View]  # hidden pieces (skeleton, lower-cased)
    hidden_clean: list[View]  # the clean text and the hidden pieces, case kept


def text_views(text: str) -> TextViews:
    """The views of ``text`` that the rules are matched against, empty ones and duplicates dropped."""
    shown = clean(text)
    folded_cased = fold(shown)
    folded = folded_cased.lower()
    latin = [
        folded,
        _changed_windows(folded, _LEET_TOKEN, lambda m: m.group().translate(_LEET)),
        _changed_windows(folded, _SPACED, lambda m: _NOT_LETTER.sub("", m.group())),
    ]
    if _ROT13_HINT.search(folded):
        latin.append(codecs.encode(folded, "rot13"))
    if _BIDI.search(text) or _REVERSE_HINT.search(folded):
        latin.append(folded[::-1])
    latin += [skeleton(piece).lower() for piece in _decoded_pieces(folded_cased)]
    hidden_raw = _hidden_pieces(text, shown)
    hidden = [skeleton(piece).lower() for piece in hidden_raw]
    return TextViews(
        latin=[_view(view) for view in dict.fromkeys(latin + hidden) if view],
        script=[_view(shown)] if _OTHER_SCRIPTS.search(shown) else [],
        hidden=[_view(view) for view in dict.fromkeys(hidden)],
        hidden_clean=[View(text=view, words=frozenset()) for view in [shown, *hidden_raw]],
    )
