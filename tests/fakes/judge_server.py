"""A stand-in for an LLM judge: a real HTTP server speaking the OpenAI chat-completions API, for tests only;
its answers are scripted, not a model's.

It listens on 127.0.0.1 on a free port (or a given host and port), in a background thread (stdlib
``ThreadingHTTPServer``: one thread per connection, HTTP/1.1 keep-alive), so many requests can be in flight at once,
each with its own latency. ``python -m tests.fakes.judge_standin`` runs it from the command line.

======================================================  ====================================================
call                                                    effect
======================================================  ====================================================
``with JudgeServer() as server: ...``                   start on a free port; stop (and end hangs) on exit
``JudgeServer(host="0.0.0.0", port=8021)``              a given address (``python -m tests.fakes.judge_standin``)
``server.base_url``                                     ``http://127.0.0.1:<port>/v1`` for an OpenAI client
``server.judge_config(max_retries=1)``                  a ``JudgeConfig`` pointing at the server
``server.default_score = 2``                            reply "2" (log-probs peaked at 2) unless scripted
``server.responder = fn``                               ``fn(request_json) -> str | ScriptedReply`` decides
``server.latency_s = 0.05``                             every request waits this long before answering
``server.inject("error_500", times=2)``                 the next 2 requests fail with HTTP 500
``server.inject("rate_limit_429", retry_after_s=0.2)``  next request: 429 with ``Retry-After: 0.2``
``server.inject("hang", hang_s=5)``                     next request answers only after 5 s (or at stop)
``server.inject("no_score")``                           next request gets a reply without any score
``server.refuse_logprobs = True``                       requests asking for log-probs get a 400 about it
``server.requests`` / ``server.call_count``             what was asked (``RecordedRequest``) / how often
``server.max_in_flight``                                the most requests that were being served at once
``server.connection_count``                             TCP connections accepted since start (keep-alive)
``server.usage = (120, 3)``                             fixed usage token counts (else counted from text)
``server.reply_model = "other-model"``                  the ``model`` every reply reports (else the request's)
``server.inject("huge_reply", size_bytes=5_000_000)``   next reply: a chat completion scoring 4 padded to 5 MB,
                                                        sent chunked (no Content-Length) as it is generated
``server.inject("slow_drip", drip_s=0.05)``             next reply: a valid completion, one byte every 50 ms
``server.bad_request_marker = "LONG-DOC"``              a prompt containing it gets 400 "context too long"
``server.outage = "unavailable_503"``                   every request gets this fault until set to None
``server.reply_bytes_sent``                             body bytes of huge / dripped replies actually written
======================================================  ====================================================

Fault kinds (``FAULTS``): ``error_500``, ``unavailable_503`` and ``rate_limit_429`` (both with a
``Retry-After`` header when ``retry_after_s`` is given), ``bad_request_400``, ``refuse_logprobs`` (a 400 that
names ``logprobs``), ``hang``, ``no_score``, ``garbage_reply`` (a 200 whose body is HTML, not a chat
completion), ``disconnect`` (the connection is closed without an answer), ``huge_reply`` and ``slow_drip``.
Faults are used up in request arrival order, one per request; ``outage`` (any fault kind) applies to every
request while set and takes precedence over injected faults, which stay queued. A huge reply's writer stops
as soon as the client closes the connection, so ``reply_bytes_sent`` shows how much the client read.

When a request asks for log-probs the reply carries ``choices[0].logprobs.content[i].top_logprobs``: the
reply text is cut into tokens (a digit is a token of its own, with any leading space), and the first
score-digit token (or the token at ``ScriptedReply.logprobs_at``) gets the scripted distribution
(``ScriptedReply.score_logprobs``, keys are token texts), truncated to the request's ``top_logprobs``; every
other token gets itself with log-prob 0. The default reply is ``str(default_score)`` with
``peaked_logprobs(default_score)``.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from judges.config import JudgeConfig

__all__ = [
    "FAULTS",
    "JudgeServer",
    "RecordedRequest",
    "Responder",
    "ScriptedReply",
    "judge_config_for",
    "peaked_logprobs",
]

FAULTS = (
    "error_500",
    "unavailable_503",
    "rate_limit_429",
    "bad_request_400",
    "refuse_logprobs",
    "hang",
    "no_score",
    "garbage_reply",
    "disconnect",
    "huge_reply",
    "slow_drip",
)
NO_SCORE_REPLY = "I am sorry, but I cannot rate this summary."
GARBAGE_REPLY = b"<html><body><h1>502 Bad Gateway</h1>upstream sent an invalid response</body></html>"
CONTEXT_TOO_LONG = "This model's maximum context length is 128000 tokens; your messages resulted in more tokens."
_CHUNK = 64 * 1024
_TOKEN = re.compile(r"\s*\d|\s*[^\W\d]+|\s*[^\w\s]|\s+")


@dataclass(frozen=True)
class ScriptedReply:
    """What the stand-in answers: the text and, optionally, the log-probs at its first score digit."""

    text: str
    score_logprobs: Mapping[str, float] | None = None  # token text -> log-prob; None = all mass on the token
    logprobs_at: int | None = None  # character offset of the token that gets them; None = first score digit
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


Responder = Callable[[dict[str, Any]], "ScriptedReply | str"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float  # time.monotonic()
    fault: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request."""
        return list(self.body.get("messages", []))

    @property
    def prompt_text(self) -> str:
        """All message contents joined by blank lines (to assert what the prompt carried)."""
        return "\n\n".join(str(m.get("content", "")) for m in self.messages)

    @property
    def wants_logprobs(self) -> bool:
        """Whether the request asked for log-probs."""
        return bool(self.body.get("logprobs"))


