"""What a tenant's key sees of the calibration: no server file path; calibration jobs are the admin's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from service.config.settings import Settings
from tests.service.conftest import AppHarness

ADMIN = "visibility-admin"
TENANT = "visibility-tenant"


@pytest.fixture
def keyed(start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]) -> AppHarness:
    return start_app(make_settings(api_keys=(TENANT,), admin_api_key=ADMIN))


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("view", ["full", "summary"])
def test_a_tenant_sees_file_names_and_the_admin_sees_paths(keyed: AppHarness, artifact_path: Path, view: str):
    tenant = keyed.client.get(f"/v1/calibration?view={view}", headers=_bearer(TENANT))
    assert tenant.status_code == 200
    assert str(artifact_path.parent) not in tenant.text  # no directory of the server anywhere in the answer
    data = tenant.json()
    assert data["path"] == artifact_path.name
    assert [a["path"] for a in data["artifacts"]] == [artifact_path.name]
    admin = keyed.client.get(f"/v1/calibration?view={view}", headers=_bearer(ADMIN)).json()
    assert admin["path"] == str(artifact_path)
    assert [a["path"] for a in admin["artifacts"]] == [str(artifact_path)]
    # the rest of the answer is the same for both
    for answer in (data, admin):
        answer.pop("path")
        for a in answer["artifacts"]:
            a.pop("path")
    assert data == admin


def test_calibration_jobs_are_read_with_the_admin_key_only(keyed: AppHarness):
    job = "0" * 16
    tenant = keyed.client.get(f"/v1/calibrations/{job}", headers=_bearer(TENANT))
    assert tenant.status_code == 403 and tenant.headers["content-type"].startswith("application/problem+json")
    assert "admin key" in tenant.json()["detail"]
    assert keyed.client.head(f"/v1/calibrations/{job}", headers=_bearer(TENANT)).status_code == 403
    assert keyed.client.get(f"/v1/calibrations/{job}").status_code == 401
    assert keyed.client.get(f"/v1/calibrations/{job}", headers=_bearer(ADMIN)).status_code == 404


def test_without_an_admin_key_configured_calibration_jobs_are_closed(app: AppHarness):
    reply = app.client.get(f"/v1/calibrations/{'0' * 16}")
    assert reply.status_code == 403 and "ADMIN_API_KEY" in reply.json()["detail"]


def test_a_load_error_names_the_file_to_the_admin_only(start_app: Callable[[Settings], AppHarness], tmp_path: Path):
    missing = tmp_path / "nowhere" / "thresholds.json"
    harness = start_app(Settings(thresholds_path=missing, api_keys=(TENANT,), admin_api_key=ADMIN))
    tenant = harness.client.get("/v1/calibration", headers=_bearer(TENANT))
    assert tenant.status_code == 503 and str(tmp_path) not in tenant.text
    admin = harness.client.get("/v1/calibration", headers=_bearer(ADMIN))
    assert admin.status_code == 503 and str(missing) in admin.json()["detail"]
