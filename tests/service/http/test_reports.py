"""GET /v1/judges/{judge}/report(.html) and /v1/calibrations/{job_id}/report(.html): the shipped report cards found
and served as JSON and as a page, their path variants, keys, sizes, the quota they do not spend, and faults (a
malformed cards file, a monitor store that does not answer)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np
import pytest

from artifact.labels import LabelledCell
from artifact.report_cards import ReportCards, save_report_cards
from artifact.report_evidence import ReportOptions, build_report_card
from artifact.thresholds import ThresholdsArtifact
from calibration.report_card.card import ReportCard
from service.config.jobs import JobSettings
from service.config.settings import Settings
from tests.service.conftest import STAND_IN, AppHarness, synthetic_verdicts
from tests.service.jobs.conftest import REDIS_URL, queue_name  # noqa: F401 - the fixture

FAST = ReportOptions(n_resamples=100, planner_sizes=(10, 60), planner_draws=2)
ADMIN, KEY = "admin-key", "k1"


def _cell(criterion: str, seed: int) -> LabelledCell:
    labels, scores, probabilities = synthetic_verdicts(240, seed)
    return LabelledCell(
        judge=STAND_IN,
        prompt_family="paper",
        criterion=criterion,
        n_labels=5,
        item_ids=tuple(f"i{n:03d}" for n in range(240)),
        labels=labels.astype(np.int64),
        judge_scores=scores.astype(np.int64),
        probabilities=probabilities,
        groups=tuple(f"doc{n // 6}" for n in range(240)),
    )


@pytest.fixture(scope="module")
def cards(artifact: ThresholdsArtifact) -> list[ReportCard]:
    return [build_report_card(_cell(c, s), artifact, FAST) for c, s in (("coherence", 1), ("relevance", 2))]


@pytest.fixture(scope="module")
def shipped(cards, artifact_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the test artifact with a report cards file beside it; returns the artifact's path."""
    folder = tmp_path_factory.mktemp("shipped")
    shutil.copy(artifact_path, folder / "thresholds.json")
    save_report_cards(ReportCards(created_at="2026-12-07T00:00:00+00:00", source="test", cards=cards),
                      folder / "report_cards.json")  # fmt: skip
    return folder / "thresholds.json"


@pytest.fixture
def reports(start_app: Callable[[Settings], AppHarness], shipped: Path) -> AppHarness:
    return start_app(Settings(thresholds_path=shipped))


def test_the_json_holds_the_judges_cards_and_links_the_page(reports: AppHarness, cards) -> None:
    reply = reports.client.get(f"/v1/judges/{STAND_IN}/report")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["judge"] == STAND_IN and [c["criterion"] for c in body["cards"]] == ["coherence", "relevance"]
    assert body["cards"] == msgspec.to_builtins(cards)  # the stored cards, unchanged
    assert body["page"] == f"/v1/judges/{STAND_IN}/report.html"
    assert body["monitors"] is None and "REDIS_URL" in body["monitors_note"]


def test_criterion_selects_one_card_and_an_unknown_one_is_a_404_naming_the_cards(reports: AppHarness) -> None:
    reply = reports.client.get(f"/v1/judges/{STAND_IN}/report", params={"criterion": "relevance"})
    assert reply.status_code == 200 and [c["criterion"] for c in reply.json()["cards"]] == ["relevance"]
    assert reply.json()["page"].endswith("report.html?criterion=relevance")
    missing = reports.client.get(f"/v1/judges/{STAND_IN}/report", params={"criterion": "fluency"})
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/problem+json")
    assert "paper/coherence" in missing.json()["detail"]
    unknown = reports.client.get("/v1/judges/nobody/report.html")
    assert unknown.status_code == 404 and STAND_IN in unknown.json()["detail"]


def test_the_page_is_html_and_shows_the_jsons_figures(reports: AppHarness) -> None:
    page = reports.client.get(f"/v1/judges/{STAND_IN}/report.html", params={"criterion": "coherence"})
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"  # charset once
    card = reports.client.get(f"/v1/judges/{STAND_IN}/report", params={"criterion": "coherence"}).json()["cards"][0]
    kappa = card["skill"]["weighted_kappa"]["estimate"]
    assert f'data-figure="cards.0.skill.weighted_kappa.estimate">{kappa:.3f}<' in page.text
    assert '<html lang="en">' in page.text and "<script" not in page.text and "<link" not in page.text
    assert not any(f'{a}="{s}' in page.text for a in ("src", "href") for s in ("http", "//"))  # nothing fetched
    assert 'href="/v1/judges/stand-in/report?criterion=coherence"' in page.text


