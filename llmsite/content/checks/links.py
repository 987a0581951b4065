"""Relative links must reach an existing page of docs/, and anchors an existing id.

Markdown links and images (inline and reference definitions) outside code and
math are resolved relative to the article's file, as MkDocs resolves them
(``/x.md`` from docs/). Anchors (``#x`` on the same page or ``page.md#x``) are
checked against the target page's real ids (see ``anchors.py``). Links with a
scheme (``https:``, ``mailto:``) or ``//host`` are external and not fetched;
``javascript:`` links are rejected. ``.md`` links in raw HTML are rejected,
because MkDocs does not rewrite them into page URLs.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from llmsite.content.checks.text import LINK_DEST, REF_DEF, line_at
from llmsite.labs import generated_page
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HTML_MD_HREF = re.compile(r"""<a\b[^<>]*\bhref\s*=\s*["']?(?P<href>[^"'\s>]+\.md(?:#[^"'\s>]*)?)["'\s>]""", re.I)
_SHOWN_IDS = 12


def _targets(text: str) -> list[tuple[int, str]]:
    found = [(m.start(), m.group("dest")) for m in LINK_DEST.finditer(text)]
    found += [(m.start(), m.group("dest")) for m in REF_DEF.finditer(text)]
    return sorted((pos, dest.strip().strip("<>").strip()) for pos, dest in found)


def _suggest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"是不是想写 {close[0]}？" if close else ""


def _missing_fix(doc: Document, ctx: Context, resolved: Path) -> str:
    folder = doc.file.parent.resolve()
    pages = [posixpath.relpath(p.as_posix(), folder.as_posix()) for p in ctx.docs.resolve().rglob("*.md")]
    hint = _suggest(posixpath.relpath(resolved.as_posix(), folder.as_posix()), pages)
    return (hint + "；" if hint else "") + f"相对路径从本文所在的目录 {ctx.rel(folder)}/ 算起"


def _page_for(url_path: Path) -> Path | None:
    """The Markdown file behind a directory URL such as ``route/`` (route.md or route/index.md)."""
    for candidate in (url_path.with_name(url_path.name + ".md"), url_path / "index.md"):
        if candidate.is_file():
            return candidate
    return None


def _check_anchor(doc: Document, ctx: Context, target: Path, anchor: str, line: int) -> list[Problem]:
    ids = ctx.ids(target)
    if anchor in ids:
        return []
    same = target.resolve() == doc.file.resolve()
    where = "本页" if same else f" {ctx.rel(target)} "
    headings = sorted(i for i in ids if not i.startswith(("fn:", "fnref:", "__")))
    hint = _suggest(anchor, headings)
    shown = "、".join(f"#{i}" for i in headings[:_SHOWN_IDS]) + ("……" if len(headings) > _SHOWN_IDS else "")
    fix = (
        hint + "；" if hint else ""
    ) + "标题的锚点由标题文字生成：英文转成小写、空格变成 -、去掉标点，例如「## 为什么要缩放」对应 #为什么要缩放"
    if shown:
        fix += f"；{where.strip()} 已有：{shown}"
    return [Problem(doc.path, line, f"锚点 #{anchor} 在{where}中不存在", fix)]


def _check_target(doc: Document, ctx: Context, raw: str, line: int) -> list[Problem]:
    if not raw:
        return [Problem(doc.path, line, "链接地址是空的", "在圆括号里写上链接目标，例如 [学习路线](../route.md)")]
    if _SCHEME.match(raw):
        if raw.lower().startswith(("javascript:", "vbscript:", "data:text/html")):
            return [Problem(doc.path, line, f"不允许的链接：{raw[:40]}", "链接只能指向网址或站内页面")]
        return []  # external: allowed, not fetched
    if raw.startswith("//"):
        return []
    path, _, anchor = raw.partition("#")
    path, anchor = unquote(path.split("?", 1)[0]), unquote(anchor)
    if not path:
        return _check_anchor(doc, ctx, doc.file, anchor, line) if anchor else []
    docs = ctx.docs.resolve()
    base = docs if path.startswith("/") else doc.file.parent.resolve()
    resolved = Path(posixpath.normpath((base / path.lstrip("/")).as_posix()))
    if resolved != docs and docs not in resolved.parents:
        return [
            Problem(
                doc.path,
                line,
                f"链接指向 docs/ 之外：{path}",
                "网站只发布 docs/ 下的文件；代码请用 --8<-- 引入，或链接到仓库的网址",
            )
        ]
    if not resolved.is_file() and generated_page(resolved, docs, ctx.root):
        return []  # docs/labs/<name>.ipynb: a notebook page the build generates from labs/<name>.py
    if not resolved.is_file():
        page = _page_for(resolved)
        if page is not None:  # a page's URL ("../route/") instead of its file
            wanted = posixpath.relpath(page.as_posix(), doc.file.parent.resolve().as_posix())
            return [
                Problem(
                    doc.path,
                    line,
                    f"链接要指向 .md 文件，而不是网页地址：{path}",
                    f"写成 {wanted}{'#' + anchor if anchor else ''}，MkDocs 会把它换成网页地址",
                )
            ]
        if resolved.is_dir():
            return [
                Problem(
                    doc.path,
                    line,
                    f"链接指向目录而不是页面：{path}",
                    "链接到具体的 .md 文件（例如 ../route.md），MkDocs 会把它换成网页地址",
                )
            ]
        what = "页面" if path.endswith(".md") else "文件"
        return [Problem(doc.path, line, f"链接的{what}不存在：{path}", _missing_fix(doc, ctx, resolved))]
    if anchor and resolved.suffix == ".md":
        return _check_anchor(doc, ctx, resolved, anchor, line)
    return []


def check(doc: Document, ctx: Context) -> list[Problem]:
    text = doc.markup_nomath
    out: list[Problem] = []
    for pos, raw in _targets(text):
        out += _check_target(doc, ctx, raw, line_at(text, pos, doc.first_line))
    for m in _HTML_MD_HREF.finditer(text):
        if not _SCHEME.match(m.group("href")):
            out.append(
                Problem(
                    doc.path,
                    line_at(text, m.start(), doc.first_line),
                    f"HTML 链接里的 {m.group('href')} 不会被转换成网页地址",
                    "改用 Markdown 链接：[文字](页面.md)",
                )
            )
    return out
