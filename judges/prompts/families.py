"""The chat messages sent to a judge, per prompt family.

=====================================================================  =====================================
call                                                                   messages
=====================================================================  =====================================
``direct_prompt("coherence", doc, summ, prompt_family="paper")``       one user turn; answer: one integer
``direct_prompt("relevance", doc, summ, prompt_family="geval")``       system + rubric; answer: one digit
``direct_prompt("fluency", doc, summ, prompt_family="rts")``           system + reason, then "Score: N"
``pairwise_prompt("coherence", doc, a, b, prompt_family="paper")``     one user turn; answer: "A" or "B"
=====================================================================  =====================================

Families:

* ``paper`` — the two protocols of the paper's Appendix A (direct 1-5 scoring with the anchors
  1 = very poor ... 5 = excellent and a bare-integer answer; pairwise with a bare "A"/"B" answer), in our
  own words. The criterion is named, not defined, as in the paper.
* ``geval`` — a detailed per-criterion rubric (definition, evaluation steps, what each score means) in the
  style of G-Eval; the answer is a single digit, so its first token carries the score distribution.
* ``rts`` — reason-then-score: one or two sentences of reasoning, then a closing ``Score: N`` line
  (pairwise: ``Answer: A``/``B``/``C``, C meaning equally good, as in the recorded reason-then-score data).

Criteria: coherence, consistency, fluency, relevance (SummEval) and faithfulness (FRANK). Anything else
raises ``UnknownPromptError`` naming the known values.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import msgspec

from judges.errors import UnknownPromptError
from judges.prompts.untrusted import UNTRUSTED_NOTE, fence

__all__ = ["CRITERIA", "ChatMessage", "PROMPT_FAMILIES", "direct_prompt", "pairwise_prompt"]

ChatMessage = dict[str, str]  # {"role": "system" | "user", "content": ...}

PROMPT_FAMILIES: Final = ("paper", "geval", "rts")
CRITERIA: Final = ("coherence", "consistency", "fluency", "relevance", "faithfulness")


class _Rubric(msgspec.Struct, frozen=True, kw_only=True):
    definition: str
    steps: tuple[str, ...]
    anchors: tuple[str, str, str, str, str]  # what a score of 1, 2, 3, 4, 5 means


_RUBRICS: Final[Mapping[str, _Rubric]] = MappingProxyType(
    {
        "coherence": _Rubric(
            definition=(
                "how well the summary hangs together as a piece of writing: its ideas come in a sensible order, "
                "each sentence connects to the ones around it, and the whole reads as one organised account of "
                "the topic rather than a list of loosely related facts"
            ),
            steps=(
                "Read the article and note its topic and its main points.",
                "Read the summary and follow how it moves from one sentence to the next.",
                "Look for abrupt jumps, missing links between ideas, contradictions and repetition.",
            ),
            anchors=(
                "the sentences do not form an account; it cannot be followed",
                "only fragments connect; the reader has to reconstruct the story",
                "the main line can be followed, but with jumps or awkward ordering",
                "well ordered, with at most a small break in the flow",
                "reads as one clear, well-organised account",
            ),
        ),
        "consistency": _Rubric(
            definition=(
                "whether everything the summary states is backed by the article: no facts that contradict it "
                "and no facts that are absent from it (invented names, numbers, events or causes)"
            ),
            steps=(
                "Read the article carefully and note its facts.",
                "Check each statement of the summary against the article.",
                "Count statements that the article contradicts or does not support, weighing serious ones more.",
            ),
            anchors=(
                "mostly unsupported or contradicted by the article",
                "several serious errors against the article",
                "some unsupported or wrong details alongside correct ones",
                "one minor detail not quite backed by the article",
                "every statement is supported by the article",
            ),
        ),
        "fluency": _Rubric(
            definition=(
                "the quality of the summary's sentences taken on their own: grammar, spelling, punctuation, "
                "word choice and sentence construction; whether the content is right or complete does not count"
            ),
            steps=(
                "Read the summary sentence by sentence.",
                "Note grammatical errors, broken or run-on sentences, wrong words and formatting problems.",
                "Judge how much these problems get in the way of reading.",
            ),
            anchors=(
                "mostly unreadable; errors in almost every sentence",
                "frequent errors that make reading hard",
                "readable, with noticeable errors or clumsy sentences",
                "good, with one or two small slips",
                "reads naturally and is free of errors",
            ),
        ),
        "relevance": _Rubric(
            definition=(
                "whether the summary picks out the important content of the article: it covers the main points "
                "and leaves out minor details, repetition and anything the article does not say"
            ),
            steps=(
                "Read the article and decide what its key points are.",
                "Check which of them the summary covers.",
                "Note content that is minor, repeated or not from the article.",
            ),
            anchors=(
                "misses the point of the article",
                "covers few key points or is mostly minor detail",
                "covers some key points but misses others or includes clutter",
                "covers the key points with little that is unneeded",
                "covers exactly the important content of the article",
            ),
        ),
        "faithfulness": _Rubric(
            definition=(
                "whether the summary is factually faithful to the article: each claim about entities, numbers, "
                "dates, places and how events relate must be stated in the article or follow directly from it"
            ),
            steps=(
                "Read the article and note its facts.",
                "Split the summary into its claims.",
                "Mark each claim as supported, unsupported or contradicted by the article.",
            ),
            anchors=(
                "most claims are wrong or unsupported",
                "several claims are wrong or unsupported",
                "a mix of faithful and unfaithful claims",
                "faithful apart from a minor slip",
                "every claim is faithful to the article",
            ),
        ),
    }
)

_PAPER_ANCHORS: Final = "1 = very poor, 2 = poor, 3 = fair, 4 = good, 5 = excellent"
_GEVAL_SYSTEM: Final = "You are an expert annotator who rates news summaries by a given rubric."
_RTS_SYSTEM: Final = "You are a careful evaluator of news summaries."


def _check(criterion: str, prompt_family: str) -> _Rubric:
    if prompt_family not in PROMPT_FAMILIES:
        raise UnknownPromptError(f"unknown prompt_family {prompt_family!r}; known: {', '.join(PROMPT_FAMILIES)}")
    if criterion not in _RUBRICS:
        raise UnknownPromptError(f"unknown criterion {criterion!r}; known: {', '.join(CRITERIA)}")
    return _RUBRICS[criterion]


def _rubric_text(criterion: str, rubric: _Rubric) -> str:
    steps = "\n".join(f"{i}. {step}" for i, step in enumerate(rubric.steps, start=1))
    anchors = "\n".join(f"{i}: {anchor}" for i, anchor in enumerate(rubric.anchors, start=1))
    return (
        f"Criterion: {criterion} - {rubric.definition}.\n\n"
        f"How to evaluate:\n{steps}\n\nScale (1 = worst, 5 = best):\n{anchors}"
    )


def direct_prompt(criterion: str, document: str, summary: str, *, prompt_family: str) -> list[ChatMessage]:
    """Messages asking for a 1-5 ``criterion`` score of ``summary`` against ``document`` in ``prompt_family``."""
    rubric = _check(criterion, prompt_family)
    # Untrusted texts are fenced (judges.prompts.untrusted): a summary cannot pose as the prompt's own words.
    article = f"Article:\n{fence('ARTICLE', document)}\n\nSummary:\n{fence('SUMMARY', summary)}\n\n{UNTRUSTED_NOTE}"
    if prompt_family == "paper":
        text = (
            f"You are judging the {criterion} of a summary of the article below.\n\n{article}\n\n"
            f"Rate the summary's {criterion} on a scale from 1 to 5, where {_PAPER_ANCHORS}.\n"
            "Answer with a single integer from 1 to 5 and nothing else."
        )
        return [{"role": "user", "content": text}]
    if prompt_family == "geval":
        text = (
            f"Rate one summary of a news article on one criterion.\n\n{_rubric_text(criterion, rubric)}\n\n"
            f"{article}\n\nAnswer with the score only: a single digit from 1 to 5."
        )
        return [{"role": "system", "content": _GEVAL_SYSTEM}, {"role": "user", "content": text}]
    text = (
        f"Evaluate the {criterion} of the summary below, that is {rubric.definition}.\n\n{article}\n\n"
        "First give your reason in one or two sentences. Then end with a line of the form "
        "'Score: N', where N is an integer from 1 (worst) to 5 (best)."
    )
    return [{"role": "system", "content": _RTS_SYSTEM}, {"role": "user", "content": text}]


def pairwise_prompt(criterion: str, document: str, first: str, second: str, *, prompt_family: str) -> list[ChatMessage]:
    """Messages asking which of ``first`` (shown as A) and ``second`` (shown as B) is better on ``criterion``."""
    rubric = _check(criterion, prompt_family)
    shown = (
        f"Article:\n{fence('ARTICLE', document)}\n\nSummary A:\n{fence('SUMMARY A', first)}\n\n"
        f"Summary B:\n{fence('SUMMARY B', second)}\n\n{UNTRUSTED_NOTE}"
    )
    if prompt_family == "paper":
        text = (
            f"You are comparing the {criterion} of two summaries of the article below.\n\n{shown}\n\n"
            f"Which summary is better in {criterion}? Answer with exactly one letter, A or B, and no "
            "explanation."
        )
        return [{"role": "user", "content": text}]
    if prompt_family == "geval":
        text = (
            f"Compare two summaries of a news article on one criterion.\n\n{_rubric_text(criterion, rubric)}"
            f"\n\n{shown}\n\nWhich summary is better on this criterion? Answer with a single letter: A or B."
        )
        return [{"role": "system", "content": _GEVAL_SYSTEM}, {"role": "user", "content": text}]
    text = (
        f"Compare the {criterion} of the two summaries below, that is {rubric.definition}.\n\n{shown}\n\n"
        "First give your reason in one or two sentences. Then end with a line 'Answer: A' if Summary A is "
        "better, 'Answer: B' if Summary B is better, or 'Answer: C' if they are equally good."
    )
    return [{"role": "system", "content": _RTS_SYSTEM}, {"role": "user", "content": text}]
