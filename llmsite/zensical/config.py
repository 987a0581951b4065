"""The ``mkdocs.yml`` Zensical reads: the site's own, with what the MkDocs plugin used to add written out.

Zensical's project root is the folder of its configuration file, and ``docs_dir`` and ``site_dir`` must lie
inside it; ``zensical build --clean`` deletes ``<project root>/.cache``. So the configuration is staged in its own
folder (``.zensical/``), never at the repository's root, where ``.cache/`` is ours.

The text of ``mkdocs.yml`` is kept (its ``!ENV`` and ``!!python`` tags are Zensical's to resolve) and changed
by top-level blocks:

- ``nav``: written out with the route's stages (``data/route.yml``), as ``llmsite.mkdocs.content`` inserts them;
- ``plugins``: without ``llmsite`` (Zensical drops unknown plugins silently; its options are read here);
- ``markdown_extensions``: ``llmsite.zensical.extension`` added last; the snippets' base path made absolute;
- ``extra_css``: ``stylesheet`` added last (``stage.STYLESHEET``: what Material styles and Zensical does not);
- ``docs_dir`` / ``site_dir``: the staged folders; ``theme.custom_dir``: the staged copy of ``overrides/``
  (``stage.overrides``: without the partials written for Material's own components);
  ``theme.variant``: ``classic``, Material's look (the overrides are written for it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from markupsafe import escape

from llmsite.content.articles import ARTICLES_DIR
from llmsite.content.catalog import ROUTE_PAGE, load_route
from llmsite.options import OptionsError, SiteOptions, read_options

_TOP = re.compile(r"^(?P<key>[A-Za-z_]+):", re.M)


class ConfigError(ValueError):
    pass


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml's values: ``!ENV`` resolved like MkDocs does, ``!!python/...`` tags left as None."""


def _env(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        names, default = [loader.construct_scalar(node)], None
    else:
        values = loader.construct_sequence(node)  # type: ignore[arg-type]
        names, default = values[:-1], values[-1]
    for name in names:
        if name in os.environ:
            return yaml.safe_load(os.environ[name])
    return default


_Loader.add_constructor("!ENV", _env)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def read(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        data = yaml.load(f, Loader=_Loader)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: 不是「键: 值」形式的配置")
    return data


def plugin_options(config: dict[str, Any], name: str = "llmsite") -> SiteOptions:
    """The ``plugins: - llmsite: {...}`` options, checked and with their defaults as the MkDocs plugin has them."""
    found: object = None
    for item in config.get("plugins") or []:
        if isinstance(item, dict) and name in item:
            found = item[name]
    try:
        return read_options(found)
    except OptionsError as exc:
        raise ConfigError(f"mkdocs.yml 的 plugins: - {name}: 的选项有问题：{exc}") from exc


def blocks(text: str) -> list[tuple[str, str]]:
    """The top-level blocks of a YAML file, in order: (key, text including its comment lines above)."""
    starts = [m for m in _TOP.finditer(text)]
    out: list[tuple[str, str]] = []
    if starts and starts[0].start() > 0:
        out.append(("", text[: starts[0].start()]))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out.append((m.group("key"), text[m.start():end]))
    return out


def nav(config: dict[str, Any], root: Path, page_uri: Any) -> list[Any]:
    """mkdocs.yml's nav with one section per stage of the route after the route page's entry."""
    route, _ = load_route(root / "data" / "route.yml", root=root)
    out = list(config.get("nav") or [])
    groups: list[list[str]] = [[] for _ in route.stages]
    for entry in route.entries:
        groups[entry.stage].append(page_uri(f"{ARTICLES_DIR}/{entry.slug}.md"))
        groups[entry.stage].extend(page_uri(lab) for lab in entry.labs)
    for item in out:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list) and any(isinstance(v, dict) and ROUTE_PAGE in v.values() for v in value):
                    # escaped as the MkDocs adapter does: the theme prints section titles unescaped
                    value.extend({str(escape(stage.title)): items}
                                 for stage, items in zip(route.stages, groups, strict=True))
                    return out
    raise ConfigError(f"mkdocs.yml 的 nav 中找不到 {ROUTE_PAGE}，无法插入学习路线的各个阶段")


def _without_plugin(block: str, name: str) -> str:
    lines = block.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        if re.match(rf"^  - {re.escape(name)}\b", line):
            skipping = True
            continue
        if skipping and (re.match(r"^  - ", line) or not line.startswith(("    ", "\n"))):
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out)


def staged(root: Path, stage: Path, docs: Path, site: Path, page_uri: Any, stylesheet: str) -> str:
    """The text of the staged mkdocs.yml (``stage`` is Zensical's project root)."""
    source = root / "mkdocs.yml"
    text = source.read_text(encoding="utf-8")
    values = read(source)
    parts: list[str] = []
    for key, block in blocks(text):
        if key in {"nav", "docs_dir", "site_dir"}:
            continue
        if key == "plugins":
            block = _without_plugin(block, "llmsite")
        elif key == "theme":
            block, n = re.subn(r"^(  custom_dir:\s*)\S+", lambda m: m.group(1) + "overrides",
                               block, flags=re.M)
            if n != 1:
                raise ConfigError("mkdocs.yml 的 theme 里没有 custom_dir，Zensical 的构建找不到 overrides/")
            classic = "theme:\n  variant: classic   # Material's look (Zensical's default is modern)\n"
            block = block.replace("theme:\n", classic, 1)
        elif key == "extra_css":
            block = block.rstrip("\n") + f"\n  - {stylesheet}\n\n"
        elif key == "markdown_extensions":
            block, n = re.subn(r'base_path:\s*\["\."\]', f"base_path: [{_quoted(str(root))}]", block)
            if n != 1:
                raise ConfigError('mkdocs.yml 里 pymdownx.snippets 的 base_path 应是 ["."]')
            block = block.rstrip("\n") + "\n  - llmsite.zensical.extension\n\n"
        parts.append(block)
    head = (
        "# 由 python -m llmsite zensical 从 mkdocs.yml 生成，不要手改（改 mkdocs.yml）\n"
        f"docs_dir: {_quoted(_relative(docs, stage))}\n"
        f"site_dir: {_quoted(_relative(site, stage))}\n"
        + yaml.safe_dump({"nav": nav(values, root, page_uri)}, allow_unicode=True, sort_keys=False)
        + "\n"
    )
    return head + "".join(parts)


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
