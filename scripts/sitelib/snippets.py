"""Find and resolve ``--8<--`` snippet includes the way pymdownx.snippets does.

Used to check includes before the build (with file:line messages) and to
count the included code into the reading time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .paths import ROOT

_INCLUDE = re.compile(r"""^(?P<indent>\s*)-{1,}8<-{1,}\s+(?P<q>["'])(?P<target>[^"']+)(?P=q)\s*$""")
_START = re.compile(r"^\s*#\s*-{2}8<-{2}\s*\[start:(?P<name>[\w-]+)\]\s*$")
_END = re.compile(r"^\s*#\s*-{2}8<-{2}\s*\[end:(?P<name>[\w-]+)\]\s*$")


@dataclass(frozen=True)
class Include:
    line: int
    path: str
    section: str | None


def find(body: str, first_line: int = 1) -> list[Include]:
    found = []
    for offset, line in enumerate(body.splitlines()):
        m = _INCLUDE.match(line)
        if not m:
            continue
        target = m.group("target")
        path, _, section = target.partition(":")
        # "file.py:12:20" style line ranges are not used here: only named sections.
        found.append(Include(first_line + offset, path, section or None))
    return found


def sections(path: Path) -> dict[str, str]:
    """Named sections of a source file (markers removed)."""
    out: dict[str, list[str]] = {}
    open_names: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := _START.match(line):
            open_names.append(m.group("name"))
            out.setdefault(m.group("name"), [])
            continue
        if m := _END.match(line):
            if m.group("name") in open_names:
                open_names.remove(m.group("name"))
            continue
        for name in open_names:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def resolve(inc: Include, root: Path = ROOT) -> tuple[str | None, str]:
    """Return (text, error); error is '' when the include resolves."""
    path = root / inc.path
    if not path.is_file():
        return None, f"代码片段引用的文件不存在：{inc.path}"
    if inc.section is None:
        return path.read_text(encoding="utf-8"), ""
    secs = sections(path)
    if inc.section not in secs:
        known = "、".join(sorted(secs)) or "（无）"
        return None, f"{inc.path} 中没有名为 {inc.section} 的片段（已有：{known}）"
    return secs[inc.section], ""
