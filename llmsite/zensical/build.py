"""python -m llmsite zensical: build the site with Zensical into ``site-zensical/`` (``make build-zensical``).

    python -m llmsite zensical            # stage, build, finish
    python -m llmsite zensical --out DIR  # somewhere else than site-zensical/
    python -m llmsite zensical --stage DIR  # stage somewhere else than .zensical/ (the tests do)
    python -m llmsite zensical --serve --dev-addr 127.0.0.1:8001  # stage, then Zensical's own preview (bench)

The three steps run in one process: Zensical calls back into Python to render Markdown, and the extension reads
what the staging computed. A content problem stops the build with the same ``file:line`` messages as
``mkdocs build --strict``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from llmsite import paths
from llmsite.problems import BuildStop, ContentError
from llmsite.zensical import config, finish, stage, state

SITE = paths.ROOT / "site-zensical"
PINNED = "0.0.73"  # requirements.txt; 0.0.74 and later need zensical-ui, which the registries here do not serve


class BuildError(RuntimeError):
    """Zensical stopped (a template or a Python callback failed): the message to show, without a traceback."""


def _callback_error(text: str) -> str:
    """The first line of what Zensical reports for a failed callback, without its "Python error: <type>:" prefix
    when the type is ours (llmsite's messages name the file and line themselves)."""
    first = text.strip().splitlines()[0] if text.strip() else "Zensical 没有说明原因"
    first = first.removeprefix("Python error: ")
    for ours in ("BuildStop: ", "ContentError: ", "ExportError: "):
        if first.startswith(ours):
            return first[len(ours):]
    return first


def _zensical() -> Any:
    try:
        import zensical
    except ImportError as exc:
        raise BuildError(f"没有装 Zensical（requirements.txt 锁定 {PINNED}）：请运行 make setup") from exc
    if zensical.version() != PINNED:  # the adapter is written against this version (ARCHITECTURE.md)
        raise BuildError(
            f"装的 Zensical 是 {zensical.version()}，本站按 {PINNED} 写（requirements.txt）：请运行 make setup"
        )
    return zensical


def build(out: Path = SITE, staging: Path = stage.STAGE) -> dict[str, float]:
    """Stage (in ``staging``), build and finish into ``out``; returns each step's seconds."""
    zensical = _zensical()
    times: dict[str, float] = {}
    start = time.perf_counter()
    values = config.read(paths.ROOT / "mkdocs.yml")
    built = staging / stage.SITE_NAME
    current = state.compute(config.plugin_options(values), values.get("repo_url"))
    yml = stage.write(current, staging)
    times["stage"] = time.perf_counter() - start
    start = time.perf_counter()
    # clean: Zensical caches each page's HTML by its Markdown, but what the extension puts in a page (figures,
    # answers, labs) changes without it; the cache is the stage's own (.zensical/.cache), never the site's .cache/
    try:
        zensical.build(str(yml), {"strict": True, "clean": True})
    except RuntimeError as exc:  # an exception raised while Zensical called back into Python: its message
        raise BuildError(_callback_error(str(exc))) from exc
    times["zensical"] = time.perf_counter() - start
    start = time.perf_counter()
    finish.write_feed(current, built, values)
    finish.pages(current, built, values)
    finish.publish(built, out)
    times["finish"] = time.perf_counter() - start
    return times


def serve(addr: str, staging: Path = stage.STAGE) -> None:
    """Stage, then Zensical's own preview of the staged tree (``zensical serve``) in this process, so that the
    extension reads what the staging computed. A measurement aid (``bench/serve_scale.py``), not the maintainer's
    preview: it serves Zensical's build without the finishing steps (formulas stay TeX) and watches the staged copy,
    so a save in docs/ is not seen (the bench edits the staged copy)."""
    zensical = _zensical()

    values = config.read(paths.ROOT / "mkdocs.yml")
    current = state.compute(config.plugin_options(values), values.get("repo_url"))
    yml = stage.write(current, staging)
    zensical.serve(str(yml), {"dev_addr": addr, "open": False, "strict": False})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmsite zensical", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SITE, help="写到哪个文件夹（默认 site-zensical/）")
    parser.add_argument("--stage", type=Path, default=stage.STAGE,
                        help="准备给 Zensical 的目录（默认 .zensical/；Zensical 的缓存也在里面）")
    parser.add_argument("--serve", action="store_true",
                        help="准备好以后运行 Zensical 自己的预览（给 bench 量用；公式不渲染，docs/ 里的改动看不到）")
    parser.add_argument("--dev-addr", default="127.0.0.1:8000", help="--serve 的地址（默认 127.0.0.1:8000）")
    args = parser.parse_args(argv)
    try:
        if args.serve:
            serve(args.dev_addr, args.stage.resolve())
            return 0
        times = build(args.out.resolve(), args.stage.resolve())
    except (ContentError, BuildStop, config.ConfigError, BuildError) as exc:
        print(f"Zensical 构建停止：\n{exc}", file=sys.stderr)
        return 1
    steps = "，".join(f"{name} {seconds:.1f} s" for name, seconds in times.items())
    print(f"Zensical 构建完成：{paths.rel(args.out.resolve())}（{steps}）")
    return 0
