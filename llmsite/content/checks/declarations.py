"""The figure and exercise-answer declarations of code/figures/, as the checks see them (``Figures``).

Read by ``llmsite.figures.registry`` (AST only, no import of the drawing code), the same reader the figure pipeline
uses; ``Context.figures`` reads them once per run, and the marker and exercise checks compare against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from llmsite.figures.registry import DeclarationError, discover_answers, discover_values
from llmsite.figures.registry import discover as registry_discover
from llmsite.paths import rel
from llmsite.problems import Problem


@dataclass
class Figures:
    declared: dict[str, str]  # figure name -> article slug
    problems: list[Problem]
    ok: bool  # False when the declarations could not be read completely
    interactive: frozenset[str] = frozenset()  # figures with an interactive view (@figure_data)
    answers: dict[str, str] = field(default_factory=dict)  # exercise answer name -> module file name (x.py)
    values: dict[str, str] = field(default_factory=dict)  # article slug -> "file:line" of its @article_values


def discover(root: Path, code: Path) -> Figures:
    """The declarations in ``code``/figures/; problems name files relative to ``root``."""
    where = rel(code / "figures", root)
    try:
        specs = registry_discover(code)
        answers = discover_answers(code)
        values = discover_values(code)
    except DeclarationError as exc:
        return Figures({}, [problem_from_located(str(exc), where, root)], ok=False)
    except SyntaxError as exc:
        path = rel(root / exc.filename, root) if exc.filename else where
        return Figures(
            {}, [Problem(path, exc.lineno or 1, f"Python 语法错误：{exc.msg}", "先修正这个文件的语法")], ok=False
        )
    except (OSError, UnicodeDecodeError) as exc:
        return Figures({}, [Problem(where, 1, f"读不出图的声明：{exc}")], ok=False)
    return Figures(
        {name: spec.article for name, spec in specs.items()}, [], ok=True,
        interactive=frozenset(name for name, spec in specs.items() if spec.data_function),
        answers={name: spec.module.name for name, spec in answers.items()},
        values={slug: spec.where for slug, spec in values.items()},
    )


_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<message>.*)$", re.S)


def problem_from_located(message: str, default_path: str, root: Path) -> Problem:
    """A Problem from a ``path:line: message`` string (as other tools raise them)."""
    m = _LOCATION.match(message)
    if not m:
        return Problem(default_path, 1, message)
    path = Path(m.group("path"))
    shown = rel(path, root) if path.is_absolute() else m.group("path")
    return Problem(shown, int(m.group("line")), m.group("message"))
