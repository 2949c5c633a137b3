"""The local judge study end to end on a stand-in recording (a recorded SummEval judge's answers in the committed
file's format: the study's figures are checked against independent computations here), the export from the
answer store, and the committed recording itself."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import msgspec
import numpy as np
import pytest

from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.inputs.summeval import load_summeval
from offline.cli import main
from offline.studies.local_judge.recorded import (
    Recorded,
    RecordedAnswer,
    export_recorded,
    read_recorded,
)
from offline.studies.local_judge.study import baseline_set

CRITERIA = ("coherence", "relevance")


def stand_in_recording(data_dir: Path, path: Path) -> Recorded:
    """A recorded judge's answers (qwen2.5-72b-instruct: score and log-probs) on the first 30 documents, 2 criteria."""
    summeval = load_summeval(data_dir)
    documents = list(dict.fromkeys(item.doc_id for item in summeval.items))[:30]
    wanted = {item.item_id for item in summeval.items if item.doc_id in documents}
    answers = []
    for line in (data_dir / "judges" / "summeval" / "qwen2.5-72b-instruct.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["item_id"] in wanted and row["criterion"] in CRITERIA:
            answers.append(RecordedAnswer(item_id=row["item_id"], criterion=row["criterion"],
                                          judge_score=row["score"], logprobs=row["logprobs"], parse_rule="bare",
                                          error=None, prompt_tokens=900, completion_tokens=1))  # fmt: skip
    answers.append(RecordedAnswer(item_id=answers[0].item_id, criterion="consistency", judge_score=None,
                                  logprobs=None, parse_rule="no_score_statement", error=None, prompt_tokens=900,
                                  completion_tokens=16))  # fmt: skip
    recorded = Recorded(judge="stand-in-135m", model="m", prompt_family="paper", task="direct",
                        seconds_per_call=1.25, answers=answers)  # fmt: skip
    path.write_bytes(msgspec.json.encode(recorded))
    return recorded


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the mean of the ranks they span (written out, not scipy's)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    start = 0
    while start < values.size:
        end = start
        while end + 1 < values.size and values[order[end + 1]] == values[order[start]]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b by counting pairs."""
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(x.size), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif dx == dy:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / math.sqrt(
        (concordant + discordant + ties_x) * (concordant + discordant + ties_y)
    )


def test_baseline_set_takes_labels_by_frequency_until_their_share_reaches_the_level() -> None:
    labels = np.array([1, 1, 2, 3, 3, 3])
    assert baseline_set(labels, 0.5, 5) == (3,)  # 3/6 reaches 0.5
    assert baseline_set(labels, 0.2, 5) == (1, 3)  # 5/6 reaches 0.8; label 1 (2 items) before label 2 (1 item)
    assert baseline_set(labels, 0.0, 5) == (1, 2, 3)
    assert baseline_set(np.array([2, 1]), 0.5, 5) == (1,)  # a tie: the lower label first


def test_the_study_reports_skill_sets_and_labels_as_computed_independently(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = stand_in_recording(data_dir, tmp_path / "recorded.json")
    out, page = tmp_path / "out", tmp_path / "page.md"
    argv = ["local-judge", "--recorded", str(tmp_path / "recorded.json"), "--out", str(out), "--page", str(page),
            "--splits", "2", "--data-dir", str(data_dir)]  # fmt: skip
    assert main(argv) == 0
    assert "thresholds.json" in capsys.readouterr().out and (out / "thresholds.json").is_file()
    study = json.loads((out / "study.json").read_text())
    summeval = {item.item_id: item for item in load_summeval(data_dir).items}
    for skill in study["skill"]:
        answers = [a for a in recorded.answers if a.criterion == skill["criterion"] and a.judge_score is not None]
        x = np.array([a.judge_score for a in answers], dtype=float)
        human = np.array([summeval[a.item_id].expert_mean[skill["criterion"]] for a in answers])
        labels = np.floor(human + 0.5)
        assert skill["n"] == len(answers) == 480
        assert skill["spearman"] == pytest.approx(np.corrcoef(average_ranks(x), average_ranks(human))[0, 1], abs=1e-9)
        assert skill["kendall"] == pytest.approx(kendall_tau_b(x, human), abs=1e-9)
        assert skill["exact"] == pytest.approx(np.mean(x == labels)) and skill["mae"] == pytest.approx(
            np.mean(np.abs(x - labels))
        )
    assert {row["input"] for row in study["served"]} == {"score", "logprobs", "score+logprobs"}
    for row in study["served"]:
        labels_of_row = [r for r in study["by_label"] if (r["criterion"], r["input"], r["alpha"]) ==
                         (row["criterion"], row["input"], row["alpha"])]  # fmt: skip
        assert row["n"] + row["n_uncalibrated"] == 480 == sum(r["n"] for r in labels_of_row)
        pooled = sum(r["coverage"] * r["n"] for r in labels_of_row if r["coverage"] is not None) / row["n"]
        assert row["coverage"] == pytest.approx(pooled)
        assert row["accept_share"] + row["review_share"] + row["escalate_share"] == pytest.approx(1.0)
        assert 1 <= row["baseline_set_size"] <= 5 and row["coverage"] >= 1 - row["alpha"] - 0.1
    text = page.read_text()
    assert "| coherence | score+logprobs | 0.1 |" in text and "Spearman" in text
    assert "a score read from the reply: 960 (100%)" in text and "961 answers" in text  # the unanswered one counted
    assert "time per call" in text and "1.25 s" in text
    # the default guarantee's rules: one per criterion and input kind, each as calibration.per_label fits it
    rules = {(r["criterion"], r["input_kind"]): r for r in study["per_label"]}
    assert {kind for _, kind in rules} == {"score", "probabilities"} and len(rules) == 2 * len(study["skill"])
    assert all(r["summary"] is not None and r["skill"]["n_documents"] == 30 for r in rules.values())
    assert "## The default guarantee: per human label" in text and " review " not in text


def test_export_writes_ids_scores_and_logprobs_without_text(tmp_path: Path) -> None:
    with AnswerStore(tmp_path / "answers.sqlite") as store:
        for i, score in enumerate((4, None, 2)):
            store.put(AnswerRecord(judge="j", prompt_family="paper", task="direct", criterion="coherence",
                                   item_id=f"doc-{i}/M{i}", judge_score=score,
                                   logprobs={"4": -0.1} if score else None, raw_reply=f"SECRET reply {i}",
                                   parse_rule="bare" if score else "no_score_statement", model="m",
                                   created_at=f"2026-12-07T12:00:0{2 * i}+00:00"))  # fmt: skip
        exported = export_recorded(store, judge="j", out=tmp_path / "recorded.json")
    text = (tmp_path / "recorded.json").read_text()
    assert "SECRET" not in text and read_recorded(tmp_path / "recorded.json") == exported
    assert [a.judge_score for a in exported.answers] == [4, None, 2] and exported.seconds_per_call == 2.0
    assert len(text.splitlines()) == 7 + 3 + 2  # "{", six header lines; one line per answer; "]" and "}"


def test_the_committed_recording_is_thirty_documents_of_sixteen_summaries_on_two_criteria(data_dir: Path) -> None:
    from offline.studies.local_judge.page import _recording
    from offline.studies.local_judge.recorded import RECORDED

    recorded = read_recorded(RECORDED)
    assert (recorded.judge, recorded.task, recorded.prompt_family) == ("smollm2-135m", "direct", "paper")
    summeval = load_summeval(data_dir)
    document_of = {item.item_id: item.doc_id for item in summeval.items}
    keys = [(a.item_id, a.criterion) for a in recorded.answers]
    assert len(set(keys)) == len(keys) == 960  # every (item, criterion) once
    per_document: dict[str, set[tuple[str, str]]] = {}
    for item_id, criterion in keys:
        per_document.setdefault(document_of[item_id], set()).add((item_id, criterion))
    assert len(per_document) == 30 and all(len(pairs) == 16 * 2 for pairs in per_document.values())
    assert {criterion for _, criterion in keys} == set(CRITERIA)
    scored = [a for a in recorded.answers if a.judge_score is not None]
    assert all(1 <= a.judge_score <= 5 for a in scored) and len(scored) >= 0.8 * len(keys)  # 818: 85% read
    text = RECORDED.read_text()
    for item in summeval.items[:50]:  # ids, scores and log-probs only: no upstream text
        assert item.summary.strip()[:40] not in text
    # the committed page's recording section is this file's (make local-judge-report rewrites the page)
    page = (Path(__file__).resolve().parents[4] / "docs" / "local-judge.md").read_text()
    assert all(line in page for line in _recording(recorded))
