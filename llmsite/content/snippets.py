"""Find and resolve ``--8<--`` snippet includes the way pymdownx.snippets does.

Used to check includes before the build (with file:line messages) and to
count the included code into the reading time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from llmsite.paths import ROOT

_INCLUDE = re.compile(r"""^(?P<indent>\s*)-{1,}8<-{1,}\s+(?P<q>["'])(?P<target>[^"']+)(?P=q)\s*$""")
# pymdownx's block form: a line holding only the marker, file names on the following lines, the marker again.
_BLOCK = re.compile(r"^\s*-{1,}8<-{1,}\s*$")
_START = re.compile(r"^\s*#\s*-{2}8<-{2}\s*\[start:(?P<name>[\w-]+)\]\s*$")
_END = re.compile(r"^\s*#\s*-{2}8<-{2}\s*\[end:(?P<name>[\w-]+)\]\s*$")


@dataclass(frozen=True)
class Include:
    line: int
    path: str
    section: str | None


def find(body: str, first_line: int = 1) -> list[Include]:
    """Single-line includes; a block-form marker line is returned with ``path=""`` (unsupported)."""
    found = []
    for offset, line in enumerate(body.splitlines()):
        m = _INCLUDE.match(line)
        if not m:
            if _BLOCK.match(line):
                found.append(Include(first_line + offset, "", None))
            continue
        target = m.group("target")
        path, _, section = target.partition(":")
        # "file.py:12:20" style line ranges are not used here: only named sections.
        found.append(Include(first_line + offset, path, section or None))
    return found


# Where snippets may come from: the article's code and data, never other files of the machine.
ALLOWED_DIRS = ("code", "labs", "data")


def _outside(inc: Include, root: Path) -> str:
    """Why ``inc.path`` may not be included ('' when it may)."""
    raw = inc.path
    if not raw:
        return "只支持单行的代码片段写法 --8<-- \"code/文件.py:片段名\"（不支持多行块形式）"
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw) or "://" in raw:
        return f"代码片段的路径必须是仓库内的相对路径：{raw}"
    if ".." in Path(raw).parts:
        return f"代码片段的路径不能用 .. 跳出仓库：{raw}"
    try:
        resolved = (root / raw).resolve()
        resolved.relative_to(root.resolve())
    except (ValueError, OSError):
        return f"代码片段的路径指向仓库之外：{raw}"
    if Path(raw).parts[0] not in ALLOWED_DIRS:
        return f"代码片段只能来自 {'、'.join(d + '/' for d in ALLOWED_DIRS)} 下的文件：{raw}"
    return ""


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
    if why := _outside(inc, root):
        return None, why
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
