"""The Python-Markdown extension Zensical runs on every page (``markdown_extensions: - llmsite.zensical.extension``).

Before any other preprocessor (the MkDocs adapter does the same in ``on_page_markdown``), for the page Zensical is
rendering (its ``ContextPreprocessor`` names it): the listing markers, the exercises, the playground and the
figures are expanded, and links to lab notebooks point at their staged pages. After the last postprocessor
(``on_page_content`` in the MkDocs adapter): the listings' raw blocks are put back, a lab page gets its
executed notebook, and code blocks, tables and the 「提问」 slots get their settled markup (``llmsite.presettle``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from markdown import Extension, Markdown
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

from llmsite import paths, presettle
from llmsite.zensical import state as state_mod
from llmsite.zensical.stage import LAB_BODY, LAB_SUFFIX

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
    abs_src_path: str
    content_string: str


@dataclass
class _Page:
    """What the feature objects read of a page (``page.file.src_uri``, ``page.url``), as MkDocs names it."""

    file: Any  # MkDocs's File (a data class here) or _File
    url: str
    meta: dict[str, Any] = field(default_factory=dict)
    toc: Any = None


class _SourceFolder(str):
    """A lab page's file as ``Labs.page_content`` reads it: its ``src_uri``, and, as the base its links are made
    relative to, the folder of its staged source (``labs/``): Zensical rewrites every relative link in a page's
    HTML as relative to the Markdown file it came from (MkDocs leaves the HTML of ``on_page_content`` alone)."""

    src_uri: str

    def __new__(cls, uri: str) -> _SourceFolder:
        folder = str.__new__(cls, uri.rsplit("/", 1)[0] + "/")
        folder.src_uri = uri
        return folder


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
    file = state_mod.current().files.get_file_from_path(uri)  # the author's file in docs/, or a generated one
    if file is None:
        source = paths.DOCS / uri
        text = source.read_text(encoding="utf-8") if source.is_file() else ""
        file = _File(uri, str(source) if source.is_file() else "", text)
    return _Page(file, rendering.url)


class _Markers(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        self.md.llmsite_whole = False  # type: ignore[attr-defined]
        state = state_mod.current()
        page = _page(self.md)
        uri = page.file.src_uri
        if uri in state.labs.pages:
            return [LAB_BODY]  # the lab's executed notebook replaces it (_Settle)
        markdown = "\n".join(lines)
        markdown = state.listings.expand(markdown, uri, defer=True)
        markdown = state.exercises.expand(markdown, uri, page.file.content_string)
        markdown = state.playground.expand(markdown, page)
        markdown = state.figures.expand(markdown, page)
        markdown = _LAB_LINK.sub(r"\1.md", markdown)
        return markdown.split("\n")


class _Whole(Treeprocessor):
    """Marks the end of the tree's processing: postprocessors run on the whole page from now on (the toc
    extension runs them on each heading's HTML before)."""

    def run(self, root: Any) -> None:
        self.md.llmsite_whole = True  # type: ignore[attr-defined]


class _Settle(Postprocessor):
    def run(self, text: str) -> str:
        if not getattr(self.md, "llmsite_whole", False):
            return text
        state = state_mod.current()
        page = _page(self.md)
        uri = page.file.src_uri
        if uri in state.labs.pages:
            text = state.labs.page_content("", _Page(_SourceFolder(uri), page.url), state.files)
            # the notebook's headings, as toc tokens: Zensical builds the page's table of contents from them
            self.md.toc_tokens = _toc_tokens(state.labs.pages[uri].toc)  # type: ignore[attr-defined]
        text = state.listings.fill(text, uri, lambda block: rebase(block, page.url, uri))
        text = presettle.table_slots(presettle.code_blocks(text))
        if state.options.get("repo_url") and state.site.by_uri(uri) is not None:
            text = presettle.ask_slots(text)
        return text


def _toc_tokens(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lab's stored toc tokens (what MkDocs reads: level, id, name, children) with the two keys Zensical reads
    too: ``html`` (the heading's text as the page shows it: ``name``, escaped as MkDocs prints it) and
    ``data-toc-label`` (none)."""
    return [{"html": t["name"], "data-toc-label": "", **t, "children": _toc_tokens(t.get("children", []))}
            for t in tokens]


class SiteExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_Markers(md), "llmsite_markers", 100)  # before snippets (32)
        md.treeprocessors.register(_Whole(md), "llmsite_whole", -100)  # after every other treeprocessor
        md.postprocessors.register(_Settle(md), "llmsite_settle", 0)  # after raw HTML is restored (30)


def makeExtension(**kwargs: Any) -> SiteExtension:
    return SiteExtension(**kwargs)
