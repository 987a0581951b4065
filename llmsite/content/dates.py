""""Last updated" dates from git.

One ``git log`` for the whole docs/ folder per build (linear, not one process a page). Material's
source-file partial shows ``page.meta.revision_date``. Without git or history (a tarball, a shallow
clone that lacks the file), an article falls back to its front-matter date and other pages show
no date. The same date is the page's ``<lastmod>`` in sitemap.xml (none when it shows none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmsite.content.articles import Article
from llmsite.content.gitdates import last_commit_dates


class RevisionDates:
    def __init__(self, docs_dir: Path) -> None:
        self.docs_name = docs_dir.name
        self.dates = last_commit_dates(docs_dir.parent, docs_dir.name)

    def of(self, src_uri: str) -> str | None:
        """The last commit date of ``docs/<src_uri>``, if git knows it."""
        return self.dates.get(f"{self.docs_name}/{src_uri}")

    def apply(self, page: Any, article: Article | None) -> None:
        date = self.of(page.file.src_uri)
        if date is None and article is not None:
            date = article.date.isoformat()
        if date:
            page.meta["revision_date"] = date
        # sitemap.xml's <lastmod> is page.update_date, which MkDocs sets to the build date: use the date the page
        # shows instead, and leave <lastmod> out (empty string) where the page shows none.
        page.update_date = date or ""
