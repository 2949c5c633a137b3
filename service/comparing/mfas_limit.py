"""The exact MFAS ranking under a wall-clock limit, in a worker process that is killed when the limit passes.

``rank_mfas_within(t, limit_s) -> (Ranking, exact)``:

* an acyclic majority graph needs no solver (``rank_mfas_ilp`` orders it directly): answered in-process, exact;
* otherwise ``rank_mfas_ilp`` runs in a fresh process (multiprocessing ``forkserver`` context, the ranking
  module preloaded in the server) that first makes itself a process-group leader, so the CBC solver it starts
  is in the same group; the caller waits at most ``limit_s`` seconds for the answer and then kills the whole
  group with SIGKILL (the solver included: no orphaned CBC keeps a core busy);
* past the limit, or if the worker fails, the answer is
  ``calibration.tournaments.mfas_heuristic.rank_mfas_local_search`` (Copeland order improved by single-candidate moves)
  with ``exact = False``.

Blocking (it waits on a pipe): call it from a worker thread, as ``service.comparing.compare`` does.

``start_solver_server()`` starts the fork server (and its preload: numpy, PuLP, the ranking module) and returns once
it has forked a first, empty worker; the app's start-up calls it. Started lazily instead, by the first compare, the
server's start-up (``process.start()`` blocks until the server has preloaded and forked) was spent inside that
compare: about 1 s on an idle machine, 6.7 s under load (measured), so the first compare after start fell back to
the heuristic (``exact: false``), while a started server answers a 4-candidate cycle in 0.2-0.4 s.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from calibration.tournaments.mfas_heuristic import rank_mfas_local_search
from calibration.tournaments.ranking import Ranking, rank_mfas_ilp
from calibration.tournaments.tournament import Tournament

__all__ = ["rank_mfas_within", "start_solver_server"]

_PRELOAD = ["calibration.tournaments.ranking"]


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def start_solver_server() -> None:
    """Start the solver workers' fork server and wait until it has preloaded and forked (blocking; a fork when it
    already runs)."""
    process = _context().Process(target=_started, name="mfas-server-start")
    process.start()  # returns once the server has preloaded and forked the process
    process.join(30)


def _started() -> None:
    """The first worker's body: nothing (its fork proves the server ready)."""


def _acyclic(t: Tournament) -> bool:
    edges = t.adjacency()
    remaining = np.ones(t.n_candidates, dtype=bool)
    while remaining.any():
        sources = remaining & (edges[:, remaining].sum(axis=1) == 0)  # no remaining successor
        if not sources.any():
            return False
        remaining &= ~sources
    return True


def _solve(t: Tournament, connection: Connection) -> None:
    """Worker body: lead a new process group (the solver joins it), solve, send the ranking or the error."""
    os.setpgrp()
    try:
        connection.send(("ok", rank_mfas_ilp(t)))
    except Exception as error:  # noqa: BLE001 - any failure is reported to the parent, which falls back
        connection.send(("error", f"{type(error).__name__}: {error}"))
    finally:
        connection.close()


def _kill_group(process: Any) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.join(5)


def rank_mfas_within(t: Tournament, limit_s: float) -> tuple[Ranking, bool]:
    """(ranking, exact): the exact MFAS order if found within ``limit_s`` seconds, else the heuristic's."""
    deadline = time.monotonic() + limit_s  # the worker's start-up counts against the limit too
    if _acyclic(t):
        return rank_mfas_ilp(t), True
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_solve, args=(t, sender), name="mfas-ilp")
    try:
        process.start()
        sender.close()
        answer = receiver.recv() if receiver.poll(max(0.0, deadline - time.monotonic())) else None
    except (EOFError, OSError):  # the worker died before answering
        answer = None
    finally:
        _kill_group(process)
        receiver.close()
    if answer is not None and answer[0] == "ok":
        return answer[1], True
    return rank_mfas_local_search(t), False
