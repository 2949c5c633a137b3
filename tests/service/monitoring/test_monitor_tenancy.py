"""With API_KEYS set, feedback and monitors belong to the caller's key: a tenant's alarm escalates only its own
answers, another tenant can neither read its monitors nor raise or clear its alarm, and the admin key's feedback and
alarms apply to everyone (the admin also sees every monitor)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.config.settings import Settings
from tests.service.conftest import AppHarness
from tests.service.monitoring.conftest import feedback_item
from tests.service.monitoring.test_feedback_api import ADMIN, SCORE, outside

pytestmark = pytest.mark.redis
KEY_1, KEY_2 = "tenant-one-key-7c1d", "tenant-two-key-93ab"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _harsh(client, key: str, prefix: str) -> dict:
    served = client.post("/v1/score", json=SCORE, headers=bearer(key)).json()["prediction_set"]
    items = [feedback_item(f"{prefix}{i}", outside(served)) for i in range(12)]
    answer = client.post("/v1/feedback", json={"items": items}, headers=bearer(key))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _escalated(client, key: str) -> bool:
    return client.post("/v1/score", json=SCORE, headers=bearer(key)).json()["rule_failed"]


def test_a_tenants_alarm_is_its_own(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"monitor_max_items": 1, "api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN})
    client = start_app(settings).client
    assert _harsh(client, KEY_1, "t1-")["alarms_raised"] == 1
    assert _escalated(client, KEY_1) and not _escalated(client, KEY_2)
    assert not _escalated(client, ADMIN)  # a tenant's alarm does not speak for the others, nor the admin

    own = client.get("/v1/monitor", headers=bearer(KEY_1)).json()["cells"]
    assert len(own) == 1 and own[0]["status"] == "alarm"
    # one budget per caller's cell: its own monitor and the admin's escalate it, each at half of MONITOR_DELTA
    assert own[0]["delta"] == pytest.approx(0.025) and own[0]["threshold"] == pytest.approx(1000 / 0.025)
    assert client.get("/v1/monitor", headers=bearer(KEY_2)).json()["cells"] == []  # cannot read it
    # the same item ids from another tenant are its own labels, not duplicates of tenant one's
    other = client.post("/v1/feedback", json={"items": [feedback_item("t1-0", 3)]}, headers=bearer(KEY_2)).json()
    assert (other["accepted"], other["duplicates"]) == (1, 0)
    assert _escalated(client, KEY_1)  # tenant two's good label cleared nothing
    monitor_id = own[0]["monitor_id"]
    for key in (KEY_1, KEY_2):  # neither tenant may reset, not even its own monitor
        assert client.post("/v1/monitor/reset", json={"monitor_id": monitor_id}, headers=bearer(key)).status_code == 403
    assert _escalated(client, KEY_1)
    every = client.get("/v1/monitor", headers=bearer(ADMIN)).json()["cells"]
    assert {c["monitor_id"] for c in every} >= {monitor_id} and len(every) == 2  # the admin sees both tenants'


def test_the_admin_keys_alarm_applies_to_everyone(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"monitor_max_items": 1, "api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN})
    harness = start_app(settings)
    client = harness.client
    assert _harsh(client, ADMIN, "adm-")["alarms_raised"] == 1
    assert _escalated(client, KEY_1) and _escalated(client, KEY_2) and _escalated(client, ADMIN)
    assert client.get("/v1/monitor", headers=bearer(KEY_1)).json()["cells"] == []  # but not its monitors
    monitor_id = client.get("/v1/monitor", headers=bearer(ADMIN)).json()["cells"][0]["monitor_id"]
    reset = client.post("/v1/monitor/reset", json={"monitor_id": monitor_id}, headers=bearer(ADMIN))
    assert reset.status_code == 200 and reset.json()["had_alarm"] is True
    assert not _escalated(client, KEY_1) and not _escalated(client, KEY_2)
    audit = [line for line in harness.log_lines() if line.get("event") == "monitor.reset"]
    assert len(audit) == 1 and audit[0]["audit"] is True and audit[0]["monitor_id"] == monitor_id
    assert audit[0]["had_alarm"] is True and ADMIN not in str(audit[0])
