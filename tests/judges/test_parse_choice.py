"""parse_choice: the "1, 2 or 3" pairwise choice of Vicuna-bench style prompts, and the recorded replies."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from judges.parsing.choice import parse_choice
from offline.data.paths import resolve_data_dir


@pytest.mark.parametrize(
    ("reply", "outcome", "rule"),
    [
        ("Both were good.\n\nAssistant 1: 9/10\nAssistant 2: 8/10\n\n1", "first", "final_line"),
        ("... so the second is better.\n2", "second", "final_line"),
        ("They are the same.\n\n**3**", "tie", "final_line"),
        ("Reasons.\nOutput: 2.", "second", "final_line"),
        ("7 8\n\nAssistant 1's response was helpful ...", "second", "opening_scores"),
        ("9 9\nBoth fine.", "tie", "opening_scores"),
        ("Assistant 2 is clearer. Therefore, I choose 2.", "second", "choice_statement"),
        ("I first thought 1. Overall, I choose answer 1.", "first", "choice_statement"),
        ("After all, my choice is: Assistant 2", "second", "choice_statement"),
        ("Assistant 1's score: 8/10\nAssistant 2's score: 9/10\n\nBoth are fine.", "second", "labelled_scores"),
        ("Overall, I would say that Assistant 2 provides a better answer.", "second", "better_statement"),
        ("I would recommend choosing Assistant 1's answer.", "first", "better_statement"),
        ("Assistant 1 is better in style, but Assistant 2 is better in substance.", None, "conflicting_choices"),
        ("Both assistants are equivalent in quality.", "tie", "equivalent_statement"),
        ("The two answers differ in length.", None, "no_choice_statement"),
        ("", None, "empty_reply"),
        (None, None, "empty_reply"),
    ],
)
def test_parse_choice_rules(reply: str | None, outcome: str | None, rule: str) -> None:
    parsed = parse_choice(reply)
    assert (parsed.outcome, parsed.rule) == (outcome, rule)


def test_a_score_like_11_or_a_decimal_is_not_a_choice() -> None:
    assert parse_choice("The total is 12").outcome is None
    assert parse_choice("It was rated\n2.5").outcome is None


def test_recorded_vicuna80_replies_agree_with_the_dataset_labels() -> None:
    """On the five recorded judges: what parses agrees with the authors' label in >= 98% (every text judge)."""
    folder = resolve_data_dir() / "pairwise" / "vicuna80" / "judges"
    for path in sorted(folder.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        agree = Counter(
            parsed.outcome == row["label"]
            for row in rows
            if (parsed := parse_choice(row["response"])).outcome is not None
        )
        parsed_share = sum(agree.values()) / len(rows)
        assert parsed_share >= 0.9, (path.name, parsed_share)
        assert agree[True] / sum(agree.values()) >= 0.98, (path.name, agree)
