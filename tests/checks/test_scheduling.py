"""The suite's work units hold on real pytest-xdist workers (tests/scheduling.py).

A small suite in a temporary folder, laid out like ours, runs on two workers with the same hook and options as
`make test`. Each test sleeps a little, so that tests dealt one by one would spread over both workers: the tests
of an ordinary file must all run on one worker (its module fixture is computed once), the tests of a SPLIT file
on both. With `--dist loadgroup` and an `xdist_group` mark per file, as before, pytest 9.2 spread the ordinary
file too, and nothing failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.scheduling import SPLIT, unit_of

ROOT = Path(__file__).resolve().parents[2]
SPLIT_FILE = "tests/browser/test_accessibility.py"
ORDINARY = ("tests/site/test_a.py", "tests/code/test_b.py")
TESTS_PER_FILE = 6

TEST_MODULE = f"""
import time

import pytest

CALLS = []


@pytest.fixture(scope="module")
def once():
    CALLS.append(1)
    return len(CALLS)


@pytest.mark.parametrize("i", range({TESTS_PER_FILE}))
def test_sleeps(once, i):
    time.sleep(0.2)
    assert once == 1
"""


def test_unit_of_is_the_file_except_in_split_files() -> None:
    assert SPLIT_FILE in SPLIT
    assert unit_of("tests/site/test_a.py::test_x[1]") == "tests/site/test_a.py"
    assert unit_of(f"{SPLIT_FILE}::test_y[phone-dark]") == f"{SPLIT_FILE}::test_y[phone-dark]"


def test_two_workers_keep_a_file_together_and_deal_a_split_file_test_by_test(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(
        "from tests.scheduling import pytest_xdist_make_scheduler  # noqa: F401\n", encoding="utf-8"
    )
    for name in (SPLIT_FILE, *ORDINARY):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(TEST_MODULE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    # The run's own base temporary folder: the default, numbered under /tmp/pytest-of-<user>, is shared with the
    # outer run and with every other nested run, which create and clean up numbered folders there concurrently.
    # --max-worker-restart=0: a crashed worker fails the run at once, with its message, where xdist's restart of a
    # loadscope worker re-queues finished units (pytest-xdist issues 1323 and 1378) and can wait forever.
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadscope",
               "--no-loadscope-reorder", "--max-worker-restart=0", f"--basetemp={tmp_path / 'basetemp'}", "-v"]
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as stuck:  # the run takes about 3 s; say how far it got
        printed = [out.decode(errors="replace") if isinstance(out, bytes) else out or ""
                   for out in (stuck.stdout, stuck.stderr)]
        pytest.fail(f"the two-worker run did not end within {stuck.timeout} s; it printed:\n" + "\n".join(printed))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"^\[(gw\d+)\][^\n]*?PASSED (\S+)", done.stdout, re.M):
        workers[nodeid.split("::", 1)[0]].add(worker)
    assert sum(1 for line in done.stdout.splitlines() if " PASSED " in line) == 3 * TESTS_PER_FILE, done.stdout
    for name in ORDINARY:
        assert len(workers[name]) == 1, f"{name} ran on {sorted(workers[name])}: its tests were dealt one by one"
    assert workers[SPLIT_FILE] == {"gw0", "gw1"}, f"{SPLIT_FILE} ran only on {sorted(workers[SPLIT_FILE])}"
