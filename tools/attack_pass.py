"""The attack pass: every route of the running service, attacked on loopback, with the invariants checked.

    PYTHONPATH=$PWD:$PWD/client python -m tools.attack_pass                      # Redis database 11 by default
    PYTHONPATH=$PWD:$PWD/client python -m tools.attack_pass --redis-url redis://127.0.0.1:6379/11 --jobs 6

It starts the judge stand-in, the API and two workers (``tools/attack_stack.py``), with two tenants' keys and the
admin key, then sends, to every route of the committed spec: path spellings (trailing slash, case, ``//``,
percent-encoding, dot segments), keys (none, wrong, the other tenant's, admin), sizes (bodies at and above the
caps, many items, deep JSON, worst-case estimates at once), malformed bodies and content types, oversized headers
and odd request targets, HEAD; submits jobs of both tenants and kills a worker mid-job; pauses Redis
(``CLIENT PAUSE``) and runs an API against a dead Redis port. It prints the counts (requests, statuses), the
findings and the job items checked. Invariants (a breach is a finding):

* no status 500, and no 5xx but a 502/503 problem that says what is down;
* every 4xx/5xx with a body is ``application/problem+json`` whose ``status`` is the HTTP status;
* a protected route never answers 2xx without a valid key, an admin route never to a tenant's key, a tenant never
  sees the other's job (404);
* an over-cap body is a 413 or 422, never processed;
* the feedback monitors: one tenant's labels never change another's answers, a flood is refused at its cap with
  Redis growth bounded, an API started with Redis down never answers ``accept`` (``tools/attack_monitoring.py``);
* every job ends with exactly one result line per item (indices 0..n-1, none missing, none twice), whatever
  worker died; a Redis pause costs 503s with ``Retry-After`` at worst, never a 500 or a lost item.

Exit status 1 when there is a finding.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from tools.attack_bodies import BODIES, ROUTES, calibration_rows, job_lines
from tools.attack_jobs import section_redis_dead, section_redis_paused, section_worker_killed
from tools.attack_monitoring import section_monitoring
from tools.attack_stack import ADMIN, TENANT_A, TENANT_B, Stack, send
from tools.attack_tally import Tally

KEYS = {"none": None, "wrong": "not-a-key", "tenant_a": TENANT_A, "tenant_b": TENANT_B, "admin": ADMIN}
PUBLIC = {"/healthz", "/readyz", "/metrics"}
JSON = {"Content-Type": "application/json"}
NDJSON = {"Content-Type": "application/x-ndjson"}


def auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def spellings(path: str) -> list[str]:
    """The ways one path can be written: trailing slash, case, double slashes, percent-encoding, dot segments."""
    last = path.rsplit("/", 1)[1]
    encoded = path[: -len(last)] + "".join(f"%{ord(c):02X}" for c in last) if last else path
    return [
        path + "/", path.upper(), "/" + path, path.replace("/", "//"), encoded, path.replace("/", "%2F", 2)[3:],
        path.replace("/v1/", "/v1/./"), path.replace("/v1/", "/v1/x/../"), path + "/.", path + "%00", path + "?a=1&a=2",
        path.replace("v1", "V1"), path + ";x", path + "%2F",
    ]  # fmt: skip


def section_paths(tally: Tally) -> None:
    """Every route under every spelling and key: no bypass of keys, no 500."""
    for method, path, admin in ROUTES:
        body = BODIES.get(path, b"")
        for spelling in spellings(path):
            for key_name, key in KEYS.items():
                headers = {**JSON, **auth(key)} if body else auth(key)
                reply = tally.send("paths", method, spelling, body=body, headers=headers)
                public = path in PUBLIC and spelling.partition("?")[0] == path
                if 200 <= reply.status < 300 and not public:
                    if key_name in ("none", "wrong") or (admin and key_name != "admin"):
                        tally.finding(f"[paths] {method} {spelling} with key {key_name}: {reply.status}")
        for key in KEYS.values():  # HEAD on GET routes, the canonical spelling
            if method == "GET":
                tally.send("paths", "HEAD", path, headers=auth(key))


def _paths_in(value: object) -> list[str]:
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == "path" and isinstance(v, str)] + [
            p for v in value.values() for p in _paths_in(v)
        ]
    return [p for v in value for p in _paths_in(v)] if isinstance(value, list) else []


def section_keys(tally: Tally) -> None:
    """Tenancy: tenant A's job is A's and the admin's only; admin routes refuse tenants; no server path shown."""
    reply = tally.send("keys", "POST", "/v1/jobs", body=job_lines(20), headers={**auth(TENANT_A), **NDJSON})
    tally.expect("keys", reply, {202}, "tenant A submits a job")
    job = reply.json()["job_id"]
    for key_name, allowed in (("tenant_a", {200}), ("admin", {200}), ("tenant_b", {404}), ("none", {401})):
        for target in (f"/v1/jobs/{job}", f"/v1/jobs/{job}/results", f"/v1/jobs/{job}/", f"//v1/jobs/{job}"):
            reply = tally.send("keys", "GET", target, headers=auth(KEYS[key_name]))
            tally.expect("keys", reply, allowed, f"GET {target} as {key_name}")
    reply = tally.send("keys", "DELETE", f"/v1/jobs/{job}", headers=auth(TENANT_B))
    tally.expect("keys", reply, {404}, "tenant B cancels tenant A's job")
    rows = calibration_rows()
    for key_name, allowed in (("tenant_a", {403}), ("none", {401}), ("wrong", {401}), ("admin", {202})):
        headers = {**auth(KEYS[key_name]), **NDJSON}
        reply = tally.send("keys", "POST", "/v1/calibrations?name=atk", body=rows, headers=headers)
        tally.expect("keys", reply, allowed, f"POST /v1/calibrations as {key_name}")
    calibration = reply.json().get("id", "none") if reply.status == 202 else "none"
    for key_name, allowed in (("tenant_b", {403}), ("admin", {200})):
        for target in (f"/v1/calibrations/{calibration}", f"/v1/calibrations/{calibration}/"):
            reply = tally.send("keys", "GET", target, headers=auth(KEYS[key_name]))
            tally.expect("keys", reply, allowed, f"GET a calibration job as {key_name}")
    for target in ("/v1/calibration", "/readyz", "/v1/judges?view=full"):
        reply = tally.send("keys", "GET", target, headers=auth(TENANT_A))
        if reply.status == 200 and any("/" in path for path in _paths_in(reply.json())):
            tally.finding(f"[keys] GET {target} shows a tenant a server path")
    body = json.dumps({"path": "/etc/passwd"}).encode()
    reply = tally.send("keys", "POST", "/v1/calibration/reload", body=body, headers={**JSON, **auth(TENANT_A)})
    tally.expect("keys", reply, {403}, "a tenant reloads")
    for header in ("Bearer", "Basic " + TENANT_A, "bearer  " + TENANT_A, "Bearer " + TENANT_A + "x", TENANT_A):
        reply = tally.send("keys", "GET", "/v1/judges", headers={"Authorization": header})
        tally.expect("keys", reply, {200} if header.startswith("bearer  ") else {401}, f"Authorization {header[:12]}")


