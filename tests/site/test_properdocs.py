"""The same site built with ProperDocs, the maintained fork of MkDocs (the second builder CI runs).

One more strict build with the session's figure and lab caches warm, compared with the session's
MkDocs build: the same files, the same pages, and the attention article's text. The only difference
that is allowed in a page is the generator meta tag; files that are not pages (search index,
sitemap, figures, assets) must be byte-identical except the gzip wrapper of sitemap.xml.gz.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests.conftest import ROOT, SUBPATH

pytestmark = pytest.mark.slow

ATTENTION = "articles/transformer-attention/index.html"
GENERATOR = re.compile(r'<meta name="generator" content="[^"]*">')


def _files(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}


def _article_text(html: str) -> str:
    article = BeautifulSoup(html, "html.parser").select_one("article")
    assert article is not None
    return " ".join(article.get_text(" ").split())


@pytest.fixture(scope="module")
def properdocs_site(built_site, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("properdocs") / SUBPATH
    env = {**os.environ, "SITE_URL": built_site.base_url, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "properdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0 and "WARNING" not in proc.stdout, proc.stdout
    return out


def test_properdocs_builds_the_same_files(built_site, properdocs_site: Path):
    mkdocs_files, properdocs_files = _files(built_site.dir), _files(properdocs_site)
    assert properdocs_files == mkdocs_files, {
        "only in the MkDocs build": sorted(mkdocs_files - properdocs_files),
        "only in the ProperDocs build": sorted(properdocs_files - mkdocs_files),
    }
    assert sum(name.endswith(".html") for name in mkdocs_files) > 5


def test_properdocs_pages_differ_only_in_the_generator_tag(built_site, properdocs_site: Path):
    differ = []
    generators = set()
    for name in sorted(_files(built_site.dir)):
        a, b = (built_site.dir / name).read_bytes(), (properdocs_site / name).read_bytes()
        if name.endswith(".html"):
            generators.update(GENERATOR.findall(b.decode("utf-8")))
            a, b = (GENERATOR.sub("", x.decode("utf-8")) for x in (a, b))
        elif name.endswith(".gz"):
            a, b = gzip.decompress(a), gzip.decompress(b)
        if a != b:
            differ.append(name)
    assert differ == [], f"{len(differ)} files differ: {differ[:10]}"
    assert any("ProperDocs" in g for g in generators), generators


def test_the_attention_article_reads_the_same(built_site, properdocs_site: Path):
    mkdocs_text = _article_text((built_site.dir / ATTENTION).read_text(encoding="utf-8"))
    properdocs_text = _article_text((properdocs_site / ATTENTION).read_text(encoding="utf-8"))
    assert len(mkdocs_text) > 2000
    assert properdocs_text == mkdocs_text
