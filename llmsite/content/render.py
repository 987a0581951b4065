"""Markdown for the generated listings: article cards, pager, route.

Output is Markdown whose bulk (the cards, the route's list) is raw HTML blocks: Python-Markdown
passes them through without parsing their inside, which matters with 1,000 articles (a listing
page's Markdown took 24 ms with ``md_in_html`` blocks). Text from front matter and data files
(titles, descriptions, names) never goes into Markdown syntax, where ``*``, ``[..](javascript:..)``
or ``$`` would be interpreted: it is written as escaped text inside raw HTML elements
(``text_link``, ``text``). Links between the site's own fixed pages stay Markdown ``.md`` links,
validated by MkDocs; stage titles stay Markdown headings (the table of contents).
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Callable
from functools import lru_cache
from math import ceil

from llmsite.content.articles import Article, Site
from llmsite.labs import title as lab_title


def text(value: str) -> str:
    """Contributor text for element content or a double-quoted attribute."""
    return html.escape(value, quote=True)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|$])")  # Python-Markdown's escapable characters, | and $


def md_text(value: str) -> str:
    """Contributor text inside Markdown syntax (a heading): escaped for HTML, then for Markdown."""
    return _MD_SPECIAL.sub(r"\\\1", text(value))


def text_link(from_uri: str, to_uri: str, label: str, cls: str = "") -> str:
    """A raw HTML link to another page source with escaped text (not Markdown)."""
    attr = f' class="{cls}"' if cls else ""
    return f'<a href="{text(_href(from_uri, url_for(to_uri)))}"{attr}>{text(label)}</a>'


@lru_cache(maxsize=16384)
def _link(from_uri: str, to_uri: str) -> str:
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".")


def tag_anchor(tag: str) -> str:
    """Anchor of a tag on the tags page (Material's default tag:{slug})."""
    from pymdownx.slugs import slugify

    return "tag:" + slugify(case="lower")(tag, "-")


def meta_line(article: Article, avatar_href: str = "") -> str:
    """Reading time, author and date: the one copy for the article's header and the cards of the listings."""
    avatar = (f'<img class="llm-avatar" src="{text(avatar_href)}" alt="" width="20" height="20">'
              if avatar_href else "")
    return (
        f'<span class="llm-meta__time">{article.readtime} 分钟阅读</span>'
        f'<span class="llm-meta__author">{avatar}<span title="{text(article.author.bio)}">{text(article.author.name)}'
        "</span></span>"
        f'<time class="llm-meta__date" datetime="{article.date.isoformat()}">{article.date.isoformat()}</time>'
    )


def url_for(uri: str) -> str:
    """Directory URL of a page source (``articles/x.md`` -> ``articles/x/``)."""
    stem = uri.removesuffix(".md").removesuffix(".ipynb")
    if stem == "index" or stem.endswith("/index"):
        return stem.removesuffix("index")
    return stem + "/"


@lru_cache(maxsize=16384)
def _href(from_uri: str, to_url: str) -> str:
    """Relative href between directory URLs (for raw HTML, which MkDocs does not rewrite)."""
    base = url_for(from_uri) or "."
    return posixpath.relpath(to_url or ".", base) + ("/" if to_url.endswith("/") else "")


_CARDS: dict[tuple[str, str, str], str] = {}  # a pure function's results; a preview renders ~1,000 per save


def card(article: Article, from_uri: str, tags_uri: str = "tags.md") -> str:
    """An article's card in a listing (remembered by every field of the article and the two URIs)."""
    key = (repr(article), from_uri, tags_uri)
    found = _CARDS.get(key)
    if found is None:
        if len(_CARDS) > 8192:
            _CARDS.clear()
        found = _CARDS[key] = _card(article, from_uri, tags_uri)
    return found


def _card(article: Article, from_uri: str, tags_uri: str) -> str:
    # Tag anchors are added by the tags plugin after link validation, so these
    # are raw HTML links (checked by tests/site/test_built_html.py instead).
    tags_href = _href(from_uri, url_for(tags_uri))
    tag_links = "".join(
        f'<a class="md-tag" href="{text(tags_href + "#" + tag_anchor(t))}">{text(t)}</a>' for t in article.tags
    )
    # The tag list is a paragraph, not a <nav>: a page of cards would hold a dozen unnamed landmarks.
    return "\n".join(
        [
            '<article class="llm-card">',
            f'<p>{text_link(from_uri, article.src_uri, article.title, "llm-card__title")}</p>',
            f'<p class="llm-card__summary">{text(article.description)}</p>',
            f'<p class="llm-meta">{meta_line(article)}</p>',
            f'<p class="md-tags llm-card__tags">{tag_links}</p>',
            "</article>",
        ]
    )


def pages_count(site: Site, per_page: int) -> int:
    return max(1, ceil(len(site.articles) / per_page))


def page_uri(n: int) -> str:
    return "articles/index.md" if n == 1 else f"articles/page/{n}.md"


Raw = Callable[[str], str]  # what a raw HTML block becomes in the Markdown: itself, or a placeholder


def itself(block: str) -> str:
    return block


def article_list(site: Site, page: int, per_page: int, from_uri: str, raw: Raw = itself) -> str:
    items = site.newest()[(page - 1) * per_page : page * per_page]
    total = pages_count(site, per_page)
    out = [f'<p class="llm-count" markdown>共 {len(site.articles)} 篇文章，按发布日期从新到旧排列。'
           f"也可以按[标签]({_link(from_uri, 'tags.md')})或[学习路线]({_link(from_uri, 'route.md')})浏览。</p>", ""]
    out += [raw("\n".join(['<div class="llm-cards">', *(card(a, from_uri) for a in items), "</div>"])), ""]
    if total > 1:
        links = []
        for n in range(1, total + 1):
            target = _link(from_uri, page_uri(n))
            links.append(f"**{n}**" if n == page else f"[{n}]({target})")
        prev_link = f"[← 较新]({_link(from_uri, page_uri(page - 1))})" if page > 1 else ""
        next_link = f"[较早 →]({_link(from_uri, page_uri(page + 1))})" if page < total else ""
        out += [f'<nav class="llm-pager" markdown>{prev_link} {" ".join(links)} {next_link}</nav>', ""]
    return "\n".join(out)


def latest(site: Site, n: int, from_uri: str, raw: Raw = itself) -> str:
    out = [raw("\n".join(['<div class="llm-cards">', *(card(a, from_uri) for a in site.newest(n)), "</div>"])), ""]
    out += [f"[查看全部文章 →]({_link(from_uri, 'articles/index.md')})", ""]
    return "\n".join(out)


def route_overview(site: Site, from_uri: str) -> str:
    out: list[str] = []
    for i, stage in enumerate(site.route.stages):
        members = [a for a in site.articles.values() if a.stage == i]
        line = f"{i + 1}. <strong>{text(stage.title)}</strong>（{len(members)} 篇）：{text(stage.summary)}"
        if members:
            line += f"从{text_link(from_uri, members[0].src_uri, members[0].title)}开始。"
        out.append(line)
    out += ["", f"[打开完整的学习路线 →]({_link(from_uri, 'route.md')})", ""]
    return "\n".join(out)


# The reading progress (docs/assets/javascripts/progress.js) shows, fills and wires these; hidden without the script.
PROGRESS_TOOLS = "\n".join([
    '<div class="llm-progress" role="group" aria-label="阅读进度" data-llm-progress hidden>',
    '<p class="llm-progress__tools">'
    '<button type="button" class="llm-btn" data-llm-do="export">导出进度</button>'
    '<button type="button" class="llm-btn" data-llm-do="import">导入进度…</button>'
    '<button type="button" class="llm-btn" data-llm-do="reset">清除进度</button>'
    '<input type="file" accept=".json,application/json" hidden></p>',
    '<p class="llm-progress__note" role="status"></p>',
    "</div>",
])


def stage_bar(stage: int, articles: int) -> str:
    """A stage's progress bar (its count is filled in by progress.js)."""
    return (f'<p class="llm-stage" hidden><label for="llm-stage-{stage}">本阶段已读 <span>0</span> / {articles}</label>'
            f'<progress id="llm-stage-{stage}" max="{articles}" value="0"></progress></p>')


PDF_URL = "downloads/llm-route.pdf"  # where `python -m llmsite pdf` writes the route's book inside the site


def route_pdf(from_uri: str, published: bool) -> str:
    """The route page's link to the PDF of the whole route, when the deploy publishes one (plugin option ``pdf``)."""
    if not published:
        return ""
    href = text(_href(from_uri, PDF_URL))
    return (f'<p class="llm-pdf"><a href="{href}" download>下载整条学习路线的 PDF</a>'
            "：全部文章按阅读顺序排好，带目录和书签，公式和图与网页相同；每篇文章的开头写着它的在线地址。</p>")


def route_page(site: Site, from_uri: str, raw: Raw = itself) -> str:
    out: list[str] = [raw(PROGRESS_TOOLS), ""]
    number = 0
    for i, stage in enumerate(site.route.stages):
        out += [f"## {md_text(stage.title)}", "", f"<p>{text(stage.summary)}</p>", ""]
        members = [a for a in site.articles.values() if a.stage == i]
        if not members:
            continue
        # numbering continues across stages: the route is one ordered path;
        # data-llm-route-*: which stage and article each list and item is, for the reading progress
        items = [stage_bar(i + 1, len(members)),
                 f'<ol class="llm-route" start="{number + 1}" data-llm-route-stage="{i + 1}">']
        for a in members:
            number += 1
            items.append(f'<li data-llm-route-article="{text(a.slug)}">'
                         f"<p>{text_link(from_uri, a.src_uri, a.title)}：{text(a.description)}"
                         f"（{a.readtime} 分钟阅读）</p>")
            if a.labs:
                items.append("<ul>")
                for lab in a.labs:
                    title = lab_title(lab) or f"动手实验：{posixpath.basename(lab)}"
                    items.append(f"<li>{text_link(from_uri, lab, title)}</li>")
                items.append("</ul>")
            items.append("</li>")
        out += [raw("\n".join([*items, "</ol>"])), ""]
    return "\n".join(out)
