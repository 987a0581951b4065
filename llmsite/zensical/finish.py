"""After Zensical: the built pages finished the way the MkDocs adapter finishes its own.

- formulas: every page's arithmatex spans become KaTeX's HTML (``llmsite.tex``; a formula KaTeX rejects stops
  the build with the author's ``docs/...md:line``). Zensical's search index is written before this, from the
  pages' text, so it holds each formula's TeX, as Material's does;
- the Atom feed (``llmsite.mkdocs.feed``);
- the site moved to ``site-zensical/`` in one rename (the previous one stays whole until then).

Not yet here (the MkDocs adapter does them in ``on_post_page`` / ``on_post_build``): the one stylesheet per page,
the early palette script, the Content-Security-Policy, the compacted search index, minification and the
offline list. ARCHITECTURE.md lists them under what the Zensical build lacks.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from llmsite import atomic, paths, tex
from llmsite.mkdocs import feed
from llmsite.problems import ContentError, Problem
from llmsite.zensical.state import State


def _sources(state: State) -> dict[str, tuple[str, str]]:
    """Page URL -> (path for messages, Markdown source), for every page the build renders."""
    out: dict[str, tuple[str, str]] = {}
    for file in state.files:
        if not file.src_uri.endswith((".md", ".ipynb")):
            continue
        where = paths.rel(Path(file.abs_src_path)) if file.abs_src_path else f"docs/{file.src_uri}"
        try:
            text = file.content_string
        except (OSError, UnicodeDecodeError):
            continue
        out[file.url] = (where, text)
    return out


def formulas(state: State, site: Path) -> int:
    """Render the formulas of every page; returns how many pages had some."""
    sources = _sources(state)
    problems: list[Problem] = []
    pages = 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        if 'class="arithmatex"' not in html:
            continue
        url = page.relative_to(site).as_posix()
        url = "" if url == "index.html" else url.removesuffix("index.html")
        where, source = sources.get(url, (f"site-zensical/{url}", ""))
        out, found = tex.render_arithmatex(html, source, where)
        problems += found
        if not found:
            atomic.write_text(page, out)
            pages += 1
    if problems:
        raise ContentError(problems)
    return pages


def write_feed(state: State, site: Path, values: dict[str, Any]) -> None:
    feed.write(state.site, {**values, "site_dir": str(site)})


def publish(built: Path, target: Path) -> None:
    """Replace ``target`` with ``built`` (renames in one filesystem: the old site stays whole until the swap)."""
    old = target.with_name(target.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    shutil.move(built, target)  # a rename within one filesystem
    if old.exists():
        shutil.rmtree(old)