def _score_with(**fields: object) -> bytes:
    return json.dumps({"criterion": "coherence", "judge_score": 3, **fields}).encode()


def section_sizes(tally: Tally, limits: dict[str, int]) -> None:
    """Bodies at and above the caps, many items, deep JSON: 413/422 above a cap, never a 500."""
    cap = limits["max_body_bytes"]
    headers = {**JSON, **auth(TENANT_A)}
    prefix = b'{"criterion": "coherence", "judge_score": 3'
    for size, allowed in ((cap, {200}), (cap + 1, {413}), (4 * cap, {413})):
        body = prefix + b" " * (size - len(prefix) - 1) + b"}"  # valid JSON of exactly `size` bytes
        reply = tally.send("sizes", "POST", "/v1/score", body=body, headers=headers)
        tally.expect("sizes", reply, allowed, f"a {size}-byte /v1/score body")
    for n, allowed in ((limits["max_batch_items"], {200}), (limits["max_batch_items"] + 1, {413, 422})):
        body = json.dumps({"items": [json.loads(BODIES["/v1/score"])] * n}).encode()
        reply = tally.send("sizes", "POST", "/v1/score/batch", body=body, headers=headers)
        tally.expect("sizes", reply, allowed, f"a batch of {n} items")
    doc = limits["max_document_chars"]
    for chars, allowed in ((doc, {200, 422}), (doc + 1, {422})):
        body = json.dumps(
            {"criterion": "coherence", "document": "x" * chars, "summary": "y", "judge_score": 3}
        ).encode()
        reply = tally.send("sizes", "POST", "/v1/score", body=body, headers=headers)
        tally.expect("sizes", reply, allowed, f"a {chars}-character document")
    for depth in (50, 1000, 100_000):
        for path in ("/v1/score", "/v1/score/batch", "/v1/estimates", "/v1/rankings", "/v1/compare", "/v1/jobs"):
            body = b'{"criterion": ' + b"[" * depth + b"]" * depth + b"}"
            reply = tally.send("sizes", "POST", path, body=body, headers=headers)
            tally.expect("sizes", reply, {400, 422}, f"JSON {depth} deep to {path}")
    values = limits["max_estimate_values"]
    for n, allowed in ((values - 10, {200}), (values + 1, {422})):
        body = json.dumps(estimate_at(n)).encode()
        started = time.monotonic()
        reply = tally.send("sizes", "POST", "/v1/estimates", body=body, headers=headers)
        tally.expect("sizes", reply, allowed, f"an estimate of {n} values")
        tally.notes.append(f"an estimate of {n} sorted values: {reply.status} in {time.monotonic() - started:.2f} s")
        if time.monotonic() - started > 10:
            tally.finding(f"[sizes] an estimate of {n} values took {time.monotonic() - started:.1f} s")
    body = json.dumps(estimate_at(values - 10)).encode()

    def timed(_: int) -> tuple[int, float]:
        started = time.monotonic()
        reply = tally.send("sizes", "POST", "/v1/estimates", body=body, headers=headers)
        return reply.status, time.monotonic() - started

    with ThreadPoolExecutor(4) as pool:  # several worst cases at once, /healthz probed meanwhile
        probe = pool.submit(_probe_health, tally, 4.0)
        answers = list(pool.map(timed, range(3)))
        worst = probe.result()
    tally.notes.append(
        f"3 such estimates at once: {[status for status, _ in answers]}, the slowest in "
        f"{max(seconds for _, seconds in answers):.2f} s; slowest /healthz meanwhile {worst:.2f} s"
    )
    if worst > 3:
        tally.finding(f"[sizes] /healthz took {worst:.1f} s while three worst-case estimates ran")
    many = [
        {"model_a": f"m{i}", "model_b": f"m{i + 1}", "judge": "a", "human": "a"}
        for i in range(limits["max_ranking_models"] + 1)
    ]
    reply = tally.send("sizes", "POST", "/v1/rankings", body=json.dumps({"battles": many}).encode(), headers=headers)
    tally.expect("sizes", reply, {422}, "a ranking of too many models")
    candidates = [{"id": f"c{i}", "text": f"text {i}"} for i in range(limits["max_candidates"] + 1)]
    body = json.dumps({"criterion": "coherence", "document": "d", "candidates": candidates}).encode()
    reply = tally.send("sizes", "POST", "/v1/compare", body=body, headers=headers)
    tally.expect("sizes", reply, {422}, "a compare of too many candidates")