@dataclass
class _Fault:
    kind: str
    retry_after_s: float | None = None
    hang_s: float = 30.0
    size_bytes: int = 5_000_000
    drip_s: float = 0.05


@dataclass(frozen=True)
class _Streamed:
    """A body written as it is produced: ``chunks`` in order, ``pause_s`` between them, chunked encoding
    (no Content-Length) unless ``length`` is given; ``counted`` bodies add to ``reply_bytes_sent``."""

    chunks: Any  # an iterator of bytes
    length: int | None = None
    pause_s: float = 0.0
    counted: bool = False


def peaked_logprobs(score: int, *, n_labels: int = 5, sharpness: float = 1.5) -> dict[str, float]:
    """Log-probs over "1".."n_labels" proportional to exp(-sharpness * |label - score|) (sums to 1)."""
    weights = {str(k): math.exp(-sharpness * abs(k - score)) for k in range(1, n_labels + 1)}
    total = sum(weights.values())
    return {label: math.log(w / total) for label, w in weights.items()}


def judge_config_for(server: JudgeServer, **overrides: Any) -> JudgeConfig:
    """A ``JudgeConfig`` for ``server`` with fast test timings (timeout 2 s, backoff 10-50 ms); override any field."""
    config = JudgeConfig(
        name="stand-in",
        model="stand-in-judge",
        base_url=server.base_url,
        api_key_env=None,
        prompt_family="paper",
        temperature=0.0,
        logprobs=True,
        max_concurrency=8,
        timeout_s=2.0,
        max_retries=2,
        max_tokens=64,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
    )
    return msgspec.structs.replace(config, **overrides)


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[RecordedRequest] = field(default_factory=list)
    faults: deque[_Fault] = field(default_factory=deque)
    in_flight: int = 0
    max_in_flight: int = 0
    connections: int = 0
    reply_bytes_sent: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)


