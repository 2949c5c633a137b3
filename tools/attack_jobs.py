"""The attack pass's durable-jobs sections (``tools/attack_pass.py``): jobs of both tenants with a worker killed
mid-job, a Redis pause while jobs run, and an API whose Redis port is dead.

Each job's result lines are read in full at the end and checked item by item: one line per index 0..n-1, none
missing, none twice, each echoing its item's ``item_id``.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import redis

from tools.attack_bodies import SCORE, calibration_rows, job_lines, live
from tools.attack_stack import ADMIN, TENANT_A, TENANT_B, Stack, free_port
from tools.attack_tally import Tally

NDJSON = {"Content-Type": "application/x-ndjson"}
JSON = {"Content-Type": "application/json"}
TERMINAL = {"succeeded", "failed", "cancelled"}
REDIS_SENSITIVE = {200, 202, 404, 503}  # what a Redis-backed route may answer while Redis is paused or dead


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def submit(tally: Tally, section: str, key: str, body: bytes) -> tuple[str, int] | None:
    reply = tally.send(section, "POST", "/v1/jobs", body=body, headers={**_auth(key), **NDJSON})
    if reply.status != 202:
        tally.finding(f"[{section}] a job submission answered {reply.status}: {reply.body[:160]!r}")
        return None
    return str(reply.json()["job_id"]), body.count(b"\n")


def wait_and_check(tally: Tally, section: str, jobs: list[tuple[str, int, str]], timeout_s: float = 300) -> None:
    """Poll each (job, n_items, key) until it ends, then check its result lines; count the items."""
    deadline = time.monotonic() + timeout_s
    for job, n_items, key in jobs:
        while True:
            reply = tally.send(section, "GET", f"/v1/jobs/{job}", headers=_auth(key))
            status = reply.json().get("status") if reply.status == 200 else None
            if status in TERMINAL:
                break
            if time.monotonic() > deadline:
                tally.finding(f"[{section}] job {job} still {status} after {timeout_s:.0f} s")
                return
            time.sleep(0.5)
        _check_results(tally, section, job, n_items, key, status)


def _check_results(tally: Tally, section: str, job: str, n_items: int, key: str, status: str | None) -> None:
    seen: list[int] = []
    after = -1
    while True:
        reply = tally.send(section, "GET", f"/v1/jobs/{job}/results?after={after}&limit=5000", headers=_auth(key))
        if reply.status != 200:
            tally.finding(f"[{section}] results of {job}: {reply.status}")
            return
        lines = [json.loads(line) for line in reply.body.splitlines() if line]
        if not lines:
            break
        for line in lines:
            seen.append(line["index"])
            if line["item_id"] != str(line["index"]):
                tally.finding(f"[{section}] job {job} line {line['index']} carries item_id {line['item_id']}")
        after = lines[-1]["index"]
    duplicated = len(seen) - len(set(seen))
    lost = n_items - len(set(seen) & set(range(n_items)))
    tally.job_items += n_items
    tally.lost += lost
    tally.duplicated += duplicated
    if lost or duplicated or status == "cancelled":
        tally.finding(f"[{section}] job {job} ({status}): {lost} items lost, {duplicated} duplicated of {n_items}")


def section_worker_killed(tally: Tally, stack: Stack, n_jobs: int, items: int) -> None:
    """Jobs of both tenants (caller scores, and live ones), one worker SIGKILLed mid-job and replaced."""
    jobs = []
    for i in range(n_jobs):
        key = (TENANT_A, TENANT_B)[i % 2]
        body = job_lines(items, live_every=(1 if i == 0 else 50), tag=f"kill{i}-{time.time()}")
        if (submitted := submit(tally, "worker-killed", key, body)) is not None:
            jobs.append((*submitted, key))
    time.sleep(1.5)
    stack.kill("worker0")
    time.sleep(1.0)
    stack.start_worker("worker0b")
    time.sleep(1.0)
    stack.kill("worker1")
    stack.start_worker("worker1b")
    wait_and_check(tally, "worker-killed", jobs)


def section_redis_paused(tally: Tally, stack: Stack, pause_ms: int) -> None:
    """CLIENT PAUSE while jobs run and every Redis-backed route is called: 503s at worst, no item lost."""
    jobs = []
    for i, key in enumerate((TENANT_A, TENANT_B)):
        body = job_lines(4000, live_every=4, tag=f"pause{i}-{time.time()}")
        if (submitted := submit(tally, "redis-paused", key, body)) is not None:
            jobs.append((*submitted, key))
    calls = [
        ("POST", "/v1/jobs", job_lines(50), {**_auth(TENANT_A), **NDJSON}),
        ("GET", f"/v1/jobs/{jobs[0][0]}" if jobs else "/v1/jobs/x", b"", _auth(TENANT_A)),
        ("GET", f"/v1/jobs/{jobs[0][0]}/results?limit=10" if jobs else "/v1/jobs/x", b"", _auth(TENANT_A)),
        ("DELETE", "/v1/jobs/no-such-job", b"", _auth(TENANT_B)),
        ("POST", "/v1/calibrations?name=paused", calibration_rows(), {**_auth(ADMIN), **NDJSON}),
        ("GET", "/v1/calibrations/no-such-job", b"", _auth(ADMIN)),
        ("POST", "/v1/score", json.dumps(live(int(time.time()))).encode(), {**_auth(TENANT_A), **JSON}),
        ("POST", "/v1/score", json.dumps(SCORE).encode(), {**_auth(TENANT_B), **JSON}),
        ("GET", "/readyz", b"", {}),
    ]
    client = redis.Redis.from_url(stack.redis_url)
    time.sleep(0.5)
    client.execute_command("CLIENT", "PAUSE", str(pause_ms))
    started = time.monotonic()
    with ThreadPoolExecutor(len(calls)) as pool:
        while time.monotonic() - started < pause_ms / 1000:
            replies = list(
                pool.map(
                    lambda c: (c, tally.send("redis-paused", c[0], c[1], body=c[2], headers=c[3], timeout=30)), calls
                )
            )
            for (method, path, _, _), reply in replies:
                tally.expect("redis-paused", reply, REDIS_SENSITIVE, f"{method} {path} during the pause")
    client.close()
    wait_and_check(tally, "redis-paused", jobs)


def section_redis_dead(tally: Tally, stack: Stack) -> None:
    """An API whose REDIS_URL names a port nobody listens on: 503 + Retry-After on Redis routes, scores served."""
    port = stack.api_on("api-dead-redis", REDIS_URL=f"redis://127.0.0.1:{free_port()}/11")
    job = "0" * 32  # a well-formed id: a malformed one is a 404 before Redis is asked
    calls = [
        ("POST", "/v1/jobs", job_lines(5), {**_auth(TENANT_A), **NDJSON}, {503}),
        ("GET", f"/v1/jobs/{job}", b"", _auth(TENANT_A), {503}),
        ("GET", f"/v1/jobs/{job}/results", b"", _auth(TENANT_A), {503}),
        ("DELETE", f"/v1/jobs/{job}", b"", _auth(TENANT_A), {503}),
        ("POST", "/v1/calibrations", calibration_rows(), {**_auth(ADMIN), **NDJSON}, {503}),
        ("GET", "/v1/calibrations/x", b"", _auth(ADMIN), {503}),
        ("DELETE", "/v1/calibrations/x", b"", _auth(ADMIN), {503}),
        ("POST", "/v1/calibrations/x/activate", b"", _auth(ADMIN), {503}),
        ("POST", "/v1/score", json.dumps(SCORE).encode(), {**_auth(TENANT_A), **JSON}, {200}),
        ("POST", "/v1/score", json.dumps(live(7)).encode(), {**_auth(TENANT_A), **JSON}, {200}),
        ("GET", "/readyz", b"", {}, {200, 503}),
        ("GET", "/healthz", b"", {}, {200}),
    ]
    lock = threading.Lock()
    wordings: set[str] = set()
    for method, path, body, headers, allowed in calls * 3:
        reply = tally.send("redis-dead", method, path, port=port, body=body, headers=headers, timeout=30)
        tally.expect("redis-dead", reply, allowed, f"{method} {path} with Redis down")
        if reply.status == 503 and path != "/readyz":
            with lock:
                wordings.add(json.loads(reply.body).get("type", ""))
    if len(wordings) > 1:
        tally.finding(f"[redis-dead] more than one problem type for 'Redis unavailable': {sorted(wordings)}")
