"""After Zensical: the built pages finished the way the MkDocs adapter finishes its own.

- the Atom feed (``llmsite.content.feed``);
- every page in one read and one write (``pages``):
  - its formulas: arithmatex spans become KaTeX's HTML (``llmsite.tex``; a formula KaTeX rejects stops the
    build with the author's ``docs/...md:line``). Zensical's search index is written before this, from the pages'
    text, so it holds each formula's TeX, as Material's does;
  - an article's previous / next (``<link rel>`` in its head, the two links of its footer): the route's
    neighbours, as the MkDocs adapter sets them (``content.link_neighbours``); Zensical gives the sidebar's,
    labs included;
  - what the MkDocs adapter does in ``on_post_page``: one stylesheet (``llmsite.stylesheets``), the early palette
    script (``llmsite.presettle``), the Content-Security-Policy with the hashes of every inline script of the site
    (``llmsite.csp``);
- then the site, as in ``on_post_build``: the policy corrected where the guess was wrong, the site's own scripts
  and styles minified, the bundled stylesheet and the offline list written;
- the site moved to ``site-zensical/`` in one rename (the previous one stays whole until then).

Not here yet: the compacted search index (Zensical writes its own ``search.json``). ARCHITECTURE.md lists what the
Zensical build lacks.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from markupsafe import escape

from llmsite import atomic, csp, minify, offline, paths, presettle, stylesheets, tex
from llmsite.content import feed
from llmsite.content.pages import article_url
from llmsite.features.files import relative_url
from llmsite.problems import ContentError, Problem
from llmsite.zensical.state import State


def _sources(state: State) -> dict[str, tuple[str, str]]:
    """Page URL -> (path for messages, Markdown source), for every page the build renders."""
    out: dict[str, tuple[str, str]] = {}
    for uri in state.pages():
        try:
            found = state.source(uri)
        except (OSError, UnicodeDecodeError):
            continue
        url = state.url(uri)
        if found is not None and url is not None:
            out[url] = found
    return out


def _formulas(html: str, url: str, sources: dict[str, tuple[str, str]]) -> tuple[str, list[Problem]]:
    """A page's formulas as KaTeX's HTML; a formula KaTeX rejects is a problem at its line of the page's source."""
    if 'class="arithmatex"' not in html:
        return html, []
    where, source = sources.get(url, (f"site-zensical/{url}", ""))
    out, found = tex.render_arithmatex(html, source, where)
    return (html if found else out), found


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


_HEAD_NEIGHBOUR = re.compile(r'[ \t]*<link rel="(prev|next)" href="[^"]*">\n')
_CANONICAL = re.compile(r'<link rel="canonical" href="[^"]*">\n')
_FOOTER_LINK = re.compile(
    r'<a href="[^"]*" class="md-footer__link md-footer__link--(?P<rel>prev|next)" '
    r'aria-label="(?P<direction>[^":]*): [^"]*">(?P<body>.*?)</a>', re.S)
_FOOTER_TITLE = re.compile(r'(<div class="md-ellipsis">\s*).*?(\s*</div>)', re.S)


def _neighbours(html: str, article: Any, state: State) -> str:
    """An article's previous / next, in its head and its footer, set to the route's."""
    articles = state.site.articles
    want = {"prev": articles.get(article.prev or ""), "next": articles.get(article.next or "")}
    here = article_url(article)

    def href(other: Any) -> str:
        return str(escape(relative_url(article_url(other), here)))

    head = "".join(f'<link rel="{rel}" href="{href(other)}">\n' for rel, other in want.items() if other)
    html = _HEAD_NEIGHBOUR.sub("", html)
    canonical = _CANONICAL.search(html)
    if canonical is None:
        raise ContentError([Problem(f"site-zensical/{here}index.html", 1, "页面里没有 <link rel=canonical>",
                                    "Zensical 的模板变了：更新 llmsite/zensical/finish.py 的 _neighbours")])
    html = html[: canonical.end()] + head + html[canonical.end():]
    found: set[str] = set()

    def footer(match: re.Match[str]) -> str:
        rel = match.group("rel")
        found.add(rel)
        other = want[rel]
        if other is None:
            return ""
        title = str(escape(other.title))
        body = _FOOTER_TITLE.sub(lambda m: m.group(1) + title + m.group(2), match.group("body"), count=1)
        return (f'<a href="{href(other)}" class="md-footer__link md-footer__link--{rel}" '
                f'aria-label="{match.group("direction")}: {title}">{body}</a>')

    html = _FOOTER_LINK.sub(footer, html)
    missing = [rel for rel, other in want.items() if other is not None and rel not in found]
    if missing:
        raise ContentError([Problem(f"site-zensical/{here}index.html", 1,
                                    f"页脚里没有可以换成学习路线邻居的 {missing} 链接",
                                    "Zensical 的侧栏里这篇文章两边应各有一页：检查 nav")])
    return html


CSP_HASHES = paths.CACHE / "csp" / "zensical-hashes.json"  # this builder's guess (its templates differ from Material's)


def _url(site: Path, page: Path) -> str:
    url = page.relative_to(site).as_posix()
    return "" if url == "index.html" else url.removesuffix("index.html")


def pages(state: State, site: Path, values: dict[str, Any]) -> dict[str, int]:
    """Finish every page in one read and one write: its formulas, an article's route neighbours, then what the
    MkDocs adapter's ``on_post_page`` does; then the site, as its ``on_post_build`` does."""
    theme = values.get("theme") or {}
    early = presettle.early_script(theme.get("palette") if isinstance(theme, dict) else None)
    bundle = stylesheets.Bundle(urlsplit(values.get("site_url") or "").path or "/")
    policy = csp.Policy(values, CSP_HASHES)
    sources = _sources(state)
    articles = {article_url(article): article for article in state.site.articles.values()}
    problems: list[Problem] = []
    counts = {"pages": 0, "articles": 0}
    for page in sorted(site.rglob("*.html")):
        url = _url(site, page)
        html = page.read_text(encoding="utf-8")
        html, found = _formulas(html, url, sources)
        if found:
            problems += found
            continue
        if url in articles:
            html = _neighbours(html, articles.pop(url), state)
            counts["articles"] += 1
        try:
            html = bundle.link(html, url, f"site-zensical/{page.relative_to(site).as_posix()}")
        except stylesheets.StylesheetError as exc:
            raise ContentError([Problem(f"site-zensical/{url}", 1, str(exc), "检查 mkdocs.yml 的 extra_css")]) from exc
        html = policy.add(presettle.inject(html, early))
        atomic.write_text(page, html)
        counts["pages"] += 1
    if problems:
        raise ContentError(problems)
    if articles:  # an article Zensical did not write
        raise ContentError([Problem(f"site-zensical/{url}index.html", 1, "Zensical 没有写出这篇文章的页面",
                                    "检查 nav 和 Zensical 的输出") for url in sorted(articles)])
    counts["csp_rewritten"] = policy.finish(site)
    counts["minified"] = minify.minify_site(site, paths.DOCS)
    bundle.write(site)  # after minify: the bundle holds the sheets as readers get them
    counts["offline_files"] = len(offline.write(site)["files"])
    return counts
