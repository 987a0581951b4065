"""Hands-on labs (``labs/*.py``) as site pages, read from the build cache.

- ``plan``: plans every lab (cheap: syntax trees, hashes), executes the stale ones in a subprocess
  (``python -m llmsite labs``; a cell that raises stops the build with the lab, the cell and the error),
  and adds for each lab a page ``labs/<name>.ipynb`` (URL ``labs/<name>/``) whose body the lab worker
  rendered into the cache entry (``llmsite/labs/page.py``), and the notebook offered for download,
  ``labs/<name>/<name>.ipynb``: the executed one with a first cell that writes the ``code/`` files it
  imports (``labs.published``). Both are read as stored in the entry (``llmsite/labs/stored.py``). The build
  process imports neither mkdocs-jupyter, nbconvert nor jupytext.
- ``page_body``: the cached body, which ``llmsite.extension`` puts in place of the page's placeholder (with
  its table of contents): ``.md`` / ``.ipynb`` links resolved like Markdown links, a download button and,
  under the title, a visible download link saying what the notebook needs.
- ``edit_url``: the edit button points at ``labs/<name>.py``.
- ``watch``: ``labs/`` is watched, so editing a lab rebuilds (only that lab re-executes).
- a focused build (``features/stale.py``: ``LLM_SITE_ONLY``) executes only the stale labs the route gives its
  articles; another article's stale lab gets a page that says so.
"""

from __future__ import annotations

import hashlib
import html
import logging
import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from llmsite import labs, report, worker
from llmsite.content.catalog import load_route
from llmsite.extension import LAB_BODY
from llmsite.features.files import Generated, relative_url
from llmsite.features.stale import Focus, compute
from llmsite.labs import images as lab_images
from llmsite.labs import stored as lab_stored
from llmsite.problems import BuildStop, Problem

log = logging.getLogger("mkdocs.plugins.llmsite.labs")
DOWNLOAD_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M5 20h14v-2H5m14-9h-4V3H9v6H5l7 7z"/></svg>'
)
_LOCAL_LINK = re.compile(r'href="(?P<path>(?![a-zA-Z][\w+.-]*:|/|#)[^"#?]+\.(?:md|ipynb))(?P<frag>#[^"]*)?"')


@dataclass
class LabPage:
    lab: labs.Lab
    body: str
    toc: list[dict[str, Any]]
    download: Generated | None = None
    bundled: tuple[str, ...] = ()
    images: dict[str, Generated] | None = None  # the plots, as files beside the page (labs/images.py)


def _execute(names: list[str]) -> None:
    start = time.perf_counter()
    proc = worker.run_step("labs", names, log, "labs")
    if proc.returncode != 0:
        raise BuildStop(f"执行动手实验失败：\n{worker.failure(proc)}")
    seconds = time.perf_counter() - start
    log.info("labs: 执行了 %d 个实验，用时 %.1f s", len(names), seconds)
    report.record("labs", len(names), seconds)


def _articles_of_labs() -> dict[str, str]:
    """{lab name: the article whose labs the route lists it under} (data/route.yml)."""
    route, _ = load_route()
    return {name: item.slug for item in route.entries for name in item.lab_names}


def _placeholder(title: str) -> str:
    return f"---\ntitle: {_yaml_text(title)}\n---\n{LAB_BODY}\n"


def _yaml_text(text: str) -> str:
    """A YAML double-quoted scalar (the lab's title comes from its source: any character may appear)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def error_body(name: str, message: str) -> str:
    """What a lab's page shows under ``mkdocs serve`` while the lab fails (``mkdocs build`` stops instead)."""
    return (
        f"<h1>动手实验 {html.escape(name)} 执行失败</h1>\n"
        f"<p>改好 <code>labs/{html.escape(name)}.py</code> 并保存后会重新执行。</p>\n"
        f"<pre><code>{html.escape(message)}</code></pre>\n"
    )


