"""Jobs belong to the API key that created them: another key gets 404, Idempotency-Keys are per key, the
admin key sees every job, and the key itself is never stored.

Before: idempotency keys were global, the 409 named the other tenant's job id, and a second key could then
read its status and results and cancel it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import redis

from service.config.settings import Settings
from service.errors import UnauthorizedError
from service.jobs.tenancy import JobCaller, job_caller, tenant_digest
from tests.service.conftest import AppHarness
from tests.service.jobs.conftest import REDIS_URL, run_chunks
from tests.service.jobs.test_api import NDJSON, caller_item, ndjson

pytestmark = pytest.mark.redis

KEY_1, KEY_2, ADMIN = "tenant-one-key-7c1d", "tenant-two-key-93ab", "admin-key-5e0f"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_a_job_is_invisible_to_another_key_and_visible_to_the_admin(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    settings = jobs_settings({"api_keys": (KEY_1, KEY_2), "admin_api_key": ADMIN}, chunk_size=2)
    client = start_app(settings).client
    body = ndjson([caller_item(i) for i in range(3)])
    first = client.post("/v1/jobs", content=body, headers={**NDJSON, **bearer(KEY_1), "Idempotency-Key": "nightly"})
    assert first.status_code == 202, first.text
    job_id = first.json()["job_id"]
    run_chunks(settings, job_id, [0])

    for method, path in (("GET", ""), ("GET", "/results"), ("DELETE", "")):
        other = client.request(method, f"/v1/jobs/{job_id}{path}", headers=bearer(KEY_2))
        assert other.status_code == 404, (method, path, other.text)
        assert other.json()["type"].endswith("job-not-found")
    unknown = client.get("/v1/jobs/0123456789abcdef0123456789abcdef", headers=bearer(KEY_2))
    assert (
        unknown.json()["detail"].replace("0123456789abcdef0123456789abcdef", job_id)
        == client.get(f"/v1/jobs/{job_id}", headers=bearer(KEY_2)).json()["detail"]
    )  # the same answer as for a job that does not exist
    for alias in (f"{job_id}:in", f"{job_id}:out", job_id.upper()):  # other keys of the job are no job
        assert client.get(f"/v1/jobs/{alias}", headers=bearer(ADMIN)).status_code == 404
        assert client.delete(f"/v1/jobs/{alias}", headers=bearer(ADMIN)).status_code == 404
    own = client.get(f"/v1/jobs/{job_id}", headers=bearer(KEY_1)).json()
    assert own["status"] == "running" and own["n_done"] == 2  # the other key's DELETE cancelled nothing

    # the same Idempotency-Key under another key is another namespace: a new job, never KEY_1's job or its id
    same_body = client.post("/v1/jobs", content=body, headers={**NDJSON, **bearer(KEY_2), "Idempotency-Key": "nightly"})
    assert same_body.status_code == 202 and same_body.json()["job_id"] != job_id
    assert "idempotent-replayed" not in same_body.headers
    other_body = client.post("/v1/jobs", content=ndjson([caller_item(9)]),
                             headers={**NDJSON, **bearer(KEY_2), "Idempotency-Key": "nightly"})  # fmt: skip
    assert other_body.status_code == 409 and job_id not in other_body.text
    assert same_body.json()["job_id"] in other_body.json()["detail"]  # its own earlier job
    replay = client.post("/v1/jobs", content=body, headers={**NDJSON, **bearer(KEY_1), "Idempotency-Key": "nightly"})
    assert replay.json()["job_id"] == job_id and replay.headers["idempotent-replayed"] == "true"
    conflict = client.post("/v1/jobs", content=ndjson([caller_item(8)]),
                           headers={**NDJSON, **bearer(KEY_1), "Idempotency-Key": "nightly"})  # fmt: skip
    assert conflict.status_code == 409 and job_id in conflict.json()["detail"]  # its own job: may be named

    admin = client.get(f"/v1/jobs/{job_id}/results", headers=bearer(ADMIN))
    assert admin.status_code == 200 and [json.loads(line)["index"] for line in admin.text.splitlines()] == [0, 1]
    assert client.delete(f"/v1/jobs/{job_id}", headers=bearer(ADMIN)).json()["status"] == "cancelled"
    assert client.get(f"/v1/jobs/{job_id}", headers=bearer(KEY_1)).json()["status"] == "cancelled"
    admins_own = client.post("/v1/jobs", content=body, headers={**NDJSON, **bearer(ADMIN)}).json()["job_id"]
    assert client.get(f"/v1/jobs/{admins_own}", headers=bearer(KEY_1)).status_code == 404

    store = redis.Redis.from_url(REDIS_URL)
    meta = store.hgetall(f"cj:{settings.jobs.queue}:job:{job_id}")
    assert meta[b"tenant"] == tenant_digest(KEY_1).encode()
    everything = b"".join(_contents(store, key) for key in store.scan_iter(f"cj:{settings.jobs.queue}:*"))
    assert tenant_digest(KEY_1).encode() in everything
    for key in (KEY_1, KEY_2, ADMIN):
        assert key.encode() not in everything  # only one-way digests are stored


def _contents(store: redis.Redis, key: bytes) -> bytes:
    """A key's name and every value it holds, as bytes."""
    kind = store.type(key)
    if kind == b"hash":
        values = [part for pair in store.hgetall(key).items() for part in pair]
    elif kind == b"zset":
        values = [member for member, _ in store.zrange(key, 0, -1, withscores=True)]
    elif kind == b"string":
        values = [store.get(key) or b""]
    else:
        values = [str(kind).encode()]
    return key + b"".join(values)


def test_without_api_keys_everyone_is_one_tenant(
    start_app: Callable[[Settings], AppHarness], jobs_settings: Callable[..., Settings]
) -> None:
    client = start_app(jobs_settings()).client
    job_id = client.post("/v1/jobs", content=ndjson([caller_item(1)]), headers=NDJSON).json()["job_id"]
    assert client.get(f"/v1/jobs/{job_id}", headers=bearer("anything")).status_code == 200
    assert client.get(f"/v1/jobs/{job_id}").status_code == 200


def test_job_caller_rules() -> None:
    assert job_caller((), None, None) == JobCaller(tenant="") and job_caller((), "a", "a").scope == ""
    one = job_caller((KEY_1,), ADMIN, KEY_1)
    assert one.scope == tenant_digest(KEY_1) and not one.sees_all and KEY_1 not in one.tenant
    assert job_caller((KEY_1,), ADMIN, ADMIN).scope is None
    assert tenant_digest(KEY_1) != tenant_digest(KEY_2) and len(tenant_digest(KEY_1)) == 64
    with pytest.raises(UnauthorizedError):
        job_caller((KEY_1,), None, None)
