"""``collect --labels``: a live judge (the stand-in) fills the verdicts of a labelled file; the result calibrates."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from offline.cli import main
from tests.fakes.judge_server import JudgeServer

RUBRIC = {"criterion": "helpfulness", "description": "How well the reply solves the problem.", "scale_max": 7}


def _write(tmp_path: Path, server: JudgeServer, rows: list[dict]) -> tuple[Path, Path, Path]:
    labels = tmp_path / "mine.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judges = tmp_path / "judges.json"
    judges.write_bytes(msgspec.json.encode([server.judge_config(name="stand-in", max_retries=0)]))
    rubrics = tmp_path / "rubrics.json"
    rubrics.write_text(json.dumps([RUBRIC]))
    return labels, judges, rubrics


def test_collect_fills_verdicts_and_keeps_every_row(
    tmp_path: Path, judge_server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_server.default_score = 6
    rows = [
        {
            "item_id": f"t{i}",
            "criterion": "helpfulness",
            "human": 1 + i % 7,
            "scale_max": 7,
            "group": f"g{i // 4}",
            "input": f"Question {i}?",
            "output": f"Answer {i}.",
        }
        for i in range(40)
    ]
    rows.append(
        {
            "item_id": "old",
            "criterion": "helpfulness",
            "human": 4,
            "scale_max": 7,
            "judge": "stand-in",
            "judge_score": 3,
            "prompt_family": "rubric-helpfulness",
        }
    )
    labels, judges, rubrics = _write(tmp_path, judge_server, rows)
    judge_server.inject("error_500", times=1)
    status = main(
        [
            "collect",
            "--labels",
            str(labels),
            "--judge",
            "stand-in",
            "--judges-file",
            str(judges),
            "--rubrics",
            str(rubrics),
            "--no-progress",
            "--concurrency",
            "1",
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "39 judged now, 1 had a verdict, 1 failed" in printed
    out = tmp_path / "mine.stand-in.jsonl"
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 40
    judged = [r for r in written if r["item_id"] != "old"]
    assert all(
        r["judge"] == "stand-in" and r["judge_score"] == 6 and r["prompt_family"] == "rubric-helpfulness"
        for r in judged
    )
    assert "helpfulness - How well" in json.dumps(judge_server.requests[-1].body)
    [error] = [json.loads(line) for line in (tmp_path / "mine.stand-in.jsonl.errors.jsonl").read_text().splitlines()]
    assert error["item_id"] in {r["item_id"] for r in rows} and "error" in error
    # the file it wrote calibrates
    assert (
        main(["calibrate", "--labels", str(out), "--out", str(tmp_path / "r"), "--splits", "2", "--no-progress"]) == 0
    )


def test_rows_that_cannot_be_asked_stop_with_the_line(
    tmp_path: Path, judge_server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for row, needle in [
        ({"item_id": "a", "criterion": "helpfulness", "human": 3, "scale_max": 7}, ":1: a row without a verdict"),
        ({"item_id": "a", "criterion": "tone", "human": 3, "input": "q", "output": "a"}, "no prompt for criterion"),
        (
            {"item_id": "a", "criterion": "relevance", "human": 3, "scale_max": 7, "document": "d", "summary": "s"},
            "asks for 1..5",
        ),
    ]:
        labels, judges, rubrics = _write(tmp_path, judge_server, [row])
        assert (
            main(
                [
                    "collect",
                    "--labels",
                    str(labels),
                    "--judge",
                    "stand-in",
                    "--judges-file",
                    str(judges),
                    "--rubrics",
                    str(rubrics),
                    "--no-progress",
                ]
            )
            == 2
        )
        assert needle in capsys.readouterr().err
    assert judge_server.call_count == 0
