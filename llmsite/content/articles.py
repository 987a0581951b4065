"""Articles: front matter schema, validation and the site-wide index (the record of one article: ``model.py``)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from llmsite.content import frontmatter, plaintext, readtime, snippets
from llmsite.content.catalog import Author, Route, load_authors, load_route, load_tags
from llmsite.content.checks import Context, Document, check_document
from llmsite.content.memo import ArticleMemo, Loaded, MemoRun
from llmsite.content.model import ARTICLES_DIR, Article
from llmsite.paths import DOCS, ROOT, rel
from llmsite.problems import Problem

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
REQUIRED = ("title", "description", "author", "date", "tags")
OPTIONAL = ("readtime", "comments", "hide", "search", "image")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
LISTING = "index.md"


@dataclass
class Site:
    articles: dict[str, Article]  # in route order
    route: Route
    authors: dict[str, Author]
    tags: dict[str, str]
    problems: list[Problem]

    def newest(self, n: int | None = None) -> list[Article]:
        items = sorted(self.articles.values(), key=lambda a: (a.date, a.slug), reverse=True)
        return items if n is None else items[:n]

    @cached_property
    def _uri_index(self) -> dict[str, Article]:
        return {a.src_uri: a for a in self.articles.values()}

    def by_uri(self, src_uri: str) -> Article | None:
        return self._uri_index.get(src_uri)


def _is_date(value: Any) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def check_meta(
    path: str, fm: frontmatter.FrontMatter, authors: dict[str, Author], tags: dict[str, str],
    docs: Path | None = None,
) -> list[Problem]:
    """Validate one article's front matter; return every problem found."""
    if fm.error:
        return [Problem(path, fm.error_line, fm.error, "检查缩进、冒号后的空格和引号是否成对")]
    meta, out = fm.meta, []
    for key in REQUIRED:
        if key not in meta or meta[key] in (None, "", []):
            out.append(Problem(path, 1, f"front matter 缺少必填字段 {key}", f"在 front matter 中加入 {key}:"))
    for key in meta:
        if key not in REQUIRED and key not in OPTIONAL:
            out.append(Problem(path, fm.line_of(key), f"未知字段 {key}",
                               f"可用字段：{'、'.join(REQUIRED + OPTIONAL)}"))
    for key in ("title", "description", "author"):
        if key in meta and meta[key] not in (None, "") and not isinstance(meta[key], str):
            out.append(Problem(path, fm.line_of(key), f"{key} 应是字符串", "给值加上引号"))
    for key in ("title", "description"):
        if isinstance(meta.get(key), str):
            for message, fix in plaintext.problems(meta[key], key):
                out.append(Problem(path, fm.line_of(key), f"{key} {message}", fix))
    if "date" in meta and meta["date"] not in (None, "") and not _is_date(meta["date"]):
        out.append(Problem(path, fm.line_of("date"), f"date 不是日期：{meta['date']!r}",
                           "写成 YYYY-MM-DD，例如 2026-11-20，不加引号"))
    author = meta.get("author")
    if isinstance(author, str) and author and author not in authors:
        out.append(Problem(path, fm.line_of("author"), f"未知作者 {author}",
                           f"先在 data/authors.yml 中登记，已有：{'、'.join(sorted(authors))}"))
    tag_list = meta.get("tags")
    if tag_list not in (None, "", []):
        if not isinstance(tag_list, list) or not all(isinstance(t, str) for t in tag_list):
            out.append(Problem(path, fm.line_of("tags"), "tags 应是字符串列表", "写成 tags: [Transformer, PyTorch]"))
        else:
            for i, tag in enumerate(tag_list):
                if tag not in tags:
                    out.append(Problem(path, fm.line_of("tags", i), f"标签「{tag}」不在允许列表中",
                                       f"改用已有标签，或在 data/tags.yml 中新增；已有：{'、'.join(tags)}"))
            if len(set(tag_list)) != len(tag_list):
                out.append(Problem(path, fm.line_of("tags"), "tags 中有重复的标签", "删去重复项"))
    if "readtime" in meta and (not isinstance(meta["readtime"], int) or isinstance(meta["readtime"], bool)
                               or meta["readtime"] < 1):
        out.append(Problem(path, fm.line_of("readtime"), "readtime 应是正整数（分钟）", "例如 readtime: 8"))
    if "image" in meta:
        out += _check_image(path, fm, docs)
    if "comments" in meta and not isinstance(meta["comments"], bool):
        out.append(Problem(path, fm.line_of("comments"), "comments 应是 true 或 false"))
    return out


