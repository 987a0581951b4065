"""Plan (cheap, no heavy imports) and draw (imports the figure code) figures."""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from llmsite import report as step_report
from llmsite.figures import cache, interactive
from llmsite.figures.registry import FigureSpec
from llmsite.paths import CODE, rel

MAX_BYTES = 150 * 1024
SEED = 0


@dataclass
class Planned:
    spec: FigureSpec
    key: cache.Key
    cached: bool


class FigureError(RuntimeError):
    pass


class Timeout(BaseException):
    """Raised inside a figure function when its time is up (a BaseException: ``except Exception`` in
    figure code cannot swallow it)."""


class Deadline:
    """Interrupt the drawing after ``seconds`` (SIGALRM; the drawing runs in a process's main thread)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._previous: Any = None

    def _expire(self, signum: int, frame: Any) -> None:
        raise Timeout

    def __enter__(self) -> Deadline:
        self._previous = signal.signal(signal.SIGALRM, self._expire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)


def timeout_message(spec: FigureSpec) -> str:
    return (
        f"图 {spec.name} 超过时间上限 {spec.timeout:g} 秒，已停止：函数 {spec.function}（{spec.where}），"
        f"用于文章 docs/articles/{spec.article}.md\n"
        f"    修改建议：减少计算量（更小的维度、更少的步数或数据点）；确实需要更久时，"
        f"在 @figure(...) 中写 timeout=秒数；耗时的训练请声明为构建产物（artifact），只算一次"
    )


def plan(specs: Iterable[FigureSpec], force: bool = False, cache_dir: Path = cache.CACHE_DIR) -> list[Planned]:
    out = []
    for spec in specs:
        key = cache.key_for(spec)
        out.append(Planned(spec, key, (not force) and cache.is_cached(spec, key, cache_dir)))
    return out


def _describe(spec: FigureSpec) -> str:
    return (
        f"图 {spec.name} 生成失败：函数 {spec.function}（{spec.where}），"
        f"用于文章 docs/articles/{spec.article}.md"
    )


_modules: dict[Path, ModuleType] = {}


def load_module(path: Path) -> ModuleType:
    if path not in _modules:
        code_dir = str(CODE)
        if code_dir not in sys.path:
            sys.path.insert(0, code_dir)
        spec = importlib.util.spec_from_file_location(f"_llm_figures.{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[path] = module
    return _modules[path]


class _GlyphWatch(logging.Handler):
    """Collect matplotlib's complaints about missing glyphs and fonts."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def seed() -> None:
    import numpy as np
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    # Same thread count in every process: float reductions, hence bytes, do not depend on it.
    torch.set_num_threads(1)


def draw(item: Planned, cache_dir: Path = cache.CACHE_DIR) -> Path:
    """Draw both themes into a staging directory and commit it atomically."""
    spec = item.spec
    staging = cache.staging_dir(spec, cache_dir)
    watch = _GlyphWatch()
    mpl_logger = logging.getLogger("matplotlib")
    mpl_logger.addHandler(watch)
    try:
        try:
            module = load_module(spec.module)
            import figkit  # from code/, on sys.path after load_module

            fn: Any = getattr(module, spec.function)
            with warnings.catch_warnings(record=True) as caught, Deadline(spec.timeout):
                warnings.simplefilter("always")
                for theme in cache.THEMES:
                    seed()
                    with figkit.theme(theme):
                        fig = fn()
                        figkit.save(fig, staging / f"{theme}.{cache.FORMAT}")
                if spec.data_function:
                    _write_data(spec, module, staging)
        except Timeout:
            raise FigureError(timeout_message(spec)) from None
        except interactive.DataError as exc:
            raise FigureError(
                f"图 {spec.name} 的交互数据不符合 view=\"{spec.view}\" 的格式：函数 {spec.data_function}"
                f"（{spec.data_where}）\n    {exc}\n    格式见 llmsite/figures/interactive.py 开头的说明"
            ) from None
        except Exception as exc:
            raise FigureError(f"{_describe(spec)}\n{traceback.format_exc()}") from exc
        problems = [str(w.message) for w in caught] + watch.messages
        glyph = [m for m in problems if "Glyph" in m or "missing from font" in m or "findfont" in m]
        if glyph:
            hint = "字体缺字（请用 figkit 的字体，不要另外指定字体）"
            raise FigureError(f"{_describe(spec)}\n{hint}：\n" + "\n".join(glyph))
        for path in staging.iterdir():
            if path.stat().st_size > MAX_BYTES:
                raise FigureError(
                    f"{_describe(spec)}\n{path.name} 有 {path.stat().st_size // 1024} KB，超过 150 KB 上限："
                    "减少数据点、缩小热力图，或改用更粗的网格"
                )
        return cache.commit(staging, spec, item.key, cache_dir)
    except BaseException:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        mpl_logger.removeHandler(watch)


