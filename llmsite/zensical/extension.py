"""The site's Markdown extension (``llmsite.extension``) as Zensical loads it
(``markdown_extensions: - llmsite.zensical.extension``), with the adapter that tells it:

- the page being rendered: the one Zensical's ``ContextPreprocessor`` names, read from the staged build's
  files (``state.current()``);
- links to lab notebooks point at their staged pages (``labs/<name>.md``), and a lab page's links are relative
  to its staged source's folder;
- a listing's raw HTML has its links made relative to the page's source (``rebase``): Zensical rewrites every
  relative link of a page's HTML that way.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from markdown import Markdown

from llmsite.extension import Adapter, Features, SiteExtension
from llmsite.zensical import state as state_mod
from llmsite.zensical.stage import LAB_SUFFIX

_RELATIVE = re.compile(r'(\s(?:href|src)=")(?![a-z][a-z0-9+.-]*:|/|#)([^"#?]*)')


def rebase(html: str, page_url: str, uri: str) -> str:
    """Raw HTML's relative links, written relative to the page's URL (what MkDocs publishes as is), made relative
    to the folder of the page's source: Zensical rewrites every relative link of a page that way."""
    folder = posixpath.dirname(uri)

    def replace(match: re.Match[str]) -> str:
        href = match.group(2)
        if not href:  # the page itself ("" or only a query / fragment)
            return match.group(0)
        target = posixpath.normpath(posixpath.join(page_url, href))  # page_url is a folder: articles/x/
        out = posixpath.relpath(target, folder or ".")
        if href.endswith("/") and not out.endswith("/"):
            out += "/"
        return match.group(1) + ("./" if out == "." else out)

    return _RELATIVE.sub(replace, html)


_LAB_LINK = re.compile(r"(\]\([^)\s]*?labs/[\w-]+)\.ipynb(?=[#)\s])")


@dataclass
class _File:
    src_uri: str
    content_string: str


@dataclass
class _Page:
    """What the feature objects read of a page (``page.file.src_uri``, ``page.file.content_string``,
    ``page.url``), named as MkDocs names them."""

    file: _File
    url: str
    meta: dict[str, Any] = field(default_factory=dict)
    toc: Any = None


def _rendering(md: Markdown) -> Any:
    from zensical.extensions.context import ContextPreprocessor

    found = ContextPreprocessor.from_markdown(md)
    if found is None:
        raise RuntimeError("llmsite.zensical.extension 只在 Zensical 的构建里使用（找不到正在渲染的页面）")
    return found.page


def _source_uri(path: str) -> str:
    """The page's uri in the MkDocs build (a staged ``labs/<name>.md`` is ``labs/<name>.ipynb``)."""
    if path.startswith("labs/") and path.endswith(".md"):
        lab = path[: -len(".md")] + LAB_SUFFIX
        if lab in state_mod.current().labs.pages:
            return lab
    return path


def _page(md: Markdown) -> _Page:
    rendering = _rendering(md)
    uri = _source_uri(rendering.path)
    found = state_mod.current().source(uri)  # the author's file in docs/, or a generated one
    return _Page(_File(uri, found[1] if found is not None else ""), rendering.url)


class ZensicalAdapter(Adapter):
    """The page Zensical is rendering, and how Zensical publishes what the extension writes."""

    def rendering(self, md: Markdown) -> _Page:
        return _page(md)

    def features(self) -> Features:
        state = state_mod.current()
        return Features(site=state.site, listings=state.listings, exercises=state.exercises,
                        playground=state.playground, figures=state.figures, labs=state.labs,
                        ask=bool(state.repo_url))

    def target_url(self, uri: str) -> str | None:
        return state_mod.current().url(uri)

    def links(self, markdown: str) -> str:
        return _LAB_LINK.sub(r"\1.md", markdown)  # a lab's page is staged as labs/<name>.md

    def lab_folder(self, page: Any) -> str:
        # the folder of the staged source (labs/): Zensical rewrites every relative link in a page's HTML as
        # relative to the Markdown file it came from (MkDocs publishes the extension's HTML as it is)
        return page.file.src_uri.rsplit("/", 1)[0] + "/"

    def listing_html(self, block: str, page: Any) -> str:
        return rebase(block, page.url, page.file.src_uri)


def makeExtension(**kwargs: Any) -> SiteExtension:
    return SiteExtension(ZensicalAdapter())
