"""Execution: run every stale lab in a fresh kernel and commit its entry to the cache.

Stale artifacts are computed first; each lab is converted to a notebook (``labs/notebook.py``) and executed with
nbclient (cwd = the repository root), kernels side by side; each executed notebook is rendered as a page body
(``labs/page.py``: ``page.html`` and ``toc.json``), the page with its plots taken out and the download are stored
beside it (``labs/stored.py``), and the entry is committed atomically. A failing cell is reported with the lab's
file and line. What differs run to run is left out of the entry (timing metadata; the batching of prints:
``notebook.merge_streams``), and labs print no wall-clock values (the build log reports timings), so the entry's
bytes depend on the lab only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from llmsite import artifacts
from llmsite import cache as build_cache
from llmsite.labs import page, stored
from llmsite.labs.notebook import KERNEL, merge_streams, to_notebook
from llmsite.labs.planning import CACHE_DIR, Planned, entry_dir, uses_artifacts
from llmsite.labs.sources import CELL_MARKER, LABS_DIR, Lab, LabError, title
from llmsite.paths import ROOT

CELL_TIMEOUT = 300  # seconds per cell


def _cell_lines(source: Path) -> list[int]:
    """1-based line of each ``# %%`` cell marker of a percent-format source."""
    lines = source.read_text(encoding="utf-8").splitlines()
    return [n for n, line in enumerate(lines, 1) if CELL_MARKER.match(line)]


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")


def _describe_failure(lab: Lab, nb: Any, index: int | None, exc: BaseException) -> str:
    if index is None:
        return f"动手实验 {lab.where} 执行失败：{type(exc).__name__}: {exc}"
    markers = _cell_lines(lab.source)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    number = code_cells.index(index) + 1 if index in code_cells else index + 1
    raw = getattr(exc, "traceback", None) or ""  # CellExecutionError: one string; kernel replies: a list
    trace = _ANSI.sub("", raw if isinstance(raw, str) else "\n".join(raw))
    line = markers[index] if len(markers) == len(nb.cells) else None
    if line is not None and (m := _CELL_LINE.search(trace)):
        line += int(m.group(1))  # the failing line inside the cell (the marker is the cell's line 0)
    where = f"{lab.where}:{line}" if line else lab.where
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = nb.cells[index].source.strip().splitlines()
    shown = "\n".join(f"    {s}" for s in source[:12]) + ("\n    ……" if len(source) > 12 else "")
    tail = "\n".join(trace.strip().splitlines()[-8:]) if trace else ""
    out = f"动手实验 {lab.where} 的第 {number} 个代码单元出错（{where}）：{ename}: {evalue}\n单元内容：\n{shown}"
    return out + (f"\n出错位置：\n{tail}" if tail else "")


def _kernel_run(item: Planned, cwd: Path) -> Any:
    """Execute one lab's notebook in a fresh kernel and return it; raise LabError naming the lab and cell.

    Safe to call from several threads at once: each call has its own kernel (a process) and its own event loop."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    lab = item.lab
    nb = to_notebook(lab.source)
    current: dict[str, int | None] = {"index": None}

    def on_cell_start(cell: Any, cell_index: int) -> None:
        current["index"] = cell_index

    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
        on_cell_start=on_cell_start,
        # The kernel logs a warning about plain-TCP transport on every start (loopback only): keep it quiet.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        raise LabError(_describe_failure(lab, nb, current["index"], exc)) from exc
    return nb


def _commit(item: Planned, nb: Any, cache_dir: Path, cwd: Path) -> Path:
    """Write an executed notebook and its page into the cache, atomically (in the calling thread: KaTeX runs here)."""
    import nbformat

    lab = item.lab
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = build_cache.staging_dir(cache_dir, lab.name)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        # What differs run to run and means nothing to a reader: timing metadata, the batching of prints.
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
            if cell.cell_type == "code":
                cell.outputs = merge_streams(cell.outputs)
        (staging / LABS_DIR).mkdir(parents=True)
        nbformat.write(nb, staging / LABS_DIR / f"{lab.name}.ipynb")
        try:
            page.write(staging / LABS_DIR / f"{lab.name}.ipynb", title(lab.uri, cwd) or lab.name, staging, lab.source)
        except page.PageError as exc:  # e.g. a formula KaTeX rejects: reported like a cell that fails
            raise LabError(f"动手实验 {lab.where} 的页面无法生成：\n{exc}") from exc
        stored.prepare(staging, lab)  # what the build derives from the entry, so that it only reads it
        (staging / "inputs.json").write_text(
            json.dumps(item.key.inputs, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8"
        )
        return build_cache.commit_dir(staging, entry_dir(lab, item.key, cache_dir))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def workers_for(count: int) -> int:
    """Kernels run side by side: one per core, at most two (as the figures); ``LLM_LAB_WORKERS`` overrides."""
    configured = os.environ.get("LLM_LAB_WORKERS")
    limit = int(configured) if configured else min(2, os.cpu_count() or 1)
    return max(1, min(limit, count))


def run(
    items: list[Planned], cache_dir: Path = CACHE_DIR, cwd: Path = ROOT, out: TextIO | None = None
) -> tuple[int, int]:
    """Execute every stale lab, print a line per lab and a total. Returns (executed, cached).

    Stale labs run in kernels side by side (``workers_for``); each kernel is its own process and the notebooks are
    byte-stable, so the cache holds the same bytes whatever the number of workers. Each notebook is committed in
    this thread as soon as its kernel is done. When a lab fails, the labs not yet started are not started, the
    running ones finish, and the first failure is raised."""
    out = out or sys.stdout
    build_cache.clean_stale_staging(cache_dir)
    start = time.perf_counter()
    stale = [item for item in items if not item.cached]
    needed: list[artifacts.Artifact] = []
    for item in stale:
        needed += [a for a in uses_artifacts(item.lab) if a not in needed]
    if stale:
        artifacts.ensure(needed, out)  # the kernels inherit LLM_ARTIFACT_<NAME>
    for item in items:
        if item.cached:
            print(f"  [缓存] {item.lab.name:<24} {0.0:6.2f} s", file=out, flush=True)

    def timed(item: Planned) -> tuple[Any, float]:
        t0 = time.perf_counter()
        return _kernel_run(item, cwd), t0

    from concurrent.futures import ThreadPoolExecutor, as_completed  # only when executing: not on a warm build

    with ThreadPoolExecutor(max_workers=workers_for(len(stale)), thread_name_prefix="lab") as pool:
        futures = {pool.submit(timed, item): item for item in stale}
        try:
            for future in as_completed(futures):
                item = futures[future]
                nb, t0 = future.result()
                _commit(item, nb, cache_dir, cwd)
                print(f"  [执行] {item.lab.name:<24} {time.perf_counter() - t0:6.2f} s  ({item.lab.where})",
                      file=out, flush=True)
        except BaseException:
            for other in futures:
                other.cancel()
            raise
    total = time.perf_counter() - start
    executed, cached = len(stale), len(items) - len(stale)
    print(f"共 {len(items)} 个动手实验：{executed} 个重新执行，{cached} 个来自缓存，用时 {total:.2f} s",
          file=out, flush=True)
    return executed, cached
