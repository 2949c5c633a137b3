"""/v1/compare cost bounds (issue 13, defects 3 and 4): the exact MFAS under MFAS_TIME_LIMIT_S in a killable
process with the heuristic and ``exact: false`` past it; a cap on judge calls per request (422 stating it)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from calibration.tournaments.ranking import feedback_weight, rank_mfas_ilp
from service.comparing.mfas_limit import rank_mfas_within
from service.config.limits import LimitSettings
from service.config.settings import Settings
from tests.calibration.tournaments.test_mfas_heuristic import random_tournament
from tests.fakes.judge_server import JudgeServer
from tests.service.conftest import AppHarness

ROOT = Path(__file__).resolve().parents[3]


def _orphaned_solvers() -> list[str]:
    """CBC processes whose process-group leader is gone: what a killed worker would leave behind."""
    listing = subprocess.run(["ps", "-eo", "pid=,pgid=,stat=,args="], capture_output=True, text=True, check=True)
    orphans = []
    for line in listing.stdout.splitlines():
        pid, pgid, stat, args = line.split(None, 3)
        if "cbc" not in args.split(" ")[0].lower() or stat.startswith("Z"):  # a zombie is already dead
            continue
        try:
            os.kill(int(pgid), 0)
        except ProcessLookupError:
            orphans.append(line)
        except PermissionError:
            pass
    return orphans


def test_past_the_limit_the_heuristic_answers_and_the_solver_is_killed():
    t = random_tournament(20, 0)  # the exact ILP needs seconds here (measured 0.4-15 s at n = 20)
    started = time.perf_counter()
    ranking, exact = rank_mfas_within(t, 0.3)
    elapsed = time.perf_counter() - started
    assert exact is False
    assert elapsed < 5  # the limit plus killing and the heuristic; not the solver's seconds
    assert sorted(ranking.order) == sorted(t.candidates)
    time.sleep(0.2)
    assert _orphaned_solvers() == []  # the solver went with its worker's process group


def test_within_the_limit_the_answer_is_the_exact_one():
    t = random_tournament(7, 3)
    ranking, exact = rank_mfas_within(t, 30.0)
    assert exact is True
    assert ranking.order == rank_mfas_ilp(t).order
    best = min(feedback_weight(t, order) for order in itertools.permutations(t.candidates))
    assert feedback_weight(t, ranking.order) == best


def _cyclic_preferences(n: int) -> list[dict[str, str]]:
    t = random_tournament(n, 0)
    return [{"winner": p.a, "loser": p.b} if p.wins_a > p.wins_b else {"winner": p.b, "loser": p.a} for p in t.pairs]


def test_compare_reports_exact_false_past_the_time_limit(
    start_app: Callable[[Settings], AppHarness], make_settings: Callable[..., Settings]
):
    harness = start_app(make_settings(limits=LimitSettings(mfas_time_limit_s=0.2)))
    body = {"criterion": "coherence", "preferences": _cyclic_preferences(20)}
    started = time.perf_counter()
    reply = harness.client.post("/v1/compare", json=body)
    assert time.perf_counter() - started < 10
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["exact"] is False and "MFAS_TIME_LIMIT_S" in data["reason"]
    assert sorted(data["rankings"]["mfas_ilp"]) == sorted(data["candidates"])


def test_compare_is_exact_when_the_solver_finishes(app: AppHarness):
    prefs = [{"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}, {"winner": "c", "loser": "a"}]
    data = app.client.post("/v1/compare", json={"criterion": "coherence", "preferences": prefs}).json()
    assert data["exact"] is True


@pytest.mark.parametrize(("repetitions", "swap", "allowed"), [(10, True, False), (3, True, True), (10, False, True)])
def test_judge_calls_per_request_are_capped(
    start_app: Callable[[Settings], AppHarness],
    make_settings: Callable[..., Settings],
    judges_file,
    stand_in: JudgeServer,
    repetitions: int,
    swap: bool,
    allowed: bool,
):
    stand_in.responder = lambda body: "A"
    harness = start_app(make_settings(judges_file=judges_file, limits=LimitSettings(max_judge_calls=100)))
    candidates = [{"id": f"c{i}", "text": f"Candidate {i}."} for i in range(5)]  # 10 pairs
    body = {"criterion": "coherence", "document": "Doc.", "candidates": candidates, "repetitions": repetitions}
    reply = harness.client.post("/v1/compare", json={**body, "swap": swap})
    calls = 10 * repetitions * (2 if swap else 1)
    if allowed:
        assert reply.status_code == 200 and stand_in.call_count == calls
    else:
        assert reply.status_code == 422
        assert "MAX_JUDGE_CALLS=100" in reply.json()["detail"] and str(calls) in reply.json()["detail"]
        assert stand_in.call_count == 0


def test_the_default_cap_refuses_the_red_team_request(judge_app: AppHarness, stand_in: JudgeServer):
    # with a judge configured (without one every live call is the 422 judge-not-configured first)
    candidates = [{"id": f"c{i}", "text": f"Candidate {i}."} for i in range(20)]
    body = {"criterion": "coherence", "document": "Doc.", "candidates": candidates, "repetitions": 10}
    reply = judge_app.client.post("/v1/compare", json=body)  # 190 pairs x 10 x 2 = 3,800 calls
    assert reply.status_code == 422 and "3800" in reply.json()["detail"]
    assert stand_in.call_count == 0


_SOLVER_SERVER_PROBE = """
import os
import sys
from pathlib import Path

from litestar.testing import TestClient

from service.config.settings import Settings
from service.http.app import create_app


def forkservers():
    \"\"\"This process's children that are multiprocessing fork servers (their command lines).\"\"\"
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
            command = (stat.parent / "cmdline").read_bytes().replace(bytes(1), b" ").decode()
        except (OSError, IndexError):
            continue
        if parent == str(os.getpid()) and "forkserver" in command:
            found.append(command)
    return found


if __name__ == "__main__":
    before = forkservers()
    with TestClient(create_app(Settings(thresholds_path=Path(sys.argv[1])))):
        started = forkservers()
    print(len(before), len(started), started[0] if started else "")
"""


def test_the_app_starts_the_solver_server_before_the_first_compare(tmp_path: Path, artifact_path: Path) -> None:
    """Started lazily, the fork server's start (preloading numpy and PuLP: 6.7 s measured under load) counted
    against the first compare's MFAS_TIME_LIMIT_S, so the first compare after start was inexact. A fresh
    interpreter (no earlier test started the server in it): no fork server before the app, one with the ranking
    module preloaded once the app has started, before any request."""
    probe = tmp_path / "probe.py"
    probe.write_text(_SOLVER_SERVER_PROBE)
    done = subprocess.run(
        [sys.executable, str(probe), str(artifact_path)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    before, started, command = done.stdout.split(" ", 2)
    assert (before, started) == ("0", "1"), done.stdout
    assert "calibration.tournaments.ranking" in command
