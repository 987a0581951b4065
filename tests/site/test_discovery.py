"""Feeds, Open Graph, edit links and last-updated dates."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]

from llmsite.content.articles import load_site  # noqa: E402
from llmsite.content.gitdates import last_commit_dates  # noqa: E402

ATOM = "{http://www.w3.org/2005/Atom}"


def test_atom_feed_lists_every_article_newest_first(built_site) -> None:
    site = load_site()
    feed = built_site.dir / "feed.xml"
    assert feed.stat().st_mode & 0o044 == 0o044, "the feed must be readable by the web server"
    tree = ET.parse(feed)
    entries = tree.getroot().findall(f"{ATOM}entry")
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    assert titles == [a.title for a in site.newest()][: len(titles)]
    assert len(titles) == min(20, len(site.articles))
    for entry in entries:
        link = entry.find(f"{ATOM}link").get("href")
        assert link.startswith(built_site.base_url) and "/articles/" in link
    head = (built_site.dir / "index.html").read_text(encoding="utf-8")
    assert 'type="application/atom+xml"' in head and "feed.xml" in head


def test_open_graph_and_title_come_from_front_matter(built_site) -> None:
    for article in load_site().articles.values():
        soup = BeautifulSoup((built_site.dir / article.url / "index.html").read_text(encoding="utf-8"), "html.parser")
        og = {m["property"]: m["content"] for m in soup.find_all("meta", attrs={"property": True})}
        assert og["og:title"] == article.title
        assert og["og:description"] == article.description
        assert og["og:type"] == "article"
        assert og["og:url"] == built_site.base_url + article.url
        assert og["article:published_time"] == article.date.isoformat()
        assert soup.title.string.startswith(article.title)


def test_articles_have_an_edit_link_and_a_last_updated_date(built_site) -> None:
    for article in load_site().articles.values():
        soup = BeautifulSoup((built_site.dir / article.url / "index.html").read_text(encoding="utf-8"), "html.parser")
        edit = soup.select_one("a.md-content__button[href*='/edit/']")
        assert edit is not None and edit["href"].endswith(f"docs/{article.src_uri}")
        dates = soup.select(".md-source-file__fact")
        assert dates and any(len(d.get_text(strip=True)) == 10 for d in dates)


def test_git_dates_fall_back_without_git(tmp_path: Path) -> None:
    assert last_commit_dates(tmp_path, "docs") == {}  # not a repository: no dates, no error
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("x", encoding="utf-8")
    assert last_commit_dates(tmp_path, "docs") == {}  # no history yet
    from llmsite.content.dates import RevisionDates

    dates = RevisionDates(tmp_path / "docs")
    assert dates.dates == {}
    article = SimpleNamespace(date=__import__("datetime").date(2026, 11, 20))
    page = SimpleNamespace(file=SimpleNamespace(src_uri="articles/x.md"), meta={})
    dates.apply(page, article)
    assert page.meta["revision_date"] == "2026-11-20"  # falls back to the front-matter date
    other = SimpleNamespace(file=SimpleNamespace(src_uri="about.md"), meta={})
    dates.apply(other, None)
    assert "revision_date" not in other.meta
