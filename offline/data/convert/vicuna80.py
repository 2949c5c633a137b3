"""``pairwise/vicuna80/`` from the PRD repository's Vicuna80 data (bcdnlp/PRD, ``data/vicuna80/``).

- ``items.jsonl``: ``prompts/vicuna_questions.jsonl`` (``question_id``, ``text``, ``category``) with each
  assistant's answer from ``generations/answer_<assistant>.jsonl`` (matched on ``question_id``); ``item_id`` is
  ``q<question_id>``, ``answers`` keyed by the assistant's name, names sorted; questions in file order.
- ``prompts.json``: ``prompts/vicuna_prompt_threeclass.jsonl`` as one JSON list (indent 1).
- ``human.jsonl`` and ``judges/<judge>.jsonl``: the ``ratings-<reviewer>/answer_<A>-vs-answer_<B>-<reviewer>-
  reviewer[_threeclass].jsonl`` files (both ``-`` and ``_`` occur as separators): ``first`` = A (shown as
  "Assistant 1"), ``second`` = B, ``score`` 1 / 2 / 3 read as ``first`` / ``second`` / ``tie`` (the dataset
  authors' reading of the reply). When a reviewer has two files for one ordered pair, the ``repetition`` is the
  file's rank in byte order of the file names (0, 1). Human rows are sorted stably by (question, first, second),
  judges' rows by (question, first, second, repetition).

Assistant names: ``gpt4`` -> ``gpt-4``, ``gpt35`` -> ``gpt-3.5-turbo``, ``claude`` -> ``claude-v1``; ``bard``,
``vicuna-13b`` and the ``guanaco-*`` models (rated by humans only) keep their names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl, json_lines

__all__ = ["NAMES", "human", "items", "judge", "prompts"]

NAMES = {
    "bard": "bard",
    "claude": "claude-v1",
    "gpt35": "gpt-3.5-turbo",
    "gpt4": "gpt-4",
    "vicuna-13b": "vicuna-13b",
    **{f"guanaco-{size}": f"guanaco-{size}" for size in ("7b", "13b", "33b", "65b")},
}
_NAME = "|".join(re.escape(n) for n in sorted(NAMES, key=len, reverse=True))
RATINGS = re.compile(
    rf"answer[-_](?P<a>{_NAME})-vs-answer[-_](?P<b>{_NAME})-(?P<reviewer>{_NAME}|human)-reviewer(?:[-_]threeclass)?"
    r"\.jsonl"
)
LABELS = {1: "first", 2: "second", 3: "tie"}


def items(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The 80 questions with the five assistants' answers.

    Raises:
        ValueError: an answer file's assistant is unknown, or a question lacks an answer of some assistant.
    """
    answers: dict[int, dict[str, str]] = {}
    for key, raw in inputs.each("*/generations/answer_*.jsonl"):
        stem = key.rsplit("/", 1)[1].removeprefix("answer_").removesuffix(".jsonl")
        if stem not in NAMES:
            raise ValueError(f"{key}: unknown assistant {stem!r}")
        for _, row in json_lines(key, raw):
            answers.setdefault(int(row["question_id"]), {})[NAMES[stem]] = row["text"]
    assistants = {name for per in answers.values() for name in per}
    key, raw = inputs.one("*/prompts/vicuna_questions.jsonl")
    out = []
    for number, row in json_lines(key, raw):
        given = answers.get(int(row["question_id"]), {})
        if set(given) != assistants:
            raise ValueError(f"{key}:{number}: question {row['question_id']} lacks answers of some assistants")
        out.append(
            {
                "item_id": f"q{row['question_id']}",
                "category": row["category"],
                "question": row["text"],
                "answers": {name: given[name] for name in sorted(given)},
            }
        )
    return dump_jsonl(out)


def prompts(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The judge prompt templates as one JSON document."""
    key, raw = inputs.one("*/prompts/vicuna_prompt_threeclass.jsonl")
    rows = [row for _, row in json_lines(key, raw)]
    return (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _ratings(inputs: Inputs) -> list[tuple[tuple[int, str, str, int], dict[str, Any]]]:
    """Every rating of the inputs: ((question, first, second, repetition), raw row), in file-name byte order."""
    keyed = sorted(inputs.keys("*.jsonl"), key=lambda k: k.rsplit("/", 1)[1].encode())
    files_per_pair: dict[tuple[str, str, str], int] = {}
    out = []
    for key in keyed:
        name = key.rsplit("/", 1)[1]
        match = RATINGS.fullmatch(name)
        if match is None:
            raise ValueError(f"{key}: not an answer_<A>-vs-answer_<B>-<reviewer>-reviewer ratings file")
        pair = (match["reviewer"], NAMES[match["a"]], NAMES[match["b"]])
        repetition = files_per_pair.get(pair, 0)
        files_per_pair[pair] = repetition + 1
        for number, row in json_lines(key, inputs.read(key)):
            if row.get("score") not in LABELS:
                raise ValueError(f"{key}:{number}: score {row.get('score')!r} is not 1, 2 or 3")
            out.append(((int(row["question_id"]), pair[1], pair[2], repetition), row))
    return out


def human(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The human votes: one row per vote."""
    ratings = _ratings(inputs)
    ratings.sort(key=lambda r: r[0][:3])
    return dump_jsonl(
        [{"item_id": f"q{q}", "first": a, "second": b, "vote": LABELS[row["score"]]} for (q, a, b, _), row in ratings]
    )


def judge(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """One LLM reviewer's verdicts, with its raw reply."""
    ratings = _ratings(inputs)
    ratings.sort(key=lambda r: r[0])
    return dump_jsonl(
        [
            {
                "item_id": f"q{q}",
                "first": a,
                "second": b,
                "repetition": repetition,
                "response": row["text"],
                "label": LABELS[row["score"]],
            }
            for (q, a, b, repetition), row in ratings
        ]
    )
