"""The same site built with ProperDocs, the maintained fork of MkDocs (the second builder CI runs).

The run's second build (``clean_build``: ProperDocs, strict, from empty caches) against the run's MkDocs
build: the same files, a generator tag that names ProperDocs, and the attention article's text. That every
other byte is the same is checked once, by ``test_reproducible.py``, on the same two builds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

pytestmark = pytest.mark.slow

# Every test asks for ``clean_build`` first: its worker then starts the second build (after the trained models)
# while another worker runs the first, side by side. Asked the other way round, this worker built both, one
# after the other (r15: 301 s, then 183 s), while the worker of test_built_html.py waited 346 s doing nothing.
ATTENTION = "articles/transformer-attention/index.html"
GENERATOR = re.compile(r'<meta name="generator" content="([^"]*)">')


def _files(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}


def _article_text(html: str) -> str:
    article = BeautifulSoup(html, "html.parser").select_one("article")
    assert article is not None
    return " ".join(article.get_text(" ").split())


def test_properdocs_builds_the_same_files(clean_build, built_site):
    mkdocs_files, properdocs_files = _files(built_site.dir), _files(clean_build.dir)
    assert properdocs_files == mkdocs_files, {
        "only in the MkDocs build": sorted(mkdocs_files - properdocs_files),
        "only in the ProperDocs build": sorted(properdocs_files - mkdocs_files),
    }
    assert sum(name.endswith(".html") for name in mkdocs_files) > 5


def test_every_page_names_its_builder(clean_build, built_site):
    pages = sorted(n for n in _files(built_site.dir) if n.endswith(".html"))
    for name in pages:
        ours = GENERATOR.findall((built_site.dir / name).read_text(encoding="utf-8"))
        theirs = GENERATOR.findall((clean_build.dir / name).read_text(encoding="utf-8"))
        assert len(ours) == len(theirs) == 1, name
        assert ours[0].startswith("mkdocs-") and "ProperDocs" in theirs[0], (name, ours, theirs)


def test_the_attention_article_reads_the_same(clean_build, built_site):
    mkdocs_text = _article_text((built_site.dir / ATTENTION).read_text(encoding="utf-8"))
    properdocs_text = _article_text((clean_build.dir / ATTENTION).read_text(encoding="utf-8"))
    assert len(mkdocs_text) > 2000
    assert properdocs_text == mkdocs_text
