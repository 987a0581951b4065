"""Element ids of a page, computed the way the site computes them.

The page's Markdown is converted with the extensions of ``mkdocs.yml`` (minus
``pymdownx.snippets``, whose includes are code and carry no ids), with ``toc``
using ``pymdownx.slugs.slugify(case="lower")``. Every ``id="..."`` of the
output counts: heading anchors, ``attr_list`` ``{ #id }`` ids, footnotes.
"""

from __future__ import annotations

import html
import importlib
import re
from pathlib import Path
from typing import Any

import markdown
import yaml
from pymdownx.slugs import slugify

_ID = re.compile(r"""\sid=(?:"([^"]*)"|'([^']*)')""")
_SKIP = {"pymdownx.snippets"}
# Used when mkdocs.yml cannot be read: what the site's ids depend on.
_FALLBACK: list[Any] = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    "tables",
    "toc",
    "pymdownx.arithmatex",
    "pymdownx.details",
    "pymdownx.superfences",
    "pymdownx.tabbed",
]


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml: ``!ENV`` becomes None, python tags resolve only for markdown extensions."""


def _python_name(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    module, _, attr = suffix.rpartition(".")
    if not module.startswith(("pymdownx.", "markdown.")):
        return None
    return getattr(importlib.import_module(module), attr, None)


def _python_apply(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if not isinstance(node, yaml.MappingNode):
        return None
    spec = loader.construct_mapping(node, deep=True)
    func = _python_name(loader, suffix, node)
    return func(*spec.get("args", ()), **spec.get("kwds", {})) if callable(func) else None


_Loader.add_constructor("!ENV", lambda loader, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/object/apply:", _python_apply)


def _site_extensions(root: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    names: list[str] = []
    configs: dict[str, dict[str, Any]] = {}
    try:
        config = yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
        items = config.get("markdown_extensions") or []
    except (OSError, yaml.YAMLError, AttributeError, ImportError):
        items = _FALLBACK
    for item in items:
        if isinstance(item, str):
            name, options = item, {}
        elif isinstance(item, dict) and len(item) == 1:
            name, options = next(iter(item.items()))
            options = dict(options or {})
        else:
            continue
        if name in _SKIP:
            continue
        names.append(name)
        configs[name] = options
    if "toc" not in names:
        names.append("toc")
    configs["toc"] = {**configs.get("toc", {}), "slugify": slugify(case="lower"), "permalink": False}
    return names, configs


class AnchorIndex:
    """Ids of Markdown pages, one conversion per page."""

    def __init__(self, root: Path) -> None:
        names, configs = _site_extensions(root)
        try:
            self._md = markdown.Markdown(extensions=names, extension_configs=configs)
        except Exception:  # an extension of mkdocs.yml that cannot load here: keep what matters for ids
            names = [n for n in _FALLBACK if isinstance(n, str)]
            self._md = markdown.Markdown(
                extensions=names, extension_configs={"toc": {"slugify": slugify(case="lower")}}
            )
        self._cache: dict[str, frozenset[str]] = {}

    def ids(self, key: str, markdown_text: str) -> frozenset[str]:
        if key not in self._cache:
            self._md.reset()
            out = self._md.convert(markdown_text)
            self._cache[key] = frozenset(html.unescape(a or b) for a, b in _ID.findall(out))
        return self._cache[key]


def slug(text: str) -> str:
    """Anchor of a heading with this text (without de-duplication suffixes)."""
    return str(slugify(case="lower")(text, "-"))
