"""bench.process_tree: the /proc parsers, the tree walk, and pinning and CPU accounting on a real process tree."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.process_tree import (
    cpu_ticks_of_stat,
    descendants,
    parent_of_stat,
    pin_tree,
    restore_affinity,
    tree_cpu_seconds,
    tree_pids,
    tree_threads,
)

# A /proc/PID/stat line whose command holds a space and a ')': the fields are counted after the last ')'.
STAT = (
    "4242 (odd) name) S 4200 4242 4200 0 -1 4194560 1234 0 0 0 "
    "731 52 7 3 20 0 3 0 12345 1000000 2000 18446744073709551615"
)


def test_the_stat_line_gives_the_parent_and_the_cpu_ticks():
    assert parent_of_stat(STAT) == 4200
    assert cpu_ticks_of_stat(STAT) == 731 + 52  # utime + stime; the children's (7, 3) are not this process's


def test_descendants_walks_the_whole_tree_and_nothing_else():
    parent_of = {10: 1, 11: 10, 12: 10, 13: 11, 14: 13, 20: 1, 21: 20}
    assert descendants(10, parent_of) == [10, 11, 12, 13, 14]
    assert descendants(20, parent_of) == [20, 21]
    assert descendants(14, parent_of) == [14]


# A parent with a busy thread and a child process of its own, which prints its PID and then waits.
_TREE = """
import subprocess, sys, threading, time
def spin():
    end = time.monotonic() + 10
    while time.monotonic() < end:
        pass
threading.Thread(target=spin, daemon=True).start()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture
def tree():
    if not Path("/proc/self/task").is_dir() or not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs Linux /proc and sched_setaffinity")
    process = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
    child = int(process.stdout.readline())
    yield process.pid, child
    process.kill()
    process.wait()
    process.stdout.close()
    try:
        os.kill(child, 9)
    except ProcessLookupError:
        pass


def test_the_tree_holds_the_child_and_every_thread(tree):
    root, child = tree
    assert tree_pids(root) == [root, child]
    threads = tree_threads([root, child])
    assert root in threads and child in threads
    assert len(os.listdir(f"/proc/{root}/task")) >= 2  # the main thread and the spinning one
    assert set(os.listdir(f"/proc/{root}/task")) <= {str(task) for task in threads}


def test_pin_tree_pins_every_thread_of_every_process_and_restores_them(tree):
    root, child = tree
    cpus = sorted(os.sched_getaffinity(0))
    target = {cpus[-1]}
    before = pin_tree(root, target)
    threads = tree_threads([root, child])
    assert set(before) == set(threads)
    assert all(os.sched_getaffinity(task) == target for task in threads)
    restore_affinity(before)
    assert all(os.sched_getaffinity(task) == before[task] for task in threads)


def test_tree_cpu_counts_the_busy_thread(tree):
    root, _ = tree
    first = tree_cpu_seconds(root)
    time.sleep(0.5)
    second = tree_cpu_seconds(root)
    assert first is not None and second is not None
    assert second > first  # the spinning thread's time is the process's


def test_a_finished_process_has_no_cpu_reading():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert tree_cpu_seconds(process.pid) is None