def _write_data(spec: FigureSpec, module: ModuleType, staging: Path) -> None:
    """Call the figure's @figure_data function once (seeded as the drawing is) and write data.json."""
    seed()
    raw = interactive.dump(str(spec.view), getattr(module, str(spec.data_function))())
    if len(raw) > interactive.MAX_BYTES:
        raise interactive.DataError(
            f"数据有 {len(raw) // 1024} KB，超过每张图 {interactive.MAX_BYTES // 1024} KB 的上限："
            "减少视图（控件的选项）或数据点"
        )
    (staging / cache.DATA_FILE).write_bytes(raw)


def _worker_init() -> None:
    """Die with the parent: an interrupted run must not leave drawing orphans behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _draw_job(job: tuple[Planned, Path]) -> tuple[str, float, str | None]:
    item, root = job
    t0 = time.perf_counter()
    try:
        draw(item, root)
    except FigureError as exc:
        return item.spec.name, time.perf_counter() - t0, str(exc)
    return item.spec.name, time.perf_counter() - t0, None


def workers_for(count: int) -> int:
    configured = os.environ.get("LLM_FIGURE_WORKERS")
    limit = int(configured) if configured else min(2, os.cpu_count() or 1)
    import multiprocessing  # only when drawing: a warm build plans and reads the cache

    if "fork" not in multiprocessing.get_all_start_methods():  # Windows: draw in this one process
        limit = 1
    return max(1, min(limit, count))


def run(items: list[Planned], cache_dir: Path = cache.CACHE_DIR, out: Any = None) -> tuple[int, int]:
    """Draw every stale figure, print a line per figure and a total. Returns (built, cached).

    With two or more stale figures the heavy libraries are imported once and the
    drawing is shared by forked workers (one per core, at most two).
    """
    out = out or sys.stdout
    cache.clean_stale_staging(cache_dir)
    start = time.perf_counter()
    stale = [item for item in items if not item.cached]
    if stale:  # the trained models the stale figures use, computed first in a fresh process (not in a forked worker)
        from llmsite import artifacts

        needed: list[artifacts.Artifact] = []
        for item in stale:
            needed += [a for a in cache.artifacts_used(item.spec) if a not in needed]
        try:
            artifacts.ensure(needed, out)
        except artifacts.ArtifactError as exc:
            raise FigureError(f"图 {'、'.join(i.spec.name for i in stale)} 用到的构建产物计算失败：\n{exc}") from exc
    by_name = {item.spec.name: item for item in stale}
    for item in items:
        if item.cached:
            print(f"  [缓存] {item.spec.name:<24} {0.0:6.2f} s", file=out, flush=True)

    def report(name: str, seconds: float) -> None:
        module = rel(by_name[name].spec.module)
        print(f"  [生成] {name:<24} {seconds:6.2f} s  ({module})", file=out, flush=True)
        step_report.record("figure", 1, seconds, name=name)

    workers = workers_for(len(stale))
    if workers == 1:
        for item in stale:
            t0 = time.perf_counter()
            draw(item, cache_dir)
            report(item.spec.name, time.perf_counter() - t0)
    else:
        _preload()
        import multiprocessing

        context = multiprocessing.get_context("fork")
        with context.Pool(workers, initializer=_worker_init) as pool:
            for name, seconds, error in pool.imap_unordered(_draw_job, [(item, cache_dir) for item in stale]):
                if error is not None:
                    pool.terminate()
                    pool.join()
                    cache.clean_stale_staging(cache_dir)  # the other worker was stopped mid-figure
                    raise FigureError(error)
                report(name, seconds)
    built, cached = len(stale), len(items) - len(stale)
    total = time.perf_counter() - start
    print(f"共 {len(items)} 张图：{built} 张重新生成，{cached} 张来自缓存，用时 {total:.2f} s", file=out, flush=True)
    return built, cached


def _preload() -> None:
    """Import the heavy libraries once, before forking (no torch op runs in the parent)."""
    code_dir = str(CODE)
    if code_dir not in sys.path:
        sys.path.insert(0, code_dir)
    import figkit  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import torch  # noqa: F401
