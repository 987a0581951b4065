"""Shared fixtures: one strict build of the site per session, a local server that
serves it under the project sub-path (as GitHub Pages does), and a headless
Chromium whose pages record every request and console error.

- ``built_site``: ``mkdocs build --strict`` into ``<tmp>/llm-study-platform``, once per session.
- ``site_server``: serves ``<tmp>`` on 127.0.0.1, so the site lives at ``/llm-study-platform/``.
- ``browser`` / ``page``: Playwright with the system Chromium; the ``page`` fixture fails the
  test at teardown if any request left 127.0.0.1:<port> or the page logged an error.
"""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DATA = ROOT / "data"
SUBPATH = "llm-study-platform"


# Build artifacts (the trained tiny Transformer) are keyed by content: every throwaway copy of the repository
# that tests build in shares the repository's artifact cache, so the model is trained at most once a session.
os.environ.setdefault("LLM_ARTIFACT_CACHE", str(ROOT / ".cache" / "artifacts"))

# Files worth a look after the run (screenshots); printed in the terminal summary.
ARTIFACTS: list[tuple[str, Path]] = []


def pytest_terminal_summary(terminalreporter):
    if ARTIFACTS:
        terminalreporter.section("artifacts")
        for label, path in ARTIFACTS:
            terminalreporter.write_line(f"{label}: {path}")


# --------------------------------------------------------------------------- build and server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@dataclass
class _Server:
    root: Path
    port: int
    httpd: http.server.ThreadingHTTPServer
    thread: threading.Thread | None = None


@pytest.fixture(scope="session")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    """A bound (not yet serving) HTTP server on a free port, and the directory it will serve.

    Binding first keeps the port reserved between choosing it and serving on it.
    """
    root = tmp_path_factory.mktemp("pages")
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    server = _Server(root, httpd.server_address[1], httpd)
    yield server
    if server.thread is not None:
        httpd.shutdown()
        server.thread.join(timeout=10)
    httpd.server_close()


@dataclass
class BuiltSite:
    dir: Path  # <tmp>/llm-study-platform
    base_url: str  # http://127.0.0.1:<port>/llm-study-platform/
    output: str
    port: int

    @property
    def tmp(self) -> Path:
        return self.dir.parent


@pytest.fixture(scope="session")
def built_site(_server: _Server) -> BuiltSite:
    """Build the site once per session with ``--strict``; any failure or warning fails the tests."""
    out_dir = _server.root / SUBPATH
    base_url = f"http://127.0.0.1:{_server.port}/{SUBPATH}/"
    env = {**os.environ, "SITE_URL": base_url, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out_dir)]
    try:
        proc = subprocess.run(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=900,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"mkdocs build timed out after {exc.timeout} s:\n{exc.output or ''}", pytrace=False)
    output = proc.stdout
    if proc.returncode != 0 or "WARNING" in output:
        pytest.fail(
            f"`mkdocs {' '.join(cmd[3:])}` failed (exit code {proc.returncode}"
            f"{', output contains WARNING' if 'WARNING' in output else ''}):\n{output}",
            pytrace=False,
        )
    if not (out_dir / "index.html").is_file():
        pytest.fail(f"mkdocs build produced no index.html in {out_dir}:\n{output}", pytrace=False)
    return BuiltSite(out_dir, base_url, output, _server.port)


@pytest.fixture(scope="session")
def site_server(built_site: BuiltSite, _server: _Server) -> str:
    """Serve the built site under ``/llm-study-platform/``; yields the base URL."""
    if _server.thread is None:
        thread = threading.Thread(target=_server.httpd.serve_forever, name="site-server", daemon=True)
        thread.start()
        _server.thread = thread
    return built_site.base_url


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="session")
def browser():
    from llmsite import chromium

    exe = chromium.executable()
    if not (Path(exe).is_file() and os.access(exe, os.X_OK)) and not shutil.which(exe):
        reason = f"Chromium not found at {exe} (set CHROMIUM_PATH); browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(reason + " — browser tests must not be skipped in CI", pytrace=False)
        pytest.skip(reason)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - playwright is pinned in requirements.txt
        if os.environ.get("CI"):
            pytest.fail(f"playwright is not installed: {exc}", pytrace=False)
        pytest.skip(f"playwright is not installed: {exc}")
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=shutil.which(exe) or exe, args=chromium.ARGS, headless=True)
    except Exception:
        pw.stop()
        raise
    yield b
    b.close()
    pw.stop()


@dataclass
class PageLog:
    """What a page did: every request URL, console errors and uncaught page errors."""

    allowed_netloc: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def third_party(self) -> list[str]:
        bad = []
        for url in self.requests:
            parts = urlsplit(url)
            if parts.scheme in ("data", "blob"):
                continue
            if parts.scheme not in ("http", "https") or parts.netloc != self.allowed_netloc:
                bad.append(url)
        return bad

    def problems(self) -> list[str]:
        out = [f"request to another host: {u}" for u in dict.fromkeys(self.third_party())]
        out += [f"console error: {m}" for m in self.console_errors]
        out += [f"page error: {m}" for m in self.page_errors]
        return out


