"""The factuality loop end to end over real HTTP: ``python -m offline collect --task factuality_direct`` and
``factuality_qa`` against the judge stand-in on a seeded sample of real FRANK items (60 valid + 60 test), the
calibrate pipeline's factuality part on that store, and the service answering faithfulness from the artifact.

The stand-in's answers are scripted, not a model's: it reads the item from the prompt and answers near the
human label (direct) or answers a share of its own questions equal to the human factuality (qa). Every output
of the run is labelled as the stand-in's and written under ``tmp_path`` only (never into ``reports/``).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import zlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from artifact.thresholds import ThresholdIndex, ThresholdsArtifact, load_artifact
from calibration.conformal import METHODS, prediction_set
from judges.factuality.methods import QAFactuality, judge_score_from_qa, normalize_answer
from judges.prompts.untrusted import neutralise
from offline.build.answers.store import AnswerStore
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.build.factuality.answers import faithfulness_target
from offline.build.inputs.frank import CATEGORY_COLUMNS, Frank, load_frank
from offline.cli import main
from offline.collecting.targets import frank_targets
from offline.pipeline_factuality import FactualityResult, calibrate_factuality
from offline.studies.conformal.rules import ALPHAS
from service.config.settings import Settings
from service.http.app import create_app
from tests.conftest import REPO_ROOT
from tests.fakes.judge_server import JudgeServer, ScriptedReply, peaked_logprobs

JUDGE = "stand-in"
LABEL = "judge stand-in (tests/fakes/judge_server.py): scripted answers, not a model's"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SAMPLE = {"valid": 60, "test": 60}
SEED = 11
N_QUESTIONS = 4
_QUESTION = re.compile(r"^Q(\d+) of summary ([0-9a-f]{8}): which word\?$")


def _shown(text: str) -> str:
    """``text`` as it appears inside a fence (judges.prompts.untrusted: cleaned, stripped)."""
    return neutralise(text).strip()


def _unfence(text: str) -> str:
    """The text inside a prompt's <<<NAME>>> ... <<<END NAME>>> fence (judges.prompts.untrusted)."""
    return text.split(">>>\n", 1)[1].rsplit("\n<<<END ", 1)[0]


class FrankResponder:
    """Answers the factuality prompts for FRANK items, near their human labels (deterministic per summary)."""

    def __init__(self, frank: Frank) -> None:
        shares: dict[tuple[str, str], list[float]] = defaultdict(list)
        for item in frank.items:  # keyed by the texts as a judge is shown them (NFKC, invisible characters gone)
            shares[(_shown(frank.articles[item.hash].article), _shown(item.summary))].append(item.factuality)
        self.factuality = {key: sum(values) / len(values) for key, values in shares.items()}
        self.by_summary: dict[str, float] = {summary: f for (_, summary), f in self.factuality.items()}
        self.questions: dict[str, tuple[list[str], float]] = {}

    def __call__(self, body: dict[str, Any]) -> ScriptedReply | str:
        text = str(body["messages"][-1]["content"])
        if text.startswith("Rate how faithful"):
            article = _unfence(text.rsplit("\nArticle: ", 1)[1].rsplit("\nSummary: ", 1)[0])
            summary = _unfence(text.rsplit("\nSummary: ", 1)[1].removesuffix("\nScore:"))
            target = faithfulness_target(self.factuality[(article, summary)])
            noise = (0, 0, 0, 0, 0, 0, 1, 1, -1, -1)[zlib.crc32(summary.encode()) % 10]
            score = min(5, max(1, target + noise))
            return ScriptedReply(str(score), peaked_logprobs(score))
        if "Pairs (" in text:
            summary = _unfence(text.rsplit("\nSummary: ", 1)[1].rsplit("\nPairs (", 1)[0])
            words = list(dict.fromkeys(normalize_answer(summary).split()))[:N_QUESTIONS]
            key = f"{zlib.crc32(summary.encode()):08x}"
            self.questions[key] = (words, self.by_summary[summary])
            return "\n".join(
                f"{k + 1}. Answer: {w} | Question: Q{k} of summary {key}: which word?" for k, w in enumerate(words)
            )
        question = text.rsplit("\nQuestion: <<<QUESTION>>>\n", 1)[1].split("\n", 1)[0]
        match = _QUESTION.match(question)
        assert match is not None, question
        words, factuality = self.questions[match.group(2)]
        answered = int(factuality * len(words) + 0.5)  # answer this share of the questions, the rest not
        k = int(match.group(1))
        return words[k] if k < answered else "unanswerable"


@pytest.fixture(scope="module")
def frank(data_dir: Path) -> Frank:
    return load_frank(data_dir)


@pytest.fixture(scope="module")
def judge_server() -> Iterator[JudgeServer]:
    """The judge stand-in of ``tests/fakes`` (as its ``judge_server`` fixture), kept for the module's one run."""
    with JudgeServer() as server:
        yield server


