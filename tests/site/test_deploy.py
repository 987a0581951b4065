"""Where the site lives: a project sub-path and a custom-domain root both work;
the build leaves authors' files alone; comments are opt-in."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_REF = re.compile(r'\s(?:href|src)="([^"#]*)(?:#[^"]*)?"')


def build(dest: Path, site_url: str, cwd: Path = ROOT, **env: str) -> str:
    full = {**os.environ, "SITE_URL": site_url, "NO_MKDOCS_2_WARNING": "1",
            "LLM_SITE_CACHE": str(ROOT / ".cache"), **env}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest)], cwd=cwd, env=full,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    assert proc.returncode == 0 and "WARNING" not in proc.stdout, proc.stdout
    return proc.stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, httpd.server_address[1]


def crawl(start: str) -> tuple[set[str], list[str]]:
    """Fetch every page and asset reachable from ``start`` on the same host; return (visited, broken)."""
    host = urlsplit(start).netloc
    seen: set[str] = set()
    broken: list[str] = []
    queue = [start]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = resp.read()
                kind = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            broken.append(f"{url} -> {exc.code}")
            continue
        if "html" not in kind:
            continue
        for ref in _REF.findall(body.decode("utf-8", "replace")):
            ref = unescape(ref)
            if not ref or ref.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = urljoin(url, ref)
            if urlsplit(target).netloc == host:
                queue.append(target.split("?")[0])
    return seen, broken


def test_every_link_and_asset_resolves_under_the_project_sub_path(site_server: str) -> None:
    visited, broken = crawl(site_server)
    assert len(visited) > 20
    assert not broken, broken


@pytest.fixture(scope="module")
def root_site(tmp_path_factory: pytest.TempPathFactory, repo_cache: Path) -> Iterator[str]:
    out = tmp_path_factory.mktemp("root-site")
    httpd, port = serve(out)
    try:
        build(out, f"http://127.0.0.1:{port}/")
        yield f"http://127.0.0.1:{port}/"
    finally:
        httpd.shutdown()


def test_every_link_and_asset_resolves_at_a_domain_root(root_site: str) -> None:
    visited, broken = crawl(root_site)
    assert len(visited) > 20
    assert not broken, broken
    with urllib.request.urlopen(root_site + "sitemap.xml") as resp:
        assert root_site + "articles/transformer-attention/" in resp.read().decode()


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_the_build_never_writes_into_docs_code_or_data(tmp_path: Path, repo_cache: Path) -> None:
    before = {part: _digest(ROOT / part) for part in ("docs", "code", "data")}
    build(tmp_path / "site", "http://127.0.0.1:1/")
    after = {part: _digest(ROOT / part) for part in ("docs", "code", "data")}
    assert after == before
    assert not (ROOT / "docs" / "figures").exists()


def _comments_config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    return config["extra"]["comments"]


def test_comments_are_off_by_default(built_site) -> None:
    for page in built_site.dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "giscus" not in text, page


@pytest.fixture(scope="module")
def commented_site(tmp_path_factory: pytest.TempPathFactory, repo_cache: Path) -> Path:
    """A copy of the site with comments on and one article opting out in its front matter."""
    repo = tmp_path_factory.mktemp("comments") / "repo"
    repo.mkdir()
    for part in ("docs", "code", "data", "llmsite", "scripts", "overrides", "mkdocs.yml"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, repo / part)
    (repo / "node_modules").symlink_to(ROOT / "node_modules")
    if (ROOT / "labs").is_dir():
        shutil.copytree(ROOT / "labs", repo / "labs")
    article = repo / "docs" / "articles" / "prompt-engineering.md"
    text = article.read_text(encoding="utf-8")
    article.write_text(text.replace("\nauthor:", "\ncomments: false\nauthor:", 1), encoding="utf-8")
    build(repo / "site", "http://127.0.0.1:1/", cwd=repo, COMMENTS_ENABLED="true")
    return repo / "site"


def test_comments_when_enabled_show_the_configured_repository(commented_site: Path) -> None:
    config = _comments_config()
    html = (commented_site / "articles" / "transformer-attention" / "index.html").read_text(encoding="utf-8")
    assert 'src="https://giscus.app/client.js"' in html
    assert f'data-repo="{config["repo"]}"' in html
    assert f'data-category="{config["category"]}"' in html
    # each article maps to a discussion of its own by slug, not by the page's address
    assert 'data-mapping="specific"' in html and 'data-term="transformer-attention"' in html
    assert "data-md-color-scheme" in html  # the palette follower
    # opted out in front matter; and never on non-article pages (the site-wide Content-Security-Policy
    # names giscus.app on every page once comments are on, so that one tag is left out of the comparison)
    for page in ("articles/prompt-engineering/index.html", "index.html"):
        text = (commented_site / page).read_text("utf-8")
        text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
        assert "giscus" not in text, page
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert policy and "https://giscus.app" in policy.group(1), "comments on: the policy must allow Giscus"


@pytest.mark.browser
def test_comment_widget_follows_the_palette(commented_site: Path, browser) -> None:
    httpd, port = serve(commented_site)
    context = browser.new_context()
    giscus_requests: list[str] = []

    def stub(route):  # never reach the real giscus: answer with an empty script
        giscus_requests.append(route.request.url)
        route.fulfill(status=200, content_type="application/javascript", body="/* stub */")

    context.route("https://giscus.app/**", stub)
    page = context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/articles/transformer-attention/")
        box = page.locator("[data-llm-giscus]")
        page.evaluate("document.querySelector('[data-llm-giscus]').scrollIntoView()")
        page.wait_for_timeout(300)
        scheme = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        first = box.get_attribute("data-theme")
        assert first == ("dark" if scheme == "slate" else "light")
        page.locator("form[data-llm-palette] label:visible").first.click()
        page.wait_for_function(
            "t => document.querySelector('[data-llm-giscus]').getAttribute('data-theme') !== t", arg=first
        )
        assert box.get_attribute("data-theme") != first
        assert giscus_requests, "the widget script should be requested when comments are on"
    finally:
        context.close()
        httpd.shutdown()