@pytest.fixture
def page(browser, site_server: str, built_site: BuiltSite):
    """A fresh page (1280x900, zh-CN, light). Teardown fails on third-party requests or console errors."""
    log = PageLog(allowed_netloc=f"127.0.0.1:{built_site.port}")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN", color_scheme="light")

    def on_request(request):
        log.requests.append(request.url)

    def route(route):
        # Never let a request leave the machine; it is recorded (and reported) all the same.
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc != log.allowed_netloc:
            log.requests.append(url)
            route.abort()
        else:
            route.continue_()

    watched: list = []

    def watch(p):
        if any(p is w for w in watched):
            return
        watched.append(p)
        p.on("console", lambda msg: log.console_errors.append(f"{p.url}: {msg.text}") if msg.type == "error" else None)
        p.on("pageerror", lambda err: log.page_errors.append(f"{p.url}: {err}"))

    context.on("request", on_request)
    context.on("page", watch)
    context.route("**/*", route)
    pg = context.new_page()
    watch(pg)
    pg.set_default_timeout(10_000)
    pg.log = log  # tests may look at what was requested
    yield pg
    context.close()
    problems = log.problems()
    if problems:
        pytest.fail("the page broke the site's rules:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def record_artifact():
    """``record_artifact(label, path)``: list a file in the terminal summary (e.g. a screenshot)."""

    def record(label: str, path: Path) -> None:
        ARTIFACTS.append((label, path))

    return record


# --------------------------------------------------------------------------- the sources, read independently


class _LenientLoader(yaml.SafeLoader):
    """Reads mkdocs.yml: ``!ENV [NAME, default]`` gives the default, other custom tags give None."""


def _env_tag(loader, node):
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node)
        return items[-1] if items else None
    return None


_LenientLoader.add_constructor("!ENV", _env_tag)
_LenientLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def split_front_matter(text: str) -> tuple[dict, str]:
    """(front matter, body) of a Markdown source; the body keeps its text exactly."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return yaml.safe_load("".join(lines[1:i])) or {}, "".join(lines[i + 1 :])
    raise ValueError("front matter without a closing ---")


@dataclass
class SourceArticle:
    slug: str
    path: Path
    title: str
    description: str
    author_id: str
    author_name: str
    date: dt.date
    tags: list[str]
    body: str
    meta: dict

    @property
    def url(self) -> str:
        return f"articles/{self.slug}/"


@dataclass
class Content:
    site_name: str
    config: dict
    articles: dict[str, SourceArticle]  # file order
    stages: list[tuple[str, list[str]]]  # (stage title, slugs) in route order
    authors: dict

    @property
    def route_order(self) -> list[str]:
        return [slug for _, slugs in self.stages for slug in slugs]

    def newest(self) -> list[SourceArticle]:
        return sorted(self.articles.values(), key=lambda a: (a.date, a.slug), reverse=True)

    def site_setting(self, key: str, default: int) -> int:
        """An option of the llmsite plugin in mkdocs.yml (``plugins: - llmsite: {key: value}``)."""
        for item in self.config.get("plugins") or []:
            if isinstance(item, dict) and "llmsite" in item:
                return int((item["llmsite"] or {}).get(key, default))
        return default

    @staticmethod
    def page_heading(src: str) -> tuple[str, str]:
        """(front matter title, first ``# `` heading or the title) of a docs/ page."""
        meta, body = split_front_matter((DOCS / src).read_text(encoding="utf-8"))
        m = re.search(r"^# (.+?)\s*$", body, re.M)
        title = str(meta.get("title", ""))
        return title, (m.group(1) if m else title)


@pytest.fixture(scope="session")
def content() -> Content:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_LenientLoader)
    authors = yaml.safe_load((DATA / "authors.yml").read_text(encoding="utf-8")) or {}
    route = yaml.safe_load((DATA / "route.yml").read_text(encoding="utf-8")) or {}
    stages = []
    for stage in route.get("stages") or []:
        slugs = [item["slug"] if isinstance(item, dict) else str(item) for item in stage.get("articles") or []]
        stages.append((str(stage["title"]), slugs))
    articles = {}
    for path in sorted((DOCS / "articles").glob("*.md")):
        if path.name == "index.md":
            continue
        meta, body = split_front_matter(path.read_text(encoding="utf-8"))
        author = str(meta["author"])
        articles[path.stem] = SourceArticle(
            slug=path.stem,
            path=path,
            title=str(meta["title"]).strip(),
            description=str(meta["description"]).strip(),
            author_id=author,
            author_name=str((authors.get(author) or {}).get("name", author)),
            date=meta["date"],
            tags=[str(t) for t in meta["tags"]],
            body=body,
            meta=meta,
        )
    return Content(str(config["site_name"]), config, articles, stages, authors)
