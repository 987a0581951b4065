"""The playground marker: ``<!-- playground: NAME -->`` alone on its line, NAME a build artifact (BUILD_ARTIFACTS).

One pattern for the build (``llmsite/mkdocs/playground.py``), the tests and the benchmark. A line that starts
like a marker but does not match it, or a name that is not a declared artifact, stops the build with file:line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MARKER = re.compile(r"^<!--[ \t]*playground:[ \t]*(?P<name>[a-z0-9]+(?:-[a-z0-9]+)*)[ \t]*-->[ \t]*$", re.M)
_LOOSE = re.compile(r"<!--\s*playground\b", re.I)  # what a reader would take for a marker, well formed or not
EXAMPLE = "<!-- playground: tang-gpt -->"


class MarkerError(ValueError):
    """A malformed or unknown marker; the message starts with ``file:line``."""


@dataclass(frozen=True)
class Use:
    name: str
    where: str  # "docs/articles/x.md:12"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def uses(text: str, where: str, known: Iterable[str]) -> list[Use]:
    """The markers of one Markdown source ``where`` (a path for messages), checked against the ``known`` names.

    Raises MarkerError at the first malformed marker, unknown name or second marker of the same model."""
    known = set(known)
    good = {m.start(): m for m in MARKER.finditer(text)}
    found: list[Use] = []
    for loose in _LOOSE.finditer(text):
        start = text.rfind("\n", 0, loose.start()) + 1
        line = _line(text, loose.start())
        match = good.get(start)
        if match is None or start != loose.start():
            raise MarkerError(
                f"{where}:{line}: 模型演示的标记写错了：要单独一行、不缩进，写成 {EXAMPLE}"
                "（名字是 code/ 里 BUILD_ARTIFACTS 声明的产物）"
            )
        name = match.group("name")
        if name not in known:
            listed = "、".join(sorted(known)) or "（无）"
            raise MarkerError(f"{where}:{line}: 没有名为 {name} 的构建产物（BUILD_ARTIFACTS 里有：{listed}）")
        if any(u.name == name for u in found):
            raise MarkerError(f"{where}:{line}: 模型 {name} 的演示在这一页已经放过一次，一页只放一个")
        found.append(Use(name, f"{where}:{line}"))
    return found
