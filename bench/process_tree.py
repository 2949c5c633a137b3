"""A server's whole process tree on Linux: its processes, every thread of each, their CPU time, their CPU pinning.

A server is not one thread of one process: uvicorn runs the app's threads beside its loop (``asyncio.to_thread``,
the log sink), the service starts the MFAS solver's fork server as a child, and granian runs its workers as child
processes, each with Rust runtime threads. Pinning only the main thread of the PID that ``Popen`` returned leaves
the rest free to run on the load generator's CPU, and reading that one PID's ``/proc/PID/stat`` misses every
child's CPU. Here the tree is found from every process's parent in ``/proc``, every task in ``/proc/PID/task`` is
pinned (a thread started later inherits its creator's affinity), and CPU is summed over the tree.

The parsers (``parent_of_stat``, ``cpu_ticks_of_stat``, ``descendants``) are pure functions of ``/proc`` text;
``tree_pids``, ``tree_cpu_seconds`` and ``pin_tree`` read or change the running system.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "cpu_ticks_of_stat",
    "descendants",
    "parent_of_stat",
    "pin_tree",
    "restore_affinity",
    "tree_cpu_seconds",
    "tree_pids",
    "tree_threads",
]

PROC = Path("/proc")


def _fields_after_command(stat: str) -> list[str]:
    """The fields of a ``/proc/PID/stat`` line after ``(comm)``; the command may itself hold spaces and ')'."""
    return stat.rsplit(")", 1)[1].split()


def parent_of_stat(stat: str) -> int:
    """The parent PID in a ``/proc/PID/stat`` line (field 4, ``ppid``)."""
    return int(_fields_after_command(stat)[1])


def cpu_ticks_of_stat(stat: str) -> int:
    """User + system CPU time in clock ticks from a ``/proc/PID/stat`` line (fields 14 and 15, ``utime`` and
    ``stime``): for a process, the sum over all its threads, those that ended included."""
    fields = _fields_after_command(stat)
    return int(fields[11]) + int(fields[12])


def descendants(root: int, parent_of: Mapping[int, int]) -> list[int]:
    """``root`` and every process below it, parents before children, given each process's parent PID."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    tree = [root]
    for pid in tree:  # grows while it is walked: breadth first
        tree.extend(sorted(children.get(pid, ())))
    return tree


def _read_stat(pid: int) -> str | None:
    try:
        return (PROC / str(pid) / "stat").read_text()
    except OSError:  # the process ended meanwhile
        return None


def _parents() -> dict[int, int]:
    parent_of = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _read_stat(int(entry.name))) is not None:
            parent_of[int(entry.name)] = parent_of_stat(stat)
    return parent_of


def tree_pids(root: int) -> list[int]:
    """The live processes of ``root``'s tree (``root`` first)."""
    return descendants(root, _parents())


def tree_threads(pids: Iterable[int]) -> list[int]:
    """Every thread (task id) of the processes ``pids``."""
    tasks = []
    for pid in pids:
        try:
            tasks += [int(task.name) for task in (PROC / str(pid) / "task").iterdir()]
        except OSError:
            continue
    return tasks


def tree_cpu_seconds(root: int) -> float | None:
    """User + system CPU seconds used so far by the live processes of ``root``'s tree; None without ``/proc``."""
    if not (PROC / str(root) / "stat").exists():
        return None
    ticks = sum(cpu_ticks_of_stat(stat) for pid in tree_pids(root) if (stat := _read_stat(pid)) is not None)
    return ticks / os.sysconf("SC_CLK_TCK")


def pin_tree(root: int, cpus: set[int]) -> dict[int, set[int]]:
    """Pin every thread of every process in ``root``'s tree to ``cpus``; returns each thread's affinity before."""
    before = {}
    for task in tree_threads(tree_pids(root)):
        try:
            before[task] = os.sched_getaffinity(task)
            os.sched_setaffinity(task, cpus)
        except (ProcessLookupError, PermissionError):  # ended meanwhile
            continue
    return before


def restore_affinity(before: Mapping[int, set[int]]) -> None:
    """Give each thread back the affinity ``pin_tree`` recorded (threads that ended are skipped)."""
    for task, cpus in before.items():
        try:
            os.sched_setaffinity(task, cpus)
        except (ProcessLookupError, PermissionError):
            continue
