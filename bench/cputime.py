"""CPU seconds of each test, the test process's whole tree included (Chromium, kernels, build subprocesses).

On two busy cores the suite's wall time is about half its CPU time, so the CPU a test burns, not the seconds it
waits, is what a change must cut. Enable the plugin for one run and sum the log:

    LLM_CPU_LOG=/tmp/cpu.jsonl make test      # tests/conftest.py registers the plugin when the variable is set
    python -m bench.suite report.xml --cpu /tmp/cpu.jsonl

For each test (setup, call and teardown) the plugin reads, before and after, the CPU of every live process under
the worker (``utime + stime`` of the process and ``cutime + cstime`` of the children it has reaped) from /proc.
What a process used after the last look and before it was re-parented to init is lost (``used_between``), so
the figures are a lower bound.
Linux only; elsewhere the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

LOG_ENV = "LLM_CPU_LOG"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children) from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    # fields after the name, from 0: state, ppid, ..., utime (11), stime (12), cutime (13), cstime (14)
    ppid = int(fields[1])
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ppid, ticks / _TICKS


def tree(root: int) -> dict[int, tuple[int, float]]:
    """``root`` and every live process below it: {pid: (parent pid, CPU seconds so far)}."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(entry)
            if stat is not None:
                stats[int(entry)] = stat
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in stats.items():
        children[ppid].append(pid)
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = stats[pid]
            todo.extend(children.get(pid, ()))
    return found


def used_between(before: dict[int, tuple[int, float]], after: dict[int, tuple[int, float]]) -> float:
    """CPU seconds the tree used between two snapshots.

    A process that ended was reaped by its parent, and that parent's children's CPU (cutime) then holds all of it,
    including what ``before`` already counted. When a whole chain ends (Chromium closing: renderers reaped by the
    zygote, the zygote by the browser, the browser by Playwright's driver), its CPU climbs the chain to the nearest
    ancestor still alive. So for every process that ended, what ``before`` counted is taken off again if any of its
    ancestors (as ``before`` saw them) is still in the tree. A process re-parented to init (its parent ended first)
    and reaped there cannot be told apart from that: its CPU is lost and what ``before`` counted is taken off, so
    the figure stays a lower bound."""
    used = sum(cpu - before.get(pid, (0, 0.0))[1] for pid, (_, cpu) in after.items())
    for pid, (ppid, cpu) in before.items():
        if pid in after:
            continue
        seen = {pid}
        while ppid in before and ppid not in after and ppid not in seen:  # climb through the ended ancestors
            seen.add(ppid)
            ppid = before[ppid][0]
        if ppid in after:
            used -= cpu
    return used


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    log = os.environ.get(LOG_ENV)
    if not log or not Path("/proc/self/stat").exists():
        yield
        return
    me = os.getpid()
    before, wall0 = tree(me), time.monotonic()
    yield
    record = {
        "nodeid": item.nodeid,
        "cpu": round(used_between(before, tree(me)), 3),
        "wall": round(time.monotonic() - wall0, 3),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "end": round(time.time(), 3),
    }
    with open(log, "a", encoding="utf-8") as out:  # one short line per write: appends from workers do not interleave
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