class Labs:
    """The lab pages of one build. Under ``mkdocs serve`` a lab that fails does not stop the preview: the
    error is logged and the lab's page shows it until a save fixes it (``mkdocs build`` stops)."""

    def __init__(self, serving: bool) -> None:
        self.serving = serving
        self.pages: dict[str, LabPage] = {}  # by site uri (labs/<name>.ipynb)
        self.failed: dict[str, str] = {}  # lab name -> error message, for this build (serve only)

    def plan(self) -> list[Generated]:
        """Execute the stale labs; every lab's page (``labs/<name>.ipynb``, a page at ``labs/<name>/``), its
        plots and its notebook for download."""
        files: list[Generated] = []
        found = labs.discover()
        items = labs.plan(list(found.values()))
        focus = Focus.from_env()
        articles = {} if focus.whole else _articles_of_labs()
        stale, skipped = focus.split([item.lab.name for item in items if not item.cached],
                                     lambda name: [articles.get(name)])
        focus.report(log, "实验", skipped)
        self.failed = {}
        if stale:
            message = compute(lambda: _execute(stale), self.serving, log,
                              "这个实验的页面显示错误信息，改好并保存后会重新执行")
            if message is not None:
                self.failed = dict.fromkeys(stale, message)
            items = labs.plan(list(found.values()))
        self.pages = {}
        for item in items:
            lab = item.lab
            title = labs.title(lab.uri) or lab.name
            files.append(Generated(lab.uri, content=_placeholder(title), page=True))
            if not item.cached and lab.name in self.failed:
                self.pages[lab.uri] = LabPage(lab, error_body(lab.name, self.failed[lab.name]), [])
                continue
            if not item.cached and lab.name in skipped:
                note = focus.note(f"动手实验 {lab.name}")
                self.pages[lab.uri] = LabPage(lab, f"<h1>{html.escape(title)}</h1>\n{note}", [])
                continue
            entry = labs.entry_dir(lab, item.key)
            if not item.cached:
                raise BuildStop(f"动手实验 {lab.name} 的缓存条目不完整：{entry}")
            try:
                stored = lab_stored.page(entry, f"动手实验 {lab.name}")  # plots as files, stored in the entry
            except lab_images.ImageError as exc:
                raise BuildStop(str(exc)) from exc
            images = {}
            for name, data in stored.images.items():
                images[name] = Generated(f"{labs.LABS_DIR}/{lab.name}/{name}", content=data)
                files.append(images[name])
            download = Generated(f"{labs.LABS_DIR}/{lab.name}/{lab.name}.ipynb",
                                 content=lab_stored.download(entry, lab))
            files.append(download)
            bundled = tuple(labs.bundled_files(lab))
            self.pages[lab.uri] = LabPage(lab, stored.body, stored.toc, download, bundled, images)
        return files

    def problems(self) -> list[Problem]:
        """The labs that failed in this build, for the preview's banner."""
        return [
            Problem(f"{labs.LABS_DIR}/{name}.py", 1, f"动手实验 {name} 执行失败：{message}",
                    "改好这个实验并保存，预览会重新执行它")
            for name, message in sorted(self.failed.items())
        ]

    def page_body(self, uri: str, folder: str, target_url: Callable[[str], str | None]) -> str:
        """A lab page's HTML: its executed notebook, with links written relative to the directory URL ``folder``
        (the page's own, or what the builder resolves the page's links against); ``target_url`` gives the URL of
        a file of the site by its uri, None when there is none. Its table of contents is ``self.pages[uri].toc``
        (``llmsite.extension`` gives it to the builder)."""
        found = self.pages[uri]
        body = _links(found.body, uri, folder, target_url, found.lab)
        images = found.images or {}
        if images:
            body = lab_images.link(body, images, lambda name: html.escape(relative_url(images[name].url, folder)))
        if found.download is None:  # the error page of a failing lab (preview only)
            return f'<div class="llm-lab">{body}</div>'
        href = html.escape(relative_url(found.download.url, folder))
        button = (
            f'<a href="{href}" download class="md-content__button md-icon" '
            f'title="下载这个 Notebook（.ipynb），在任意文件夹里运行">{DOWNLOAD_ICON}</a>'
        )
        body = _download_note(body, href, found.bundled)
        return f'{button}\n<div class="llm-lab">{body}</div>'

    def page_inputs(self, uri: str) -> str:
        """What a lab's page is built from (the incremental preview compares it between saves)."""
        found = self.pages.get(uri)
        if found is None:
            return ""
        download = found.download.read_bytes() if found.download is not None else b""
        return repr((found.lab, found.body, found.toc, found.bundled, hashlib.sha256(download).hexdigest()))

    def edit_url(self, uri: str, repo_url: str | None, edit_uri: str | None) -> str | None:
        """The edit button's target for a lab's page: ``labs/<name>.py``, not the page's generated source."""
        found = self.pages.get(uri)
        if found is None or not repo_url or not edit_uri:
            return None
        # edit_uri points into docs/; the lab's source is labs/<name>.py at the repository root.
        return urljoin(repo_url.rstrip("/") + "/", f"{edit_uri}../{found.lab.where}")

    @staticmethod
    def watch(server: Any) -> None:
        """``mkdocs serve`` rebuilds when a lab changes (labs/ is optional, so it is not in ``watch:``)."""
        labs_dir = labs.ROOT / labs.LABS_DIR
        if labs_dir.is_dir():
            server.watch(str(labs_dir))


def _links(content: str, uri: str, folder: str, target_url: Callable[[str], str | None], lab: labs.Lab) -> str:
    """Resolve relative ``.md`` / ``.ipynb`` links like MkDocs does for Markdown; a missing target fails."""
    base = posixpath.dirname(uri)

    def replace(match: re.Match[str]) -> str:
        target_uri = posixpath.normpath(posixpath.join(base, html.unescape(match.group("path"))))
        target = target_url(target_uri)
        if target is None:
            raise BuildStop(
                f"动手实验 {lab.where} 里的链接 {match.group('path')} 指向不存在的页面"
                f"（按 docs/{target_uri} 查找）：链接写成相对于 docs/labs/ 的 .md 路径，例如 ../articles/x.md"
            )
        href = relative_url(target, folder)
        return f'href="{html.escape(href)}{match.group("frag") or ""}"'

    return _LOCAL_LINK.sub(replace, content)


def _download_note(body: str, href: str, bundled: tuple[str, ...]) -> str:
    """A visible download link right under the lab's title: what the notebook needs and what it writes."""
    names = "、".join(f"<code>{html.escape(name)}</code>" for name in bundled)
    note = (
        f'<p class="llm-lab-download"><a class="md-button md-button--primary" href="{href}" download>'
        f'<span class="twemoji">{DOWNLOAD_ICON}</span> 下载这个 Notebook（.ipynb）</a></p>\n'
        "<p>下载后放进任意一个文件夹，用 Jupyter 打开，从头运行即可，只需要装好 torch、numpy 和 matplotlib。"
        f"它的第一格会把实验用到的 {len(bundled)} 个文件（{names}，"
        "和仓库 <code>code/</code> 目录里的代码及它读取的数据一样）"
        f"写到旁边的 <code>{labs.BUNDLE_DIR}/</code> 目录里。</p>"
    )
    end = body.find("</h1>")
    if end < 0:
        return note + body
    end += len("</h1>")
    return body[:end] + "\n" + note + body[end:]