def _check_image(path: str, fm: frontmatter.FrontMatter, docs: Path | None) -> list[Problem]:
    """``image:`` (the share image) is a PNG/JPEG/WebP file under docs/, written relative to docs/."""
    value, line = fm.meta["image"], fm.line_of("image")
    fix = "写成 docs/ 下的相对路径，例如 image: assets/images/文章名.png（1200×630 的 PNG 或 JPEG）"
    if not isinstance(value, str) or not value.strip():
        return [Problem(path, line, "image 应是图片路径（字符串）", fix)]
    if "://" in value or value.startswith(("/", "//", "\\")) or ".." in value.split("/"):
        return [Problem(path, line, f"image 只能指向 docs/ 下的文件：{value}", fix)]
    if plaintext.problems(value, "description") or not value.lower().endswith(IMAGE_SUFFIXES):
        return [Problem(path, line, f"image 不是 PNG、JPEG 或 WebP 图片的路径：{value!r}", fix)]
    if docs is not None and not (docs / value).is_file():
        return [Problem(path, line, f"image 指向的文件不存在：docs/{value}", fix)]
    return []


def body_with_snippets(body: str, first_line: int, path: str, root: Path = ROOT) -> tuple[str, list[Problem]]:
    """Body with snippet includes expanded (for counting), plus include problems."""
    problems: list[Problem] = []
    lines = body.splitlines()
    for inc in reversed(snippets.find(body, first_line)):
        text, error = snippets.resolve(inc, root)
        if error:
            problems.append(Problem(path, inc.line, error, "检查路径（相对仓库根目录）和 [start:名字] 标记"))
            continue
        lines[inc.line - first_line] = text or ""
    return "\n".join(lines), problems


def load_article(
    file: Path,
    authors: dict[str, Author],
    tags: dict[str, str],
    *,
    root: Path = ROOT,
    fm: frontmatter.FrontMatter | None = None,
) -> tuple[Article | None, list[Problem]]:
    """The article model of ``file``, or None and its problems (front matter, file name, snippets)."""
    path = rel(file, root)
    if fm is None:
        fm = frontmatter.split(file.read_text(encoding="utf-8"))
    problems = check_meta(path, fm, authors, tags, docs=file.resolve().parents[1])
    slug = file.stem
    if not SLUG.match(slug):
        problems.append(Problem(path, 1, f"文件名 {file.name} 不是合法的 slug",
                                "只用小写字母、数字和连字符，例如 transformer-attention.md"))
    expanded, include_problems = body_with_snippets(fm.body, fm.body_line, path, root)
    problems += include_problems
    if problems:
        return None, problems
    meta = fm.meta
    minutes = meta.get("readtime") or readtime.minutes(expanded)
    article = Article(
        slug=slug,
        src_uri=f"{ARTICLES_DIR}/{file.name}",
        title=meta["title"].strip(),
        description=meta["description"].strip(),
        author=authors[meta["author"]],
        date=meta["date"],
        tags=list(meta["tags"]),
        readtime=int(minutes),
        comments=bool(meta.get("comments", True)),
    )
    return article, []


def article_files(docs: Path = DOCS) -> list[Path]:
    folder = docs / ARTICLES_DIR
    # one folder: ordering by name is the ordering of the paths (and much cheaper than comparing Paths)
    return sorted((p for p in folder.glob("*.md") if p.name != LISTING), key=lambda p: p.name)


