"""A user's own labelled set: the documented format and its file:line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.offline.custom_labels as custom
from offline.build.inputs.errors import DataError
from tests.offline.custom_labels import load_custom


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def _row(item_id: str = "i1", criterion: str = "coherence", **extra: object) -> dict[str, object]:
    return {
        "item_id": item_id,
        "document": "doc text",
        "summary": "summary text",
        "criterion": criterion,
        "human": 3,
        **extra,
    }


def test_valid_file(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            _row(),
            "",
            _row(criterion="relevance", human=3.5, judge_score=4, judge_logprobs={"3": -1.2, "4": -0.4}),
            _row("i2", criterion="faithfulness", human=1.6666666666666667, judge_score=None),
        ],
    )
    dataset = load_custom(path)
    assert len(dataset.items) == 3
    assert [item.line for item in dataset.items] == [1, 3, 4]
    assert [item.human_target for item in dataset.items] == [3, 4, 2]  # halves round up
    assert dataset.items[1].judge_score == 4
    assert dataset.items[1].judge_logprobs == {"3": -1.2, "4": -0.4}
    assert dataset.items[0].judge_score is None and dataset.items[0].judge_logprobs is None
    assert dataset.criteria() == ["coherence", "relevance", "faithfulness"]
    assert [i.item_id for i in dataset.for_criterion("relevance")] == ["i1"]


def test_docstring_documents_every_field() -> None:
    doc = custom.__doc__ or ""
    for field in custom._Row.__struct_fields__:
        assert f"``{field}``" in doc, field


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"item_id": "i9", ', "malformed JSON"),
        (_row("i2", humann=3), "unknown field"),
        (_row("i2", human=0), "outside the scale 1..5"),
        (_row("i2", human=5.5), "outside the scale 1..5"),
        (_row("i2", human="4"), "Expected `float`"),
        (_row("i2", judge_score=6), "judge_score = 6 is outside 1..5"),
        (_row("i2", judge_score=3.5), "Expected `int | null`"),
        (_row("i2", judge_logprobs={"0": -1.0}), "logprobs key '0'"),
        (_row("i2", criterion="Coherence"), "not a lower-case name"),
        (_row("i2", summary="  "), "summary is empty"),
        (_row("i1"), "repeated for criterion 'coherence'"),
        (_row("i1", criterion="fluency", document="other"), "different document or summary than on line 1"),
        ({"item_id": "i2", "document": "d", "summary": "s", "criterion": "fluency"}, "missing required field"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, bad: object, message: str) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [_row(), bad])
    with pytest.raises(DataError) as caught:
        load_custom(path)
    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


def test_empty_and_missing_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="holds no rows"):
        load_custom(empty)
    with pytest.raises(DataError, match="file not found"):
        load_custom(tmp_path / "absent.jsonl")
