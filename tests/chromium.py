"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages
separated by NUL bytes on the child's file descriptors 3 and 4), so a test can send headers (an API key), wait for
the page to load, read the DOM the browser built and take a screenshot, with nothing but the standard library.

Flags: headless, no sandbox (CI runs as root in a container), no GPU, no background networking, component update or
sync, no first-run, and a fresh profile directory per browser.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "Chromium"]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


class Chromium:
    """One headless browser (a context manager); ``load`` opens a page in a new tab."""

    def __init__(self, executable: str, profile: Path, *, timeout_s: float = 120) -> None:
        self.timeout_s = timeout_s
        to_child_read, self._to_child = os.pipe()
        self._from_child, from_child_write = os.pipe()

        def wire() -> None:  # in the child: our pipes become its descriptors 3 (commands in) and 4 (replies out)
            os.dup2(to_child_read, 3)
            os.dup2(from_child_write, 4)

        self._process = subprocess.Popen(  # noqa: S603 - the test's own browser, flags fixed above
            [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire,  # noqa: PLW1509 - only dup2 before exec
            close_fds=False,  # closing would run after ``wire`` and close 3 and 4 again
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_read)
        os.close(from_child_write)
        self._buffer = b""
        self._next_id = 0

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *_: object) -> None:
        try:
            self._send("Browser.close")
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_child)
        os.close(self._from_child)

    def _message(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
              wait_event: str | None = None) -> dict[str, Any]:  # fmt: skip
        """Send a command; its result (and, with ``wait_event``, wait until that event of the session comes too)."""
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        os.write(self._to_child, json.dumps(command).encode() + b"\0")
        result: dict[str, Any] | None = None
        seen_event = wait_event is None
        while result is None or not seen_event:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result = message.get("result", {})
            elif wait_event is not None and message.get("method") == wait_event:
                seen_event = True
        return result

    def load(self, url: str, *, headers: dict[str, str] | None = None, width: int = 1200) -> tuple[str, bytes]:
        """(the DOM's HTML once the page loaded, a PNG of the whole page ``width`` pixels wide)."""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._send("Network.enable", session=session)
        if headers:
            self._send("Network.setExtraHTTPHeaders", {"headers": headers}, session=session)
        self._send("Page.enable", session=session)
        metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        self._send("Emulation.setDeviceMetricsOverride", metrics, session=session)
        self._send("Page.navigate", {"url": url}, session=session, wait_event="Page.loadEventFired")
        html = self._send(
            "Runtime.evaluate",
            {"expression": "document.documentElement.outerHTML", "returnByValue": True},
            session=session,
        )["result"]["value"]
        shot = self._send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        self._send("Target.closeTarget", {"targetId": target})
        return "<!DOCTYPE html>" + html, base64.b64decode(shot["data"])
