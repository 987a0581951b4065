"""The staged tree Zensical builds from: ``.zensical/`` (its project root, git-ignored).

- ``docs/``: a copy of the authors' ``docs/`` (they are never edited), each article's front matter with the
  template values the MkDocs adapter sets on ``page.meta`` (``llmsite.content.pages.template_values``), and the
  generated files: listing pages, figures and their data, lab pages and notebooks, playground models. A lab
  page is ``labs/<name>.md`` here (Zensical renders Markdown pages only); the extension fills it.
- ``overrides/``: the theme's overrides less the partials written for Material's own components (``MATERIAL_ONLY``).
- ``mkdocs.yml``: ``llmsite.zensical.config.staged``.

The folder is written next to the old one and swapped in, so a failed staging leaves the previous one whole.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from markupsafe import escape

from llmsite import atomic, paths
from llmsite.content import frontmatter
from llmsite.content.dates import RevisionDates
from llmsite.content.pages import template_values
from llmsite.content.render import url_for
from llmsite.zensical import config
from llmsite.zensical.state import State

STAGE = paths.ROOT / ".zensical"
SITE_NAME = "site"  # Zensical's output, inside the stage; finish moves it to site-zensical/
LAB_SUFFIX = ".ipynb"
# Partials of overrides/ written for a component of Material's that Zensical replaces with its own: its search is a
# dialog of its own (it finds Chinese terms; tests/browser/test_zensical_search.py), which Material's markup breaks.
MATERIAL_ONLY = ("partials/search.html",)
# Rules Material's stylesheet has and Zensical's classic variant lacks, as a stylesheet of the Zensical build only
STYLESHEET = "assets/stylesheets/zensical.css"


def page_uri(uri: str) -> str:
    """Where a page of the MkDocs build is in the staged tree (lab notebooks become Markdown pages)."""
    lab = uri.startswith("labs/") and uri.count("/") == 1 and uri.endswith(LAB_SUFFIX)  # not labs/<name>/<name>.ipynb
    return uri[: -len(LAB_SUFFIX)] + ".md" if lab else uri


def _front_matter(meta: dict[str, Any], body: str) -> str:
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + body


def overrides(target: Path) -> None:
    """The theme's overrides as Zensical gets them: the repository's ``overrides/`` less ``MATERIAL_ONLY``."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(paths.ROOT / "overrides", target)
    for name in MATERIAL_ONLY:
        (target / name).unlink(missing_ok=True)


def write(state: State, stage: Path = STAGE) -> Path:
    """Write the staged tree; returns the staged ``mkdocs.yml``."""
    stage.mkdir(parents=True, exist_ok=True)
    docs = stage / "docs"
    fresh = stage / "docs.new"
    if fresh.exists():
        shutil.rmtree(fresh)
    shutil.copytree(paths.DOCS, fresh, ignore=shutil.ignore_patterns("*.pyc", "*.pyo", "__pycache__"))
    dates = RevisionDates(paths.DOCS)
    for source in sorted(paths.DOCS.rglob("*.md")):
        uri = source.relative_to(paths.DOCS).as_posix()
        article = state.site.by_uri(uri)
        date = dates.of(uri) or (article.date.isoformat() if article is not None else None)
        fm = frontmatter.split(source.read_text(encoding="utf-8"))
        if fm.error:  # not an article (those are checked): left as written, for Zensical to read or report
            continue
        meta = dict(fm.meta)
        if date:
            meta["revision_date"] = date  # the theme's 「最后更新」, as llmsite.content.dates gives it
        if article is not None:
            following = state.site.articles.get(article.next or "")
            meta["article"] = template_values(article, url_for(uri), following)
            meta["title"], meta["description"] = article.title, article.description
            meta["readtime"] = article.readtime
        for key in ("title", "description"):  # as the MkDocs adapter (page_values): the themes print them unescaped
            if isinstance(meta.get(key), str):
                meta[key] = str(escape(meta[key]))
        (fresh / uri).write_text(_front_matter(meta, fm.body), encoding="utf-8")
    for item in state.generated:
        target = fresh / page_uri(item.uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.path is not None:
            shutil.copyfile(item.path, target)
        else:  # made in memory: the listing pages, a lab page (front matter and llmsite.extension.LAB_BODY)
            target.write_bytes(item.read_bytes())
    shutil.copyfile(Path(__file__).with_name("zensical.css"), fresh / STYLESHEET)
    old = stage / "docs.old"
    if old.exists():
        shutil.rmtree(old)
    if docs.exists():
        docs.rename(old)
    fresh.rename(docs)
    if old.exists():
        shutil.rmtree(old)
    overrides(stage / "overrides")
    yml = stage / "mkdocs.yml"
    atomic.write_text(yml, config.staged(paths.ROOT, stage, docs, stage / SITE_NAME, page_uri, STYLESHEET))
    return yml
