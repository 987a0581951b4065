"""One stylesheet for every page instead of eight (issue 29).

Each page used to link eight stylesheets in ``<head>``: Material's two, KaTeX's and the site's five. All of them
block the first paint, and on a phone's slow connection each is a request of its own: in Lighthouse's mobile
preset they were the longest chain before anything was drawn (``bench/README.md``, round thirteen).

A published build (not the preview: it keeps the files as they are, like ``llmsite/minify.py``) therefore links
one file, ``assets/stylesheets/site.css``: the same sheets, in the same order, one after the other, with every
relative ``url()`` rewritten for the new folder (KaTeX's fonts). The cascade is the same: rules keep their order,
and a rule's origin and specificity do not depend on the file it came from.

``Bundle`` is the state of one build: ``link`` replaces the run of ``<link rel="stylesheet">`` in a page's
``<head>`` with one link and records which sheets it stood for (every page must name the same ones, in the same
order, or the build stops naming the page); ``write`` writes the bundle once every page is written (after the
site's own sheets are minified). Lab pages have no sheet of their own: ``lab.css`` is in ``extra_css`` (its rules
are all under ``.llm-lab``), so instant navigation never has a stylesheet to add or remove.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from llmsite import atomic

BUNDLE = "assets/stylesheets/site.css"
_FOLDER = posixpath.dirname(BUNDLE)
# The run of stylesheet links Material's template writes in <head>, one per line.
_RUN = re.compile(r'<link rel="stylesheet" href="[^"]*">(?:\s*<link rel="stylesheet" href="[^"]*">)*')
LINK = re.compile(r'<link rel="stylesheet" href="([^"]*)">')  # one stylesheet link as Material writes it
CSS_URL = re.compile(r"""url\(\s*(["']?)([^"')]*)\1\s*\)""")  # a url() in CSS: its quote, its target
_CHARSET = re.compile(r'^@charset\s+"[^"]*";')
_ABSOLUTE = re.compile(r"^(?:[a-zA-Z][\w+.-]*:|/|#)")


class StylesheetError(ValueError):
    """A page's stylesheets cannot be bundled; the message names the page."""


class Bundle:
    """The stylesheets of one build, bundled into ``BUNDLE``."""

    def __init__(self, base_path: str = "/") -> None:
        self.base_path = base_path if base_path.endswith("/") else base_path + "/"  # site_url's path
        self.sheets: tuple[str, ...] | None = None  # site-relative paths, in the pages' order

    def _site_path(self, href: str, page_url: str, where: str) -> str:
        if href.startswith(self.base_path):  # the 404 page links by absolute path
            return href.removeprefix(self.base_path)
        if _ABSOLUTE.match(href):
            raise StylesheetError(f"{where}：样式表 {href} 不是本站的文件，不能合并")
        return posixpath.normpath(posixpath.join(_folder_of(page_url), href))

    def link(self, html: str, page_url: str, where: str) -> str:
        """``html`` with its stylesheet links in ``<head>`` replaced by one link to ``BUNDLE``."""
        head_end = html.find("</head>")
        match = _RUN.search(html, 0, head_end if head_end >= 0 else len(html))
        if match is None:
            return html
        hrefs = LINK.findall(match.group(0))
        sheets = tuple(self._site_path(href, page_url, where) for href in hrefs)
        if self.sheets is None:
            self.sheets = sheets
        elif sheets != self.sheets:
            raise StylesheetError(
                f"{where}：这一页的样式表和其他页面不同，不能合并成一个文件：\n  这一页：{', '.join(sheets)}"
                f"\n  其他页：{', '.join(self.sheets)}"
            )
        first = hrefs[0]
        if first.endswith(sheets[0]):  # keep the page's way of reaching the site's root ("../../" or "/sub/")
            href = first[: len(first) - len(sheets[0])] + BUNDLE
        else:
            href = posixpath.relpath(BUNDLE, _folder_of(page_url) or ".")
        return f'{html[: match.start()]}<link rel="stylesheet" href="{href}">{html[match.end():]}'

    def write(self, site_dir: Path) -> int:
        """Write ``BUNDLE`` from the sheets as the site holds them; its size in bytes (0 when no page linked any)."""
        if not self.sheets:
            return 0
        data = concatenate({sheet: (site_dir / sheet).read_text(encoding="utf-8") for sheet in self.sheets})
        raw = data.encode("utf-8")
        atomic.write_bytes(site_dir / BUNDLE, raw)
        return len(raw)


def _folder_of(page_url: str) -> str:
    """The folder a page's relative links start from: ``articles/x`` for ``articles/x/``, ``""`` for the home page."""
    return page_url.rsplit("/", 1)[0] if "/" in page_url else ""


def concatenate(sheets: dict[str, str]) -> str:
    """The sheets (``{site path: text}``, in order) as one stylesheet at ``BUNDLE``."""
    parts = []
    for index, (path, text) in enumerate(sheets.items()):
        if index:  # @charset counts only at the very start of a file; the first sheet's stays there
            text = _CHARSET.sub("", text.lstrip("\ufeff"))
        if "@import" in text:
            raise StylesheetError(
                f"{path}：含有 @import，合并后不再生效；请把被导入的样式表直接列在 mkdocs.yml 的 extra_css"
            )
        parts.append(rebase_urls(text, posixpath.dirname(path)))
    return "\n".join(parts) + "\n"


def rebase_urls(css: str, folder: str) -> str:
    """``css`` written for ``folder``, its relative ``url()`` references rewritten to hold from ``BUNDLE``'s folder."""

    def replace(match: re.Match[str]) -> str:
        quote, target = match.group(1), match.group(2)
        if not target or _ABSOLUTE.match(target) or folder == _FOLDER:
            return match.group(0)
        moved = posixpath.relpath(posixpath.normpath(posixpath.join(folder, target)), _FOLDER)
        return f"url({quote}{moved}{quote})"

    return CSS_URL.sub(replace, css)
