"""A request the HTTP parser itself refuses (conflicting Content-Length, a bad request line, a header without a
colon) is answered 400 problem+json, like every other bad input, not uvicorn's ``text/plain`` "Invalid HTTP
request received."; the connection then closes. An absolute-form target is served as its path; the asterisk-form is
``OPTIONS *`` only."""

from __future__ import annotations

import json
import socket

import pytest

from tests.service.servers import serve_in_thread

MALFORMED = [
    b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
    b"GET /health z HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
]


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture(scope="module")
def port(artifact_path) -> int:
    from service.config.settings import Settings

    with serve_in_thread(Settings(thresholds_path=artifact_path)) as served:
        yield served.port


@pytest.mark.parametrize("request_bytes", MALFORMED)
def test_a_request_the_parser_refuses_is_a_400_problem(port: int, request_bytes: bytes):
    reply = _exchange(port, request_bytes)
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").lower().split("\r\n")
    assert status_line.startswith("http/1.1 400"), reply
    assert "content-type: application/problem+json" in headers, reply
    assert "connection: close" in headers
    assert f"content-length: {len(body)}" in headers
    problem = json.loads(body)
    assert problem["status"] == 400 and problem["type"].endswith(":bad-request"), problem
    assert "HTTP/1.1" in problem["detail"], problem


def test_a_well_formed_request_on_the_same_server_is_answered(port: int):
    reply = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200"), reply


def _get(target: str, *headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: x", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("scheme", ["http", "https", "HTTP"])
def test_an_absolute_form_target_is_served_as_its_path(port: int, scheme: str):
    """RFC 9112 section 3.2.2: a server MUST accept the absolute-form (what a client sends to a proxy)."""
    reply = _exchange(port, _get(f"{scheme}://example.test/v1/judges?view=summary"))
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    assert b'"view":"summary"' in reply


def test_an_absolute_form_target_needs_the_key_its_path_needs(artifact_path):
    from service.config.settings import Settings

    with serve_in_thread(Settings(thresholds_path=artifact_path, api_keys=("k1",))) as served:
        refused = _exchange(served.port, _get("http://example.test/v1/judges"))
        allowed = _exchange(served.port, _get("http://example.test/v1/judges", "Authorization: Bearer k1"))
        health = _exchange(served.port, _get("http://example.test/healthz"))  # public in its own spelling only
        keyed_health = _exchange(served.port, _get("http://example.test/healthz", "Authorization: Bearer k1"))
    assert refused.startswith(b"HTTP/1.1 401"), refused[:300]
    assert allowed.startswith(b"HTTP/1.1 200"), allowed[:300]
    assert health.startswith(b"HTTP/1.1 401"), health[:300]
    assert keyed_health.startswith(b"HTTP/1.1 200"), keyed_health[:300]


def _request(method: str, target: str, *headers: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: x", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_options_asterisk_names_every_method_the_server_answers(port: int):
    """RFC 9110 section 9.3.7: ``OPTIONS *`` asks about the server as a whole (it was a 404)."""
    head = _exchange(port, _request("OPTIONS", "*")).partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    assert head.startswith("http/1.1 204"), head
    [allow] = [line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.startswith("allow:")]
    assert allow.split(", ") == ["delete", "get", "head", "options", "post"]


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_asterisk_form_with_another_method_is_a_400_problem(port: int, method: str):
    """RFC 9112 section 3.2.4: the asterisk-form is only for OPTIONS."""
    reply = _exchange(port, _request(method, "*", "Content-Length: 0"))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/problem+json" in head, reply[:300]
    problem = json.loads(body)
    assert problem["type"].endswith(":bad-request") and method in problem["detail"] and problem["instance"] == "*"


def test_options_asterisk_needs_a_key_like_any_route(artifact_path):
    from service.config.settings import Settings

    with serve_in_thread(Settings(thresholds_path=artifact_path, api_keys=("k1",))) as served:
        refused = _exchange(served.port, _request("OPTIONS", "*"))
        allowed = _exchange(served.port, _request("OPTIONS", "*", "Authorization: Bearer k1"))
    assert refused.startswith(b"HTTP/1.1 401"), refused[:300]
    assert allowed.startswith(b"HTTP/1.1 204"), allowed[:300]
