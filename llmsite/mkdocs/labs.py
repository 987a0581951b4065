"""Hands-on labs (``labs/*.py``) as notebook pages.

- add_files (before mkdocs-jupyter's on_files): plans every lab (cheap: AST, hashes),
  executes the stale ones in a subprocess (``python -m llmsite labs``; a cell
  that raises stops the build with the lab, the cell and the error) and adds
  each executed notebook as the generated file ``labs/<name>.ipynb``, which
  mkdocs-jupyter (``include: ["labs/*.ipynb"]``, ``execute: false``) renders;
  and the notebook offered for download, ``labs/<name>/<name>.ipynb``: the
  executed one with a first cell that writes the ``code/`` files it imports
  (``labs.published``; mkdocs-jupyter's ``include_source`` is off).
- page_content, lab pages only: drops what mkdocs-jupyter inlines in front
  of the notebook (about 600 KB of JupyterLab CSS, MathJax and mermaid loaders,
  a clipboard script); code cells become Material code blocks (its highlighting
  and copy button); headings get readable ids and a matching table of contents;
  ``.md`` / ``.ipynb`` links are resolved like Markdown links; a download button
  and, under the title, a visible download link saying what the notebook needs.
- add_stylesheet: lab pages link the shared trimmed stylesheet
  ``assets/stylesheets/lab.css``.
- edit_url: the edit button points at ``labs/<name>.py``.
- watch: ``labs/`` is watched, so editing a lab rebuilds (only that lab re-executes).
"""

from __future__ import annotations

import html
import json
import logging
import posixpath
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.structure.toc import get_toc
from mkdocs.utils import get_relative_url

from llmsite import atomic, labs, report, worker

log = logging.getLogger("mkdocs.plugins.llmsite.labs")
STYLESHEET = "assets/stylesheets/lab.css"
DOWNLOAD_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M5 20h14v-2H5m14-9h-4V3H9v6H5l7 7z"/></svg>'
)

def _execute(names: list[str]) -> None:
    start = time.perf_counter()
    proc = worker.run_step("labs", names, log, "labs")
    if proc.returncode != 0:
        raise PluginError(f"执行动手实验失败：\n{worker.failure(proc)}")
    seconds = time.perf_counter() - start
    log.info("labs: 执行了 %d 个实验，用时 %.1f s", len(names), seconds)
    report.record("labs", len(names), seconds)


