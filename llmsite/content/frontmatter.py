"""Strict front-matter parsing that keeps line numbers.

MkDocs silently drops front matter that is not valid YAML; here it is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


class Loader(_Base):
    """SafeLoader whose impossible dates (``2026-13-45``) stay strings instead of raising ValueError."""


def _timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except ValueError:
        return loader.construct_scalar(node)  # type: ignore[arg-type]


Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


@dataclass
class FrontMatter:
    meta: dict[str, Any]
    body: str
    body_line: int  # 1-based line number of the first body line
    key_lines: dict[str, int] = field(default_factory=dict)
    item_lines: dict[str, list[int]] = field(default_factory=dict)  # lines of a list value's items
    error: str = ""
    error_line: int = 1

    def line_of(self, key: str, item: int | None = None) -> int:
        """Line of ``key`` (or of its ``item``-th list item, when known)."""
        items = self.item_lines.get(key, [])
        if item is not None and item < len(items):
            return items[item]
        return self.key_lines.get(key, 1)


def _parse(raw: str) -> tuple[Any, Any]:
    """One pass: the node tree (for line numbers) and the data built from it."""
    loader = Loader(raw)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


def split(text: str) -> FrontMatter:
    """Split ``text`` into front matter and body; never raises on bad YAML."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return FrontMatter({}, text, 1, error="缺少 front matter（文件第一行应为 ---）")
    end = None
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            end = i
            break
    if end is None:
        return FrontMatter({}, text, 1, error="front matter 没有结束的 --- 行")
    raw = "".join(lines[1:end])
    body = "".join(lines[end + 1 :])
    fm = FrontMatter({}, body, end + 2)
    try:
        node, data = _parse(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        fm.error = f"front matter 不是合法的 YAML：{getattr(exc, 'problem', None) or exc}"
        fm.error_line = (mark.line + 2) if mark is not None else 1
        return fm
    if data is None:
        data = {}
    if not isinstance(data, dict):
        fm.error = "front matter 应是「键: 值」形式的映射"
        fm.error_line = 2
        return fm
    fm.meta = data
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            fm.key_lines[str(key_node.value)] = key_node.start_mark.line + 2
            if isinstance(value_node, yaml.SequenceNode):
                fm.item_lines[str(key_node.value)] = [n.start_mark.line + 2 for n in value_node.value]
    return fm
