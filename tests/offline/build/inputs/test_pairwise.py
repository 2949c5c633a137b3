"""Recorded pairwise verdicts and the canonical pair order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from offline.build.inputs.errors import DataError
from offline.build.inputs.pairwise import (
    RecordedPairwise,
    canonical_pair,
    load_pairwise,
    pair_item_id,
    presentation_order,
    presented,
    split_pair_item_id,
)
from offline.build.inputs.summeval import CRITERIA, SummEval, load_summeval

# The README's chain of 11 pairs over 12 systems.
CHAIN = ["M22", "M23", "M17", "M12", "M13", "M15", "M14", "M8", "M9", "M10", "M20", "M11"]


@pytest.fixture(scope="module")
def summeval(data_dir: Path) -> SummEval:
    return load_summeval(data_dir)


@pytest.fixture(scope="module")
def recorded(data_dir: Path, summeval: SummEval) -> list[RecordedPairwise]:
    return load_pairwise(data_dir, summeval)


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_real_counts(recorded: list[RecordedPairwise]) -> None:
    (judge,) = recorded
    assert judge.name == "gpt-3.5-turbo-0301"
    assert len(judge.rows) == 8800
    assert len({row.doc_id for row in judge.rows}) == 100
    assert Counter(row.criterion for row in judge.rows) == dict.fromkeys(CRITERIA, 2200)


def test_real_pairs_form_the_chain_in_both_orders(recorded: list[RecordedPairwise]) -> None:
    (judge,) = recorded
    expected_pairs = {frozenset(pair) for pair in zip(CHAIN, CHAIN[1:], strict=False)}
    assert {frozenset((row.first, row.second)) for row in judge.rows} == expected_pairs
    per_key = Counter((row.doc_id, row.criterion, row.item_id) for row in judge.rows)
    assert len(per_key) == 100 * 11 * 4
    assert set(per_key.values()) == {2}
    orders = Counter((row.doc_id, row.criterion, row.item_id, row.order) for row in judge.rows)
    assert set(orders.values()) == {1}  # each pair once as "ab" and once as "ba"
    assert Counter(row.order for row in judge.rows) == {"ab": 4400, "ba": 4400}


def test_real_pairwise_metadata(recorded: list[RecordedPairwise]) -> None:
    info = recorded[0].info
    # the direct-scoring list describes a reason-then-score prompt, not this pairwise one
    assert info.prompt_family == "unknown"
    assert info.model == "gpt-3.5-turbo-0301"


def test_canonical_order() -> None:
    assert canonical_pair("M9", "M10") == ("M10", "M9")  # plain string order, stated in the module
    assert presentation_order("M10", "M9") == "ab"
    assert presentation_order("M9", "M10") == "ba"
    assert pair_item_id("d", "M9", "M10") == pair_item_id("d", "M10", "M9") == "d/M10|M9"
    assert split_pair_item_id("dm-test-1/M10|M9") == ("dm-test-1", "M10", "M9")
    assert presented("d/M10|M9", "ab") == ("d", "M10", "M9")
    assert presented("d/M10|M9", "ba") == ("d", "M9", "M10")
    for first, second in [("a", "b"), ("b", "a"), ("M22", "M8")]:
        doc, shown_first, shown_second = presented(pair_item_id("d", first, second), presentation_order(first, second))
        assert (doc, shown_first, shown_second) == ("d", first, second)
    with pytest.raises(ValueError, match="twice"):
        canonical_pair("M1", "M1")
    with pytest.raises(ValueError, match="must not contain"):
        pair_item_id("d", "a|b", "c")
    with pytest.raises(ValueError, match="not a pair item id"):
        split_pair_item_id("d/M1")
    with pytest.raises(ValueError, match="'ab' or 'ba'"):
        presented("d/a|b", "")


def _row(first: str = "M1", second: str = "M2", **extra: object) -> dict[str, object]:
    return {"doc_id": "d1", "criterion": "coherence", "first": first, "second": second, "response": "A", **extra}


@pytest.mark.parametrize(
    ("bad", "message", "with_summeval"),
    [
        ('{"doc_id": "d1"', "malformed JSON", False),
        (_row("M1", "M1"), "compared with itself", False),
        (_row(criterion="grace"), "unknown criterion 'grace'", False),
        (_row("M2", "M1"), "", False),  # fine: the other order
        (_row("M1", "M2"), "duplicate verdict", False),
        (_row(doc_id="d7"), "doc_id 'd7' is not in the SummEval items", True),
        (_row("M1", "M3"), "system 'M3' has no item", True),
    ],
)
def test_bad_rows(tmp_path: Path, bad: object, message: str, with_summeval: bool) -> None:
    path = write_jsonl(tmp_path / "pairwise" / "summeval" / "j.jsonl", [_row(), bad])
    summeval = None
    if with_summeval:
        write_jsonl(tmp_path / "summeval" / "articles.jsonl", [{"doc_id": "d1", "article": "a"}])
        write_jsonl(
            tmp_path / "summeval" / "items.jsonl",
            [
                {
                    "item_id": f"d1/{s}",
                    "doc_id": "d1",
                    "system_id": s,
                    "summary": "x",
                    "expert_mean": dict.fromkeys(CRITERIA, 2.0),
                }
                for s in ("M1", "M2")
            ],
        )
        summeval = load_summeval(tmp_path)
    if not message:
        (judge,) = load_pairwise(tmp_path, summeval)
        assert [row.order for row in judge.rows] == ["ab", "ba"]
        assert judge.info.prompt_family == "unknown"
        return
    with pytest.raises(DataError) as caught:
        load_pairwise(tmp_path, summeval)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


def test_listed_pairwise_judge(tmp_path: Path) -> None:
    folder = tmp_path / "pairwise" / "summeval"
    write_jsonl(folder / "j.jsonl", [_row()])
    (folder / "judges.json").write_text(json.dumps({"j": {"model": "m", "prompt_family": "paper"}}))
    (judge,) = load_pairwise(tmp_path)
    assert (judge.info.prompt_family, judge.info.model) == ("paper", "m")
