"""A figure that never returns stops at its time limit, names itself, and leaves nothing behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .conftest import Repo

HANGING = '''

@figure("never-returns", article="transformer-attention", title="不会结束的图", caption="测试用：死循环。", timeout=2)
def never_returns():
    marker = "llm-hanging-figure-marker"
    while True:
        marker = marker[::-1]
'''


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline or marker in environ:
            found.append(int(entry.name))
    return found


def test_a_hanging_figure_stops_at_its_limit_with_a_clear_message(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    module.write_text(module.read_text(encoding="utf-8") + HANGING, encoding="utf-8")
    line = module.read_text(encoding="utf-8").splitlines().index("def never_returns():") + 1
    tag = f"llm-timeout-test-{os.getpid()}"
    start = time.perf_counter()
    proc = repo.run("--only", "never-returns", env={"LLM_TEST_TAG": tag}, check=False)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "图 never-returns 超过时间上限 2 秒" in proc.stderr, proc.stderr
    assert f"code/figures/transformer_attention.py:{line}" in proc.stderr, proc.stderr
    assert "timeout=" in proc.stderr  # what to change
    assert "Traceback" not in proc.stderr
    assert elapsed < 120, f"took {elapsed:.0f} s: the limit did not stop it"
    assert not _processes_with(tag), "a drawing process was left behind"
    # the cache holds no entry and no half-written staging folder for it
    leftovers = list(repo.cache.glob("never-returns/*")) + list(repo.cache.glob("**/*.staging*"))
    assert not [p for p in leftovers if p.exists()], leftovers


def test_timeout_must_be_a_positive_number(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    module.write_text(module.read_text(encoding="utf-8") + HANGING.replace("timeout=2", "timeout=-1"), encoding="utf-8")
    proc = repo.run("--list", check=False)
    assert proc.returncode == 2
    assert "timeout 应是正数" in proc.stderr
