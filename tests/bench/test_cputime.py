"""bench/cputime.py: the CPU a test used, counted once when the processes it started end in a chain (Chromium
closing: renderers reaped by the zygote, the zygote by the browser, the browser by the driver), and never taken
off when it never reached the tree."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import cputime

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")


def test_a_chain_that_ends_is_counted_once() -> None:
    # root 1 -> driver 2 -> browser 3 -> zygote 4 -> renderer 5; {pid: (parent, own CPU, reaped children's CPU)}
    before = {1: (0, 10.0, 0.0), 2: (1, 1.0, 0.0), 3: (2, 5.0, 0.0), 4: (3, 0.5, 0.0), 5: (4, 20.0, 0.0)}
    # Between the snapshots the renderer used 2 s more, then the chain ended: the driver reaped the browser, whose
    # total (its own 5 s, the zygote's 0.5 s and the renderer's 22 s) is now the driver's reaped CPU.
    after = {1: (0, 10.0, 0.0), 2: (1, 1.0, 5.0 + 0.5 + 22.0)}
    assert cputime.used_between(before, after) == pytest.approx(2.0)


def test_a_chain_reaped_outside_the_tree_is_lost_not_taken_off() -> None:
    # The browser (3, 5 s) is reaped by the driver, but its renderer (4, 300 s) was re-parented and reaped
    # elsewhere: only the browser's 5.2 s reach the tree, and no more than that is taken off.
    before = {1: (0, 10.0, 0.0), 2: (1, 1.0, 0.0), 3: (2, 5.0, 0.0), 4: (3, 300.0, 0.0)}
    after = {1: (0, 10.0, 0.0), 2: (1, 1.0, 5.2)}
    assert cputime.used_between(before, after) == 0.0


def test_new_and_living_processes_count_what_they_used() -> None:
    before = {1: (0, 10.0, 0.0), 2: (1, 1.0, 0.0)}
    after = {1: (0, 10.5, 0.0), 2: (1, 1.5, 0.5), 3: (2, 0.25, 0.0)}
    assert cputime.used_between(before, after) == pytest.approx(1.75)


BURN_AND_WAIT = """
import sys, time, pathlib
end = time.process_time() + 0.6
while time.process_time() < end:
    pass
pathlib.Path(sys.argv[1]).write_text("burnt")
while not pathlib.Path(sys.argv[2]).exists():
    time.sleep(0.01)
"""


def test_real_grandchild_chain(tmp_path: Path) -> None:
    """A child waits for a grandchild that burns 0.6 s of CPU before the first snapshot. After both end, the tree's
    CPU between the snapshots is what they used in between (little), not the grandchild's 0.6 s again."""
    script = tmp_path / "burn.py"
    script.write_text(BURN_AND_WAIT, encoding="utf-8")
    burnt, go = tmp_path / "burnt", tmp_path / "go"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, {str(script)!r}, {str(burnt)!r}, {str(go)!r}])"
    child = subprocess.Popen([sys.executable, "-c", parent])
    try:
        deadline = time.monotonic() + 60
        while not burnt.exists():
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.01)
        me = os.getpid()
        before = cputime.tree(me)
        assert child.pid in before and any(ppid == child.pid for ppid, _, _ in before.values())
        grandchild_cpu = max(own for ppid, own, _ in before.values() if ppid == child.pid)
        assert grandchild_cpu >= 0.5
        go.write_text("go")
        child.wait(timeout=60)
        used = cputime.used_between(before, cputime.tree(me))
    finally:
        child.kill()
    assert 0.0 <= used < 0.4, used
