"""The attack pass's record (``tools/attack_pass.py``): requests sent, statuses seen, findings, job items checked.

Every request goes through :meth:`Tally.send`, which counts it and checks the shape every answer must have: no
500, no 5xx but a 502/503, an error body that is an RFC 9457 problem with the HTTP status, Retry-After on a Redis
503.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

from tools.attack_stack import Reply, send


class Tally:
    """Requests sent, statuses seen and findings, shared by the sections (thread-safe)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.statuses: Counter[int] = Counter()
        self.by_section: Counter[str] = Counter()
        self.findings: list[str] = []
        self.notes: list[str] = []
        self.job_items = 0
        self.lost = 0
        self.duplicated = 0
        self._lock = threading.Lock()

    def send(self, section: str, method: str, target: str, *, port: int | None = None, **options: object) -> Reply:
        reply = send(port or self.port, method, target, **options)
        with self._lock:
            self.statuses[reply.status] += 1
            self.by_section[section] += 1
        self._check_shape(section, method, target, reply)
        return reply

    def finding(self, text: str) -> None:
        with self._lock:
            self.findings.append(text)

    def _check_shape(self, section: str, method: str, target: str, reply: Reply) -> None:
        where = f"[{section}] {method} {target[:80]} -> {reply.status}"
        if reply.status == 0:
            self.finding(f"{where}: no answer (connection dropped)")
        elif reply.status == 500 or (reply.status >= 500 and reply.status not in (502, 503)):
            self.finding(f"{where}: {reply.body[:200]!r}")
        if reply.status >= 400 and reply.body and method != "HEAD":
            kind = reply.headers.get("content-type", "")
            if not kind.startswith("application/problem+json"):
                self.finding(f"{where}: error body of type {kind!r}")
            elif json.loads(reply.body).get("status") != reply.status:
                self.finding(f"{where}: problem status differs from the HTTP status")
        if (
            reply.status == 503
            and "retry-after" not in reply.headers
            and "redis" in reply.body.decode(errors="replace")
        ):
            self.finding(f"{where}: a Redis 503 without Retry-After")

    def expect(self, section: str, reply: Reply, allowed: set[int], what: str) -> None:
        if reply.status not in allowed:
            self.finding(f"[{section}] {what}: {reply.status} (expected {sorted(allowed)}): {reply.body[:160]!r}")
