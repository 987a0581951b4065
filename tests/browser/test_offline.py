"""Offline reading (docs/assets/javascripts/offline.js, llmsite/offline.py, llmsite/templates/sw.js), in Chromium.

The built site is served by a server of the test's own (a copy of the run's pages under ``/llm-study-platform/``,
another port, hence another origin with no service worker yet). After one visit and the two presses on
「离线阅读」 (the first says how much it will download), the server is shut down: the network is really gone,
not emulated. Then every page of the route (``data/route.yml``: its articles and labs, and the route page) opens
with its title, its formulas and its images; instant navigation and search still work. A new deploy (the server
back with a changed page and a new ``offline.json``/``sw.js``) is offered as 「有更新」, and taking it shows the new
page. A quota that is too small gets the storage message, and the page goes on working.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from llmsite import offline
from tests.conftest import DATA, SUBPATH, BuiltSite

pytestmark = pytest.mark.browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextmanager
def _serving(root: Path, port: int = 0) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Quiet, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _route_pages() -> list[str]:
    route = yaml.safe_load((DATA / "route.yml").read_text(encoding="utf-8"))
    out = ["route/"]
    for stage in route["stages"]:
        for entry in stage["articles"]:
            entry = entry if isinstance(entry, dict) else {"slug": entry}
            out.append(f"articles/{entry['slug']}/")
            out += [f"labs/{Path(lab).stem}/" for lab in entry.get("labs") or []]
    return out


@dataclass
class Deployed:
    root: Path  # served folder: the site is root / SUBPATH
    port: int

    @property
    def site(self) -> Path:
        return self.root / SUBPATH


def deploy(built_site: BuiltSite, tmp_path: Path) -> Deployed:
    """A built site's pages deployed at another address (a port of its own): the sitemap names that address, as a
    build for it would (instant navigation only takes over links the sitemap lists), and offline.json follows."""
    root = tmp_path / "pages"
    shutil.copytree(built_site.dir, root / SUBPATH)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sitemap = root / SUBPATH / "sitemap.xml"
    sitemap.write_text(sitemap.read_text(encoding="utf-8").replace(built_site.base_url,
                                                                  f"http://127.0.0.1:{port}/{SUBPATH}/"),
                       encoding="utf-8")
    offline.write(root / SUBPATH)
    return Deployed(root, port)


@pytest.fixture
def copy_of_site(built_site: BuiltSite, tmp_path: Path) -> Deployed:
    """The run's pages deployed at another address (``deploy``)."""
    return deploy(built_site, tmp_path)


@pytest.fixture
def reader(browser):
    """A reader's first page in a fresh context (390 px, zh-CN, service workers allowed); an uncaught error in any
    of its pages fails the test."""
    context = browser.new_context(viewport={"width": 390, "height": 800}, locale="zh-CN", service_workers="allow")
    errors: list[str] = []
    context.on("page", lambda p: p.on("pageerror", lambda e: errors.append(str(e))))
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()
    if errors:
        pytest.fail(f"uncaught errors in the page: {errors}", pytrace=False)


def _base(port: int) -> str:
    return f"http://127.0.0.1:{port}/{SUBPATH}/"


def _enable(pg) -> str:
    box = pg.locator(".llm-offline")
    button = box.locator("button.llm-offline__button")
    button.wait_for(state="visible")
    button.click()
    status = box.locator("[role=status]")
    status.filter(has_text="再按一次开始").wait_for()
    first = status.inner_text()
    button.click()
    return first


def test_every_route_page_reads_offline_after_one_visit(reader, copy_of_site: Deployed) -> None:
    site = copy_of_site.site
    kept = json.loads((site / offline.MANIFEST).read_text(encoding="utf-8"))
    route = _route_pages()
    assert set(route) <= {f["url"] for f in kept["files"]}, "offline.json leaves out a route page"
    pg, base = reader, _base(copy_of_site.port)
    with _serving(copy_of_site.root, copy_of_site.port):
        pg.goto(base + "articles/transformer-attention/")
        said = _enable(pg)
        megabytes = f"{kept['bytes'] / 1e6:.1f} MB"
        assert f"{len(kept['files'])} 个文件" in said and megabytes in said, said
        pg.locator(".llm-offline [role=status]").filter(has_text="已可离线阅读").wait_for(timeout=120_000)
    # the server is gone: nothing answers on that port any more
    for path in route:
        pg.goto(base + path)
        assert pg.title().endswith("大模型学习交流平台"), (path, pg.title())
        assert pg.locator("article h1").count() == 1, path
        # every image the page shows is there (lazy ones are fetched as the browser would, through the worker)
        images = pg.evaluate("""() => Promise.all([...document.querySelectorAll('article img')]
            .filter(i => !i.src.startsWith('data:')).map(
            i => fetch(i.src).then(r => r.ok ? r.text().then(t => [i.src, t.length > 100]) : [i.src, false],
                                   () => [i.src, false])))""")
        assert all(ok for _, ok in images), (path, [src for src, ok in images if not ok])
        if path.startswith("articles/transformer-attention"):
            assert images, "the attention article has figures"
            shown = pg.locator("article img").filter(visible=True).first
            shown.scroll_into_view_if_needed()
            pg.wait_for_function("(i) => i.complete && i.naturalWidth > 0", arg=shown.element_handle())
            assert pg.locator(".arithmatex .katex").count() > 10, "formulas are there (rendered at build time)"
            assert pg.evaluate("() => document.fonts.check('16px KaTeX_Main')"), "KaTeX's font loaded offline"
    # instant navigation offline: a click on the footer's "next" link swaps the page without a reload
    pg.goto(base + "articles/transformer-attention/")
    # instant navigation takes over links once it has read the sitemap (from the worker's cache here)
    pg.wait_for_function("() => performance.getEntriesByType('resource')"
                         ".some(e => e.name.endsWith('/sitemap.xml'))")
    pg.evaluate("() => { window.__sameDocument = true; }")
    pg.locator("article a[rel=next]").click()
    pg.wait_for_url(lambda url: "/articles/transformer-block/" in url)
    assert pg.evaluate("() => window.__sameDocument === true"), "instant navigation reloaded the page"
    # search offline: the index and the worker were kept
    query = "input[data-md-component=search-query]"
    pg.locator("label.md-header__button[for=__search]").click()
    pg.fill(query, "注意力")
    pg.press(query, "End")  # Material searches on keyup
    pg.wait_for_function("() => [...document.querySelectorAll('.md-search-result__item a')]"
                         ".some(a => a.pathname.endsWith('/articles/transformer-attention/'))", timeout=30_000)
    # the playable model runs offline too: its script, header and weights (checked by their SHA-256) were kept
    pg.goto(base + "articles/gpt-from-scratch/")
    pg.locator(".llm-pg__load").first.click()
    pg.wait_for_selector("div.llm-pg[data-llm-pg-state=idle]")
    assert pg.locator("div.llm-pg[data-llm-pg-error]").count() == 0


