"""The build's options (``plugins: - llmsite: {...}`` in mkdocs.yml): one schema every builder's adapter reads.

The MkDocs plugin turns the schema into its ``Config`` class (``llmsite/mkdocs/config.py``); the Zensical adapter
reads the same block with ``read_options``. Neither keeps a second copy of a name, a type or a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, get_type_hints


@dataclass(frozen=True)
class SiteOptions:
    articles_per_page: int = 20  # the article list, paginated
    latest_on_home: int = 5  # newest articles on the home page
    search_index_budget_kb: int = 0  # gzip budget of the search index; 0: no budget
    figures: bool = True  # build-time figures; the benchmark turns them off to measure them
    content_security_policy: bool = True  # a CSP <meta> on every built page (not under serve)
    pdf: bool = False  # the route page links to downloads/llm-route.pdf (the deploy prints it)


def schema() -> dict[str, tuple[type, Any]]:
    """{option: (type, default)}, in the order SiteOptions declares them."""
    hints = get_type_hints(SiteOptions)
    return {f.name: (hints[f.name], f.default) for f in fields(SiteOptions)}


class OptionsError(ValueError):
    """The options block is not what the schema allows; ``problems`` says which option and why, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("；".join(problems))
        self.problems = problems


_WANTED = {int: "应是整数", bool: "应是 true 或 false"}


def value_problem(kind: type, value: object) -> str | None:
    """Why value cannot be an option of type kind, or None. bool is an int in Python: an option that wants a
    number does not take true/false, nor the reverse."""
    return None if type(value) is kind else f"{_WANTED[kind]}，写的是 {value!r}"


def read_options(raw: object) -> SiteOptions:
    """The options as written (None: the block is empty), checked, with the schema's defaults for the rest."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise OptionsError([f"选项应是「名字: 值」的映射，写的是 {type(raw).__name__}"])
    known = schema()
    problems = [f"{name}: 没有这个选项（有 {'、'.join(known)}）" for name in raw if name not in known]
    for name, value in raw.items():
        problem = value_problem(known[name][0], value) if name in known else None
        if problem:
            problems.append(f"{name}: {problem}")
    if problems:
        raise OptionsError(problems)
    return SiteOptions(**{str(k): v for k, v in raw.items()})
