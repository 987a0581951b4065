"""Playable models (``<!-- playground: NAME -->``, or several names side by side, ``llmsite/playground``).

- plan: finds the markers in docs/ (a malformed or unknown one stops the build with file:line), exports the
  out-of-date models in a subprocess (``python -m llmsite.playground``: the MkDocs process never imports torch)
  and returns the cached header and weights as generated files ``playground/<name>.json`` and
  ``playground/<name>.<digest12>.bin`` (nothing is written into docs/).
- expand: replaces the marker with an empty, hidden ``<div>`` that names the header's URL (a comparison: one child
  ``<div>`` per model, ``compare_block``; the models must share vocabulary and task). The small
  ``playground-start.js`` shows it and its start button; the weights, the header and ``playground.js`` are fetched
  only when the reader presses it. Without JavaScript the div stays hidden and the static figures remain.
- a focused build (``features/stale.py``: ``LLM_SITE_ONLY``) exports only the stale models its articles show.
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

from llmsite import artifacts, report
from llmsite.features.files import Generated
from llmsite.features.stale import Focus, article_of_source, compute
from llmsite.paths import ROOT
from llmsite.playground import export, pages, registry
from llmsite.problems import BuildStop

log = logging.getLogger("mkdocs.plugins.llmsite.playground")
MARKER = registry.MARKER
TIMEOUT = 1800.0  # a backstop: the export itself takes a second, the training it may wait for minutes


def _export(names: list[str]) -> None:
    cmd = [sys.executable, "-m", "llmsite.playground", *[a for n in names for a in ("--only", n)]]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BuildStop(f"导出模型演示超过 {TIMEOUT:g} 秒，已停止") from exc
    for line in proc.stdout.splitlines():
        log.info("playground: %s", line.strip())
    if proc.returncode != 0:
        raise BuildStop(f"导出模型演示失败：\n{(proc.stderr or proc.stdout).strip()}")
    report.record("playground", len(names), time.perf_counter() - start)


class Playground:
    """The playable models of one build: their cached headers by name."""

    def __init__(self, serving: bool) -> None:
        self.serving = serving
        self.headers: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}
        self.focus = Focus()  # stale.py: LLM_SITE_ONLY
        self.skipped: list[str] = []  # stale models only other articles show, left out by the focus

    def plan(self) -> list[Generated]:
        """Export the stale models the pages use; every used model's header and weights."""
        files: list[Generated] = []
        try:
            used = pages.marked()
        except (registry.MarkerError, artifacts.ArtifactError) as exc:
            raise BuildStop(str(exc)) from exc
        self.headers, self.failed = {}, {}
        if not used:
            return files
        items = export.plan(sorted(used))
        self.focus = Focus.from_env()
        stale, self.skipped = self.focus.split([item.name for item in items if not item.cached],
                                               lambda name: [article_of_source(use.where) for use in used[name]])
        self.focus.report(log, "模型演示", self.skipped)
        if stale:
            message = compute(lambda: _export(stale), self.serving, log, "改好并保存后会重新导出")
            if message is not None:
                self.failed = dict.fromkeys(stale, message)
            items = export.plan(sorted(used))
        for item in items:
            if not item.cached:
                continue
            header = json.loads(item.header_path().read_text(encoding="utf-8"))
            self.headers[item.name] = header
            files.append(Generated(export.header_uri(item.name), path=item.header_path()))
            files.append(Generated(export.weights_uri(item.name, header), path=item.weights_path()))
        return files

    def expand(self, markdown: str, page: Any) -> str:
        if "playground" not in markdown:
            return markdown
        try:
            registry.uses(markdown, f"docs/{page.file.src_uri}", artifacts.discover())
        except registry.MarkerError as exc:
            raise BuildStop(str(exc)) from exc

        def replace(match: Any) -> str:
            names = registry.names(match)
            for name in names:
                if name in self.skipped:
                    return self.focus.note(f"模型演示 {name}") + "\n"
                if name in self.failed or name not in self.headers:
                    message = self.failed.get(name, f"模型 {name} 还没有导出")
                    return (f'<div class="admonition failure"><p class="admonition-title">模型演示 {html.escape(name)} '
                            f"导出失败</p><pre>{html.escape(message)}</pre></div>")
            if len(names) == 1:
                return block(names[0], self.headers[names[0]], page.url)
            try:
                return compare_block(names, [self.headers[n] for n in names], page.url)
            except ValueError as exc:
                raise BuildStop(f"docs/{page.file.src_uri}: {exc}") from exc

        return MARKER.sub(replace, markdown)


def labels(names: tuple[str, ...] | list[str]) -> list[str]:
    """Column titles of a comparison: each name without the words all names start with, upper case
    (``aligned-sft aligned-dpo aligned-grpo`` -> SFT, DPO, GRPO)."""
    parts = [n.split("-") for n in names]
    common = 0
    while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
        common += 1
    return ["-".join(p[common:]).upper() for p in parts]


def compare_block(names: tuple[str, ...] | list[str], headers: list[dict[str, Any]], page_url: str) -> str:
    """The hidden placeholder of a comparison: one child per model (its header's URL, size and column title) and the
    total download for the start button. The models must share the vocabulary and the task (one input for all)."""
    first = headers[0]
    if "task" not in first:
        raise ValueError(f"并排比较的模型要带同一个任务（例如藏头诗），{names[0]} 没有 task")
    for name, header in zip(names[1:], headers[1:], strict=True):
        if header["vocab"] != first["vocab"] or header.get("task") != first["task"]:
            raise ValueError(f"并排比较的模型要用同一个词表和任务：{name} 的和 {names[0]} 的不同")
    children = []
    for name, header, label in zip(names, headers, labels(names), strict=True):
        url = posixpath.relpath(export.header_uri(name), posixpath.dirname(page_url) or ".")
        children.append(f'<div data-llm-model="{html.escape(name)}" data-llm-label="{html.escape(label)}" '
                        f'data-llm-header="{html.escape(url)}" data-llm-bytes="{int(header["weights"]["bytes"])}" '
                        f'data-llm-params="{int(header["params"])}" hidden></div>')
    size = sum(int(h["weights"]["bytes"]) for h in headers)
    return (f'<div class="llm-pg llm-pg--compare" id="pg-{"--".join(names)}" '
            f'data-llm-playground="{html.escape(" ".join(names))}" data-llm-compare="{len(names)}" '
            f'data-llm-bytes="{size}" data-llm-params="{int(first["params"])}" hidden>{"".join(children)}</div>\n')


def block(name: str, header: dict[str, Any], page_url: str) -> str:
    """The hidden placeholder: the header's URL relative to the page, the download size for the start button."""
    url = posixpath.relpath(export.header_uri(name), posixpath.dirname(page_url) or ".")
    size = int(header["weights"]["bytes"])
    params = int(header["params"])
    return (f'<div class="llm-pg" id="pg-{name}" data-llm-playground="{html.escape(name)}" '
            f'data-llm-header="{html.escape(url)}" data-llm-bytes="{size}" data-llm-params="{params}" hidden></div>\n')
