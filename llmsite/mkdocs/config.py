"""Typed options of the ``llmsite`` plugin (``plugins: - llmsite: {...}`` in mkdocs.yml), as MkDocs wants them.

The names, types, defaults and the check of each value are ``llmsite.options``'s: this module only turns that
schema into a MkDocs ``Config`` class, so the plugin and the Zensical adapter accept the same options.
"""

from __future__ import annotations

from typing import Any

from mkdocs.config import config_options as c
from mkdocs.config.base import Config

from llmsite.options import schema, value_problem


class _Option(c.BaseConfigOption[Any]):
    def __init__(self, kind: type, default: Any) -> None:
        super().__init__()
        self.kind, self.default = kind, default

    def run_validation(self, value: object) -> Any:
        problem = value_problem(self.kind, value)
        if problem:
            raise c.ValidationError(problem)
        return value


SiteConfig = type("SiteConfig", (Config,), {name: _Option(kind, default) for name, (kind, default) in schema().items()})
