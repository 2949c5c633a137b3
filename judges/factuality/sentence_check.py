"""Sentence-level fact-checking of a summary against its article: each sentence, its error category, a reason.

The third factuality method next to direct scoring and QA (``judges.factuality.methods``). The judge sees the
article and the summary's sentences, numbered, and answers with a JSON list of ``{sentence, category, reason}``
in the same order, one per sentence, the category one of FRANK's error types written out (Pagnoni et al.,
2021) or ``no error``. The prompt's wording is ours; the reply format is FineSurE's (Song et al., ACL 2024),
so recorded FineSurE fact-checks and live answers are read by the same parser (``sentence_parse``).

| call                                                         | result                                        |
|--------------------------------------------------------------|-----------------------------------------------|
| ``split_sentences("A b. C d!")``                             | ``["A b.", "C d!"]``                          |
| ``sentence_check_messages(doc, ["A b.", "C d!"])``           | chat messages asking for the JSON list        |
| ``await judge_faithfulness_sentences(client, doc, summary)`` | ``SentenceFactuality`` (1 call)               |
| ``sentence_score(verdicts)``                                 | ``(share error-free, 1-5 judge_score)``       |

Rules:

- **Sentences.** ``split_sentences`` cuts after ``.``, ``!`` or ``?`` (with any closing quotes or brackets)
  followed by white space, and at line breaks; pieces are stripped, empty ones dropped. No abbreviation list:
  "Dr. Smith" is two pieces. A caller who needs another split sends its own ``sentences``.
- **Fencing.** The article and the numbered sentences are fenced (``judges.prompts.untrusted``) and the system turn
  carries ``UNTRUSTED_NOTE``, as in every prompt of the service: they are material to check, never instructions.
- **Score.** The share of sentences judged ``no error``; ``judge_score = 1 + round_half_up(4 x share)`` (0 -> 1,
  0.125 -> 2, 0.5 -> 3, 1 -> 5), the rule the offline calibration applies to recorded fact-checks.
- **Bad replies.** A reply without one well-formed verdict per sentence raises ``JudgeReplyError`` with
  ``reason`` = ``"sentences_<rule>"`` (``sentences_no_reply``, ``sentences_no_list``, ``sentences_not_json``,
  ``sentences_bad_entry``, ``sentences_unknown_category``, ``sentences_wrong_count``): never a guessed score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import msgspec

from judges.errors import JudgeReplyError
from judges.factuality.methods import Completer
from judges.factuality.sentence_parse import NO_ERROR, SentenceVerdict, parse_sentence_verdicts
from judges.prompts.untrusted import UNTRUSTED_NOTE, fence, neutralise

__all__ = [
    "MAX_SENTENCES",
    "SentenceFactuality",
    "judge_faithfulness_sentences",
    "judge_score_from_share",
    "sentence_check_messages",
    "sentence_score",
    "split_sentences",
]

MAX_SENTENCES = 100
_TOKENS_PER_SENTENCE = 120
_BOUNDARY = re.compile(r"([.!?][\"'\u201d\u2019)\]]*)\s+|\n+")

_SYSTEM = (
    "You are a careful fact-checker. You compare each sentence of a summary with the article it "
    "summarises and report factual errors only: style, length and coverage do not matter here."
)

_CATEGORY_HELP = """Categories (choose exactly one per sentence):
- "no error": the article supports everything the sentence states.
- "predicate error": the main verb or relation contradicts the article.
- "entity error": a person, place, object or number is wrong or swapped.
- "circumstantial error": the time, place or manner of an event is wrong.
- "coreference error": a pronoun or reference points to the wrong entity or to none.
- "linking error": the relation between two statements (cause, order) is wrong.
- "out-of-context error": the sentence states something the article does not contain.
- "grammatical error": the sentence is too garbled to be checked.
- "other error": a factual error of another kind."""

_TEMPLATE = """Article:
{document}

Summary sentences:
{numbered}

{categories}

