"""Unicode hygiene for untrusted text: what a judge is shown, and the folded views a detector reads.

======================== ===========================================================================================
function                 contract
======================== ===========================================================================================
``clean(text)``          what a judge is shown: invisible characters removed (every format character - zero-width
                         spaces and joiners, bidi embeddings/overrides/isolates/marks, soft hyphen, word joiner, BOM,
                         tag characters - plus variation selectors, the combining grapheme joiner and Hangul
                         fillers), other control characters removed, every line break (CR, CRLF, VT, FF, NEL,
                         U+2028/9, file/group/record separators) made "\\n", then NFKC (fullwidth, mathematical
                         alphanumerics, ligatures and compatibility forms become their plain letters and digits)
``escape_angles(text)``  every run of angle-bracket look-alikes pointing one way (``<`` ``‹`` ``«`` ``≪`` ``〈``
                         ``《`` ``⟨`` ``❮`` ``˂`` ``ᐸ`` ... optionally separated by whitespace) whose visual width
                         (``«`` and ``≪`` count 2, ``⋘`` 3) is 3 or more, with each bracket replaced by ``(`` or ``)``
``skeleton(text)``       detection only (``fold(clean(text))``): ``clean``, then common confusables folded to ASCII
                         (Cyrillic, Greek, Armenian, Cherokee look-alikes, dotless i ...), accents dropped, and
                         every angle look-alike written as as many ``<`` / ``>`` as its width
======================== ===========================================================================================

Only ``clean`` and ``escape_angles`` change what a judge reads; folding confusables would garble legitimate
Cyrillic or Greek text, so ``skeleton`` is for matching only.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ANGLES", "clean", "escape_angles", "fold", "skeleton"]

# Format characters (Unicode category Cf, as of Unicode 15) and other invisible code points.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_SPECIAL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")

# Angle-bracket look-alikes: character -> (direction, visual width). NFKC already maps fullwidth/small/vertical
# forms (＜ ﹤ ︿ ︽ 〈) onto these.
ANGLES: dict[str, tuple[str, int]] = {
    **{c: ("<", 1) for c in "<‹˂˱⋖≮〈⟨❬❮❰⦑⦓⧼⧀⩹⩻⍃⮜ᐸ〈"},
    **{c: (">", 1) for c in ">›˃˲⋗≯〉⟩❭❯❱⦒⦔⧽⧁⩺⩼⍄⮞ᐳ〉"},
    **{c: ("<", 2) for c in "«≪《⟪⪡⪣"},
    **{c: (">", 2) for c in "»≫》⟫⪢"},
    "⋘": ("<", 3),
    "⫷": ("<", 3),
    "⋙": (">", 3),
    "⫸": (">", 3),
}
_ANY_ANGLE = "".join(re.escape(c) for c in ANGLES)
# A candidate span: angles separated by non-word characters; _escape_span keeps to whitespace and marks between them.
_ANGLE_SPAN = re.compile(rf"[{_ANY_ANGLE}](?:\W*?[{_ANY_ANGLE}])*")
_ESCAPED = {"<": "(", ">": ")"}
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_FENCE_WIDTH = 3  # the fence markers use runs of three


def _is_mark(char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me")


_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "г": "r",
        "һ": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "п": "n",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ь": "b",
        "ӏ": "l",
        "А": "A",
        "В": "B",
        "Д": "D",
        "Е": "E",
        "Ё": "E",
        "З": "3",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "У": "Y",
        "Х": "X",
        "І": "I",
        "Ї": "I",
        "Ј": "J",
        "Ѕ": "S",
        "Ԁ": "D",
        "Ԍ": "G",
        "Һ": "H",
        "Ӏ": "I",
        "Ү": "Y",
        "Ԛ": "Q",
        "Ԝ": "W",
        # Greek
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ζ": "Z",
        "Η": "H",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Υ": "Y",
        "Χ": "X",
        "α": "a",
        "β": "b",
        "γ": "y",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ϲ": "c",
        "ϳ": "j",
        # Armenian, Cherokee, Latin extensions, Lisu
        "օ": "o",
        "ս": "u",
        "հ": "h",
        "ո": "n",
        "ց": "g",
        "զ": "q",
        "Ꭺ": "A",
        "Ᏼ": "B",
        "Ꮯ": "C",
        "Ꭼ": "E",
        "Ꮋ": "H",
        "Ꭻ": "J",
        "Ꮶ": "K",
        "Ꮮ": "L",
        "Ꮇ": "M",
        "Ꮲ": "P",
        "Ꮪ": "S",
        "Ꭲ": "T",
        "Ꮩ": "V",
        "Ꮃ": "W",
        "Ꮓ": "Z",
        "ı": "i",
        "ȷ": "j",
        "ɑ": "a",
        "ɡ": "g",
        "ǀ": "l",
        "ꓲ": "I",
        "ꓳ": "O",
        "ꓢ": "S",
        "ꓮ": "A",
        "ꓰ": "E",
        **{c: d * w for c, (d, w) in ANGLES.items()},
    }
)


def clean(text: str) -> str:
    """``text`` as a judge is shown it: invisible and control characters removed, line breaks "\\n", NFKC."""
    if text.isascii():  # NFKC and the invisible characters concern non-ASCII text only (a fast path)
        return _CONTROLS.sub("", _LINE_BREAKS.sub("\n", text)) if _ASCII_SPECIAL.search(text) else text
    text = _LINE_BREAKS.sub("\n", text)
    return unicodedata.normalize("NFKC", _CONTROLS.sub("", _INVISIBLE.sub("", text)))


def _escape_span(span: re.Match[str]) -> str:
    chars = list(span.group())
    run: list[int] = []  # positions of the angles of the current one-way run
    direction, width = "", 0

    def close_run() -> None:
        if width >= _FENCE_WIDTH:
            for position in run:
                chars[position] = _ESCAPED[direction]

    for position, char in enumerate(chars):
        if char in ANGLES:
            char_direction, char_width = ANGLES[char]
            if char_direction != direction:
                close_run()
                run, direction, width = [], char_direction, 0
            run.append(position)
            width += char_width
        elif not (char.isspace() or _is_mark(char)):
            close_run()
            run, direction, width = [], "", 0
    close_run()
    return "".join(chars)


def escape_angles(text: str) -> str:
    """``text`` with each one-way run of angle look-alikes 3 or more wide turned into parentheses (``(((``).

    Whitespace and combining marks may sit between the brackets of a run (``< < <``, ``<\u0301<<``)."""
    return _ANGLE_SPAN.sub(_escape_span, text)


def _drop_marks(run: re.Match[str]) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", run.group()) if not _is_mark(c))


def fold(cleaned: str) -> str:
    """``skeleton`` of a text that is already ``clean``: confusables folded, accents dropped, angles as ``<``/``>``."""
    # Only non-ASCII runs can hold confusables or accents; ASCII text passes through untouched (and fast).
    if cleaned.isascii():
        return cleaned
    return _NON_ASCII.sub(_drop_marks, cleaned).translate(_CONFUSABLES)


def skeleton(text: str) -> str:
    """Detection view of ``text``: ``clean``, confusables folded to ASCII, accents dropped, angles as ``<``/``>``."""
    return fold(clean(text))
