"""MkDocs hook: "last updated" dates from git.

One ``git log`` for the whole docs/ folder per build (linear, not one process
a page). Material's source-file partial shows ``page.meta.revision_date``.
Without git or history (a tarball, a shallow clone that lacks the file), an
article falls back to its front-matter date and other pages show no date.
The same date is the page's ``<lastmod>`` in sitemap.xml (none when it shows none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sitelib.gitdates import last_commit_dates

_dates: dict[str, str] = {}


def on_config(config: Any) -> Any:
    global _dates
    docs = Path(config["docs_dir"])
    _dates = last_commit_dates(docs.parent, docs.name)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_name = Path(config["docs_dir"]).name
    date = _dates.get(f"{docs_name}/{page.file.src_uri}")
    article = page.meta.get("article")
    if date is None and article is not None:
        date = article.date.isoformat()
    if date:
        page.meta["revision_date"] = date
    # sitemap.xml's <lastmod> is page.update_date, which MkDocs sets to the build date: use the date the page
    # shows instead, and leave <lastmod> out (empty string) where the page shows none.
    page.update_date = date or ""
    return markdown
