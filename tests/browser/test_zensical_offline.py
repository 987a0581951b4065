"""Offline reading on the Zensical build (``python -m llmsite zensical``): the same manifest, service worker and
button as the MkDocs build (``test_offline.py``, whose helpers this uses), with Zensical's own scripts and search.

The site is deployed at an address of its own, read once, 「离线阅读」 pressed twice, and the server shut down: every
page of the route then opens with its title and its images, and Zensical's search finds a Chinese term.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.browser.test_offline as reference
from llmsite import offline
from tests.conftest import BuiltSite

pytestmark = pytest.mark.browser
reader = reference.reader  # the reader's context (390 px, service workers allowed; an uncaught error fails)


@pytest.fixture
def zensical_copy(zensical_site: BuiltSite, tmp_path: Path) -> reference.Deployed:
    return reference.deploy(zensical_site, tmp_path)


def test_the_zensical_site_reads_offline_after_one_visit(reader, zensical_copy: reference.Deployed) -> None:
    site = zensical_copy.site
    kept = json.loads((site / offline.MANIFEST).read_text(encoding="utf-8"))
    urls = {f["url"] for f in kept["files"]}
    route = reference._route_pages()
    assert set(route) <= urls and "search.json" in urls, "offline.json leaves out a route page or the search index"
    pg, base = reader, reference._base(zensical_copy.port)
    with reference._serving(zensical_copy.root, zensical_copy.port):
        pg.goto(base + "articles/transformer-attention/")
        reference._enable(pg)
        pg.locator(".llm-offline [role=status]").filter(has_text="已可离线阅读").wait_for(timeout=120_000)
    for path in route:  # the server is gone
        pg.goto(base + path)
        assert pg.title().endswith("大模型学习交流平台"), (path, pg.title())
        assert pg.locator("article h1").count() == 1, path
        images = pg.evaluate("""() => Promise.all([...document.querySelectorAll('article img')]
            .filter(i => !i.src.startsWith('data:')).map(
            i => fetch(i.src).then(r => r.ok ? [i.src, true] : [i.src, false], () => [i.src, false])))""")
        assert all(ok for _, ok in images), (path, [src for src, ok in images if not ok])
    pg.goto(base + "articles/grpo/")
    pg.locator("label.md-header__button[for='__search']").click()  # the phone's magnifier (390 px)
    pg.locator("dialog[open]").wait_for()
    pg.keyboard.type("注意力")
    pg.locator("dialog[open] a[href*='articles/transformer-attention/']").first.wait_for(timeout=30_000)
