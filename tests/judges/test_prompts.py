"""Prompts: every family carries the texts and the criterion, and asks for the answer its parser reads."""

from __future__ import annotations

import pytest

from judges.errors import UnknownPromptError
from judges.parsing.reply import parse_preference, parse_score
from judges.prompts.families import CRITERIA, PROMPT_FAMILIES, direct_prompt, pairwise_prompt

DOCUMENT = "The council voted on Tuesday to reopen the Elm Street library after a two-year closure."
SUMMARY = "Elm Street library will reopen, the council decided."
FIRST = "The library reopens after two years."
SECOND = "A council met on a Tuesday."


def _text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def _check_shape(messages: list[dict[str, str]]) -> None:
    assert messages and all(set(m) == {"role", "content"} for m in messages)
    assert all(m["role"] in {"system", "user"} for m in messages)
    assert messages[-1]["role"] == "user"


@pytest.mark.parametrize("family", PROMPT_FAMILIES)
@pytest.mark.parametrize("criterion", CRITERIA)
def test_direct_prompt_carries_texts_and_criterion(family: str, criterion: str) -> None:
    messages = direct_prompt(criterion, f"  {DOCUMENT}\n", SUMMARY, prompt_family=family)
    _check_shape(messages)
    text = _text(messages)
    assert DOCUMENT in text and SUMMARY in text and criterion in text
    assert text.index(DOCUMENT) < text.index(SUMMARY)
    assert "1" in text and "5" in text


@pytest.mark.parametrize("family", PROMPT_FAMILIES)
@pytest.mark.parametrize("criterion", CRITERIA)
def test_pairwise_prompt_shows_first_as_a_and_second_as_b(family: str, criterion: str) -> None:
    messages = pairwise_prompt(criterion, DOCUMENT, FIRST, SECOND, prompt_family=family)
    _check_shape(messages)
    text = _text(messages)
    assert DOCUMENT in text and criterion in text
    assert text.index(DOCUMENT) < text.index("Summary A:") < text.index(FIRST) < text.index("Summary B:")
    assert text.index("Summary B:") < text.index(SECOND)


def test_paper_protocols_ask_for_a_bare_answer() -> None:
    direct = _text(direct_prompt("coherence", DOCUMENT, SUMMARY, prompt_family="paper"))
    assert "single integer from 1 to 5" in direct
    assert "1 = very poor" in direct and "5 = excellent" in direct
    pairwise = _text(pairwise_prompt("relevance", DOCUMENT, FIRST, SECOND, prompt_family="paper"))
    assert "exactly one letter, A or B" in pairwise and "no explanation" in pairwise
    assert "C" not in pairwise.split(SECOND)[-1]  # the paper's protocol has no tie option


def test_geval_gives_a_rubric_per_criterion() -> None:
    rubrics = {c: _text(direct_prompt(c, DOCUMENT, SUMMARY, prompt_family="geval")) for c in CRITERIA}
    for criterion, text in rubrics.items():
        assert f"Criterion: {criterion}" in text
        assert all(f"\n{k}: " in text for k in range(1, 6))  # one line per score
        assert "single digit from 1 to 5" in text
    definitions = {text.split("Criterion: ")[1].split("\n")[0] for text in rubrics.values()}
    assert len(definitions) == len(CRITERIA)


def test_rts_asks_reason_then_score_and_the_parser_reads_that_form() -> None:
    text = _text(direct_prompt("fluency", DOCUMENT, SUMMARY, prompt_family="rts"))
    assert "'Score: N'" in text and "reason" in text
    assert parse_score("The sentences are clean.\nScore: 5").score == 5
    pairwise = _text(pairwise_prompt("fluency", DOCUMENT, FIRST, SECOND, prompt_family="rts"))
    assert "'Answer: C'" in pairwise
    assert parse_preference("Both read well.\nAnswer: C") == "tie"


@pytest.mark.parametrize(
    ("criterion", "family", "named"),
    [("clarity", "paper", "clarity"), ("coherence", "fancy", "fancy"), ("Coherence", "rts", "Coherence")],
)
def test_unknown_criterion_or_family_is_refused(criterion: str, family: str, named: str) -> None:
    for build in (
        lambda: direct_prompt(criterion, DOCUMENT, SUMMARY, prompt_family=family),
        lambda: pairwise_prompt(criterion, DOCUMENT, FIRST, SECOND, prompt_family=family),
    ):
        with pytest.raises(UnknownPromptError, match=named) as caught:
            build()
        assert isinstance(caught.value, ValueError)
        assert "known:" in str(caught.value)
