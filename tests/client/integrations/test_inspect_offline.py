"""docs/integrations.md's offline Inspect example, run as written with no network but loopback.

The example's Python block runs in a fresh interpreter (its service address and key swapped for the test service's)
under a guard that refuses every connection to a non-loopback address, with ``HF_HUB_OFFLINE=1``, an empty
tiktoken cache and proxies pointing at a closed port. It must finish with a scored sample; the same eval with
replies that carry no token usage fails on tiktoken reaching for its table, which shows the set-up would have caught
a download.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.integrations.conftest import JudgedService

ROOT = Path(__file__).resolve().parents[3]
MARKER = "<!-- example:inspect-offline -->"
GUARD = """
import ipaddress, socket

_connect = socket.socket.connect


def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if self.family in (socket.AF_INET, socket.AF_INET6) and not loopback:
        raise OSError(f"network disabled by the test: refused a connection to {address!r}")
    return _connect(self, address)


socket.socket.connect = _loopback_only
_getaddrinfo = socket.getaddrinfo


def _no_dns(host, *args, **kwargs):
    if host not in (None, "localhost", "127.0.0.1", "::1"):
        raise OSError(f"network disabled by the test: refused to resolve {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _no_dns
"""


def example() -> str:
    """The Python block after the marker in docs/integrations.md."""
    text = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    block = text.split(MARKER, 1)[1].split("```python", 1)[1].split("```", 1)[0]
    return block.strip() + "\n"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(code: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    proxy = f"http://127.0.0.1:{_closed_port()}"
    cache = workdir / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    environment = {
        **{k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
        "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": str(cache),
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "INSPECT_DISPLAY": "none",
    }
    return subprocess.run(
        [sys.executable, "-c", GUARD + "\n" + code],
        cwd=workdir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _for_the_test_service(code: str, service: JudgedService) -> str:
    assert code.count('"http://localhost:8000"') == 1 and code.count('api_key="my-key"') == 1
    return code.replace('"http://localhost:8000"', repr(service.url)).replace(
        'api_key="my-key"', f"api_key={service.api_key!r}"
    )


def test_the_guard_refuses_other_hosts(tmp_path: Path) -> None:
    refused = _run("import socket\nsocket.create_connection(('192.0.2.1', 443), timeout=2)\n", tmp_path)
    assert refused.returncode != 0 and "network disabled by the test" in refused.stderr


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_documented_offline_example_runs_with_no_network(service: JudgedService, tmp_path: Path) -> None:
    service.judge_replies(3)
    code = _for_the_test_service(example(), service)
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    status, _, prediction_set = done.stdout.strip().splitlines()[-1].partition(" ")
    assert status == "success" and prediction_set.startswith("[") and "3" in prediction_set
    assert service.judge.call_count == 1, "the sample was scored by the service's judge"
    assert list(tmp_path.joinpath("logs").glob("*.eval")), "the eval log was written"


UNCOUNTED = """from inspect_ai.model import ModelOutput, get_model

model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", "A summary.")])
"""


def test_without_token_usage_the_mock_model_reaches_for_the_network(service: JudgedService, tmp_path: Path) -> None:
    service.judge_replies(3)
    documented = _for_the_test_service(example(), service)
    head, _, rest = documented.partition("model = scripted_model(")
    assert rest, "the example builds its model with scripted_model"
    code = head + UNCOUNTED + 'eval_logs = eval(task, model=model, log_dir="logs", display="none")\n'
    code += "errors = [s.error.message for s in eval_logs[0].samples or [] if s.error] or [str(eval_logs[0].error)]\n"
    code += "print(eval_logs[0].status, errors[0][:400])\n"
    done = _run(code, tmp_path)
    said = done.stdout + done.stderr[-2000:]
    # tiktoken fetches its table through the (dead) proxy, or straight to the host, which the guard refuses
    assert said.startswith("error ") and "openaipublic.blob.core.windows.net" in said, said
