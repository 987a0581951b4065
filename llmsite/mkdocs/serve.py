"""``python -m llmsite serve``: the local preview, rebuilding only what a save touches.

MkDocs' own server (``LiveReloadServer``: file watching, debounce, the live-reload script) serves a folder
that ``IncrementalSite`` (``incremental.py``) keeps up to date: the first build is a whole one, a save
re-renders the pages that depend on it. ``mkdocs serve`` keeps working and rebuilds everything on a save.

Problems are shown where the contributor looks: the server adds the banner of the last build's problems
(content checks, figures, labs; ``banner.py``) to every HTML page it sends, and also a failure of the build
itself (a YAML error in ``mkdocs.yml``, a Markdown extension that raises) with ``file:line``. The files
written stay byte for byte those of a clean build; the next good save removes the banner and the browser
reloads. A failed build never stops the server: the last good site stays browsable.
"""

from __future__ import annotations

import argparse
import logging
import re
import shutil
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.config import load_config
from mkdocs.livereload import LiveReloadServer, _serve_url

from llmsite.mkdocs.banner import Banner
from llmsite.mkdocs.incremental import IncrementalSite, Result
from llmsite.problems import Problem

log = logging.getLogger("mkdocs.plugins.llmsite.serve")
_LINE = re.compile(r"line (\d+)")


class PreviewServer(LiveReloadServer):
    """MkDocs' live-reload server that also puts the problems banner into every HTML page it sends."""

    def __init__(self, *, banner: Callable[[], Banner], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._banner = banner

    def _inject_js_into_html(self, content: bytes, epoch: int) -> bytes:  # the one place MkDocs edits HTML
        content = super()._inject_js_into_html(content, epoch)
        banner = self._banner()
        if not banner.problems:
            return content
        return banner.inject(content.decode("utf-8")).encode("utf-8")


def failure_problem(exc: BaseException) -> Problem:
    """A build that raised, as a banner entry: where (``mkdocs.yml`` and its line for a YAML error), what, the fix."""
    text = str(exc).strip() or type(exc).__name__
    if "mkdocs.yml" in text or type(exc).__name__ in {"ConfigurationError", "ScannerError", "ParserError"}:
        m = _LINE.search(text)
        return Problem("mkdocs.yml", int(m.group(1)) if m else 1, f"配置文件无法读取：{text}",
                       "改好 mkdocs.yml（YAML 的缩进、冒号、引号）并保存")
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    path, line = (where.filename, where.lineno or 1) if where else ("（构建）", 1)
    return Problem(path, line, f"构建失败：{type(exc).__name__}: {text}",
                   "看终端里的完整错误；改好后保存，预览会重新构建")


class Preview:
    """The incremental site, the last failure and the banner the server shows."""

    def __init__(self, config_file: str | None, site_dir: str, dev_addr: str | None) -> None:
        self.config_file = config_file
        self.site_dir = site_dir
        self.dev_addr = dev_addr
        first = self._config()
        host, port = first.dev_addr
        self.host, self.port = host, port
        self.mount_path = urlsplit(first.site_url or "/").path
        self.serve_url = _serve_url(host, port, self.mount_path)
        self.site = IncrementalSite(self._config, self.serve_url)
        self.failure: Problem | None = None
        self.watch = [first.docs_dir, *(first.watch or [])]
        if first.config_file_path:
            self.watch.append(first.config_file_path)
        root = Path(first.config_file_path or ".").resolve().parent
        self.watch += [str(root / name) for name in ("labs", "overrides") if (root / name).is_dir()]

    def _config(self) -> Any:
        kwargs: dict[str, Any] = {"site_dir": self.site_dir}
        if self.dev_addr:
            kwargs["dev_addr"] = self.dev_addr
        config = load_config(config_file=self.config_file, **kwargs)
        if "llmsite" in config.plugins:
            config.plugins["llmsite"].banner_in_pages = False  # the server adds it (PreviewServer)
        return config

    def build(self) -> None:
        """One rebuild (the first, or after a save); never raises: a failure goes into the banner."""
        try:
            result = self.site.update()
        except Exception as exc:  # shown in the page and the terminal; the server keeps running
            self.failure = failure_problem(exc)
            log.error("构建失败（预览继续提供上一次成功的页面，问题显示在页面顶部）：%s", exc)
            log.debug("%s", traceback.format_exc())
            self._placeholder()
            return
        self.failure = None
        self._log(result)

    def banner(self) -> Banner:
        banner = Banner()
        site = self.site
        if site.config is not None:
            plugin = site.config.plugins["llmsite"]
            banner.add(plugin.banner.problems)
        if self.failure is not None:
            banner.add([self.failure])
        return banner

    def _placeholder(self) -> None:
        """Before any good build there is nothing to show: a page that carries the banner."""
        index = Path(self.site_dir) / "index.html"
        if not index.exists():
            index.write_text("<!doctype html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>构建失败</title>"
                             "</head><body><p>本地预览的第一次构建失败，问题见上。</p></body></html>", encoding="utf-8")

    @staticmethod
    def _log(result: Result) -> None:
        if result.kind == "nothing":
            log.info("没有文件内容变化，不需要重建")
            return
        if result.kind == "full":
            why = f"（{result.reason}）" if result.reason else ""
            log.info("完整构建%s：%d 个页面", why, result.rendered)
        else:
            log.info("增量构建：重新读取 %d 个页面，重新写出 %d 个页面", result.populated, result.rendered)
        logging.getLogger("mkdocs").info("Documentation built in %.2f seconds", result.seconds)


def serve(config_file: str | None = None, dev_addr: str | None = None, site_dir: str | None = None) -> None:
    own_dir = site_dir is None
    folder = site_dir or tempfile.mkdtemp(prefix="llmsite_")
    preview = Preview(config_file, folder, dev_addr)
    server = PreviewServer(banner=preview.banner, builder=preview.build, host=preview.host, port=preview.port,
                           root=folder, mount_path=preview.mount_path)

    def error_page(code: int) -> bytes | None:
        page = Path(folder) / f"{code}.html"
        return page.read_bytes() if code in (404, 500) and page.is_file() else None

    server.error_handler = error_page
    # SIGTERM (a process manager, a test harness) stops the preview like Ctrl-C: the temporary folder is removed.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        start = time.perf_counter()
        preview.build()
        log.info("第一次构建用时 %.1f s", time.perf_counter() - start)
        for path in preview.watch:
            server.watch(path)
        try:
            server.serve()
        except KeyboardInterrupt:
            log.info("Shutting down...")
        finally:
            server.shutdown()
    finally:
        if preview.site.config is not None:
            preview.site.config.plugins.on_shutdown()
        if own_dir:
            shutil.rmtree(folder, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmsite serve",
        description="本地预览：第一次完整构建，之后每次保存只重建受影响的页面（mkdocs serve 每次都全部重建）",
    )
    parser.add_argument("-a", "--dev-addr", metavar="IP:PORT",
                        help="监听地址，默认取 mkdocs.yml 的 dev_addr（127.0.0.1:8000）")
    parser.add_argument("-f", "--config-file", metavar="FILE", help="配置文件，默认 mkdocs.yml")
    parser.add_argument("--site-dir", metavar="DIR", help="把预览的页面写到这个目录（默认临时目录，退出时删除）")
    parser.add_argument("-v", "--verbose", action="store_true", help="输出调试信息")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)-7s -  %(message)s")
    for noisy in ("watchdog", "markdown_it", "MARKDOWN", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    serve(args.config_file, args.dev_addr, args.site_dir)
    return 0
