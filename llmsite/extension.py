"""The site's Python-Markdown extension: what every page's Markdown becomes, the same under every builder.

Each builder's adapter registers ``SiteExtension(adapter)`` (MkDocs and ProperDocs: ``llmsite.mkdocs.plugin``;
Zensical: ``llmsite.zensical.extension``) and tells it, through an ``Adapter``, which page is being rendered
and the build's feature objects. The extension then does the same two things for every builder:

- first of all preprocessors (priority 100, before the snippets' 32 and MkDocs's raw-HTML scan at 21): the
  listing markers, the exercises, the playground and the figures of the page are expanded into Markdown and
  HTML, so every later step (snippets, links, anchors, the table of contents) sees them as the author's text;
- after the last postprocessor (priority 0, once raw HTML is restored at 30): the listings' HTML is put back,
  a lab page gets its executed notebook (and its table of contents), and code blocks, tables and the 「提问」
  slots get their settled markup (``llmsite.presettle``).

The toc extension runs the postprocessors on each heading's HTML as well; ``_Whole``, the last
treeprocessor, marks the point from which they run on the whole page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markdown import Extension, Markdown
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

from llmsite import presettle
from llmsite.problems import BuildStop

# A lab page's Markdown body (under its front matter). Python-Markdown returns an empty page without running any
# processor, so a lab page needs a body for ``_Settle`` to put its notebook in.
LAB_BODY = "<!-- llmsite:lab -->"


@dataclass
class Features:
    """One build's feature objects (``llmsite.features``), computed before the pages are rendered."""

    site: Any  # llmsite.content.articles.Site
    listings: Any
    exercises: Any
    playground: Any
    figures: Any
    labs: Any
    ask: bool  # the articles get 「提问」 slots (the site has a repository to ask in)


class Adapter:
    """What a builder's adapter tells the extension. The defaults are MkDocs's: it publishes a page's HTML as
    the extension returns it."""

    def rendering(self, md: Markdown) -> Any | None:
        """The page being rendered (``.file.src_uri``, ``.file.content_string``, ``.url``), or None."""
        raise NotImplementedError

    def features(self) -> Features:
        raise NotImplementedError

    def links(self, markdown: str) -> str:
        """The expanded Markdown's links, as this builder resolves them."""
        return markdown

    def target_url(self, uri: str) -> str | None:
        """The URL of a file of the site (a page or a generated file) by its uri; None when the site has none."""
        raise NotImplementedError

    def lab_folder(self, page: Any) -> str:
        """The directory URL a lab page's links are written relative to (the page's own, for MkDocs)."""
        return page.url

    def stopped(self, exc: BuildStop) -> None:
        """A feature stopped the build while the page rendered: raise the builder's own error."""
        raise exc

    def listing_html(self, block: str, page: Any) -> str:
        """A listing's HTML (links relative to the page's URL), as this builder publishes a page's raw HTML."""
        return block


def toc_tokens(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A lab's stored toc tokens (level, id, name, children: what MkDocs reads) with the two keys Zensical reads
    too: ``html`` (the heading's text as the page shows it: ``name``, escaped as MkDocs prints it) and
    ``data-toc-label`` (none)."""
    return [{"html": t["name"], "data-toc-label": "", **t, "children": toc_tokens(t.get("children", []))}
            for t in tokens]


class _Markers(Preprocessor):
    def __init__(self, md: Markdown, adapter: Adapter) -> None:
        super().__init__(md)
        self.adapter = adapter

    def run(self, lines: list[str]) -> list[str]:
        try:
            return self._run(lines)
        except BuildStop as exc:
            self.adapter.stopped(exc)
            raise

    def _run(self, lines: list[str]) -> list[str]:
        self.md.llmsite_whole = False  # type: ignore[attr-defined]
        page = self.adapter.rendering(self.md)
        if page is None:
            return lines
        features = self.adapter.features()
        uri = page.file.src_uri
        if uri in features.labs.pages:  # LAB_BODY: the postprocessor puts the executed notebook there
            return lines
        markdown = "\n".join(lines)
        markdown = features.listings.expand(markdown, uri, defer=True)
        markdown = features.exercises.expand(markdown, uri, page.file.content_string)
        markdown = features.playground.expand(markdown, page)
        markdown = features.figures.expand(markdown, page)
        return self.adapter.links(markdown).split("\n")


class _Whole(Treeprocessor):
    """The end of the tree's processing: postprocessors run on the whole page from here on."""

    def run(self, root: Any) -> None:
        self.md.llmsite_whole = True  # type: ignore[attr-defined]


class _Settle(Postprocessor):
    def __init__(self, md: Markdown, adapter: Adapter) -> None:
        super().__init__(md)
        self.adapter = adapter

    def run(self, text: str) -> str:
        try:
            return self._run(text)
        except BuildStop as exc:
            self.adapter.stopped(exc)
            raise

    def _run(self, text: str) -> str:
        if not getattr(self.md, "llmsite_whole", False):
            return text
        page = self.adapter.rendering(self.md)
        if page is None:
            return text
        features = self.adapter.features()
        uri = page.file.src_uri
        lab = features.labs.pages.get(uri)
        if lab is not None:
            text = features.labs.page_body(uri, self.adapter.lab_folder(page), self.adapter.target_url)
            self.md.toc_tokens = toc_tokens(lab.toc)  # type: ignore[attr-defined]
        text = features.listings.fill(text, uri, lambda block: self.adapter.listing_html(block, page))
        text = presettle.table_slots(presettle.code_blocks(text))
        if features.ask and features.site.by_uri(uri) is not None:  # feedback.js runs on the articles
            text = presettle.ask_slots(text)
        return text


class SiteExtension(Extension):
    def __init__(self, adapter: Adapter) -> None:
        super().__init__()
        self.adapter = adapter

    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_Markers(md, self.adapter), "llmsite_markers", 100)
        md.treeprocessors.register(_Whole(md), "llmsite_whole", -100)  # after every other treeprocessor
        md.postprocessors.register(_Settle(md, self.adapter), "llmsite_settle", 0)
