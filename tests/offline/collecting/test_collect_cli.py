"""``python -m offline collect`` on a chosen SummEval slice (--documents, --all-systems, --criteria) through the judge
stand-in: the right keys are asked once, a rerun asks nothing, and the time per call is printed."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from offline.build.answers.store import AnswerStore
from offline.build.inputs.summeval import load_summeval
from offline.cli import main
from tests.fakes.judge_server import JudgeServer


def test_documents_all_systems_and_criteria_choose_the_keys(
    judge_server: JudgeServer, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = tmp_path / "judges.json"
    judges.write_bytes(msgspec.json.encode([judge_server.judge_config(name="stand-in")]))
    store = tmp_path / "answers.sqlite"
    argv = ["collect", "--judges-file", str(judges), "--judge", "stand-in", "--task", "direct", "--repetitions", "1",
            "--documents", "2", "--all-systems", "--criteria", "relevance", "--concurrency", "2",
            "--store", str(store), "--data-dir", str(data_dir), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "32 new, 0 already stored, 0 failed" in first and " s per call" in first
    summeval = load_summeval(data_dir)
    documents = list(dict.fromkeys(item.doc_id for item in summeval.items))[:2]
    expected = {item.item_id for item in summeval.items if item.doc_id in documents}
    assert len(expected) == 32  # SummEval: 16 summaries of each document
    with AnswerStore(store) as answers:
        stored = list(answers.iter_answers(judge="stand-in"))
    assert {r.item_id for r in stored} == expected and {r.criterion for r in stored} == {"relevance"}
    assert judge_server.call_count == 32
    assert main(argv) == 0  # resumed: every key answered, no call
    assert "0 new, 32 already stored" in capsys.readouterr().out and judge_server.call_count == 32


def test_an_unknown_criterion_or_too_many_documents_is_a_usage_error(
    judge_server: JudgeServer, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = tmp_path / "judges.json"
    judges.write_bytes(msgspec.json.encode([judge_server.judge_config(name="stand-in")]))
    base = ["collect", "--judges-file", str(judges), "--judge", "stand-in", "--store", str(tmp_path / "a.sqlite"),
            "--data-dir", str(data_dir), "--no-progress"]  # fmt: skip
    assert main([*base, "--criteria", "helpfulness"]) == 2
    assert "unknown criteria helpfulness" in capsys.readouterr().err
    assert main([*base, "--documents", "100000"]) == 2
    assert "documents" in capsys.readouterr().err
    assert judge_server.call_count == 0
