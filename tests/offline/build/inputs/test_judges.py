"""Recorded direct-scoring judges: counts and alignment on the real files; bad files; judge metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline.build.inputs.errors import DataError
from offline.build.inputs.judges import RecordedJudge, load_judges, load_recorded_judges
from offline.build.inputs.summeval import CRITERIA, SummEval, SummEvalItem, load_summeval

LOGPROB_JUDGES = {"gpt-4o-mini-2024-07-18", "qwen2.5-72b-instruct"}
TEXT_JUDGES = {"gpt-3.5-turbo-0301", "llama-2-7b-chat", "llama-2-13b-chat", "llama-2-70b-chat"}
EXTRACTIVE = {"M0", "M1", "M2", "M5"}


@pytest.fixture(scope="module")
def summeval(data_dir: Path) -> SummEval:
    return load_summeval(data_dir)


@pytest.fixture(scope="module")
def judges(data_dir: Path, summeval: SummEval) -> dict[str, RecordedJudge]:
    return {judge.name: judge for judge in load_recorded_judges(data_dir, summeval.items)}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


ITEMS = [
    SummEvalItem(item_id=f"d1/{s}", doc_id="d1", system_id=s, summary="x", expert_mean=dict.fromkeys(CRITERIA, 3.0))
    for s in ("M1", "M2")
]


def _row(item_id: str = "d1/M1", criterion: str = "coherence", **extra: object) -> dict[str, object]:
    return {"item_id": item_id, "criterion": criterion, "score": 3, "logprobs": None, "response": None, **extra}


def test_real_judges_found(judges: dict[str, RecordedJudge]) -> None:
    assert set(judges) == LOGPROB_JUDGES | TEXT_JUDGES
    # every *.jsonl is a judge, named after its file
    for name, judge in judges.items():
        assert Path(judge.path).name == f"{name}.jsonl"


def test_real_row_counts_and_alignment(judges: dict[str, RecordedJudge], summeval: SummEval) -> None:
    all_keys = {(item.item_id, c) for item in summeval.items for c in CRITERIA}
    abstractive = {(item.item_id, c) for item in summeval.items for c in CRITERIA if item.system_id not in EXTRACTIVE}
    for name, judge in judges.items():
        keys = {(row.item_id, row.criterion) for row in judge.rows}
        assert len(keys) == len(judge.rows)
        if name in LOGPROB_JUDGES:
            assert len(judge.rows) == 1600 * 4
            assert keys == all_keys
            assert all(row.logprobs is not None and set(row.logprobs) == set("12345") for row in judge.rows)
        else:
            assert len(judge.rows) == 1200 * 4
            assert keys == abstractive
            assert judge.n_needs_parse() == 1200 * 4
            assert all(row.response for row in judge.rows)


def test_real_missing_rows_kept_and_flagged(judges: dict[str, RecordedJudge]) -> None:
    missing = [row for judge in judges.values() for row in judge.rows if row.is_missing]
    # the README: one GPT-4o-mini relevance score is null (and no reply was recorded)
    assert len(missing) == 1
    assert missing[0].criterion == "relevance"
    assert judges["gpt-4o-mini-2024-07-18"].n_missing() == 1
    assert judges["qwen2.5-72b-instruct"].n_missing() == 0


def test_real_metadata_from_judges_json(judges: dict[str, RecordedJudge]) -> None:
    assert {judges[n].info.prompt_family for n in LOGPROB_JUDGES} == {"geval"}
    assert {judges[n].info.prompt_family for n in TEXT_JUDGES} == {"rts"}
    assert judges["qwen2.5-72b-instruct"].info.model == "Qwen/Qwen2.5-72B-Instruct"
    assert judges["qwen2.5-72b-instruct"].info.top_k == 10
    assert judges["gpt-3.5-turbo-0301"].info.temperature == 0.0
    assert all(judge.info.listed for judge in judges.values())


def test_load_judges_loads_items_itself(data_dir: Path) -> None:
    assert [j.name for j in load_judges(data_dir)] == sorted(LOGPROB_JUDGES | TEXT_JUDGES)


def test_unlisted_judge_gets_unknown_family(tmp_path: Path) -> None:
    folder = tmp_path / "judges" / "summeval"
    write_jsonl(folder / "my-judge.v2.jsonl", [_row()])
    write_jsonl(folder / "listed.jsonl", [_row()])
    (folder / "judges.json").write_text(json.dumps({"listed": {"model": "m", "prompt_family": "paper"}}))
    loaded = {j.name: j for j in load_recorded_judges(tmp_path, ITEMS)}
    assert set(loaded) == {"my-judge.v2", "listed"}
    assert loaded["my-judge.v2"].info.prompt_family == "unknown"
    assert loaded["my-judge.v2"].info.model == "my-judge.v2"
    assert not loaded["my-judge.v2"].info.listed
    assert loaded["listed"].info.prompt_family == "paper"
    assert loaded["listed"].info.model == "m"


def test_no_judges_json_means_all_unknown(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "judges" / "summeval" / "j.jsonl", [_row()])
    (judge,) = load_recorded_judges(tmp_path, ITEMS)
    assert judge.info.prompt_family == "unknown"


def test_missing_and_text_rows_are_kept(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "judges" / "summeval" / "j.jsonl",
        [
            _row(),
            _row(criterion="fluency", score=None),
            _row(criterion="relevance", score=None, response="Score: 4"),
        ],
    )
    (judge,) = load_recorded_judges(tmp_path, ITEMS)
    assert len(judge.rows) == 3
    assert [row.is_missing for row in judge.rows] == [False, True, False]
    assert [row.needs_parse for row in judge.rows] == [False, False, True]
    assert [row.line for row in judge.rows] == [1, 2, 3]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"item_id": "d1/M2", "criterion": ', "malformed JSON"),
        (_row(item_id="d1/M9"), "item_id 'd1/M9' is not in the SummEval items"),
        (_row(criterion="elegance"), "unknown criterion 'elegance'"),
        (_row(score=7), "score 7 is outside 1..5"),
        (_row(score="4"), "Expected `int | null`, got `str`"),
        (_row(logprobs={"6": -1.0}), "logprobs key '6'"),
        (_row(logprobs={"3": 0.5}), "not a finite log-probability"),
        (_row(item_id="d1/M1"), "duplicate row"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, bad: object, message: str) -> None:
    path = write_jsonl(tmp_path / "judges" / "summeval" / "j.jsonl", [_row(), _row(item_id="d1/M2"), bad])
    with pytest.raises(DataError) as caught:
        load_recorded_judges(tmp_path, ITEMS)
    assert caught.value.path == path
    assert caught.value.line == 3
    assert str(caught.value).startswith(f"{path}:3: ")
    assert message in str(caught.value)


def test_bad_judges_json(tmp_path: Path) -> None:
    folder = tmp_path / "judges" / "summeval"
    write_jsonl(folder / "j.jsonl", [_row()])
    (folder / "judges.json").write_text('{"j": {"temperature": "hot"}}')
    with pytest.raises(DataError, match=r"judges\.json: invalid judge list"):
        load_recorded_judges(tmp_path, ITEMS)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_recorded_judges(tmp_path, ITEMS)
