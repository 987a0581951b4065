"""Comparison builds derived from the project's own config.

- *baseline*: the same docs/ built by plain MkDocs Material: only the ``search``
  plugin (not ours), no ``custom_dir``; the nav our plugin would
  build (stages from data/route.yml, with the labs) written out statically; figure markers
  replaced by the same image Markdown the build emits, with the generated
  SVGs copied into the docs folder (KaTeX comes along: it is vendored in docs/);
  the lab pages' built content copied in as Markdown pages (same text to render and index).
- *nofig*: the project with ``figures: false`` (llmsite plugin option) and otherwise identical
  output (same figure Markdown, SVGs as ordinary docs files).

Both configs inherit mkdocs.yml through MkDocs' ``INHERIT`` (dicts merge, lists replace).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from llmsite.content.catalog import route_section
from llmsite.features import figures as figure_adapter
from llmsite.figures import registry
from llmsite.figures.registry import MARKER

from .common import Workspace, read_config, write_child_config

BASELINE_CONFIG = "mkdocs.baseline.yml"
BASELINE_DOCS = "docs-baseline"
NOFIG_CONFIG = "mkdocs.nofig.yml"
_MARKER = MARKER  # the build's own pattern (llmsite.figures.registry)


def figure_specs(code_dir: Path) -> dict[str, Any]:
    specs: dict[str, Any] = registry.discover(code_dir)
    return specs


def inline_figures(docs: Path, code_dir: Path) -> int:
    """Replace every figure marker under ``docs`` by the build's Markdown for it; returns the count."""
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
            return str(figure_adapter.figure_markdown(specs[m.group("name")], uri))

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


def static_nav(root: Path) -> list[Any]:
    """The nav of mkdocs.yml with the route's stages inserted, as the content hook does."""
    config = read_config(root / "mkdocs.yml")
    nav: list[Any] = yaml.safe_load(yaml.safe_dump(config.get("nav") or []))
    route = yaml.safe_load((root / "data" / "route.yml").read_text(encoding="utf-8")) or {}
    section = route_section(nav)
    if section is None:
        raise RuntimeError("route.md not found in the nav of mkdocs.yml")
    for stage in route.get("stages") or []:
        items = []
        for entry in stage.get("articles") or []:
            slug = entry.get("slug") if isinstance(entry, dict) else entry
            items.append(f"articles/{slug}.md")
            labs = entry.get("labs") if isinstance(entry, dict) else None
            # the lab pages, as the Markdown pages copy_lab_pages writes (plain Material has no notebook pages)
            items += [str(lab).removesuffix(".ipynb") + ".md" for lab in labs or []]
        section.append({str(stage["title"]): items})
    return nav


_ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(?P<body>.*?)</article>', re.S)
_TITLE = re.compile(r"<title>(?P<title>.*?)</title>", re.S)


def copy_lab_pages(site_dir: Path, docs: Path) -> int:
    """Each built lab page's content (``labs/<name>/index.html``) as ``labs/<name>.md`` in ``docs``: the same text
    for the baseline to render and index (Material's search segments it with jieba, the largest cost of a warm
    build), as raw HTML in a Markdown page."""
    count = 0
    for page in sorted((site_dir / "labs").glob("*/index.html")):
        html = page.read_text(encoding="utf-8")
        body, title = _ARTICLE.search(html), _TITLE.search(html)
        if body is None or title is None:
            raise RuntimeError(f"{page}: no article content to copy into the baseline")
        name = page.parent.name
        front = title.group("title").split(" - ")[0].replace('"', "'")
        target = docs / "labs" / f"{name}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'---\ntitle: "{front}"\n---\n\n<div>\n{body.group("body").strip()}\n</div>\n',
                          encoding="utf-8")
        count += 1
    return count


def prepare_baseline(ws: Workspace, site_dir: Path) -> Path:
    """docs-baseline/ and mkdocs.baseline.yml in ``ws``; returns the config path."""
    docs = ws.root / BASELINE_DOCS
    if docs.exists():
        shutil.rmtree(docs)
    shutil.copytree(ws.docs, docs)
    inline_figures(docs, ws.root / "code")
    copy_figures(site_dir, docs)
    copy_lab_pages(site_dir, docs)
    empty = ws.root / "overrides-empty"
    empty.mkdir(exist_ok=True)
    return write_child_config(
        ws.root / BASELINE_CONFIG,
        {
            "docs_dir": BASELINE_DOCS,
            "theme": {"custom_dir": empty.name},
            "plugins": [{"search": {"lang": "zh"}}],
            "nav": static_nav(ws.root),
        },
    )


def project_plugins(root: Path) -> list[Any]:
    return list(read_config(root / "mkdocs.yml").get("plugins") or [])


def _without_figures(plugins: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in plugins:
        if item == "llmsite" or (isinstance(item, dict) and "llmsite" in item):
            options = dict((item.get("llmsite") if isinstance(item, dict) else None) or {})
            item = {"llmsite": {**options, "figures": False}}
        out.append(item)
    return out


def prepare_nofig(ws: Workspace, site_dir: Path) -> Path:
    """Turn ``ws`` into the project without the figure step (the plugin's ``figures: false``); returns the config."""
    inline_figures(ws.docs, ws.root / "code")
    copy_figures(site_dir, ws.docs)
    config = write_child_config(ws.root / NOFIG_CONFIG, {"plugins": _without_figures(project_plugins(ws.root))})
    ws.commit("bench: without the figure step")
    return config