class Labs:
    """The labs of one build: which generated files are lab pages, their downloads and bundled code files.
    Under ``mkdocs serve`` a lab that fails does not stop the preview: the error is logged and the lab's page
    shows it (a one-cell notebook in its place) until a save fixes it (``mkdocs build`` stops)."""

    def __init__(self, serving: bool) -> None:
        self.serving = serving
        self.labs: dict[str, labs.Lab] = {}  # by site uri (labs/<name>.ipynb)
        self.downloads: dict[str, Any] = {}  # lab uri -> the generated download File
        self.bundled: dict[str, list[str]] = {}  # lab uri -> names of the code files inside the download

    def add_files(self, files: Any, config: Any) -> None:
        found = labs.discover()
        items = labs.plan(list(found.values()))
        stale = [item.lab.name for item in items if not item.cached]
        failed: dict[str, str] = {}
        if stale:
            try:
                _execute(stale)
            except PluginError as exc:
                if not self.serving:
                    raise
                log.error("%s\n（预览继续运行：这个实验的页面显示错误信息，改好并保存后会重新执行）", exc)
                failed = {name: str(exc) for name in stale}
            items = labs.plan(list(found.values()))
        self.labs, self.downloads, self.bundled = {}, {}, {}
        for item in items:
            if not item.cached and item.lab.name in failed:
                path = _error_notebook(item.lab.name, failed[item.lab.name])
                file = File.generated(config, item.lab.uri, abs_src_path=str(path))
                file.src_dir = str(path.parent.parent)  # same layout as a cache entry (see below)
                files.append(file)
                continue
            path = item.notebook()
            if not path.is_file():
                raise PluginError(f"动手实验 {item.lab.name} 的缓存文件不存在：{path}")
            file = File.generated(config, item.lab.uri, abs_src_path=str(path))
            # mkdocs-jupyter wraps the file in a NotebookFile that recomputes abs_src_path from
            # src_dir + src_uri (None for a generated file). The cache entry is laid out as
            # <entry>/labs/<name>.ipynb, so src_dir = <entry> gives the same path.
            file.src_dir = str(path.parent.parent)
            files.append(file)
            self.labs[item.lab.uri] = item.lab
            download = File.generated(config, f"{labs.LABS_DIR}/{item.lab.name}/{item.lab.name}.ipynb",
                                      content=labs.published(path, item.lab))
            files.append(download)
            self.downloads[item.lab.uri] = download
            self.bundled[item.lab.uri] = [p.name for p in labs.code_files(item.lab)]

    def page_content(self, html_content: str, page: Any, files: Any) -> str:
        lab = self.labs.get(page.file.src_uri)
        if lab is None:
            return html_content
        body = _links(_headings(trim(html_content), page), page, files, lab)
        body = _alt_texts(body, page.title or lab.name)
        href = html.escape(self.downloads[page.file.src_uri].url_relative_to(page.file))
        button = (
            f'<a href="{href}" download class="md-content__button md-icon" '
            f'title="下载这个 Notebook（.ipynb），在任意文件夹里运行">{DOWNLOAD_ICON}</a>'
        )
        body = _download_note(body, href, self.bundled[page.file.src_uri])
        return f'{button}\n<div class="llm-lab">{body}</div>'

    def edit_url(self, page: Any, config: Any) -> None:
        lab = self.labs.get(page.file.src_uri)
        if lab is not None and config.get("repo_url") and config.get("edit_uri"):
            # edit_uri points into docs/; the lab's source is labs/<name>.py at the repository root.
            page.edit_url = urljoin(config["repo_url"].rstrip("/") + "/", f"{config['edit_uri']}../{lab.where}")

    def add_stylesheet(self, output: str, page: Any) -> str:
        if page.file.src_uri not in self.labs:
            return output
        href = get_relative_url(STYLESHEET, page.url)
        return output.replace("</head>", f'  <link rel="stylesheet" href="{href}">\n  </head>', 1)

    @staticmethod
    def watch(server: Any) -> None:
        """``mkdocs serve`` rebuilds when a lab changes (labs/ is optional, so it is not in ``watch:``)."""
        labs_dir = labs.ROOT / labs.LABS_DIR
        if labs_dir.is_dir():
            server.watch(str(labs_dir))


def _error_notebook(name: str, message: str) -> Path:
    """A one-cell notebook that shows why the lab failed (preview only), laid out like a cache entry."""
    path = labs.ROOT_DIR / "_preview-errors" / name / labs.LABS_DIR / f"{name}.ipynb"
    text = f"# 动手实验 {name} 执行失败\n\n改好 labs/{name}.py 并保存后会重新执行。\n\n```text\n{message}\n```\n"
    notebook = {
        "cells": [{"cell_type": "markdown", "id": "error", "metadata": {}, "source": text}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    atomic.write_text(path, json.dumps(notebook, ensure_ascii=False))
    return path


# --------------------------------------------------------------------------- page content

_WRAPPER = '<div class="jupyter-wrapper">'
_STYLE = re.compile(r"<style\b[^>]*>.*?</style>", re.S | re.I)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)
_CLIPBOARD = re.compile(r'<div class="zeroclipboard-container">.*?</clipboard-copy>\s*</div>', re.S)
_CLIPBOARD_TEXT = re.compile(r'<div [^>]*class="clipboard-copy-txt"[^>]*>.*?</div>', re.S)  # the source, again
_COLLAPSER = re.compile(r'<div class="jp-Collapser[^"]*">\s*</div>')
_TOOLBAR = re.compile(r'<div class="celltoolbar">(?:\s*<div class="button_container[^"]*">.*?</div>)*\s*</div>', re.S)
_CODE = re.compile(r'<div class="highlight-ipynb hl-(?P<lang>[\w+-]+)\s*"><pre>(?P<body>.*?)</pre></div>', re.S)
_HEADING = re.compile(r"<h(?P<level>[1-6])(?P<attrs>[^>]*)>(?P<inner>.*?)</h(?P=level)>", re.S)
_ANCHOR = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.S)
_TAG = re.compile(r"<[^>]+>")
_LOCAL_LINK = re.compile(r'href="(?P<path>(?![a-zA-Z][\w+.-]*:|/|#)[^"#?]+\.(?:md|ipynb))(?P<frag>#[^"]*)?"')


def _code_block(match: re.Match[str]) -> str:
    body = match.group("body")
    if body.startswith("<span></span>"):
        body = body[len("<span></span>"):]
    return f'<div class="language-{match.group("lang")} highlight"><pre><span></span><code>{body}</code></pre></div>'


