"""Prompts of the factuality methods and the readers of the reply formats those prompts ask for.

The protocol follows Laskar et al. (our paper 001, on FRANK): direct scoring on 1-5 with one in-context
example, and a QA pipeline run by one LLM whose first call produces answer-question pairs together from the
summary (one in-context example), and whose later calls answer each question from the article. The wording
and the examples are ours.

| call                                            | result                                              |
|-------------------------------------------------|-----------------------------------------------------|
| ``direct_faithfulness_messages(doc, summ)``     | chat messages asking for one digit 1-5              |
| ``qa_generation_messages(summ, n_questions=5)`` | chat messages asking for numbered pairs             |
| ``qa_answer_messages(doc, question)``           | chat messages asking for a span or "unanswerable"   |
| ``parse_qa_generation(reply, summary=s, n_questions=5)`` | ``QAGeneration(pairs, problems, n_parsed)`` |
| ``parse_article_answer("Unanswerable.")``       | ``None`` (the article cannot answer)                |

Reading rules of ``parse_qa_generation`` (each skipped line or pair is named in ``problems``):

1. A pair is one line ``Answer: <span> | Question: <question>``; numbering (``1.``, ``2)``), bullets and
   ``**bold**`` are ignored, labels are case-insensitive, either order is accepted, and the ``|`` may be
   missing. A line holding only ``Answer:`` joined with a next line holding only ``Question:`` is one pair.
2. A labelled or numbered line that does not yield one non-empty answer and one non-empty question is a
   broken pair and is skipped. Other text outside the format (a preamble) is skipped and counted.
3. An answer that is not a span of the summary (comparing normalize_answer texts on token boundaries; the
   summary as given or as the judge was shown it, ``judges.prompts.normalise.clean``) is dropped, since the
   method's premise is that answers are taken from the summary; so is an answer that normalises to nothing.
4. A question repeating an earlier kept question (after normalize_answer) is dropped.
5. Of the pairs left, the first ``n_questions`` are kept; more is reported and truncated, fewer is reported.
"""

from __future__ import annotations

import re

import msgspec

from judges.factuality.qa_similarity import normalize_answer
from judges.prompts.normalise import clean
from judges.prompts.untrusted import UNTRUSTED_NOTE, fence

__all__ = [
    "QAGeneration",
    "QAPair",
    "UNANSWERABLE",
    "direct_faithfulness_messages",
    "parse_article_answer",
    "parse_qa_generation",
    "qa_answer_messages",
    "qa_generation_messages",
]

UNANSWERABLE = "unanswerable"

_DIRECT_SYSTEM = (
    "You check summaries of news articles for faithfulness: a faithful summary states only what the "
    "article supports and contradicts nothing in it. Style, length and coverage do not matter here."
)

_DIRECT_TEMPLATE = """Rate how faithful the summary is to the article on a scale from 1 to 5:
5 - every statement of the summary is supported by the article.
4 - faithful apart from one minor detail that is imprecise or not in the article.
3 - one clear factual error, or several details the article does not support.
2 - several factual errors, or a main claim that the article contradicts.
1 - the summary is mostly unsupported by the article or contradicts it throughout.

Example
Article: Heavy rain flooded the main road into Harrow Vale on Monday night, the county highways office \
said. About 40 homes lost power for several hours and the village primary school stayed closed on Tuesday. \
No one was hurt. Engineers expect the road to reopen by Friday.
Summary: Floods closed the main road into Harrow Vale on Monday, cutting power to 400 homes and injuring \
two people.
Score: 2

Now rate this pair. Answer with a single digit from 1 to 5 and nothing else.
Article: {document}
Summary: {summary}
Score:"""

_GENERATION_SYSTEM = "You write short question-answer pairs that test the facts stated in a summary."

_GENERATION_TEMPLATE = """Choose {n} short spans of the summary below that carry its facts (names, \
numbers, dates, places, events). For each span write one question that the span answers, using only the \
summary as context. Copy every answer word for word from the summary, and ask a different question each time.
Write exactly {n} pairs, one per line, numbered, in this format and nothing else:
1. Answer: <span copied from the summary> | Question: <question that the span answers>

Example summary: Maple Grove's council voted 7-2 on Tuesday to build a library on the old bus depot site.
Example pairs (3 requested):
1. Answer: Maple Grove's council | Question: Who voted to build a library on the old bus depot site?
2. Answer: 7-2 | Question: By what margin did the council vote for the library?
3. Answer: old bus depot site | Question: Where will the new library be built?

Summary: {summary}
Pairs ({n} requested):"""

_ANSWER_SYSTEM = "You answer questions about a news article using only what the article says."

_ANSWER_TEMPLATE = """Article: {document}

Question: {question}

Reply with the shortest span of the article that answers the question, copied word for word, with no \
explanation. If the article does not give the answer, reply with the single word: {unanswerable}"""


class QAPair(msgspec.Struct, frozen=True, kw_only=True):
    """One generated pair: the answer span taken from the summary and the question it answers."""

    answer: str
    question: str


class QAGeneration(msgspec.Struct, frozen=True, kw_only=True):
    """The pairs kept from one generation reply, what was skipped and why, and how many pairs were read."""

    pairs: list[QAPair]
    problems: list[str]
    n_parsed: int  # well-formed pairs read before the content checks and truncation


def _messages(system: str, user: str) -> list[dict[str, str]]:
    # Every text from a caller or a model is fenced (judges.prompts.untrusted), and the system turn says so.
    return [{"role": "system", "content": f"{system} {UNTRUSTED_NOTE}"}, {"role": "user", "content": user}]


