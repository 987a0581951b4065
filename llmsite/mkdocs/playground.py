"""Playable models in MkDocs (``<!-- playground: NAME -->``, ``llmsite/playground``).

- add_files: finds the markers in docs/ (a malformed or unknown one stops the build with file:line), exports the
  out-of-date models in a subprocess (``python -m llmsite.playground``: the MkDocs process never imports torch)
  and adds the cached header and weights as generated files ``playground/<name>.json`` and
  ``playground/<name>.<digest12>.bin`` (nothing is written into docs/).
- expand: replaces the marker with an empty, hidden ``<div>`` that names the header's URL. The small
  ``playground-start.js`` shows it and its start button; the weights, the header and ``playground.js`` are fetched
  only when the reader presses it. Without JavaScript the div stays hidden and the static figures remain.
"""

from __future__ import annotations

import html
import json
import logging
import posixpath
import subprocess
import sys
import time
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from llmsite import artifacts, report
from llmsite.paths import ROOT
from llmsite.playground import export, pages, registry

log = logging.getLogger("mkdocs.plugins.llmsite.playground")
MARKER = registry.MARKER
TIMEOUT = 1800.0  # a backstop: the export itself takes a second, the training it may wait for minutes


def _export(names: list[str]) -> None:
    cmd = [sys.executable, "-m", "llmsite.playground", *[a for n in names for a in ("--only", n)]]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise PluginError(f"导出模型演示超过 {TIMEOUT:g} 秒，已停止") from exc
    for line in proc.stdout.splitlines():
        log.info("playground: %s", line.strip())
    if proc.returncode != 0:
        raise PluginError(f"导出模型演示失败：\n{(proc.stderr or proc.stdout).strip()}")
    report.record("playground", len(names), time.perf_counter() - start)


class Playground:
    """The playable models of one build: their cached headers by name."""

    def __init__(self, serving: bool) -> None:
        self.serving = serving
        self.headers: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}

    def add_files(self, files: Any, config: Any) -> None:
        try:
            used = pages.marked()
        except (registry.MarkerError, artifacts.ArtifactError) as exc:
            raise PluginError(str(exc)) from exc
        self.headers, self.failed = {}, {}
        if not used:
            return
        items = export.plan(sorted(used))
        stale = [item.name for item in items if not item.cached]
        if stale:
            try:
                _export(stale)
            except PluginError as exc:
                if not self.serving:
                    raise
                log.error("%s\n（预览继续运行：改好并保存后会重新导出）", exc)
                self.failed = {name: str(exc) for name in stale}
            items = export.plan(sorted(used))
        for item in items:
            if not item.cached:
                continue
            header = json.loads(item.header_path().read_text(encoding="utf-8"))
            self.headers[item.name] = header
            files.append(File.generated(config, export.header_uri(item.name), abs_src_path=str(item.header_path())))
            files.append(File.generated(config, export.weights_uri(item.name, header),
                                        abs_src_path=str(item.weights_path())))

    def expand(self, markdown: str, page: Any) -> str:
        if "playground" not in markdown:
            return markdown
        try:
            registry.uses(markdown, f"docs/{page.file.src_uri}", artifacts.discover())
        except registry.MarkerError as exc:
            raise PluginError(str(exc)) from exc

        def replace(match: Any) -> str:
            name = match.group("name")
            if name in self.failed or name not in self.headers:
                message = self.failed.get(name, f"模型 {name} 还没有导出")
                return (f'<div class="admonition failure"><p class="admonition-title">模型演示 {html.escape(name)} '
                        f"导出失败</p><pre>{html.escape(message)}</pre></div>")
            return block(name, self.headers[name], page.url)

        return MARKER.sub(replace, markdown)


def block(name: str, header: dict[str, Any], page_url: str) -> str:
    """The hidden placeholder: the header's URL relative to the page, the download size for the start button."""
    url = posixpath.relpath(export.header_uri(name), posixpath.dirname(page_url) or ".")
    size = int(header["weights"]["bytes"])
    params = int(header["params"])
    return (f'<div class="llm-pg" id="pg-{name}" data-llm-playground="{html.escape(name)}" '
            f'data-llm-header="{html.escape(url)}" data-llm-bytes="{size}" data-llm-params="{params}" hidden></div>\n')