Answer with a JSON list of exactly {n} objects, one per summary sentence, in the order given, and nothing else:
[{{"sentence": "<the sentence>", "category": "<one category>", "reason": "<one line>"}}, ...]"""


class SentenceFactuality(msgspec.Struct, frozen=True, kw_only=True):
    """One summary's sentence-level fact-check: the verdicts, their score, the 1-5 verdict and the raw reply."""

    sentences: list[str]
    verdicts: list[SentenceVerdict]
    score: float  # share of sentences judged "no error", in [0, 1]
    judge_score: int  # 1 + round_half_up(4 x score)
    raw_reply: str
    escapes_repaired: bool
    prompt_tokens: int
    completion_tokens: int
    reply_model: str | None = None  # the model the reply reported


def split_sentences(summary: str) -> list[str]:
    """The summary's sentences by the module's rule (cut after .!? plus closers and white space, or a newline)."""
    pieces, position = [], 0
    for match in _BOUNDARY.finditer(summary):
        end = match.end(1) if match.group(1) else match.start()
        pieces.append(summary[position:end])
        position = match.end()
    pieces.append(summary[position:])
    return [piece.strip() for piece in pieces if piece.strip()]


def judge_score_from_share(share: float) -> int:
    """The 1-5 verdict of a share in [0, 1]: ``1 + round_half_up(4 x share)`` (1e-9 slack for float sums)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must lie in [0, 1], got {share!r}")
    return 1 + math.floor(4.0 * share + 0.5 + 1e-9)


def sentence_score(verdicts: Sequence[SentenceVerdict]) -> tuple[float, int]:
    """(share of verdicts with category ``no error``, its 1-5 judge_score); ValueError for no verdicts."""
    if not verdicts:
        raise ValueError("no sentence verdicts")
    share = sum(v.category == NO_ERROR for v in verdicts) / len(verdicts)
    return share, judge_score_from_share(share)


def sentence_check_messages(document: str, sentences: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one ``{sentence, category, reason}`` object per numbered sentence, in order."""
    # Caller and model texts are fenced (judges.prompts.untrusted) and the system turn says they are data.
    numbered = "\n".join(f"{i}. {neutralise(sentence.strip())}" for i, sentence in enumerate(sentences, start=1))
    user = _TEMPLATE.format(
        document=fence("ARTICLE", document),
        numbered=fence("SENTENCES", numbered),
        categories=_CATEGORY_HELP,
        n=len(sentences),
    )
    return [{"role": "system", "content": f"{_SYSTEM} {UNTRUSTED_NOTE}"}, {"role": "user", "content": user}]


async def judge_faithfulness_sentences(
    client: Completer, document: str, summary: str, *, sentences: Sequence[str] | None = None
) -> SentenceFactuality:
    """Fact-check every sentence of ``summary`` (``split_sentences`` unless ``sentences`` are given) in one call.

    Raises ValueError (empty document or summary, no sentence, more than MAX_SENTENCES), JudgeReplyError (no
    verdict per sentence: the module's bad-reply rule) and the client's JudgeCallError (the call failed).
    """
    if not document.strip():
        raise ValueError("document is empty")
    if not summary.strip():
        raise ValueError("summary is empty")
    chosen = [s.strip() for s in (sentences if sentences is not None else split_sentences(summary))]
    if not chosen or not all(chosen):
        raise ValueError("the summary has no sentence to check (or a sentence is blank)")
    if len(chosen) > MAX_SENTENCES:
        raise ValueError(f"the summary has {len(chosen)} sentences; at most {MAX_SENTENCES} are checked in one call")
    max_tokens = max(client.config.max_tokens, _TOKENS_PER_SENTENCE * len(chosen) + 64)
    completion = await client.complete(sentence_check_messages(document, chosen), max_tokens=max_tokens)
    text = completion.text or ""
    parsed = parse_sentence_verdicts(text, n_sentences=len(chosen))
    if parsed.verdicts is None:
        reason = f"sentences_{parsed.rule}"
        raise JudgeReplyError(
            f"judge {client.config.name!r}: no verdict per sentence in the fact-check reply ({reason}: "
            f"{parsed.problem}; {len(chosen)} sentences asked)",
            judge=client.config.name,
            raw_reply=text,
            reason=reason,
        )
    score, judge_score = sentence_score(parsed.verdicts)
    return SentenceFactuality(
        sentences=chosen,
        verdicts=parsed.verdicts,
        score=score,
        judge_score=judge_score,
        raw_reply=text,
        escapes_repaired=parsed.escapes_repaired,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        reply_model=completion.model,
    )
