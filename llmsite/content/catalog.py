"""The site's data files: authors, allowed tags and the learning route."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from llmsite.content import plaintext
from llmsite.content.frontmatter import Loader
from llmsite.paths import DATA, ROOT, rel
from llmsite.problems import Problem


@dataclass(frozen=True)
class Author:
    id: str
    name: str
    bio: str = ""
    avatar: str = ""  # path under docs/, never a URL


@dataclass
class Stage:
    title: str
    summary: str
    slugs: list[str]
    line: int


@dataclass
class RouteEntry:
    slug: str
    stage: int
    line: int
    labs: list[str] = field(default_factory=list)  # as written: labs/<name>.ipynb

    @property
    def lab_names(self) -> tuple[str, ...]:
        """The names of its labs (``labs/<name>.py`` in the repository)."""
        return tuple(posixpath.splitext(posixpath.basename(entry))[0] for entry in self.labs)


@dataclass
class Route:
    stages: list[Stage]
    entries: list[RouteEntry]


def _load_yaml(path: Path, root: Path = ROOT) -> tuple[object, list[Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(rel(path, root), 1, "文件不存在")]
    try:
        return yaml.load(text, Loader=Loader), []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        what = getattr(exc, "problem", None) or exc
        return None, [Problem(rel(path, root), line, f"不是合法的 YAML：{what}",
                              "检查缩进、冒号后的空格和引号是否成对")]


def _line_index(path: Path) -> dict[str, int]:
    """First line on which each word-like token (slug, key) appears."""
    index: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for token in re.findall(r"[\w./-]+", line.split("#")[0]):
            index.setdefault(token, n)
    return index


def _key_lines(path: Path) -> dict[str, int]:
    """Line of each top-level key of a YAML mapping file (from the node tree; {} if it does not parse)."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=Loader)
    except (yaml.YAMLError, OSError):
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def _stage_lines(path: Path) -> list[dict[str, int]]:
    """For each stage of route.yml, the line of each of its keys' values."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=Loader)
    except (yaml.YAMLError, OSError):
        return []
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if key.value == "stages" and isinstance(value, yaml.SequenceNode):
            return [
                {str(k.value): v.start_mark.line + 1 for k, v in item.value}
                if isinstance(item, yaml.MappingNode)
                else {}
                for item in value.value
            ]
    return []


@lru_cache(maxsize=8)
def _authors(path: Path, mtime: int, root: Path) -> tuple[dict[str, Author], tuple[Problem, ...]]:
    data, problems = _load_yaml(path, root)
    authors: dict[str, Author] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            value = value or {}
            avatar = str(value.get("avatar", "") or "")
            if "://" in avatar or avatar.startswith("//"):
                problems.append(
                    Problem(rel(path, root), _line_index(path).get(str(key), 1),
                            f"作者 {key} 的头像指向外部网址", "把头像放到 docs/assets/authors/ 下，写相对路径")
                )
                avatar = ""
            author = Author(str(key), str(value.get("name", key)), str(value.get("bio", "")), avatar)
            line = _key_lines(path).get(str(key), 1)
            for field_name, text in (("name", author.name), ("bio", author.bio)):
                for message, fix in plaintext.problems(text, field_name):
                    problems.append(Problem(rel(path, root), line, f"作者 {key} 的 {field_name} {message}", fix))
            authors[str(key)] = author
    elif data is not None or not problems:
        problems.append(Problem(rel(path, root), 1, "作者文件应是以作者 ID 为键的映射"))
    return authors, tuple(problems)


def load_authors(path: Path = DATA / "authors.yml", *, root: Path = ROOT) -> tuple[dict[str, Author], list[Problem]]:
    authors, problems = _authors(path, path.stat().st_mtime_ns if path.exists() else 0, root)
    return authors, list(problems)


def load_tags(path: Path = DATA / "tags.yml", *, root: Path = ROOT) -> tuple[dict[str, str], list[Problem]]:
    """Allowed tags and their one-line descriptions."""
    data, problems = _load_yaml(path, root)
    if isinstance(data, dict):
        tags = {str(k): str(v or "") for k, v in data.items()}
        lines = _key_lines(path)
        for name, description in tags.items():
            line = lines.get(name, 1)
            for message, fix in plaintext.problems(name, "tag"):
                problems.append(Problem(rel(path, root), line, f"标签名 {name!r} {message}", fix))
            for message, fix in plaintext.problems(description, "description"):
                problems.append(Problem(rel(path, root), line, f"标签「{name}」的说明 {message}", fix))
        return tags, problems
    if not problems:
        problems.append(Problem(rel(path, root), 1, "标签文件应是「标签: 说明」形式的映射"))
    return {}, problems


def load_route(path: Path = DATA / "route.yml", *, root: Path = ROOT) -> tuple[Route, list[Problem]]:
    data, problems = _load_yaml(path, root)
    route = Route([], [])
    if data is None:
        return route, problems
    lines = _line_index(path)
    stage_lines = _stage_lines(path)
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, list):
        problems.append(Problem(rel(path, root), 1, "学习路线应有 stages 列表"))
        return route, problems
    for i, raw in enumerate(stages):
        if not isinstance(raw, dict) or not raw.get("title"):
            problems.append(Problem(rel(path, root), 1, f"第 {i + 1} 个阶段缺少 title"))
            continue
        title = str(raw["title"])
        stage = Stage(title, str(raw.get("summary", "")), [], lines.get("title", 1))
        for field_name, text in (("title", stage.title), ("summary", stage.summary)):
            for message, fix in plaintext.problems(text, field_name):
                line = stage_lines[i].get(field_name, 1) if i < len(stage_lines) else 1
                problems.append(Problem(rel(path, root), line, f"第 {i + 1} 个阶段的 {field_name} {message}", fix))
        for item in raw.get("articles") or []:
            labs: list[str] = []
            if isinstance(item, dict):
                slug = str(item.get("slug", ""))
                labs = [str(x) for x in item.get("labs") or []]
            else:
                slug = str(item)
            stage.slugs.append(slug)
            route.entries.append(RouteEntry(slug, i, lines.get(slug, 1), labs))
        route.stages.append(stage)
    return route, problems


ROUTE_PAGE = "route.md"  # the learning route's page; the stages' sections go next to it in the nav


def route_section(nav: list[Any], route_page: str = ROUTE_PAGE) -> list[Any] | None:
    """The list in a MkDocs-style nav (``mkdocs.yml``'s ``nav:``) that holds the route page: the stages of
    data/route.yml are inserted there, by the build and by the benchmark's plain-Material variant alike."""
    for item in nav:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    pages = [v if isinstance(v, str) else next(iter(v.values()), None) for v in value
                             if isinstance(v, (str, dict))]
                    if route_page in pages:
                        return value
                    found = route_section(value, route_page)
                    if found is not None:
                        return found
    return None