@pytest.mark.parametrize(
    "path",
    [f"/v1/judges/{STAND_IN}/report", f"/v1/judges/{STAND_IN}/report/", f"/v1/judges/{STAND_IN}/report?criterion=",
     "/v1/judges/stand%2Din/report"],
)  # fmt: skip
def test_path_variants(reports: AppHarness, path: str) -> None:
    reply = reports.client.get(path)
    if path.endswith("criterion="):
        # the spec states it (min_length 1, a non-space character): refused as the spec says, naming the field
        assert reply.status_code == 422 and "criterion" in reply.json()["detail"]
    else:
        assert reply.status_code == 200, (path, reply.text)


def test_judges_links_each_judge_with_a_card(reports: AppHarness) -> None:
    judges = {j["name"]: j for j in reports.client.get("/v1/judges").json()["judges"]}
    assert judges[STAND_IN]["report"] == f"/v1/judges/{STAND_IN}/report.html"
    assert all(j.get("report") is None for name, j in judges.items() if name != STAND_IN)


def test_keys_guard_the_report_and_the_jobs_report_is_admin_only(start_app, shipped: Path) -> None:
    harness = start_app(Settings(thresholds_path=shipped, api_keys=(KEY,), admin_api_key=ADMIN))
    path = f"/v1/judges/{STAND_IN}/report"
    assert harness.client.get(path).status_code == 401
    assert harness.client.get(path + ".html", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert harness.client.get(path, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    job = f"/v1/calibrations/{'0' * 32}/report"
    assert harness.client.get(job, headers={"Authorization": f"Bearer {KEY}"}).status_code == 403
    assert harness.client.get(job + ".html", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 404


def test_oversize_parameters_are_refused_with_a_problem(reports: AppHarness) -> None:
    reply = reports.client.get(f"/v1/judges/{STAND_IN}/report", params={"criterion": "c" * 65})
    assert reply.status_code in (400, 422) and reply.headers["content-type"].startswith("application/problem+json")
    long_judge = reports.client.get(f"/v1/judges/{'j' * 301}/report")
    assert long_judge.status_code in (400, 404, 422) and long_judge.status_code != 500


def test_a_report_spends_none_of_the_scoring_quota(start_app, shipped: Path) -> None:
    settings = Settings(thresholds_path=shipped)
    harness = start_app(settings)
    admission = harness.services.admission
    admission.inflight_items = admission.max_inflight_items  # the quota of items in flight is spent
    body = {"criterion": "coherence", "judge": STAND_IN, "prompt_family": "paper", "judge_score": 3}
    assert harness.client.post("/v1/score/batch", json={"items": [body]}).status_code == 429
    assert harness.client.get(f"/v1/judges/{STAND_IN}/report").status_code == 200
    assert harness.client.get(f"/v1/judges/{STAND_IN}/report.html").status_code == 200


def test_a_malformed_cards_file_is_a_503_problem_and_judges_still_answers(
    start_app, shipped: Path, tmp_path: Path
) -> None:
    shutil.copy(shipped, tmp_path / "thresholds.json")
    (tmp_path / "report_cards.json").write_text('{"format_version": 1, "cards": "no"}')
    harness = start_app(Settings(thresholds_path=tmp_path / "thresholds.json"))
    reply = harness.client.get(f"/v1/judges/{STAND_IN}/report")
    assert reply.status_code == 503 and "report cards file" in reply.json()["detail"]
    assert harness.client.get("/v1/judges").status_code == 200


def test_without_a_cards_file_every_report_is_a_404(app: AppHarness) -> None:
    reply = app.client.get(f"/v1/judges/{STAND_IN}/report")
    assert reply.status_code == 404 and "holds none" in reply.json()["detail"]


def test_a_monitor_store_that_does_not_answer_leaves_the_report_without_monitors(start_app, shipped: Path) -> None:
    harness = start_app(Settings(thresholds_path=shipped, redis_url="redis://127.0.0.1:1/0"))
    reply = harness.client.get(f"/v1/judges/{STAND_IN}/report")
    assert reply.status_code == 200, reply.text
    assert reply.json()["monitors"] is None and "did not answer" in reply.json()["monitors_note"]


def test_a_calibration_jobs_answer_links_its_report_and_the_report_holds_its_cards(start_app, shipped: Path) -> None:
    import time

    harness = start_app(Settings(thresholds_path=shipped, admin_api_key=ADMIN))
    admin = {"Authorization": f"Bearer {ADMIN}"}
    labels, scores, _ = synthetic_verdicts(120, 9)
    rows = "".join(
        f'{{"item_id": "d{i // 4}/{i % 4}", "criterion": "helpfulness", "judge": "my-judge", "human": {int(h)}, '
        f'"judge_score": {int(s)}, "group": "d{i // 4}"}}\n'
        for i, (h, s) in enumerate(zip(labels, scores, strict=True))
    )
    submitted = harness.client.post(
        "/v1/calibrations", content=rows, headers={"Content-Type": "application/x-ndjson", **admin}
    )
    assert submitted.status_code == 202, submitted.text
    job = submitted.json()
    assert job["report"] is None  # nothing to show before the job is done
    early = harness.client.get(f"/v1/calibrations/{job['id']}/report", headers=admin)
    assert early.status_code == 404 or early.json()["cards"]  # 404 until done (unless it finished already)
    deadline = time.monotonic() + 300
    while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
        job = harness.client.get(f"/v1/calibrations/{job['id']}", headers=admin).json()
    assert job["status"] == "done", job
    assert job["report"] == f"/v1/calibrations/{job['id']}/report.html"
    report = harness.client.get(job["report"].removesuffix(".html"), headers=admin).json()
    (card,) = report["cards"]
    assert (report["judge"], card["criterion"], card["n_items"], card["n_documents"]) == ("my-judge", "helpfulness",
                                                                                           120, 30)  # fmt: skip
    assert card["planner"]["points"] and card["ceiling"] is None  # one label per item: no ceiling
    assert sum(map(sum, card["confusion"])) == 120
    page = harness.client.get(job["report"], headers=admin)
    assert page.status_code == 200 and "Report card: my-judge" in page.text


def test_the_report_address_make_serve_prints_opens_the_shipped_judges_page(start_app) -> None:
    from urllib.parse import urlsplit

    from service.__main__ import report_example

    root = Path(__file__).resolve().parents[3]
    settings = Settings(thresholds_path=root / "artifact" / "thresholds.json", port=8123)
    address = urlsplit(report_example(settings))
    assert (address.hostname, address.port) == ("127.0.0.1", 8123)
    page = start_app(settings).client.get(address.path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "weighted kappa" in page.text and "Planner" in page.text


@pytest.mark.redis
def test_the_report_shows_the_judges_monitors_from_the_monitor_view(start_app, shipped: Path, queue_name) -> None:  # noqa: F811
    settings = Settings(thresholds_path=shipped, redis_url=REDIS_URL, jobs=JobSettings(queue=queue_name))
    client = start_app(settings).client
    items = [
        {"criterion": "relevance", "judge": STAND_IN, "prompt_family": "paper", "judge_score": 3, "human": h,
         "item_id": f"r{i}", "group": f"g{i}", "done": True}
        for i, h in enumerate((3, 3, 4, 2))
    ]  # fmt: skip
    assert client.post("/v1/feedback", json={"items": items}).status_code == 200
    report = client.get(f"/v1/judges/{STAND_IN}/report").json()
    monitors = client.get("/v1/monitor").json()["cells"]
    assert report["monitors"] == monitors and len(monitors) == 1 and monitors[0]["labels"] == 4
    assert client.get(f"/v1/judges/{STAND_IN}/report", params={"criterion": "coherence"}).json()["monitors"] == []
    page = client.get(f"/v1/judges/{STAND_IN}/report.html").text
    assert 'data-figure="monitors.0.labels">4<' in page and monitors[0]["status"] in page
    # the e-process: one point per closed document (4), drawn as 4 dots, each figure tagged with its JSON path
    points = monitors[0]["e_process"]
    assert [(p["documents"], p["labels"]) for p in points] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    svg = page[page.index(f'aria-labelledby="monitor-{monitors[0]["monitor_id"]}-e-process-title') :]
    assert svg[: svg.index("</svg>")].count("<circle") == 4
    assert f'data-figure="monitors.0.e_process.3.e_value">{points[3]["e_value"]:.3f}<' in page
