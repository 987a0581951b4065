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


def _stat(pid: str) -> tuple[int, float, float] | None:
    """(parent pid, CPU seconds of the process itself, CPU seconds of the children it has reaped) from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    # fields after the name, from 0: state, ppid, ..., utime (11), stime (12), cutime (13), cstime (14)
    own = (int(fields[11]) + int(fields[12])) / _TICKS
    reaped = (int(fields[13]) + int(fields[14])) / _TICKS
    return int(fields[1]), own, reaped


Snapshot = dict[int, tuple[int, float, float]]  # {pid: (parent pid, own CPU s, reaped children's CPU s)}


def tree(root: int) -> Snapshot:
    """``root`` and every live process below it."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(entry)
            if stat is not None:
                stats[int(entry)] = stat
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _) in stats.items():
        children[ppid].append(pid)
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = stats[pid]
            todo.extend(children.get(pid, ()))
    return found


def used_between(before: Snapshot, after: Snapshot) -> float:
    """CPU seconds the tree used between two snapshots (a lower bound).

    Every live process counts what it used itself and what the children it reaped in between had used in their
    whole lives. Part of that was already counted by ``before``: a process that ended between the snapshots,
    whose CPU then climbs to the nearest ancestor still alive (a chain ending together: renderers reaped by the
    zygote, the zygote by the browser, the browser by Playwright's driver). So what ``before`` counted for the
    ended processes under each surviving ancestor is taken off again, but never more than that ancestor's reaped
    CPU grew: when Chromium closes, its renderers are often re-parented and reaped outside the tree, and their CPU
    never reaches it (taking it off anyway made tests' CPU negative, -492 s once)."""
    used, climbed = 0.0, defaultdict(float)
    for pid, (_, own, reaped) in after.items():
        _, own0, reaped0 = before.get(pid, (0, 0.0, 0.0))
        used += (own - own0) + (reaped - reaped0)
    for pid, (ppid, own, reaped) in before.items():
        if pid in after:
            continue
        seen = {pid}
        while ppid in before and ppid not in after and ppid not in seen:  # climb through the ended ancestors
            seen.add(ppid)
            ppid = before[ppid][0]
        if ppid in after:
            climbed[ppid] += own + reaped
    for pid, counted in climbed.items():
        grew = after[pid][2] - before.get(pid, (0, 0.0, 0.0))[2]
        used -= min(counted, max(grew, 0.0))
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