def _probe_health(tally: Tally, seconds: float) -> float:
    """GET /healthz every 50 ms for ``seconds``; the slowest answer's time."""
    worst = 0.0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.monotonic()
        tally.send("sizes", "GET", "/healthz")
        worst = max(worst, time.monotonic() - started)
        time.sleep(0.05)
    return worst


def estimate_at(n_values: int) -> dict[str, object]:
    """An estimate of about n_values numbers, sorted (the worst order for a betting interval)."""
    labelled = [{"human": 1 + i % 5, "judge": 1 + i % 5} for i in range(10)]
    rest = n_values - 20
    return {
        "metric": "mean",
        "labelled": labelled,
        "unlabelled": [{"judge": 1 + 4 * (i >= rest // 2)} for i in range(rest)],
    }


MALFORMED = [
    (b"", "application/json"),
    (b"{", "application/json"),
    (b"null", "application/json"),
    (b"[]", "application/json"),
    (b'"text"', "application/json"),
    (b'{"criterion": "coherence", "criterion": "fluency", "judge_score": 3}', "application/json"),
    (b'{"criterion": "coherence", "judge_score": NaN}', "application/json"),
    (b'{"criterion": "coherence", "judge_score": 1e999}', "application/json"),
    (b'{"criterion": "coherence", "judge_score": 99999999999999999999999999}', "application/json"),
    (b'{"criterion": "\xff\xfe", "judge_score": 3}', "application/json"),
    (b'{"criterion": "coh\\u0000erence", "judge_score": 3}', "application/json"),
    (b'{"criterion": "\\ud800", "judge_score": 3}', "application/json"),
    (b'\xef\xbb\xbf{"criterion": "coherence", "judge_score": 3}', "application/json"),
    (b'{"criterion": "coherence", "judge_score": 3}', "text/plain"),
    (b'{"criterion": "coherence", "judge_score": 3}', "application/x-www-form-urlencoded"),
    (b'{"criterion": "coherence", "judge_score": 3}', "application/json; charset=latin-1"),
    (b'{"criterion": "coherence", "judge_score": 3}', "multipart/form-data; boundary=x"),
    (b'{"criterion": "coherence", "judge_score": 3}', ""),
    (b"not json\n{}\n", "application/x-ndjson"),
    (b'{"criterion": "coherence", "judge_score": 3}\n\xff\n{}', "application/x-ndjson"),
]


def section_malformed(tally: Tally) -> None:
    """Malformed JSON and foreign content types to every route with a body: a 4xx problem each time."""
    for method, path, _ in ROUTES:
        if method != "POST":
            continue
        for body, kind in MALFORMED:
            headers = {**auth(ADMIN), **({"Content-Type": kind} if kind else {})}
            reply = tally.send("malformed", method, path, body=body, headers=headers)
            if 200 <= reply.status < 300 and kind.partition(";")[0] not in ("application/json", "application/x-ndjson"):
                tally.finding(f"[malformed] {path} took a {kind!r} body: {reply.status}")
        for extra in ({"Content-Length": "5"}, {"Transfer-Encoding": "chunked"}, {"Expect": "100-continue"}):
            reply = tally.send("malformed", method, path, body=b"{}", headers={**auth(ADMIN), **JSON, **extra})


def section_headers(tally: Tally) -> None:
    """Oversized and numerous headers, a long key, absolute-form and asterisk targets: a 4xx problem or an answer."""
    key = auth(TENANT_A)
    cases = [
        ("GET", "/v1/judges", {**key, "X-Big": "a" * 200_000}, {400}),
        ("GET", "/v1/judges", {**key, **{f"X-{i}": "1" for i in range(3000)}}, {200, 400, 431}),
        ("GET", "/v1/judges", {"Authorization": "Bearer " + "k" * 100_000}, {400, 401}),
        ("GET", "/v1/judges?" + "a=1&" * 20_000, key, {200, 400, 414}),
        ("GET", "http://evil.example/v1/judges", key, {200, 400, 404}),
        ("GET", "*", key, {400, 404}),
        ("OPTIONS", "/v1/score", key, {200, 204}),
    ]
    for method, target, headers, allowed in cases:
        reply = tally.send("headers", method, target, headers=headers)
        tally.expect("headers", reply, allowed, f"{method} {target[:40]} with {len(headers)} headers")


def status_500_in_metrics(tally: Tally) -> list[str]:
    reply = send(tally.port, "GET", "/metrics")
    return [line for line in reply.body.decode().splitlines() if 'status="500"' in line]


def report(tally: Tally, stack: Stack, seconds: float, rss: tuple[float, float]) -> None:
    print(f"attack pass: {sum(tally.statuses.values())} requests in {seconds:.0f} s")
    print("by section: " + ", ".join(f"{name} {n}" for name, n in tally.by_section.items()))
    print("statuses: " + ", ".join(f"{status} x{n}" for status, n in sorted(tally.statuses.items())))
    print(f"status 500: {tally.statuses[500]} answered, metrics lines: {status_500_in_metrics(tally) or 'none'}")
    print(f"job items checked: {tally.job_items} ({tally.lost} lost, {tally.duplicated} duplicated)")
    print(f"API RSS: {rss[0]:.0f} MB before, {rss[1]:.0f} MB after, peak {stack.rss_mb('api', 'VmHWM'):.0f} MB")
    for note in tally.notes:
        print(note)
    print(f"findings: {len(tally.findings)}")
    for finding in tally.findings:
        print(f"- {finding}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    parser.add_argument("--jobs", type=int, default=6, help="jobs of the worker-killed section")
    parser.add_argument("--items", type=int, default=20_000, help="items per job of that section")
    parser.add_argument("--pause-ms", type=int, default=3000, help="CLIENT PAUSE of the Redis-paused section")
    parser.add_argument("--skip", action="append", default=[], help="a section to skip (repeatable)")
    args = parser.parse_args(argv)
    from service.config.settings import Settings

    stack = Stack(redis_url=args.redis_url)
    started = time.monotonic()
    try:
        stack.start()
        settings = Settings.from_env(stack.env())
        limits = {
            "max_body_bytes": settings.max_body_bytes,
            "max_batch_items": settings.max_batch_items,
            "max_document_chars": settings.max_document_chars,
            "max_candidates": settings.max_candidates,
            "max_estimate_values": settings.limits.max_estimate_values,
            "max_ranking_models": settings.limits.max_ranking_models,
        }
        tally = Tally(stack.port)
        rss_before = stack.rss_mb("api")
        sections = {
            "paths": lambda: section_paths(tally),
            "keys": lambda: section_keys(tally),
            "sizes": lambda: section_sizes(tally, limits),
            "malformed": lambda: section_malformed(tally),
            "headers": lambda: section_headers(tally),
            "worker-killed": lambda: section_worker_killed(tally, stack, args.jobs, args.items),
            "redis-paused": lambda: section_redis_paused(tally, stack, args.pause_ms),
            "redis-dead": lambda: section_redis_dead(tally, stack),
            "monitoring": lambda: section_monitoring(tally, stack),
        }
        for name, run in sections.items():
            if name not in args.skip:
                print(f"... {name}", file=sys.stderr, flush=True)
                try:
                    run()
                except Exception as error:  # the driver's own failure: reported, the other sections still run
                    tally.finding(f"[{name}] the section stopped: {error!r}")
        report(tally, stack, time.monotonic() - started, (rss_before, stack.rss_mb("api")))
    finally:
        stack.stop()
        _delete_queue_keys(args.redis_url, stack.queue)
    print(f"logs: {stack.folder}")
    return 1 if tally.findings or status_500_in_metrics(tally) else 0


def _delete_queue_keys(redis_url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    for pattern in (f"{queue}*", f"*{queue}*"):
        keys = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
    client.close()


if __name__ == "__main__":
    raise SystemExit(main())
