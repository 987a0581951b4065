"""Comparison builds derived from the project's own config.

- *baseline*: the same docs/ built by plain MkDocs Material: ``hooks:`` removed,
  only the ``search`` plugin, no ``custom_dir``; the nav the content hook would
  build (stages from data/route.yml) written out statically; figure markers
  replaced by the same image Markdown the figure hook emits, with the generated
  SVGs copied into the docs folder (KaTeX comes along: it is vendored in docs/).
- *nofig*: the project without ``scripts/hook_figures.py`` and otherwise identical
  output (same figure Markdown, SVGs as ordinary docs files).

Both configs inherit mkdocs.yml through MkDocs' ``INHERIT`` (dicts merge, lists replace).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from sitelib.figures.registry import MARKER

from .common import REPO, Workspace, read_config, write_child_config

FIGURE_HOOK = "scripts/hook_figures.py"
BASELINE_CONFIG = "mkdocs.baseline.yml"
BASELINE_DOCS = "docs-baseline"
NOFIG_CONFIG = "mkdocs.nofig.yml"
_MARKER = MARKER  # the build's own pattern (sitelib.figures.registry)


@cache
def _figure_hook() -> ModuleType:
    """scripts/hook_figures.py of the repository, for its ``figure_markdown`` (identical markup)."""
    scripts = str(REPO / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location("bench_hook_figures", REPO / FIGURE_HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def figure_specs(code_dir: Path) -> dict[str, Any]:
    hook = _figure_hook()
    specs: dict[str, Any] = hook.registry.discover(code_dir)
    return specs


def inline_figures(docs: Path, code_dir: Path) -> int:
    """Replace every figure marker under ``docs`` by the hook's Markdown; returns the count."""
    hook = _figure_hook()
    specs = figure_specs(code_dir)
    count = 0
    for path in docs.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        if "figure:" not in text:
            continue
        uri = path.relative_to(docs).as_posix()

        def replace(m: re.Match[str], uri: str = uri) -> str:
            nonlocal count
            count += 1
            return str(hook.figure_markdown(specs[m.group("name")], uri))

        path.write_text(_MARKER.sub(replace, text), encoding="utf-8")
    return count


def copy_figures(site_dir: Path, docs: Path) -> int:
    """Generated ``figures/*.svg`` of a built site into ``docs/figures``."""
    target = docs / "figures"
    target.mkdir(parents=True, exist_ok=True)
    files = sorted((site_dir / "figures").glob("*.svg"))
    for f in files:
        shutil.copy2(f, target / f.name)
    return len(files)


def _route_section(nav: list[Any], route_page: str = "route.md") -> list[Any] | None:
    """The nav list that holds the route page (as scripts/hook_content.py finds it)."""
    for item in nav:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    pages = [v if isinstance(v, str) else next(iter(v.values()), None) for v in value]
                    if route_page in pages:
                        return value
                    found = _route_section(value, route_page)
                    if found is not None:
                        return found
    return None


def static_nav(root: Path) -> list[Any]:
    """The nav of mkdocs.yml with the route's stages inserted, as the content hook does."""
    config = read_config(root / "mkdocs.yml")
    nav: list[Any] = yaml.safe_load(yaml.safe_dump(config.get("nav") or []))
    route = yaml.safe_load((root / "data" / "route.yml").read_text(encoding="utf-8")) or {}
    section = _route_section(nav)
    if section is None:
        raise RuntimeError("route.md not found in the nav of mkdocs.yml")
    for stage in route.get("stages") or []:
        items = []
        for entry in stage.get("articles") or []:
            slug = entry.get("slug") if isinstance(entry, dict) else entry
            items.append(f"articles/{slug}.md")  # labs (notebooks) are left out: plain Material has no such pages
        section.append({str(stage["title"]): items})
    return nav


def prepare_baseline(ws: Workspace, site_dir: Path) -> Path:
    """docs-baseline/ and mkdocs.baseline.yml in ``ws``; returns the config path."""
    docs = ws.root / BASELINE_DOCS
    if docs.exists():
        shutil.rmtree(docs)
    shutil.copytree(ws.docs, docs)
    inline_figures(docs, ws.root / "code")
    copy_figures(site_dir, docs)
    empty = ws.root / "overrides-empty"
    empty.mkdir(exist_ok=True)
    return write_child_config(
        ws.root / BASELINE_CONFIG,
        {
            "docs_dir": BASELINE_DOCS,
            "theme": {"custom_dir": empty.name},
            "hooks": [],
            "plugins": [{"search": {"lang": "zh"}}],
            "nav": static_nav(ws.root),
        },
    )


def project_hooks(root: Path) -> list[str]:
    return [str(h) for h in read_config(root / "mkdocs.yml").get("hooks") or []]


def prepare_nofig(ws: Workspace, site_dir: Path) -> Path:
    """Turn ``ws`` into the project without the figure hook; returns the config path."""
    inline_figures(ws.docs, ws.root / "code")
    copy_figures(site_dir, ws.docs)
    hooks = [h for h in project_hooks(ws.root) if h != FIGURE_HOOK]
    config = write_child_config(ws.root / NOFIG_CONFIG, {"hooks": hooks})
    ws.commit("bench: without the figure hook")
    return config
