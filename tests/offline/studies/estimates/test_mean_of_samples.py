"""Judges whose verdict is a mean of sampled scores (G-Eval style): read, stored, calibrated as their own input
kind, served; a judge file with no usable row is named, never dropped in silence."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from litestar.testing import TestClient

from artifact.serving import interval_hull
from artifact.thresholds import ThresholdIndex, save_artifact
from calibration.conformal import prediction_set
from calibration.input_kinds.verdicts import two_point_probabilities
from offline.build.answers.ingest import ingest_recorded
from offline.build.answers.store import AnswerStore
from offline.build.cell_data import cell_data_from_store
from offline.build.export import build_artifact
from offline.build.inputs.errors import DataError
from offline.build.inputs.judges import load_judges
from offline.build.inputs.summeval import load_summeval
from offline.pipeline import ingest_summary
from offline.report.index import unusable_judges
from offline.studies.conformal.validity import kind_data, run_validity_study
from service.config.settings import Settings
from service.http.app import create_app

SOURCE = "gpt-4o-mini-2024-07-18"


def _data_dir(tmp_path: Path, real: Path, rows: list[dict]) -> Path:
    root = tmp_path / "data"
    (root / "judges" / "summeval").mkdir(parents=True)
    (root / "summeval").symlink_to(real / "summeval")
    (root / "pairwise").symlink_to(real / "pairwise")
    with (root / "judges" / "summeval" / "geval-mean.jsonl").open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return root


def _mean_rows(real: Path) -> list[dict]:
    """A mean judge derived from a real one: the expected score under its recorded coherence log-probs."""
    rows = []
    for line in (real / "judges" / "summeval" / f"{SOURCE}.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["criterion"] != "coherence" or row["logprobs"] is None:
            continue
        weights = np.exp([row["logprobs"].get(str(k), -math.inf) for k in range(1, 6)])
        mean = float(np.dot(weights / weights.sum(), np.arange(1, 6)))
        rows.append(
            {
                "item_id": row["item_id"],
                "criterion": "coherence",
                "score": None,
                "logprobs": None,
                "response": None,
                "mean_of_samples": round(mean, 4),
                "n_samples": 20,
            }
        )
    return rows


@pytest.fixture(scope="module")
def mean_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    return _data_dir(tmp_path_factory.mktemp("mean"), data_dir, _mean_rows(data_dir))


def test_mean_rows_flow_into_a_mean_kind_cell_and_are_served(mean_dir: Path, tmp_path: Path):
    with AnswerStore(":memory:") as store:
        report = ingest_recorded(store, mean_dir)
        (data,) = cell_data_from_store(store, load_summeval(mean_dir).items)
    assert report.for_judge("geval-mean").recorded == 1600
    assert data.means is not None and data.means.size == 1600 and data.probabilities is None
    assert [k.kind for k in kind_data(data, list(data.groups))] == ["mean"]
    summary, fits = run_validity_study([data], n_splits=4, seed=0)
    (cell,) = summary.cells
    assert cell.kind == "mean" and cell.default_method in {
        "residual",
        "residual_expected",
        "mondrian_residual",
        "learned_lac",
        "label_conditional",
    }
    artifact = build_artifact(data_hash="t", code_version="t", created_at="t", fits=fits)
    path = tmp_path / "thresholds.json"
    save_artifact(artifact, path)
    index = ThresholdIndex(artifact)
    with TestClient(create_app(Settings(thresholds_path=path))) as client:
        body = {"criterion": "coherence", "judge": "geval-mean", "prompt_family": "unknown", "mean_of_samples": 3.4}
        body["guarantee"] = "pac"  # run_validity_study fits the pac mode by default
        answer = client.post("/v1/score", json=body).json()
        assert answer["calibrated"] is True and answer["input_kind"] == "mean" and answer["judge_score"] == 3
        entry = index.lookup("geval-mean", "unknown", "coherence", answer["method"], answer["alpha"], "mean")
        expected = interval_hull(
            prediction_set(entry.fitted, judge_score=3, probabilities=two_point_probabilities(3.4, 5))
        )
        assert answer["prediction_set"] == list(expected)
        # a plain integer score was never calibrated for this judge: uncalibrated, never a borrowed threshold
        plain = client.post(
            "/v1/score", json={**{k: v for k, v in body.items() if k != "mean_of_samples"}, "judge_score": 3}
        ).json()
        assert plain["calibrated"] is False and "carries score" in plain["reason"]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"mean_of_samples": 5.5}, "outside 1..5"),
        ({"mean_of_samples": 3.0, "score": 3}, "carries no score"),
        ({"mean_of_samples": 3.0, "n_samples": 0}, "at least 1"),
    ],
)
def test_bad_mean_rows_name_file_and_line(tmp_path: Path, data_dir: Path, row: dict, problem: str):
    base = {"item_id": load_summeval(data_dir).items[0].item_id, "criterion": "coherence"}
    root = _data_dir(tmp_path, data_dir, [{**base, **row}])
    with pytest.raises(DataError, match=problem) as raised:
        load_judges(root)
    assert "geval-mean.jsonl:1" in str(raised.value)


def test_a_judge_with_no_usable_row_is_named(tmp_path: Path, data_dir: Path):
    items = load_summeval(data_dir).items[:3]
    root = _data_dir(
        tmp_path,
        data_dir,
        [
            {"item_id": i.item_id, "criterion": "fluency", "score": None, "logprobs": None, "response": None}
            for i in items
        ],
    )
    with AnswerStore(":memory:") as store:
        report = ingest_recorded(store, root)
    flagged = unusable_judges(ingest_summary(report, Path("x")))
    assert [r.judge for r in flagged if r.task == "direct"] == ["geval-mean"]
