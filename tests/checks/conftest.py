"""A scratch copy of the repository's content for the content-check tests.

``repo`` copies docs/, data/, code/ and mkdocs.yml into a temporary directory
and adds one article, ``docs/articles/checks-sample.md``, that passes every
check (and is in the learning route). Tests break it one way at a time and run
``python -m llmsite check --root <tmp>`` in-process.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLUG = "checks-sample"
ARTICLE = f"docs/articles/{SLUG}.md"

META = """\
title: 检查用的示例文章
description: 一篇用来测试内容检查的短文。
author: guohua
date: 2026-11-25
tags:
  - PyTorch
  - 注意力机制
"""

BODY = """\
正文第一段，用 PyTorch 写几行代码，再看 $QK^\\top$ 的形状。

## 第一节

回到[学习路线](../route.md)，跳到[第一节](#第一节)，或者看[为什么要缩放](transformer-attention.md#为什么要缩放)。

```python title="code/attention.py"
--8<-- "code/attention.py:sdpa"
```
"""


def _load_cli() -> Callable[[list[str]], int]:
    from llmsite.cli import check

    return check.main


@dataclass
class Result:
    code: int
    out: str

    def has(self, path: str, line: int, message: str, fix: str = "") -> bool:
        """True if ``path:line: ...message...`` is printed, followed by a fix containing ``fix``."""
        lines = self.out.splitlines()
        for i, text in enumerate(lines):
            if text.startswith(f"{path}:{line}: ") and message in text:
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                if nxt.strip().startswith("修改建议：") and fix in nxt:
                    return True
        return False

    def count(self) -> int:
        return len(re.findall(r"^\S+:\d+: ", self.out, re.M))


class Repo:
    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self._capsys = capsys
        self._main = _load_cli()

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def article(self, body: str = BODY, meta: str = META, slug: str = SLUG) -> str:
        """Write the sample article with this front matter and body; returns its text."""
        text = f"---\n{meta}---\n\n{body}"
        self.write(f"docs/articles/{slug}.md", text)
        return text

    def append(self, extra: str) -> int:
        """Append a paragraph to the sample article's body; returns the line number of its first line."""
        text = self.read(ARTICLE).rstrip("\n") + "\n\n"
        line = text.count("\n") + 1
        self.write(ARTICLE, text + extra.rstrip("\n") + "\n")
        return line

    def route_add(self, slug: str) -> None:
        route = self.read("data/route.yml")
        self.write("data/route.yml", route.rstrip("\n") + f"\n      - {slug}\n")

    def route_remove(self, slug: str) -> None:
        route = self.read("data/route.yml")
        self.write("data/route.yml", route.replace(f"      - {slug}\n", ""))

    def check(self, *paths: str) -> Result:
        self._capsys.readouterr()
        code = self._main(["--root", str(self.root), *paths])
        captured = self._capsys.readouterr()
        return Result(code, captured.out + captured.err)

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        return {
            p.relative_to(self.root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(self.root.rglob("*"))
            if p.is_file()
        }


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line of ``text`` containing ``needle``."""
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} not in text")


@pytest.fixture
def repo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Repo:
    root = tmp_path / "repo"
    for folder in ("docs", "data", "code", "labs"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    r = Repo(root, capsys)
    r.article()
    r.route_add(SLUG)
    return r