class JudgeServer:
    """The stand-in judge; see the module docstring for the knobs. Use as a context manager."""

    def __init__(
        self, *, default_score: int = 4, latency_s: float = 0.0, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.host = host
        self.requested_port = port  # 0: a free port
        self.default_score = default_score
        self.latency_s = latency_s
        self.responder: Responder | None = None
        self.refuse_logprobs = False
        self.usage: tuple[int, int] | None = None  # (prompt, completion) tokens of every reply's ``usage``
        self.reply_model: str | None = None  # the ``model`` replies report; None: the one the request named
        self.bad_request_marker: str | None = None  # a prompt containing it gets 400 "context too long"
        self.outage: str | None = None  # a fault kind every request gets while set (outage, then recovery)
        self._state = _State()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> JudgeServer:
        """Bind ``host`` (127.0.0.1) on ``port`` (a free one by default) and serve in a background thread."""
        handler = type("_BoundHandler", (_Handler,), {"server_owner": self})
        httpd = _Server((self.host, self.requested_port), handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="judge-stand-in", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hanging requests and close the socket."""
        self._state.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- configuration ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._httpd is None:
            raise RuntimeError("the judge stand-in is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def judge_config(self, **overrides: Any) -> JudgeConfig:
        """Same as ``judge_config_for(self, **overrides)``."""
        return judge_config_for(self, **overrides)

    def inject(
        self,
        kind: str,
        *,
        times: int = 1,
        retry_after_s: float | None = None,
        hang_s: float = 30.0,
        size_bytes: int = 5_000_000,
        drip_s: float = 0.05,
    ) -> None:
        """Make the next ``times`` requests fail with fault ``kind`` (one of ``FAULTS``)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
        with self._state.lock:
            self._state.faults.extend(_Fault(kind, retry_after_s, hang_s, size_bytes, drip_s) for _ in range(times))

    # -- observation -----------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def call_count(self) -> int:
        """How many chat-completion requests arrived."""
        with self._state.lock:
            return len(self._state.requests)

    @property
    def max_in_flight(self) -> int:
        """The largest number of requests being served at the same moment."""
        with self._state.lock:
            return self._state.max_in_flight

    @property
    def connection_count(self) -> int:
        """TCP connections accepted since start (not cleared by ``reset``); keep-alive clients reuse them."""
        with self._state.lock:
            return self._state.connections

    @property
    def reply_bytes_sent(self) -> int:
        """Body bytes of ``huge_reply`` and ``slow_drip`` answers written to clients so far (a client that stops
        reading early closes the connection, and the writer stops)."""
        with self._state.lock:
            return self._state.reply_bytes_sent

    @property
    def pending_faults(self) -> int:
        """Injected faults not used yet."""
        with self._state.lock:
            return len(self._state.faults)

    def reset(self) -> None:
        """Forget recorded requests, the in-flight maximum and pending faults."""
        with self._state.lock:
            self._state.requests.clear()
            self._state.faults.clear()
            self._state.max_in_flight = self._state.in_flight

    # -- serving (called from handler threads) --------------------------------------------------------
    def _serve(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        state = self._state
        with state.lock:
            outage = self.outage
            if outage is not None:
                fault: _Fault | None = _Fault(outage)
            else:
                fault = state.faults.popleft() if state.faults else None
            state.requests.append(RecordedRequest(path, body, headers, time.monotonic(), fault and fault.kind))
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if fault is not None and fault.kind == "hang":
                state.stopping.wait(fault.hang_s)
            elif self.latency_s > 0:
                time.sleep(self.latency_s)
            return self._answer(body, fault)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, body: dict[str, Any], fault: _Fault | None) -> tuple[int, dict[str, str], Any]:
        kind = fault.kind if fault is not None else None
        if kind in ("error_500", "unavailable_503", "rate_limit_429"):
            status = {"error_500": 500, "unavailable_503": 503, "rate_limit_429": 429}[kind]
            headers = {} if fault.retry_after_s is None else {"Retry-After": _seconds(fault.retry_after_s)}
            return status, headers, _error(f"stand-in fault {kind}", "server_error")
        if kind == "bad_request_400":
            return 400, {}, _error("stand-in fault: bad request", "invalid_request_error")
        marker = self.bad_request_marker
        if marker is not None and any(marker in str(m.get("content", "")) for m in body.get("messages", [])):
            return 400, {}, _error(CONTEXT_TOO_LONG, "invalid_request_error", "messages")
        if kind == "garbage_reply":
            return 200, {"Content-Type": "text/html"}, _Streamed(iter([GARBAGE_REPLY]), len(GARBAGE_REPLY))
        if kind == "disconnect":
            return 0, {}, None
        if kind == "huge_reply":
            return (
                200,
                {},
                _Streamed(
                    _padded_completion(self._completion(body, self._scripted(body)), fault.size_bytes), counted=True
                ),
            )
        if kind == "slow_drip":
            data = json.dumps(self._completion(body, self._scripted(body))).encode()
            pieces = (data[i : i + 1] for i in range(len(data)))
            return 200, {}, _Streamed(pieces, len(data), pause_s=fault.drip_s, counted=True)
        if body.get("logprobs") and (kind == "refuse_logprobs" or self.refuse_logprobs):
            return 400, {}, _error("logprobs is not supported for this model", "invalid_request_error", "logprobs")
        reply = ScriptedReply(NO_SCORE_REPLY) if kind == "no_score" else self._scripted(body)
        return 200, {}, self._completion(body, reply)

    def _scripted(self, body: dict[str, Any]) -> ScriptedReply:
        if self.responder is None:
            return ScriptedReply(str(self.default_score), peaked_logprobs(self.default_score))
        reply = self.responder(body)
        return ScriptedReply(reply) if isinstance(reply, str) else reply

    def _completion(self, body: dict[str, Any], reply: ScriptedReply) -> dict[str, Any]:
        tokens = [m.group(0) for m in _TOKEN.finditer(reply.text)]
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        prompt_tokens, completion_tokens = self.usage or (
            reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words,
            reply.completion_tokens if reply.completion_tokens is not None else len(tokens),
        )
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": reply.text},
            "finish_reason": "stop",
            "logprobs": _logprobs(tokens, reply, int(body.get("top_logprobs") or 0)) if body.get("logprobs") else None,
        }
        return {
            "id": f"chatcmpl-stand-in-{self.call_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.reply_model or body.get("model", "stand-in-judge"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _logprobs(tokens: list[str], reply: ScriptedReply, top_k: int) -> dict[str, Any]:
    content = []
    if reply.logprobs_at is None:
        scored = next((i for i, t in enumerate(tokens) if t.strip() in {"1", "2", "3", "4", "5"}), None)
    else:
        ends = [sum(len(t) for t in tokens[: i + 1]) for i in range(len(tokens))]
        scored = next((i for i, end in enumerate(ends) if end > reply.logprobs_at), None)
    for i, token in enumerate(tokens):
        if i == scored:
            dist = dict(reply.score_logprobs) if reply.score_logprobs is not None else {token: 0.0}
            own = dist.get(token, dist.get(token.strip(), 0.0))
            top = sorted(dist.items(), key=lambda kv: -kv[1])[:top_k]
        else:
            own, top = 0.0, [(token, 0.0)][:top_k]
        content.append(
            {
                "token": token,
                "logprob": own,
                "bytes": list(token.encode()),
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
            }
        )
    return {"content": content, "refusal": None}


def _padded_completion(completion: dict[str, Any], size_bytes: int) -> Any:
    """The completion's JSON with its reply text followed by spaces up to ``size_bytes`` in all, generated in
    64 KiB pieces (a 200 MB reply is never held in memory); the text still parses as the scripted score."""
    marker = "<<stand-in padding>>"
    message = completion["choices"][0]["message"]
    message["content"] += marker
    head, tail = json.dumps(completion).encode().split(marker.encode(), 1)
    yield head
    padding = max(0, size_bytes - len(head) - len(tail))
    while padding > 0:
        piece = min(padding, _CHUNK)
        yield b" " * piece
        padding -= piece
    yield tail


def _error(message: str, kind: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a burst of 32+ new connections must not be refused

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) closes its socket mid-answer; that is expected here.
        return


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are buffered and leave in one write when the handler flushes (stdlib does so after
    # each request): one segment per answer instead of two halves the client's wake-ups and our syscalls.
    wbufsize = -1
    # A large answer still leaves in several writes; without TCP_NODELAY each keep-alive answer could wait
    # ~40 ms for the client's delayed ACK, on top of the configured latency.
    disable_nagle_algorithm = True
    server_owner: JudgeServer

    def setup(self) -> None:
        super().setup()
        state = self.server_owner._state
        with state.lock:
            state.connections += 1

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {}, {"object": "list", "data": [{"id": "stand-in-judge", "object": "model"}]})
        else:
            self._send(404, {}, _error(f"no route {self.path}", "not_found"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {}, _error(f"no route {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {}, _error("request body is not JSON", "invalid_request_error"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            status, extra, payload = self.server_owner._serve(self.path, body, headers)
        except Exception as exc:  # a responder bug must reach the test as an HTTP 500, not kill the thread
            status, extra, payload = 500, {}, _error(f"stand-in responder failed: {exc!r}", "server_error")
        self._send(status, extra, payload)

    def _send(self, status: int, headers: dict[str, str], payload: Any) -> None:
        if status == 0:  # the "disconnect" fault: no answer at all
            self.close_connection = True
            return
        if isinstance(payload, _Streamed):
            self._send_streamed(status, headers, payload)
            return
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client went away (e.g. it timed out on a hang)
            self.close_connection = True

    def _send_streamed(self, status: int, headers: dict[str, str], body: _Streamed) -> None:
        """Write ``body`` piece by piece (chunked unless its length is known); stop when the client goes away."""
        owner = self.server_owner
        stopping = owner._state.stopping
        try:
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            if body.length is None:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(body.length))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.flush()
            for piece in body.chunks:
                if stopping.is_set():
                    break
                self.wfile.write(piece if body.length is not None else b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if body.counted:
                    with owner._state.lock:
                        owner._state.reply_bytes_sent += len(piece)
                if body.pause_s > 0:
                    stopping.wait(body.pause_s)
            else:
                if body.length is None:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                return
            self.close_connection = True  # stopped mid-body
        except OSError:  # the client stopped reading and closed the connection
            self.close_connection = True
