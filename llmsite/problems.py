"""Problems found in contributors' files, reported as ``file:line: message``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.path}:{self.line}: {self.message}"
        if self.fix:
            text += f"\n    修改建议：{self.fix}"
        return text


class ContentError(Exception):
    """Raised by the build when content problems were found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(problems))
        lines = [f"发现 {len(self.problems)} 个内容问题："]
        lines += [str(p) for p in self.problems]
        super().__init__("\n".join(lines))


class BuildStop(Exception):
    """Stops the build; the message names the file (and line) and what to do. Each builder's adapter shows it as
    its own error (the MkDocs plugin as a ``PluginError``, without a traceback)."""