def direct_faithfulness_messages(document: str, summary: str) -> list[dict[str, str]]:
    """Chat messages asking for the summary's faithfulness to the document as one digit 1-5 (one example)."""
    user = _DIRECT_TEMPLATE.format(document=fence("ARTICLE", document), summary=fence("SUMMARY", summary))
    return _messages(_DIRECT_SYSTEM, user)


def qa_generation_messages(summary: str, n_questions: int) -> list[dict[str, str]]:
    """Chat messages asking for n_questions numbered ``Answer: ... | Question: ...`` lines on the summary."""
    return _messages(_GENERATION_SYSTEM, _GENERATION_TEMPLATE.format(n=n_questions, summary=fence("SUMMARY", summary)))


def qa_answer_messages(document: str, question: str) -> list[dict[str, str]]:
    """Chat messages asking for the shortest article span answering the question, or ``unanswerable``."""
    user = _ANSWER_TEMPLATE.format(
        document=fence("ARTICLE", document), question=fence("QUESTION", question), unanswerable=UNANSWERABLE
    )
    return _messages(_ANSWER_SYSTEM, user)


_LABEL = re.compile(r"\b(answer|question)\s*:", re.IGNORECASE)
_ENUMERATION = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,3}[.):])")
_EDGE_JUNK = " \t|*_`\"'\u201c\u201d"


def _clip(line: str, limit: int = 80) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _read_line(line: str) -> dict[str, list[str]]:
    """Label -> texts found on the line (text running up to the next label), edges cleaned."""
    found: dict[str, list[str]] = {}
    matches = list(_LABEL.finditer(line))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        found.setdefault(match.group(1).lower(), []).append(line[match.end() : end].strip(_EDGE_JUNK))
    return found


def _read_pairs(reply: str) -> tuple[list[QAPair], list[str]]:
    pairs: list[QAPair] = []
    problems: list[str] = []
    pending: tuple[int, str] | None = None  # an "Answer:"-only line waiting for its "Question:" line
    n_prose = 0
    for number, raw_line in enumerate(reply.splitlines(), start=1):
        line = raw_line.replace("**", "").strip()
        if not line:
            continue
        found = _read_line(line)
        answers, questions = found.get("answer", []), found.get("question", [])
        if pending is not None and questions and not answers:
            answers = [pending[1]]  # the two-line form of one pair
        elif pending is not None:
            problems.append(f"broken pair on line {pending[0]}: an answer without a question")
        pending = None
        if not found:
            if _ENUMERATION.match(line):
                problems.append(f"broken pair on line {number}: no Answer:/Question: labels: {_clip(line)!r}")
            else:
                n_prose += 1
        elif len(answers) == 1 and not questions and answers[0]:
            pending = (number, answers[0])
        elif len(answers) == 1 and len(questions) == 1 and answers[0] and questions[0]:
            pairs.append(QAPair(answer=answers[0], question=questions[0]))
        else:
            problems.append(f"broken pair on line {number}: need one non-empty answer and question: {_clip(line)!r}")
    if pending is not None:
        problems.append(f"broken pair on line {pending[0]}: an answer without a question")
    if n_prose:
        problems.append(f"skipped {n_prose} line(s) of text outside the pair format")
    return pairs, problems


def parse_qa_generation(reply: str | None, *, summary: str, n_questions: int) -> QAGeneration:
    """Read answer-question pairs from a generation reply by the module's rules 1-5; never raises on text."""
    pairs, problems = _read_pairs(reply or "")
    if reply is None or not reply.strip():
        problems.append("the generation reply is empty")
    # The judge saw the summary cleaned (NFKC: "ﬁ" -> "fi"), so a span of either form counts as copied from it.
    padded_summaries = (f" {normalize_answer(summary)} ", f" {normalize_answer(clean(summary))} ")
    kept: list[QAPair] = []
    seen_questions: set[str] = set()
    for pair in pairs:
        answer_norm = normalize_answer(pair.answer)
        question_norm = normalize_answer(pair.question)
        if not answer_norm:
            problems.append(f"dropped pair: answer {pair.answer!r} is empty after normalisation")
        elif not any(f" {answer_norm} " in padded for padded in padded_summaries):
            problems.append(f"dropped pair: answer {pair.answer!r} is not a span of the summary")
        elif not question_norm:
            problems.append(f"dropped pair: question {pair.question!r} is empty after normalisation")
        elif question_norm in seen_questions:
            problems.append(f"dropped pair: duplicate question {pair.question!r}")
        else:
            seen_questions.add(question_norm)
            kept.append(pair)
    if len(kept) > n_questions:
        problems.append(
            f"{len(kept)} usable pairs, more than the {n_questions} requested: kept the first {n_questions}"
        )
        kept = kept[:n_questions]
    elif len(kept) < n_questions:
        problems.append(f"only {len(kept)} usable pair(s) of the {n_questions} requested")
    return QAGeneration(pairs=kept, problems=problems, n_parsed=len(pairs))


def parse_article_answer(reply: str | None) -> str | None:
    """First non-empty reply line minus an ``Answer:`` label and quotes; None if empty or ``unanswerable``."""
    lines = [line.strip() for line in (reply or "").splitlines() if line.strip()]
    if not lines:
        return None
    text = re.sub(r"^\s*answer\s*:\s*", "", lines[0].replace("**", ""), flags=re.IGNORECASE)
    text = text.strip(_EDGE_JUNK)
    normalized = normalize_answer(text)
    if not normalized or normalized.split()[0] == UNANSWERABLE:
        return None
    return text
