"""How `make test` deals the suite's tests to pytest-xdist's workers: one work unit per test file, so a module's
fixtures (a printed PDF, a trained model's claims, an exported playground) are computed once, except in the
files of SPLIT, whose long, independent tests are dealt one by one.

Why a scheduler and not ``--dist loadgroup`` with an ``xdist_group`` mark per file: loadgroup carries the group in
the test's node id (``item._nodeid += "@group"``), which pytest 9.2 no longer reads (node ids are structured);
the marks were silently ignored and every test was its own unit (pytest-xdist issue 1386). In a run from a clean
clone that meant the three workers all waited 150 s for the first build, and module fixtures were computed up to
three times. xdist's own file and group schedulers are LoadScopeScheduling with another ``_split_scope``; this is
one more of them, chosen by the ``pytest_xdist_make_scheduler`` hook below (re-exported by tests/conftest.py).
tests/checks/test_scheduling.py runs a small suite on two workers to check that the units hold.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadScopeScheduling

# Files whose tests are long, independent and share only cheap module fixtures: each test is a unit of its own, so
# the file does not run alone on one worker at the end of the run.
SPLIT = frozenset({"tests/browser/test_accessibility.py", "tests/site/test_incremental.py"})


def unit_of(nodeid: str) -> str:
    """The work unit a test belongs to: its file, or the test itself in a SPLIT file."""
    file = nodeid.split("::", 1)[0]
    return nodeid if file in SPLIT else file


class FileScheduling(LoadScopeScheduling):
    """Work units in collection order (tests/conftest.py sorts the collection), one per ``unit_of``."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> FileScheduling | None:
    """``--dist loadscope`` (pyproject.toml's addopts) means FileScheduling; another ``--dist`` keeps xdist's own."""
    return FileScheduling(config, log) if config.getvalue("dist") == "loadscope" else None