def load_site(
    docs: Path | None = None,
    data: Path | None = None,
    *,
    root: Path | None = None,
    checks: bool = True,
    memo: ArticleMemo | None = None,
) -> Site:
    """Read every article and the data files once; collect all problems.

    ``root`` is the repository (default: this one); ``docs`` and ``data``
    default to its ``docs/`` and ``data/``. With ``checks`` (the default) the
    article bodies also go through ``llmsite.content.checks`` (HTML, images, links,
    figures, typography), so the build and ``python -m llmsite check``
    report the same problems.

    ``memo`` (an ``ArticleMemo`` kept by a long-running process) reuses each
    article's result from an earlier call while the files it was computed from
    are unchanged (see ``llmsite.content.memo``); the Site is the same as without it.
    """
    root = root or ROOT
    docs = docs or root / "docs"
    data = data or root / "data"
    authors, problems = load_authors(data / "authors.yml", root=root)
    tags, p = load_tags(data / "tags.yml", root=root)
    problems += p
    route, p = load_route(data / "route.yml", root=root)
    problems += p
    ctx = Context(root, stage_titles=[s.title for s in route.stages], tags=list(tags))
    loaded: dict[str, Article] = {}
    titles: dict[str, list[tuple[str, int]]] = {}  # title -> (file, line of title)
    files = article_files(docs)
    run = None
    if memo is not None:
        run = MemoRun(memo, root=root, docs=docs, authors=authors, tags=tags, ctx=ctx, checks=checks)
    for file, path in zip(files, _rel_paths(files, root), strict=True):

        def compute(file: Path = file, path: str = path) -> Loaded:
            return _load_one(file, path, ctx, authors, tags, root=root, checks=checks)

        try:
            one = run.load(file, compute) if run is not None else compute()
        except _NotUtf8 as err:
            exc = err.error
            problems.append(Problem(path, 1, f"文件不是 UTF-8 编码（第 {exc.start} 个字节）",
                                    "用 UTF-8 编码另存这个文件"))
            continue
        problems += one.problems
        if one.title is not None:  # also for articles with other problems
            titles.setdefault(one.title[0], []).append((path, one.title[1]))
        if one.article is not None:
            loaded[one.article.slug] = one.article
    if run is not None:
        run.finish()
    for title, where in titles.items():
        if len(where) < 2:
            continue
        for path, line in where:
            others = "、".join(other for other, _ in where if other != path)
            problems.append(Problem(path, line, f"标题「{title}」与 {others} 重复",
                                    "换一个标题，每篇文章的标题必须不同"))
    problems += check_route(route, {f.stem for f in files}, data / "route.yml", root=root)
    problems += other_pages_snippets(docs, set(files), root)
    ordered: dict[str, Article] = {}
    for i, entry in enumerate(e for e in route.entries if e.slug in loaded):
        a = loaded[entry.slug]
        if a.slug in ordered:
            continue
        a.stage, a.position, a.labs = entry.stage, i, entry.labs
        ordered[a.slug] = a
    order = list(ordered)
    for i, slug in enumerate(order):
        ordered[slug].prev = order[i - 1] if i > 0 else None
        ordered[slug].next = order[i + 1] if i + 1 < len(order) else None
    return Site(ordered, route, authors, tags, problems)


class _NotUtf8(Exception):
    """The article file itself is not UTF-8 (a snippet file that is not UTF-8 raises as it always did)."""

    def __init__(self, error: UnicodeDecodeError) -> None:
        super().__init__(str(error))
        self.error = error


def _rel_paths(files: list[Path], root: Path) -> list[str]:
    """``rel(file, root)`` for each file, resolving each folder once (a file that is a symlink on its own)."""
    base = root.resolve()
    folders: dict[Path, Path] = {}
    out = []
    for file in files:
        if file.is_symlink() or file.name in ("", ".", ".."):
            out.append(rel(file, root))
            continue
        if file.parent not in folders:
            folders[file.parent] = file.parent.resolve()
        try:
            out.append((folders[file.parent] / file.name).relative_to(base).as_posix())
        except ValueError:
            out.append(str(file))
    return out


def _load_one(
    file: Path, path: str, ctx: Context, authors: dict[str, Author], tags: dict[str, str], *, root: Path,
    checks: bool,
) -> Loaded:
    """What ``load_site`` computes for one article file (raises ``_NotUtf8`` for a file that is not UTF-8)."""
    try:
        text = ctx.read(file)
    except UnicodeDecodeError as exc:
        raise _NotUtf8(exc) from exc
    fm = frontmatter.split(text)
    article, problems = load_article(file, authors, tags, root=root, fm=fm)
    if checks:
        problems += check_document(Document(path, file, fm.body, fm.body_line), ctx)
    title = fm.meta.get("title")
    heading = (title.strip(), fm.line_of("title")) if isinstance(title, str) and title.strip() else None
    return Loaded(article, problems, heading)


def other_pages_snippets(docs: Path, articles: set[Path], root: Path) -> list[Problem]:
    """Snippet includes on the site's other pages (home, about, listings) resolve inside the repository."""
    out: list[Problem] = []
    for file in sorted(docs.rglob("*.md")):
        if file in articles:
            continue
        text = file.read_text(encoding="utf-8")
        if "8<" not in text:
            continue
        _, problems = body_with_snippets(text, 1, rel(file, root), root)
        out += problems
    return out


def check_route(route: Route, slugs: set[str], route_file: Path, *, root: Path = ROOT) -> list[Problem]:
    path, out, seen = rel(route_file, root), [], set()
    for entry in route.entries:
        if entry.slug in seen:
            out.append(Problem(path, entry.line, f"学习路线中 {entry.slug} 出现了不止一次", "每篇文章只放一处"))
        seen.add(entry.slug)
        if entry.slug not in slugs:
            out.append(Problem(path, entry.line, f"学习路线中的 {entry.slug} 没有对应的文章",
                               f"创建 docs/articles/{entry.slug}.md，或从路线中删去这一项"))
    for slug in sorted(slugs - seen):
        out.append(Problem(f"docs/{ARTICLES_DIR}/{slug}.md", 1, "这篇文章不在学习路线中",
                           f"在 data/route.yml 的某个阶段的 articles 下加入 - {slug}"))
    return out
