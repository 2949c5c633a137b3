"""The sentence-level fact-check reader: fences, truncation, counts, categories; never a guessed verdict."""

from __future__ import annotations

import json

import pytest

from judges.factuality.sentence_parse import CATEGORIES, category_code, parse_sentence_verdicts


def _reply(*categories: str, fence: bool = False) -> str:
    body = json.dumps(
        [{"sentence": f"s{i}", "reason": f"r{i}", "category": c} for i, c in enumerate(categories)], indent=2
    )
    return f"```json\n{body}\n```" if fence else body


def test_plain_and_fenced_lists_read_the_same() -> None:
    for fence in (False, True):
        parsed = parse_sentence_verdicts(_reply("no error", "entity error", fence=fence), n_sentences=2)
        assert parsed.ok and parsed.rule == "json_list" and not parsed.truncated
        assert [(v.sentence, v.error, v.category, v.reason) for v in parsed.verdicts or []] == [
            ("s0", False, "no error", "r0"),
            ("s1", True, "entity error", "r1"),
        ]


def test_truncated_reply_keeps_complete_objects_and_fails_the_count() -> None:
    full = _reply("no error", "predicate error", "no error")
    cut = full[: full.index('"s2"') + 3]
    parsed = parse_sentence_verdicts(cut)
    assert (
        parsed.truncated
        and parsed.ok
        and [v.category for v in parsed.verdicts or []] == ["no error", "predicate error"]
    )
    counted = parse_sentence_verdicts(cut, n_sentences=3)
    assert counted.verdicts is None and counted.rule == "wrong_count" and counted.n_read == 2
    assert "cut off" in counted.problem


@pytest.mark.parametrize(
    ("reply", "rule"),
    [
        ("", "no_reply"),
        (None, "no_reply"),
        ("The summary is fine.", "no_list"),
        ('{"sentence": "a", "category": "no error"}', "no_list"),
        ("[1, 2]", "bad_entry"),
        ('[{"sentence": "a"}]', "bad_entry"),
        ('[{"sentence": 3, "category": "no error"}]', "bad_entry"),
        ('[{"sentence": "a", "reason": "r", "category": "wrong error"}]', "unknown_category"),
        ('[{"sentence": "a", "reason": "r", "category": "entity"}]', "unknown_category"),
    ],
)
def test_unreadable_replies_name_their_rule(reply: str | None, rule: str) -> None:
    parsed = parse_sentence_verdicts(reply, n_sentences=1)
    assert parsed.verdicts is None and parsed.rule == rule and parsed.problem


def test_a_closed_list_with_text_that_is_not_json() -> None:
    parsed = parse_sentence_verdicts('Here: [ {"category": "no error"}, ] done', n_sentences=1)
    assert parsed.verdicts is None and parsed.rule == "not_json"


def test_wrong_count_is_never_padded() -> None:
    parsed = parse_sentence_verdicts(_reply("no error"), n_sentences=2)
    assert parsed.verdicts is None and parsed.rule == "wrong_count" and parsed.n_read == 1


def test_invalid_quote_escape_is_repaired_and_flagged() -> None:
    reply = '[{"sentence": "he said \\\'yes\\\' .", "reason": "ok", "category": "no error"}]'
    parsed = parse_sentence_verdicts(reply, n_sentences=1)
    assert parsed.ok and parsed.escapes_repaired and parsed.verdicts[0].sentence == "he said 'yes' ."  # type: ignore[index]


def test_categories_case_space_and_frank_codes() -> None:
    reply = json.dumps(
        [
            {"sentence": "a", "reason": "", "category": "  Out-of-Context   ERROR "},
            {"sentence": "b", "category": "EntE"},
            {"sentence": "c", "category": "NoE"},
        ]
    )
    parsed = parse_sentence_verdicts(reply, n_sentences=3)
    assert [v.category for v in parsed.verdicts or []] == ["out-of-context error", "entity error", "no error"]
    assert [v.error for v in parsed.verdicts or []] == [True, True, False]
    assert parsed.verdicts is not None and parsed.verdicts[1].reason == ""
    assert [category_code(c) for c in CATEGORIES] == [
        "OutE",
        "RelE",
        "EntE",
        "CircE",
        "GramE",
        "CorefE",
        "LinkE",
        "OtherE",
        "NoE",
    ]
