"""A judge without information, calibrated over HTTP on 50 SummEval documents, earns no accept on the other 50 in
the default guarantee, and the calibration says why; the same file calibrated twice gives the same rules."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from service.config.limits import LimitSettings
from service.config.settings import Settings, default_thresholds_path
from tests.labelled_data import write_labelled_file
from tests.service.conftest import AppHarness

ADMIN = "controls-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-ndjson"}
CRITERIA = ("coherence", "consistency", "fluency", "relevance")


@pytest.fixture(scope="module")
def controls(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """(the labelled file of the first 50 documents, the rows of the other 50): per criterion a constant judge
    (always 5) and the recorded judge's scores shuffled across all items (seed 0)."""
    folder = tmp_path_factory.mktemp("controls")
    rows: list[dict] = []
    for criterion in CRITERIA:
        source = folder / f"{criterion}.jsonl"
        write_labelled_file(data_dir, source, source_criterion=criterion, criterion=criterion, judge="x", k=5)
        real = [json.loads(line) for line in source.read_text().splitlines()]
        shuffled = np.random.default_rng(0).permutation([r["judge_score"] for r in real])
        for row, score in zip(real, shuffled, strict=True):
            rows.append({**row, "judge": "constant-judge", "judge_score": 5})
            rows.append({**row, "judge": "shuffled-judge", "judge_score": int(score)})
    documents = sorted({r["group"] for r in rows})
    fit_documents = set(documents[:50])
    fit = folder / "fit.jsonl"
    fit.write_text("".join(json.dumps(r) + "\n" for r in rows if r["group"] in fit_documents))
    return fit, [r for r in rows if r["group"] not in fit_documents]


@pytest.fixture
def harness(start_app: Callable[[Settings], AppHarness], tmp_path: Path) -> AppHarness:
    return start_app(
        Settings(
            thresholds_path=default_thresholds_path(),
            admin_api_key=ADMIN,
            artifacts_dir=tmp_path / "activated",
            limits=LimitSettings(reload_dir=tmp_path),
        )
    )


def _wait(harness: AppHarness, job_id: str, limit_s: float = 600.0) -> dict:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        info = harness.client.get(f"/v1/calibrations/{job_id}", headers=HEADERS).json()
        if info["status"] in ("done", "failed"):
            return info
        time.sleep(0.1)
    raise AssertionError(f"the calibration job did not finish in {limit_s:.0f} s")


def test_judges_without_information_accept_nothing(harness: AppHarness, controls) -> None:
    fit, unseen = controls
    reply = harness.client.post("/v1/calibrations", headers=HEADERS, content=fit.read_bytes())
    assert reply.status_code == 202, reply.text
    job = _wait(harness, reply.json()["id"])
    assert job["status"] == "done", job
    assert len(job["cells"]) == 2 * len(CRITERIA)
    for cell in job["cells"]:
        assert cell["per_label"] is not None
        assert not cell["per_label"]["skill"]["skilled"], cell["per_label"]
        assert "adds no information over the label distribution" in cell["per_label"]["words"]
        assert cell["per_label"]["summary"]["accept_share"] <= 0.02
    activated = harness.client.post(f"/v1/calibrations/{job['id']}/activate", headers=HEADERS)
    assert activated.status_code == 200, activated.text
    for judge in ("constant-judge", "shuffled-judge"):
        for criterion in CRITERIA:
            items = [
                {"criterion": criterion, "judge": judge, "judge_score": r["judge_score"]}
                for r in unseen
                if r["judge"] == judge and r["criterion"] == criterion
            ]
            accepted = 0
            for start in range(0, len(items), 500):
                answer = harness.client.post("/v1/score/batch", json={"items": items[start : start + 500]})
                assert answer.status_code == 200, answer.text
                for result in answer.json()["results"]:
                    served = result["result"]
                    assert served["calibrated"] and served["guarantees"][0]["mode"] == "per_label"
                    accepted += served["decision"] == "accept"
            assert accepted / len(items) <= 0.02, (judge, criterion)


def test_the_same_file_calibrated_twice_gives_the_same_rules(harness: AppHarness, controls) -> None:
    fit, _ = controls
    rows = [json.loads(line) for line in fit.read_text().splitlines()]
    one_cell = "".join(
        json.dumps({**r, "judge": "twice-judge"}) + "\n"
        for r in rows
        if r["judge"] == "shuffled-judge" and r["criterion"] == "coherence"
    ).encode()
    answers = []
    for _ in range(2):
        reply = harness.client.post("/v1/calibrations", headers=HEADERS, content=one_cell)
        assert reply.status_code == 202, reply.text
        answers.append(_wait(harness, reply.json()["id"]))
    first, second = ([{k: v for k, v in c.items()} for c in a["cells"]] for a in answers)
    assert first == second