@pytest.fixture(scope="module")
def loop(
    judge_server: JudgeServer, frank: Frank, data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Collect with the CLI against the stand-in, then run the factuality part of calibrate into a temp folder."""
    tmp_path = tmp_path_factory.mktemp("factuality_loop")
    judge_server.responder = FrankResponder(frank)
    judges_file = tmp_path / "judges.json"
    # The judge's configured family is "paper": factuality answers must still land under factuality_*.
    judges_file.write_bytes(msgspec.json.encode([judge_server.judge_config(name=JUDGE, prompt_family="paper")]))
    store = tmp_path / "answers.sqlite"
    for task in ("factuality_direct", "factuality_qa"):
        for split, limit in SAMPLE.items():
            argv = [
                "collect",
                "--judges-file",
                str(judges_file),
                "--judge",
                JUDGE,
                "--task",
                task,
                "--split",
                split,
                "--limit",
                str(limit),
                "--seed",
                str(SEED),
                "--store",
                str(store),
                "--data-dir",
                str(data_dir),
                "--no-progress",
            ]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(argv) == 0
    out, thresholds = tmp_path / "report", tmp_path / "thresholds.json"
    before = _snapshot(REPO_ROOT / "reports")
    result = calibrate_factuality(
        data_dir=data_dir, out_dir=out, thresholds_path=thresholds, store_path=store, seed=0, label=LABEL
    )
    yield {
        "store": store,
        "out": out,
        "thresholds": thresholds,
        "result": result,
        "server": judge_server,
        "reports_before": before,
        "reports_after": _snapshot(REPO_ROOT / "reports"),
    }


def _snapshot(folder: Path) -> dict[str, int]:
    return {p.as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


def _sample_ids(frank: Frank) -> set[str]:
    return {t.item_id for split, n in SAMPLE.items() for t in frank_targets(frank, split=split, limit=n, seed=SEED)}


def test_collect_stores_under_the_one_name(loop: dict[str, Any], frank: Frank) -> None:
    expected = _sample_ids(frank)
    with AnswerStore(loop["store"]) as store:
        counts = {(c.judge, c.prompt_family, c.task, c.criterion): (c.n, c.n_failed) for c in store.counts()}
        assert counts == {
            (JUDGE, task, task, "faithfulness"): (120, 0) for task in ("factuality_direct", "factuality_qa")
        }
        for task in ("factuality_direct", "factuality_qa"):
            assert {r.item_id for r in store.iter_answers(task=task)} == expected
        for record in store.iter_answers(task="factuality_qa"):
            verdict = msgspec.json.decode(record.raw_reply or "", type=QAFactuality)  # score and evidence kept
            assert record.judge_score == verdict.judge_score == judge_score_from_qa(verdict.score)
            assert 1 <= len(verdict.evidence) <= N_QUESTIONS and verdict.calls == len(verdict.evidence) + 1
        direct = list(store.iter_answers(task="factuality_direct"))
        assert all(r.logprobs is not None and len(r.logprobs) == 5 for r in direct)
    # A second run with the same sample makes no call: the keys match what was stored.
    calls = loop["server"].call_count
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "collect",
                    "--judges-file",
                    str(loop["store"].parent / "judges.json"),
                    "--judge",
                    JUDGE,
                    "--task",
                    "factuality_direct",
                    "--split",
                    "valid",
                    "--limit",
                    "60",
                    "--seed",
                    str(SEED),
                    "--store",
                    str(loop["store"]),
                    "--no-progress",
                ]
            )
            == 0
        )
    assert loop["server"].call_count == calls


def test_llm_tables_are_written_and_labelled(loop: dict[str, Any]) -> None:
    out: Path = loop["out"]
    result: FactualityResult = loop["result"]
    assert all(path.is_relative_to(out) for path in result.files)
    assert loop["reports_after"] == loop["reports_before"]  # nothing written into the repository's reports/
    llm = json.loads((out / "factuality" / "llm.json").read_text())
    assert llm["label"] == LABEL
    assert [(r["judge"], r["method"], r["prompt_family"], r["n_scored"]) for r in llm["runs"]] == [
        (JUDGE, "direct", "factuality_direct", 120),
        (JUDGE, "qa", "factuality_qa", 120),
    ]
    assert all(r["scored_per_split"] == SAMPLE and r["models"] == ["stand-in-judge"] for r in llm["runs"])
    for metric in (f"{JUDGE} (direct)", f"{JUDGE} (qa)"):
        table = llm["tables"][metric]
        assert table["n"] == 120 and set(table["per_dataset"]) == {"cnndm", "bbc"}
        assert set(table["per_category"]) == set(CATEGORY_COLUMNS)
        # The stand-in follows the human label, so correctly aligned keys give a strong partial correlation.
        assert table["pearson"] > 0.6 and table["spearman"] > 0.5
    kinds = {c["metric"]: c["kind"] for c in llm["comparison"]}
    assert kinds[f"{JUDGE} (direct)"] == "llm" and kinds["FactCC"] == "baseline"
    assert llm["comparison_n_items"] == 120 and all(c["n"] <= 120 for c in llm["comparison"])
    markdown = (out / "factuality" / "llm.md").read_text()
    assert LABEL in markdown and "## Per error category" in markdown and "CNN/DM" in markdown
    figure = (out / "factuality" / "llm_vs_baselines.png").read_bytes()
    assert figure.startswith(PNG_MAGIC) and len(figure) > 10_000
    index = (out / "index.md").read_text()
    assert LABEL in index and "factuality/llm_vs_baselines.png" in index and "no LLM factuality" not in index
    assert LABEL in (out / "factuality" / "faithfulness.md").read_text()


def _faithfulness_entries(artifact: ThresholdsArtifact) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for entry in artifact.entries:
        assert (entry.judge, entry.criterion) == (JUDGE, "faithfulness")
        found[entry.prompt_family].add(entry.method)
    return found


def test_artifact_holds_faithfulness_with_test_split_figures(loop: dict[str, Any]) -> None:
    artifact = load_artifact(loop["thresholds"])
    assert _faithfulness_entries(artifact) == {
        "factuality_direct": set(METHODS),  # log-probs were stored
        "factuality_qa": set(SCORE_ONLY_METHODS),
    }
    index = ThresholdIndex(artifact)
    for family in ("factuality_direct", "factuality_qa"):
        assert index.default_method(JUDGE, family, "faithfulness") is not None
        for method in index.methods(JUDGE, family, "faithfulness"):
            assert index.alphas(JUDGE, family, "faithfulness", method) == list(ALPHAS)
    summary = json.loads((loop["out"] / "factuality" / "faithfulness.json").read_text())
    cells = {(c["prompt_family"], c["method"], c["alpha"]): c for c in summary["cells"]}
    assert len(cells) == len(artifact.entries)
    for entry in artifact.entries:
        cell = cells[(entry.prompt_family, entry.method, entry.alpha)]
        assert (entry.heldout_coverage, entry.heldout_set_size) == (cell["coverage"], cell["set_size"])
        assert entry.n_splits == 1 and entry.heldout_coverage_std is None and cell["n_test"] == 60
        assert entry.fitted.n_cal <= 60  # fitted on the 60 valid items only
    assert LABEL in artifact.source and "FRANK test (n_splits = 1)" in artifact.source


def test_service_answers_faithfulness_with_the_exported_sets(loop: dict[str, Any]) -> None:
    artifact = load_artifact(loop["thresholds"])
    index = ThresholdIndex(artifact)
    app = create_app(Settings(thresholds_path=loop["thresholds"]), log_stream=io.StringIO())
    with TestClient(app, raise_server_exceptions=False) as client:
        for judge_score in range(1, 6):
            body = {
                "criterion": "faithfulness",
                "judge_score": judge_score,
                "judge": JUDGE,
                "prompt_family": "factuality_direct",
            }
            reply = client.post("/v1/score", json=body)
            assert reply.status_code == 200, reply.text
            data = reply.json()
            assert data["calibrated"] is True and data["prompt_family"] == "factuality_direct"
            entry = index.lookup(JUDGE, "factuality_direct", "faithfulness", data["method"], 0.1)
            assert entry is not None
            assert data["prediction_set"] == list(prediction_set(entry.fitted, judge_score=judge_score))
            for alpha in ALPHAS:
                named = client.post("/v1/score", json={**body, "method": "residual", "alpha": alpha}).json()
                fitted = index.lookup(JUDGE, "factuality_direct", "faithfulness", "residual", alpha).fitted
                assert named["prediction_set"] == list(prediction_set(fitted, judge_score=judge_score))
        qa = client.post(
            "/v1/score",
            json={
                "criterion": "faithfulness",
                "judge_score": 2,
                "judge": JUDGE,
                "prompt_family": "factuality_qa",
                "method": "mondrian_residual",
            },
        ).json()
        fitted = index.lookup(JUDGE, "factuality_qa", "faithfulness", "mondrian_residual", 0.1).fitted
        assert qa["calibrated"] is True and qa["prediction_set"] == list(prediction_set(fitted, judge_score=2))
        other = client.post(
            "/v1/score", json={"criterion": "faithfulness", "judge_score": 2, "judge": JUDGE, "prompt_family": "paper"}
        )
        # A threshold fitted on the factuality prompts is never applied to another family's verdict.
        assert other.status_code == 200 and other.json()["calibrated"] is False
        assert other.json()["prediction_set"] == [1, 2, 3, 4, 5]