def test_a_new_deploy_is_offered_and_replaces_the_kept_pages(reader, copy_of_site: Deployed) -> None:
    site = copy_of_site.site
    pg, base = reader, _base(copy_of_site.port)
    with _serving(copy_of_site.root, copy_of_site.port):
        pg.goto(base)
        _enable(pg)
        pg.locator(".llm-offline [role=status]").filter(has_text="已可离线阅读").wait_for(timeout=120_000)
        # a deploy: one page changed, so offline.json and sw.js change
        about = site / "about" / "index.html"
        about.write_text(about.read_text(encoding="utf-8").replace("</h1>", "（新版本标记）</h1>", 1),
                         encoding="utf-8")
        old = json.loads((site / offline.MANIFEST).read_text(encoding="utf-8"))["version"]
        assert offline.write(site)["version"] != old
        pg.goto(base + "about/")
        assert "新版本标记" not in pg.locator("h1").inner_text(), "the kept page is read until the reader agrees"
        update = pg.get_by_role("button", name="有更新：重新加载")
        update.wait_for(timeout=120_000)
        update.click()
        pg.wait_for_function("() => document.querySelector('h1').textContent.includes('新版本标记')",
                             timeout=60_000)


def test_too_little_storage_gets_a_message_and_the_site_goes_on(reader, copy_of_site: Deployed) -> None:
    pg, base = reader, _base(copy_of_site.port)
    with _serving(copy_of_site.root, copy_of_site.port):
        cdp = pg.context.new_cdp_session(pg)
        cdp.send("Storage.overrideQuotaForOrigin", {"origin": base.split(f"/{SUBPATH}/")[0], "quotaSize": 200_000})
        pg.goto(base + "articles/transformer-attention/")
        _enable(pg)
        pg.locator(".llm-offline [role=status]").filter(has_text="存储空间不够").wait_for(timeout=120_000)
        # online reading goes on: another page opens, its scripts run (the figures' interactive views)
        pg.goto(base + "articles/transformer-block/")
        assert pg.locator("article h1").count() == 1


def test_the_manifest_lists_what_pages_load_and_is_stable(built_site: BuiltSite) -> None:
    kept = json.loads((built_site.dir / offline.MANIFEST).read_text(encoding="utf-8"))
    urls = [f["url"] for f in kept["files"]]
    assert len(urls) == len(set(urls))
    for needed in ("", "route/", "search/search_index.json", "assets/stylesheets/site.css", "sitemap.xml",
                   "assets/vendor/katex/fonts/KaTeX_Main-Regular.woff2"):  # found through the bundle's url()
        assert needed in urls, needed
    assert any(u.startswith("assets/javascripts/workers/search.") for u in urls)
    assert any(u.endswith(".data.json") for u in urls), "interactive figure data"
    header = json.loads((built_site.dir / "playground" / "tang-gpt.json").read_text(encoding="utf-8"))
    for needed in ("playground/tang-gpt.json", f"playground/{header['weights']['file']}",
                   "assets/javascripts/playground.js"):
        assert needed in urls, f"the playable model offline: {needed}"
    assert not any(u.endswith((".ipynb", ".ttf", ".woff", ".gz", "feed.xml")) for u in urls)
    assert kept["bytes"] == sum(f["bytes"] for f in kept["files"])
    assert kept == offline.manifest(built_site.dir), "offline.json is what the site's files give, recomputed"
    worker = (built_site.dir / offline.WORKER).read_text(encoding="utf-8")
    assert f'const VERSION = "{kept["version"]}";' in worker
