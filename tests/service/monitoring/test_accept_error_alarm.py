"""On the shipped artifact, where gpt-4o-mini's relevance verdicts are accepted, a stream one judge harsher than the
humans (every accepted point 2 labels above the human label) raises the accept-error alarm: the monitor watches both
served guarantees, counts only accepted verdicts for accept error, and names the guarantee with the larger
e-value; the cell's accepted answers then escalate."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from service.config.settings import Settings, default_thresholds_path
from tests.service.conftest import AppHarness

pytestmark = pytest.mark.redis
VERDICT = {
    "criterion": "relevance",
    "judge": "gpt-4o-mini-2024-07-18",
    "judge_score": 4,
    "alpha": 0.2,
    "accept_alpha": 0.1,
    "guarantee": "expected",  # the marginal accept-error promise this test watches (score 4 accepts under it)
}


def test_accepted_errors_raise_the_accept_error_alarm(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = msgspec.structs.replace(
        jobs_settings({"monitor_max_items": 4}), thresholds_path=default_thresholds_path()
    )
    client = start_app(settings).client
    served = client.post("/v1/score", json=VERDICT).json()
    assert served["decision"] == "accept" and served["point"] == 4
    items = [
        {**VERDICT, "human": 2, "item_id": f"d{d}/{i}", "group": f"d{d}", "done": i == 3}
        for d in range(8)
        for i in range(4)
    ]
    body = client.post("/v1/feedback", json={"items": items}).json()
    assert body["accepted"] == 32 and body["documents_closed"] == 8 and body["alarms_raised"] == 1
    cell = client.get("/v1/monitor").json()["cells"][0]
    assert [(g["guarantee"], g["level"], g["tolerance"]) for g in cell["guarantees"]] == [
        ("coverage", 0.2, None),
        ("accept_error", 0.1, 2),
    ]
    assert cell["alarm"]["guarantee"] == "accept_error" and cell["alarm"]["level"] == pytest.approx(0.1)
    assert cell["alarm"]["guarantee_e_value"] >= cell["threshold"]
    accept = cell["guarantees"][1]
    assert accept["rate"] == 1.0 and accept["counted"] == cell["labels"]
    after = client.post("/v1/score", json=VERDICT).json()
    assert after["decision"] == "escalate" and after["rule_failed"] is True
    assert "error among accepted" in after["reason"] and after["prediction_set"] == served["prediction_set"]
