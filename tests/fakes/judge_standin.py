"""The judge stand-in from the command line: ``python -m tests.fakes.judge_standin`` (or ``make standin``).

It is a test double, never a source of reported figures: an OpenAI-compatible chat-completions server
(:class:`tests.fakes.judge_server.JudgeServer`) whose replies are scripted, for trying the service's live-judge path
(``JUDGES_FILE``) on a laptop without a model or a key. It serves until interrupted (Ctrl-C or SIGTERM), prints
one line when it is ready and, with ``--log``, one JSON line per request it answered.

==========================================  =========================================================================
option                                      effect
==========================================  =========================================================================
``--host 127.0.0.1 --port 8021``            where it listens (``--port 0``: a free port, printed)
``--score 4`` / ``--score 4,2,5``           the score it replies; several are used in turn, request by request
``--reply 'Score: {score}'``                the reply text (``{score}`` is replaced; default the bare digit)
``--logprobs peaked`` (default)             log-probs of the score tokens ∝ exp(-``--sharpness`` · |k - score|)
``--logprobs none``                         all the mass on the replied token
``--logprobs '1=-4,2=-3,3=-1.5,4=-0.3'``    this distribution (token = log-prob), whatever the score
``--refuse-logprobs``                       a request asking for log-probs gets a 400 naming ``logprobs``
``--latency 0.2``                           every answer waits 0.2 s
``--fault error_500:2`` (repeatable)        the next 2 requests get that fault (kinds: ``FAULTS`` of judge_server)
``--retry-after 1``                         the ``Retry-After`` of injected 429 / 503 faults
``--outage unavailable_503``                every request gets this fault
``--usage 120,3``                           fixed token usage in every reply
``--model NAME``                            the ``model`` every reply reports (default: the one asked for)
``--log``                                   a JSON line per request: ``n``, ``path``, ``model``, ``fault``
==========================================  =========================================================================
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tests.fakes.judge_server import FAULTS, JudgeServer, ScriptedReply, peaked_logprobs

__all__ = ["build_server", "main", "parse_args"]


def _scores(text: str) -> list[int]:
    try:
        scores = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--score takes integers separated by commas, got {text!r}") from None
    if not scores or any(s < 1 for s in scores):
        raise argparse.ArgumentTypeError(f"--score takes positive integers, got {text!r}")
    return scores


def _fault(text: str) -> tuple[str, int]:
    kind, _, times = text.partition(":")
    if kind not in FAULTS:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
    try:
        count = int(times) if times else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fault KIND[:TIMES], got {text!r}") from None
    return kind, count


def _logprobs(text: str) -> str | dict[str, float]:
    if text in ("peaked", "none"):
        return text
    try:
        return {token: float(value) for token, value in (pair.split("=", 1) for pair in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--logprobs takes peaked, none or TOKEN=LOGPROB pairs separated by commas, got {text!r}"
        ) from None


def _usage(text: str) -> tuple[int, int]:
    try:
        prompt, completion = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--usage PROMPT,COMPLETION, got {text!r}") from None
    return prompt, completion


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.judge_standin",
        description="An OpenAI-compatible judge stand-in with scripted replies (a test double, not a model).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8021, help="0: a free port (default 8021)")
    parser.add_argument("--score", type=_scores, default=[4], help="score(s) to reply, in turn (default 4)")
    parser.add_argument("--reply", default="{score}", help="reply text; {score} is replaced (default '{score}')")
    parser.add_argument("--logprobs", type=_logprobs, default="peaked", help="peaked | none | TOKEN=LOGPROB,...")
    parser.add_argument("--sharpness", type=float, default=1.5, help="of the peaked log-probs (default 1.5)")
    parser.add_argument("--scale", type=int, default=5, help="labels 1..K of the peaked log-probs (default 5)")
    parser.add_argument("--refuse-logprobs", action="store_true")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--fault", type=_fault, action="append", default=[], metavar="KIND[:TIMES]")
    parser.add_argument("--retry-after", type=float, default=None, help="Retry-After of injected 429/503 faults")
    parser.add_argument("--outage", choices=FAULTS, default=None, help="every request gets this fault")
    parser.add_argument("--usage", type=_usage, default=None, metavar="PROMPT,COMPLETION")
    parser.add_argument("--model", default=None, help="the model every reply reports")
    parser.add_argument("--log", action="store_true", help="one JSON line per request on stdout")
    args = parser.parse_args(argv)
    if args.latency < 0:
        parser.error("--latency must be >= 0")
    if "{score}" not in args.reply and args.logprobs == "peaked":
        parser.error("--reply needs {score} for the log-probs to sit on the score token")
    return args


def _responder(args: argparse.Namespace) -> Callable[[dict[str, Any]], ScriptedReply]:
    turns = itertools.cycle(args.score)
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> ScriptedReply:
        with lock:
            score = next(turns)
        if args.logprobs == "peaked":
            distribution: dict[str, float] | None = peaked_logprobs(
                score, n_labels=max(args.scale, score), sharpness=args.sharpness
            )
        elif args.logprobs == "none":
            distribution = None
        else:
            distribution = dict(args.logprobs)
        return ScriptedReply(args.reply.replace("{score}", str(score)), distribution)

    return respond


def build_server(args: argparse.Namespace) -> JudgeServer:
    """A configured, not yet started, stand-in."""
    server = JudgeServer(default_score=args.score[0], latency_s=args.latency, host=args.host, port=args.port)
    server.responder = _responder(args)
    server.refuse_logprobs = args.refuse_logprobs
    server.outage = args.outage
    server.usage = args.usage
    server.reply_model = args.model
    for kind, times in args.fault:
        server.inject(kind, times=times, retry_after_s=args.retry_after)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; exit status 0 (2 on a bad option, from argparse)."""
    args = parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = build_server(args)
    try:
        server.start()
    except OSError as exc:
        print(f"judge stand-in: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(f"judge stand-in (a test double: scripted replies, not a model) on {server.base_url}", flush=True)
    shown = 0
    try:
        while not stop.wait(0.1 if args.log else 1.0):
            if args.log:
                shown = _log_new(server, shown)
    finally:
        server.stop()
    if args.log:
        _log_new(server, shown)
    return 0


def _log_new(server: JudgeServer, shown: int) -> int:
    requests = server.requests
    for n, request in enumerate(requests[shown:], start=shown + 1):
        line = {"n": n, "path": request.path, "model": request.body.get("model"), "fault": request.fault}
        print(json.dumps(line), flush=True)
    return len(requests)


if __name__ == "__main__":
    raise SystemExit(main())