def _headings(content: str, page: Any) -> str:
    """Readable ids (the site's slugify) on every heading, a headerlink, and the page toc from them."""
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    seen: dict[str, int] = {}
    tokens: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []

    def replace(match: re.Match[str]) -> str:
        level = int(match.group("level"))
        inner = _ANCHOR.sub("", match.group("inner")).strip()
        text = html.unescape(_TAG.sub("", inner)).strip()
        base = slug(text, "-") or f"section-{len(tokens) + len(stack) + 1}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        hid = base if n == 0 else f"{base}_{n}"
        token = {"level": level, "id": hid, "name": html.escape(text), "children": []}
        while stack and stack[-1]["level"] >= level:
            stack.pop()
        (stack[-1]["children"] if stack else tokens).append(token)
        stack.append(token)
        return f'<h{level} id="{hid}">{inner}<a class="headerlink" href="#{hid}" title="本节链接">&para;</a></h{level}>'

    out = _HEADING.sub(replace, content)
    page.toc = get_toc(tokens)
    return out


_IMG_ALT = re.compile(r'<img alt="No description has been provided for this image"')
_H2_OR_IMG = re.compile(r'<h2 id="[^"]*">(?P<h2>.*?)<a class="headerlink"|' + _IMG_ALT.pattern, re.S)


def _alt_texts(content: str, title: str) -> str:
    """nbconvert gives every plot the alt text "No description has been provided": name the section instead."""
    section = title

    def replace(match: re.Match[str]) -> str:
        nonlocal section
        if match.group("h2") is not None:
            section = html.unescape(_TAG.sub("", match.group("h2"))).strip()
            return match.group(0)
        return f'<img alt="{html.escape(f"代码运行得到的图：{section}")}"'

    return _H2_OR_IMG.sub(replace, content)


def _links(content: str, page: Any, files: Any, lab: labs.Lab) -> str:
    """Resolve relative ``.md`` / ``.ipynb`` links like MkDocs does for Markdown; a missing target fails."""
    base = posixpath.dirname(page.file.src_uri)

    def replace(match: re.Match[str]) -> str:
        target_uri = posixpath.normpath(posixpath.join(base, html.unescape(match.group("path"))))
        target = files.get_file_from_path(target_uri)
        if target is None:
            raise PluginError(
                f"动手实验 {lab.where} 里的链接 {match.group('path')} 指向不存在的页面"
                f"（按 docs/{target_uri} 查找）：链接写成相对于 docs/labs/ 的 .md 路径，例如 ../articles/x.md"
            )
        href = target.url_relative_to(page.file)
        return f'href="{html.escape(href)}{match.group("frag") or ""}"'

    return _LOCAL_LINK.sub(replace, content)


def trim(content: str) -> str:
    """The notebook body without mkdocs-jupyter's inlined header, scripts and styles."""
    start = content.find(_WRAPPER)
    if start < 0:
        raise PluginError(
            "mkdocs-jupyter 的输出里找不到 jupyter-wrapper：它的模板变了，请检查 llmsite/mkdocs/labs.py 的 trim"
        )
    body = content[start:]
    for pattern in (_STYLE, _SCRIPT, _CLIPBOARD, _CLIPBOARD_TEXT, _TOOLBAR, _COLLAPSER):
        body = pattern.sub("", body)
    return _CODE.sub(_code_block, body)


def _download_note(body: str, href: str, bundled: list[str]) -> str:
    """A visible download link right under the lab's title: what the notebook needs and what it writes."""
    files = "、".join(f"<code>{html.escape(name)}</code>" for name in bundled)
    note = (
        f'<p class="llm-lab-download"><a class="md-button md-button--primary" href="{href}" download>'
        f'<span class="twemoji">{DOWNLOAD_ICON}</span> 下载这个 Notebook（.ipynb）</a></p>\n'
        "<p>下载后放进任意一个文件夹，用 Jupyter 打开，从头运行即可，只需要装好 torch、numpy 和 matplotlib。"
        f"它的第一格会把实验用到的 {len(bundled)} 个代码文件（{files}，和仓库 <code>code/</code> 目录里的一样）"
        f"写到旁边的 <code>{labs.BUNDLE_DIR}/</code> 目录里。</p>"
    )
    end = body.find("</h1>")
    if end < 0:
        return note + body
    end += len("</h1>")
    return body[:end] + "\n" + note + body[end:]
