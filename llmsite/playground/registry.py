"""The playground marker, alone on its line: ``<!-- playground: NAME -->`` runs one build artifact (BUILD_ARTIFACTS)
in the page; ``<!-- playground: NAME NAME NAME -->`` (2 to ``MAX_MODELS`` names) runs them side by side on one input
(a comparison: the models share a vocabulary and a task, ``llmsite/features/playground.py`` checks that).

One pattern for the build (``llmsite/features/playground.py``), the lane (``llmsite/lane/graph.py``), the tests and the
benchmark. A line that starts like a marker but does not match it, a name that is not a declared artifact, a name
twice in one comparison or too many names stop the build with file:line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NAME = r"[a-z0-9]+(?:-[a-z0-9]+)*"
MARKER = re.compile(rf"^<!--[ \t]*playground:[ \t]*(?P<names>{_NAME}(?:[ \t]+{_NAME})*)[ \t]*-->[ \t]*$", re.M)
_LOOSE = re.compile(r"<!--\s*playground\b", re.I)  # what a reader would take for a marker, well formed or not
EXAMPLE = "<!-- playground: tang-gpt -->"
COMPARE_EXAMPLE = "<!-- playground: aligned-sft aligned-dpo aligned-grpo -->"
MAX_MODELS = 3  # side by side: three columns at 1280 px, a list on a phone; each model is downloaded on the press


class MarkerError(ValueError):
    """A malformed or unknown marker; the message starts with ``file:line``."""


@dataclass(frozen=True)
class Use:
    name: str
    where: str  # "docs/articles/x.md:12"
    group: tuple[str, ...] = ()  # every name of the marker when it compares several models, else ()


def names(match: re.Match[str]) -> tuple[str, ...]:
    """The artifact names of one MARKER match, in the order written."""
    return tuple(match.group("names").split())


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def uses(text: str, where: str, known: Iterable[str]) -> list[Use]:
    """The markers of one Markdown source ``where`` (a path for messages), checked against the ``known`` names:
    a Use per model (a comparison gives one for each of its models, with ``group`` set).

    Raises MarkerError at the first malformed marker, unknown name, name repeated in one comparison, comparison of
    more than MAX_MODELS models or second use of a model on the page (alone or in a comparison)."""
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
                f"，并排比较几个模型写成 {COMPARE_EXAMPLE}（名字是 code/ 里 BUILD_ARTIFACTS 声明的产物）"
            )
        group = names(match)
        if len(group) > MAX_MODELS:
            raise MarkerError(f"{where}:{line}: 一个标记最多并排比较 {MAX_MODELS} 个模型，这里写了 {len(group)} 个")
        if len(set(group)) != len(group):
            twice = next(n for n in group if group.count(n) > 1)
            raise MarkerError(f"{where}:{line}: 模型 {twice} 在同一个比较里写了两次")
        for name in group:
            if name not in known:
                listed = "、".join(sorted(known)) or "（无）"
                raise MarkerError(f"{where}:{line}: 没有名为 {name} 的构建产物（BUILD_ARTIFACTS 里有：{listed}）")
            if any(u.name == name for u in found):
                raise MarkerError(f"{where}:{line}: 模型 {name} 的演示在这一页已经放过一次，一页只放一个")
            found.append(Use(name, f"{where}:{line}", group if len(group) > 1 else ()))
    return found
