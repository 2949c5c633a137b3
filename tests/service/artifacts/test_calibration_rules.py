"""A calibration submitted over HTTP carries certified decision rules: activated, its cell's verdicts are accepted
where the rule certifies them (an accept_error guarantee whose bound is <= accept_alpha), and a cell too small to
certify says so in the job and escalates every verdict with that reason.

The labelled file is a recorded SummEval judge x criterion (gpt-4o-mini relevance, 100 documents, 1..5) under
another judge and criterion name, so the rule the HTTP job fits must be the one ``offline`` shipped for that cell
in artifact/thresholds.json (one fit, ``calibration.decisions.cell_rules``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from artifact.thresholds import load_artifact
from service.config.limits import LimitSettings
from service.config.settings import Settings, default_thresholds_path
from tests.labelled_data import write_labelled_file
from tests.service.conftest import AppHarness

ADMIN = "rules-admin"
HEADERS = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-ndjson"}
JUDGE, CRITERION = "acme-judge-v1", "helpfulness"
SOURCE_JUDGE, SOURCE_CRITERION = "gpt-4o-mini-2024-07-18", "relevance"


@pytest.fixture(scope="module")
def rows(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    path = tmp_path_factory.mktemp("rules") / "all.jsonl"
    write_labelled_file(
        data_dir,
        path,
        source_judge=SOURCE_JUDGE,
        source_criterion=SOURCE_CRITERION,
        judge=JUDGE,
        criterion=CRITERION,
        k=5,
    )
    return [json.loads(line) for line in path.read_text().splitlines()]


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


def _body(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _calibrate(harness: AppHarness, body: bytes) -> dict:
    reply = harness.client.post("/v1/calibrations", headers=HEADERS, content=body)
    assert reply.status_code == 202, reply.text
    for _ in range(1200):
        info = harness.client.get(f"/v1/calibrations/{reply.json()['id']}", headers=HEADERS).json()
        if info["status"] in ("done", "failed"):
            assert info["status"] == "done", info
            activated = harness.client.post(f"/v1/calibrations/{info['id']}/activate", headers=HEADERS)
            assert activated.status_code == 200, activated.text
            return info
        time.sleep(0.05)
    raise AssertionError("the calibration job did not finish in 60 s")


def _score(harness: AppHarness, judge_score: int, **asked: object) -> dict:
    reply = harness.client.post(
        "/v1/score", json={"criterion": CRITERION, "judge": JUDGE, "judge_score": judge_score, **asked}
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_an_http_calibration_certifies_and_score_accepts(harness: AppHarness, rows: list[dict]) -> None:
    assert len({r["group"] for r in rows}) == 100
    job = _calibrate(harness, _body(rows))
    [cell] = job["cells"]
    assert {c["mode"] for c in cell["certifications"]} == {"expected", "pac"}
    by_level = {(c["tolerance"], c["accept_alpha"]): c for c in cell["certifications"] if c["mode"] == "pac"}
    assert set(by_level) == {(t, a) for t in (1, 2) for a in (0.05, 0.1, 0.2)}
    headline = by_level[(2, 0.1)]
    assert headline["certified"] and not headline["rule_failed"] and headline["n_groups"] == 80
    assert headline["certified_error"] <= 0.1 and headline["accept_share"] > 0.5
    assert "pac: certified at tolerance 2, accept_alpha 0.1:" in cell["decision_summary"]
    assert cell["decision_summary"].startswith("expected: accepted at tolerance 2, accept_alpha 0.1:")
    assert not any("decision rule" in w for w in job["warnings"])

    # the same rule offline shipped for the same data (one fit for both paths), names aside
    served = [r for r in harness.client.get("/v1/calibration").json()["decision_rules"] if r["judge"] == JUDGE]
    [shipped] = [
        r
        for r in load_artifact(default_thresholds_path()).decision_rules
        if (r.judge, r.criterion, r.input_kind) == (SOURCE_JUDGE, SOURCE_CRITERION, "score")
    ]
    renamed = msgspec.to_builtins(
        msgspec.structs.replace(shipped, judge=JUDGE, criterion=CRITERION, prompt_family="custom")
    )
    # identical but for the expected rows' uniform: a calibration job draws its seed afresh (recorded in each row)
    assert [_without_uniforms(r) for r in served] == [_without_uniforms(renamed)]
    seeds = {row["test"]["seed"] for row in served[0]["certifications"] if row["mode"] == "expected" and row["test"]}
    assert len(seeds) == 1

    for mode in ("expected", "pac"):
        accepted = 0
        for score in range(1, 6):
            answer = _score(harness, score, tolerance=2, accept_alpha=0.1, guarantee=mode)
            assert answer["rule_failed"] is False, answer
            if answer["decision"] == "accept":
                accepted += 1
                [guarantee] = [g for g in answer["guarantees"] if g["kind"] == "accept_error"]
                assert guarantee["tolerance"] == 2 and guarantee["alpha"] == 0.1 and guarantee["mode"] == mode
                if mode == "pac":
                    assert guarantee["bound"] is not None and guarantee["bound"] <= guarantee["alpha"]
                else:
                    assert "bound" not in guarantee and "confidence" not in guarantee
        assert accepted > 0, mode


def _without_uniforms(rule: dict) -> dict:
    """A rule's builtins with each expected row's uniform, seed, outcome and words left out."""
    copy = dict(rule)
    for field in ("certifications", "quality_gates", "per_label"):
        rows = []
        for row in copy[field]:
            if row.get("mode") == "expected":
                row = {
                    k: v
                    for k, v in row.items()
                    if k not in ("accepted_bins", "pass_bins", "accept_share", "reason", "error_among_accepted")
                }
                if row.get("test"):
                    row["test"] = {
                        k: v for k, v in row["test"].items() if k not in ("uniform", "seed", "acceptance_probability")
                    }
            rows.append(row)
        copy[field] = rows
    return copy


def test_a_too_small_upload_cannot_certify_and_escalates_saying_so(harness: AppHarness, rows: list[dict]) -> None:
    documents = sorted({r["group"] for r in rows})[:10]
    job = _calibrate(harness, _body([r for r in rows if r["group"] in documents]))
    [cell] = job["cells"]
    assert cell["certifications"] and all(c["rule_failed"] and not c["certified"] for c in cell["certifications"])
    assert cell["decision_summary"].startswith(
        "expected: not certifiable at tolerance 2, accept_alpha 0.1: only 8 certification documents"
    )
    assert (
        "pac: not certifiable at tolerance 2, accept_alpha 0.1: only 8 certification documents"
        in (cell["decision_summary"])
    )
    assert any(JUDGE in w and "not certifiable" in w for w in job["warnings"])
    for score in (1, 3, 5):
        answer = _score(harness, score, guarantee="expected")
        assert answer["decision"] == "escalate" and answer["rule_failed"] is True
        assert "certification documents" in answer["reason"], answer["reason"]
        assert _score(harness, score)["decision"] == "escalate"  # the default, per label: 10 documents accept nothing


def test_without_groups_each_row_is_its_own_document(harness: AppHarness, rows: list[dict]) -> None:
    chosen = rows[:160]
    no_groups = [{k: v for k, v in r.items() if k != "group"} for r in chosen]
    job = _calibrate(harness, _body(no_groups))
    [cell] = job["cells"]
    assert cell["n_groups"] == len(chosen)
    for row in cell["certifications"]:
        assert row["n_groups"] == len(chosen) - len(chosen) // 5  # FIT takes 20% of the rows, CERTIFY the rest
