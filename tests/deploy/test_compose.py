"""compose.yaml and the Dockerfile, checked without a Docker engine: every command runs in this code, every
environment variable is a setting and parses, health checks probe real paths, volumes are declared and mounted
where the settings point, Redis keeps jobs durably, and the image installs the runtime only.

PyYAML comes with the dev dependencies (schemathesis requires it); ``safe_load`` resolves the ``<<`` merge keys.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tools.settings_table import settings_modules, settings_variables

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"API_KEYS": "k1,k2", "ADMIN_API_KEY": "admin-key"}


def _interpolate(value: str) -> str:
    """Compose's ``${NAME}`` / ``${NAME:?message}`` / ``${NAME:-default}`` with the test's values for NAME."""

    def one(match: re.Match[str]) -> str:
        name, operator, rest = match.group(1), match.group(2) or "", match.group(3) or ""
        if name in SECRETS:
            return SECRETS[name]
        assert operator in (":-", "-"), f"${{{name}}} has no default and the test supplies none"
        return rest

    return re.sub(r"\$\{([A-Z_][A-Z0-9_]*)(?:(:?[-?])([^}]*))?\}", one, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))


def environment(service: dict[str, Any]) -> dict[str, str]:
    """The service's environment as the container sees it (a mapping in compose.yaml, interpolated)."""
    raw = service.get("environment", {})
    assert isinstance(raw, dict), "environment is written as a mapping"
    return {name: _interpolate(str(value)) for name, value in raw.items()}


def test_services_are_the_api_the_workers_and_redis(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"api", "worker", "redis"}
    assert compose["services"]["worker"]["deploy"]["replicas"] == 2
    for name in ("api", "worker"):
        assert compose["services"][name]["depends_on"] == {"redis": {"condition": "service_healthy"}}
        assert compose["services"][name]["build"] == "."


def test_commands_are_the_service_entry_points(compose: dict[str, Any]) -> None:
    assert compose["services"]["api"]["command"] == ["python", "-m", "service"]
    assert compose["services"]["worker"]["command"] == ["python", "-m", "service.worker"]
    assert importlib.util.find_spec("service.__main__") is not None
    assert importlib.util.find_spec("service.worker") is not None


@pytest.mark.parametrize(
    ("name", "override", "message"),
    [("api", {"PORT": "0"}, "PORT"), ("worker", {"REDIS_URL": ""}, "REDIS_URL")],
)
def test_each_command_runs_and_reads_its_settings(
    compose: dict[str, Any], name: str, override: dict[str, str], message: str
) -> None:
    """The command, run here with its compose environment and one setting spoiled, reaches the settings and
    refuses with status 2 naming the variable: the module is a real entry point that reads that environment."""
    service = compose["services"][name]
    env = {**os.environ, **environment(service), **override, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, *service["command"][1:]]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


@pytest.mark.parametrize("name", ["api", "worker"])
def test_environment_names_are_settings_and_parse(compose: dict[str, Any], name: str) -> None:
    env = environment(compose["services"][name])
    unknown = set(env) - set(settings_variables())
    assert not unknown, f"{name}: not a setting of the service: {sorted(unknown)}"
    settings = settings_modules()[0].Settings.from_env(env)
    redis = urlsplit(settings.redis_url)
    assert (redis.scheme, redis.hostname, redis.port) == ("redis", "redis", 6379)
    assert settings.artifacts_redis_key
    mounts = {volume.split(":")[1]: volume for volume in compose["services"][name]["volumes"]}
    assert str(settings.artifacts_dir) in mounts, "ARTIFACTS_DIR is where the artifacts volume is mounted"
    assert mounts[str(settings.artifacts_dir)].split(":")[0] == "artifacts"


def test_api_keys_are_required_from_the_environment() -> None:
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    for name in ("API_KEYS", "ADMIN_API_KEY"):
        assert re.search(rf"^\s+{name}: \$\{{{name}:\?[^}}]+\}}$", text, flags=re.MULTILINE), name


def test_api_settings_match_its_port_and_health_check(compose: dict[str, Any]) -> None:
    api = compose["services"]["api"]
    settings = settings_modules()[0].Settings.from_env(environment(api))
    assert settings.api_keys == ("k1", "k2") and settings.admin_api_key == "admin-key"
    assert settings.host == "0.0.0.0"
    assert [port.rsplit(":", 1)[1] for port in api["ports"]] == [str(settings.port)]
    probe = " ".join(api["healthcheck"]["test"])
    url = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", probe)
    assert url is not None and int(url.group(1)) == settings.port
    paths = json.loads((ROOT / "openapi" / "openapi.json").read_text())["paths"]
    assert url.group(2) in ("/readyz", "/healthz") and url.group(2) in paths


def test_worker_health_check_probes_its_metrics_port(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    settings = settings_modules()[0].Settings.from_env(environment(worker))
    assert settings.jobs.worker_metrics_port > 0
    probe = " ".join(worker["healthcheck"]["test"])
    assert f"http://127.0.0.1:{settings.jobs.worker_metrics_port}/metrics" in probe
    assert worker["stop_grace_period"].endswith("s")
    assert int(worker["stop_grace_period"][:-1]) > settings.jobs.worker_shutdown_s


def test_redis_keeps_jobs_durably(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    command = redis["command"]
    pairs = dict(zip(command[1::2], command[2::2], strict=True))
    assert command[0] == "redis-server"
    assert pairs == {"--appendonly": "yes", "--appendfsync": "everysec", "--maxmemory-policy": "noeviction"}
    assert redis["volumes"] == ["redis-data:/data"]
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_named_volumes_are_declared_and_used(compose: dict[str, Any]) -> None:
    used = {
        volume.split(":")[0]
        for service in compose["services"].values()
        for volume in service.get("volumes", [])
        if not volume.startswith((".", "/"))
    }
    assert used == set(compose["volumes"]) == {"artifacts", "redis-data"}
    worker_mounts = compose["services"]["worker"]["volumes"]
    assert all(mount.endswith(":ro") for mount in worker_mounts if mount.startswith("artifacts:"))


def test_image_creates_the_artifacts_mount_point_for_the_app_user(compose: dict[str, Any]) -> None:
    """A named volume starts with the image's directory and its owner: without it, root owns the mount."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    target = environment(compose["services"]["api"])["ARTIFACTS_DIR"]
    assert re.search(rf"^RUN install -d -o app -g app {re.escape(target)}$", dockerfile, flags=re.MULTILINE)
    assert re.search(r"^USER app:app$", dockerfile, flags=re.MULTILINE)


def test_image_installs_the_runtime_only() -> None:
    lines = (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
    dockerfile = "\n".join(line for line in lines if not line.lstrip().startswith("#"))  # instructions only
    installs = re.findall(r"pip install (\S+)", dockerfile)
    assert installs == ["."], "one `pip install .`: no extras ([dev], [offline]) and no requirements files"
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", dockerfile, flags=re.MULTILINE)
    sources = {source for line in copied for source in line.split()}
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    runtime = {pattern.rstrip("*") for pattern in packages["include"]} - {"offline"}
    assert sources == {"pyproject.toml", "README.md", *runtime}, "every runtime package copied, offline/ not"
    assert re.search(r'^CMD \["python", "-m", "service"\]$', dockerfile, flags=re.MULTILINE)
