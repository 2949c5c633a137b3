"""The attack pass's monitoring section (``tools/attack_pass.py``): the feedback monitors attacked across tenants.

* tenant A's labels raise an alarm on a cell: A's answers escalate, tenant B's answers for the same cell do not
  (B's answers cannot be changed by A's labels), and the admin cannot recalibrate from A's rows without choosing
  ``for_every_tenant``;
* a corrected label (the same item_id, another label) is refused with a reason, never dropped;
* a flood from one tenant against an API with a small MONITOR_TENANT_MAX_BYTES is refused (429 naming the limit)
  and the monitors' Redis footprint stays bounded; /metrics keeps a fixed set of monitor series naming no cell;
* GET /v1/monitor pages, and refuses a bad page with a 4xx problem;
* an API started while Redis is down never answers ``accept``: every calibrated answer escalates, saying why.
"""

from __future__ import annotations

import json

import redis

from tools.attack_bodies import SCORE
from tools.attack_stack import ADMIN, TENANT_A, TENANT_B, Stack, free_port
from tools.attack_tally import Tally

__all__ = ["section_monitoring"]

JSON = {"Content-Type": "application/json"}


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **JSON}


def _score(tally: Tally, key: str, port: int | None = None) -> dict[str, object]:
    reply = tally.send(
        "monitoring", "POST", "/v1/score", port=port, body=json.dumps(SCORE).encode(), headers=_auth(key)
    )
    tally.expect("monitoring", reply, {200}, "POST /v1/score")
    return reply.json() if reply.status == 200 else {}


def _feedback(tally: Tally, key: str, items: list[dict[str, object]], port: int | None = None) -> tuple[int, dict]:
    body = json.dumps({"items": items}).encode()
    reply = tally.send("monitoring", "POST", "/v1/feedback", port=port, body=body, headers=_auth(key))
    return reply.status, reply.json() if reply.body else {}


def section_monitoring(tally: Tally, stack: Stack) -> None:
    """The cases of the module docstring; each breach is a finding."""
    served = _score(tally, TENANT_A)
    outside = next(y for y in (1, 5, 2, 4, 3) if y not in served.get("prediction_set", []))
    harsh = [{**SCORE, "human": outside, "item_id": f"a-{i}"} for i in range(40)]
    _, answer = _feedback(tally, TENANT_A, harsh)
    if answer.get("alarms_raised") != 1:
        tally.finding(f"[monitoring] 40 labels outside the set raised no alarm: {str(answer)[:160]}")
    if not _score(tally, TENANT_A).get("rule_failed"):
        tally.finding("[monitoring] tenant A's alarm does not escalate A's answers")
    if _score(tally, TENANT_B).get("rule_failed"):
        tally.finding("[monitoring] tenant A's labels changed tenant B's answers")
    monitor_id = tally.send("monitoring", "GET", "/v1/monitor", headers=_auth(TENANT_A)).json()["cells"][0][
        "monitor_id"
    ]
    body = json.dumps({"monitor_id": monitor_id}).encode()
    reply = tally.send("monitoring", "POST", "/v1/monitor/recalibrate", body=body, headers=_auth(ADMIN))
    tally.expect("monitoring", reply, {409}, "recalibrating from tenant A's rows without for_every_tenant")

    status, corrected = _feedback(tally, TENANT_A, [{**SCORE, "human": 1 + outside % 5, "item_id": "a-0"}])
    refusals = corrected.get("refusals", [])
    if status != 200 or not refusals or refusals[0]["error"]["status"] != 409:
        tally.finding(f"[monitoring] a corrected label was not refused with a reason: {str(corrected)[:160]}")

    for params in ("limit=0", "limit=100000", "after=../x"):
        reply = tally.send("monitoring", "GET", f"/v1/monitor?{params}", headers=_auth(ADMIN))
        tally.expect("monitoring", reply, {400, 422}, f"GET /v1/monitor?{params}")
    page = tally.send("monitoring", "GET", "/v1/monitor?limit=1", headers=_auth(ADMIN)).json()
    if len(page.get("cells", [])) != 1 or page.get("next_after") is None:
        tally.finding(f"[monitoring] GET /v1/monitor?limit=1 did not page: {str(page)[:160]}")

    _flood(tally, stack)
    _dead_redis(tally, stack)


def _footprint(stack: Stack) -> int:
    client = redis.Redis.from_url(stack.redis_url)
    try:
        keys = list(client.scan_iter(match=f"cj:{stack.queue}:mon:*", count=1000))
        return sum(int(client.memory_usage(key) or 0) for key in keys)
    finally:
        client.close()


def _flood(tally: Tally, stack: Stack) -> None:
    port = stack.api_on("api-monitor-quota", MONITOR_TENANT_MAX_BYTES="40000", MAX_BATCH_ITEMS="100")
    before = _footprint(stack)
    statuses = []
    for request in range(30):
        items = [{**SCORE, "human": 3, "item_id": f"{request:03d}-{n:03d}-" + "x" * 182} for n in range(100)]
        status, answer = _feedback(tally, TENANT_B, items, port=port)
        statuses.append(status)
        if status == 429 and "MONITOR_TENANT_MAX_BYTES" not in answer.get("detail", ""):
            tally.finding(f"[monitoring] a quota refusal does not name the limit: {str(answer)[:160]}")
    grown = _footprint(stack) - before
    print(f"monitoring flood: statuses {sorted(set(statuses))}, Redis grew {grown:,} bytes for 3,000 labels")
    if 429 not in statuses:
        tally.finding("[monitoring] a flood of 3,000 labels past MONITOR_TENANT_MAX_BYTES=40000 was never refused")
    if grown > 160_000:
        tally.finding(f"[monitoring] a flood grew the monitors' Redis footprint by {grown:,} bytes (cap 40,000)")
    metrics = tally.send("monitoring", "GET", "/metrics", port=port).body.decode()
    series = [line for line in metrics.splitlines() if line.startswith("cj_monitor")]
    if len(series) > 6 or any("{" in line for line in series):
        tally.finding(f"[monitoring] /metrics monitor series are not a fixed unlabelled set: {series[:4]}")


def _dead_redis(tally: Tally, stack: Stack) -> None:
    port = stack.api_on("api-monitor-dead-redis", REDIS_URL=f"redis://127.0.0.1:{free_port()}/11")
    for key in (TENANT_A, TENANT_B, ADMIN):
        answer = _score(tally, key, port=port)
        if answer.get("decision") == "accept" or "have not been read" not in str(answer.get("reason", "")):
            tally.finding(f"[monitoring] an API started with Redis down served: {str(answer)[:160]}")
