"""The converters' rules on small hand-made raw files (the real files are rebuilt byte for byte by ``make data``:
test_data_upstream.py for a few, ``.ci/run`` for all): names, orders, repetitions, and what each refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline.data.convert import frank as convert_frank
from offline.data.convert import geval as convert_geval
from offline.data.convert import shen as convert_shen
from offline.data.convert import summeval as convert_summeval
from offline.data.convert import vicuna80 as convert_vicuna80
from offline.data.convert.registry import Inputs, converter, converter_names
from offline.data.manifest import load_manifest


def _inputs(tmp_path: Path, files: dict[str, str | bytes]) -> Inputs:
    local = {}
    for key, content in files.items():
        path = tmp_path / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        local[key] = path
    return Inputs(local)


def _jsonl(*rows: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _rows(content: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in content.decode().splitlines()]


def test_every_converter_the_manifest_names_exists() -> None:
    named = {f.convert for f in load_manifest() if f.convert is not None}
    assert named == converter_names()
    for name in named:
        assert callable(converter(name))


def test_vicuna80_ratings_repetitions_names_and_labels(tmp_path: Path) -> None:
    base = "o/PRD/" + "1" * 40 + "/data/vicuna80/ratings-gpt35/"
    review = {"question_id": 2, "text": "reply", "score": 1}
    inputs = _inputs(
        tmp_path,
        {
            # both separators occur upstream; two files of one ordered pair are repetitions 0 and 1 in byte order
            base + "answer_gpt4-vs-answer_vicuna-13b-gpt35-reviewer_threeclass.jsonl": _jsonl({**review, "score": 2}),
            base + "answer-gpt4-vs-answer-vicuna-13b-gpt35-reviewer-threeclass.jsonl": _jsonl({**review, "score": 3}),
            base + "answer_claude-vs-answer_bard-gpt35-reviewer.jsonl": _jsonl(review, {**review, "question_id": 1}),
        },
    )
    rows = _rows(convert_vicuna80.judge(inputs, {}))
    assert [(r["item_id"], r["first"], r["second"], r["repetition"], r["label"]) for r in rows] == [
        ("q1", "claude-v1", "bard", 0, "first"),
        ("q2", "claude-v1", "bard", 0, "first"),
        ("q2", "gpt-4", "vicuna-13b", 0, "tie"),
        ("q2", "gpt-4", "vicuna-13b", 1, "second"),
    ]
    bad = _inputs(
        tmp_path / "bad", {base + "answer_gpt4-vs-answer_bard-gpt35-reviewer.jsonl": _jsonl({**review, "score": 4})}
    )
    with pytest.raises(ValueError, match="score 4 is not 1, 2 or 3"):
        convert_vicuna80.judge(bad, {})
    unknown = _inputs(tmp_path / "unknown", {base + "answer_gpt5-vs-answer_bard-gpt35-reviewer.jsonl": _jsonl(review)})
    with pytest.raises(ValueError, match="not an answer_<A>-vs-answer_<B>"):
        convert_vicuna80.judge(unknown, {})


def test_shen_pairwise_toggle_files_swap_the_order_and_rows_sort_by_criterion_first(tmp_path: Path) -> None:
    base = "o/LLM_summeval/" + "2" * 40 + "/comp_res/gpt-3.5-turbo-0301/"
    inputs = _inputs(
        tmp_path,
        {
            base + "M8-M9_fluency.result": _jsonl({"id": "a", "resp": "A"}),
            base + "M8-M9_coherence_toggle.result": _jsonl({"id": "b", "resp": "B"}, {"id": "a", "resp": "C"}),
        },
    )
    rows = _rows(convert_shen.pairwise(inputs, {}))
    assert [(r["criterion"], r["doc_id"], r["first"], r["second"], r["response"]) for r in rows] == [
        ("coherence", "a", "M9", "M8", "C"),
        ("coherence", "b", "M9", "M8", "B"),
        ("fluency", "a", "M8", "M9", "A"),
    ]
    wrong = _inputs(tmp_path / "w", {base + "M8-M9_style.result": _jsonl({"id": "a", "resp": "A"})})
    with pytest.raises(ValueError, match="unknown criterion 'style'"):
        convert_shen.pairwise(wrong, {})


def test_rts_judge_rows_carry_the_reply_only(tmp_path: Path) -> None:
    base = "o/LLM_summeval/" + "2" * 40 + "/eval_model_generations/m/"
    inputs = _inputs(
        tmp_path,
        {
            base + "eval_M9_generations/relevance_rts.txt": _jsonl({"id": "d1", "resp": "Score: 4"}),
            base + "eval_M10_generations/coherence_rts.txt": _jsonl({"id": "d1", "resp": "3/5"}),
        },
    )
    rows = _rows(convert_shen.rts_judge(inputs, {}))
    assert rows == [
        {"item_id": "d1/M10", "criterion": "coherence", "score": None, "logprobs": None, "response": "3/5"},
        {"item_id": "d1/M9", "criterion": "relevance", "score": None, "logprobs": None, "response": "Score: 4"},
    ]


def _summeval_inputs(tmp_path: Path, model_rows: list[list[str]]) -> Inputs:
    """Three G-Eval rows (documents d2, d1, d2); the Qwen means in G-Eval order; a judge folder ``m``."""
    geval = _jsonl(
        *[
            {"prompt_id": d, "candidate_id": s, "candidate": f"{d} {s}"}
            for d, s in (("d2", "M1"), ("d1", "M1"), ("d2", "M0"))
        ]
    )
    files: dict[str, str | bytes] = {"j/r/" + "3" * 40 + "/summeval_cnndm_v2g_candidates.jsonl": geval}
    for criterion in convert_summeval.CRITERIA:
        header = f"1,2,3,4,5,{criterion}\n"
        qwen = header + "".join(f"-1,-2,-3,-4,-5,{m}\n" for m in ("1.0", "2.0", "3.0"))
        files[f"s/r/{'4' * 40}/model_logits/qwen/Summeval_{criterion}_logits.csv"] = qwen
        files[f"s/r/{'4' * 40}/model_logits/m/Summeval_{criterion}_logits.csv"] = header + "".join(
            ",".join(r) + "\n" for r in model_rows
        )
        files[f"s/r/{'4' * 40}/raw_scores/m/Summeval_{criterion}_raw.csv"] = "raw_score\n4\n\n2.0\n"
    files["d/r/" + "5" * 40 + "/model_output_annotations/M1_outputs_annotations.jsonl"] = _jsonl(
        {"id": "d2", "model_id": "M1", "expert_annotations": [{"coherence": 1}], "text": "two", "references": ["r2"]},
        {"id": "d1", "model_id": "M1", "expert_annotations": [{"coherence": 2}], "text": "one", "references": []},
    )
    return _inputs(tmp_path, files)


def test_geval_judge_row_orders_are_checked_against_the_experts_means(tmp_path: Path) -> None:
    # rows in doc-sorted order: G-Eval rows 1 (d1), 0 (d2), 2 (d2): means 2.0, 1.0, 3.0
    doc_sorted = [
        ["-0.1", "-1", "-2", "-3", "-4", "2.0"],
        ["-1", "-0.1", "-2", "-3", "-4", "1.0"],
        ["-1"] * 5 + ["3.0"],
    ]
    inputs = _summeval_inputs(tmp_path, doc_sorted)
    rows = _rows(convert_geval.judge(inputs, {"model": "m", "row_order": "doc_sorted"}))
    coherence = [r for r in rows if r["criterion"] == "coherence"]
    assert [(r["item_id"], r["score"], r["logprobs"]["1"]) for r in coherence] == [
        ("d1/M1", 4, -0.1),
        ("d2/M0", 2, -1.0),
        ("d2/M1", None, -1.0),
    ]
    with pytest.raises(ValueError, match="experts' mean do not match"):
        convert_geval.judge(inputs, {"model": "m", "row_order": "geval"})


def test_summeval_items_and_articles(tmp_path: Path) -> None:
    inputs = _summeval_inputs(tmp_path, [["-1"] * 5 + ["1.0"]] * 3)
    items = _rows(convert_summeval.items(inputs, {}))
    assert [(i["item_id"], i["expert_mean"]["fluency"], i["expert_scores"]) for i in items] == [
        ("d2/M1", 1.0, [{"coherence": 1}]),
        ("d1/M1", 2.0, [{"coherence": 2}]),
        ("d2/M0", 3.0, None),
    ]
    articles = _rows(convert_summeval.articles(inputs, {}))
    assert articles == [
        {"doc_id": "d2", "article": "two", "references": ["r2"]},
        {"doc_id": "d1", "article": "one", "references": []},
    ]


def test_frank_references_fall_back_to_gold_and_articles_sort_by_hash(tmp_path: Path) -> None:
    shares = {share: "1.0" for share in convert_frank.SHARES}
    annotations = [
        {"hash": "b", "model_name": "bart", "dataset": "cnndm", "split": "test", **shares},
        {"hash": "a", "model_name": "PtGen", "dataset": "bbc", "split": "valid", **shares, "Factuality": "0.5"},
    ]
    inputs = _inputs(
        tmp_path,
        {
            "f/frank/" + "6" * 40 + "/data/human_annotations.json": json.dumps(annotations),
            "f/frank/" + "7" * 40 + "/data/articles-wfactcc-json/b.json": json.dumps(
                {"bart": "s1", "bart_reference": "r1", "url": "u1", "article": "A1"}
            ),
            "f/frank/" + "7" * 40 + "/data/articles-wfactcc-json/a.json": json.dumps(
                {"PtGen": "s2", "Gold": "g2", "url": "u2", "article": "A2"}
            ),
        },
    )
    items = _rows(convert_frank.items(inputs, {}))
    assert [(i["hash"], i["summary"], i["reference"], i["Factuality"]) for i in items] == [
        ("b", "s1", "r1", 1.0),
        ("a", "s2", "g2", 0.5),
    ]
    assert list(items[0])[:6] == ["hash", "model_name", "dataset", "split", "summary", "reference"]
    assert [a["hash"] for a in _rows(convert_frank.articles(inputs, {}))] == ["a", "b"]
