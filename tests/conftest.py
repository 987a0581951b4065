"""Shared fixtures: one strict build of the site per run, a local server that serves it under the
project sub-path (as GitHub Pages does), and a headless Chromium whose pages record every request
and console error. The run may be split over several pytest-xdist workers; what is built once is
built by whichever worker asks first and read by the others (see "one run, several workers").

- ``built_site``: ``mkdocs build --strict`` into ``<shared>/pages/llm-study-platform``, once per run.
- ``clean_build``: the same commit built again by ProperDocs with an empty site cache, once per run.
- ``site_server``: ``<shared>/pages`` served on 127.0.0.1, so the site lives at ``/llm-study-platform/``.
- ``browser`` / ``page``: Playwright with the system Chromium; the ``page`` fixture fails the
  test at teardown if any request left 127.0.0.1:<port> or the page logged an error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

import llmsite  # noqa: F401  (pins the numeric kernels, llmsite/numerics.py, before any test imports torch)
from tests.scheduling import pytest_xdist_make_scheduler  # noqa: F401  (one work unit per test file)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DATA = ROOT / "data"
SUBPATH = "llm-study-platform"


# Build artifacts (the trained tiny Transformer) are keyed by content: every throwaway copy of the repository
# that tests build in shares the repository's artifact cache, so the model is trained at most once a session.
os.environ.setdefault("LLM_ARTIFACT_CACHE", str(ROOT / ".cache" / "artifacts"))

# --------------------------------------------------------------------------- one run, several workers
#
# `make test` runs the suite on both cores (pytest-xdist). What tests only read is computed once per run, whichever
# worker asks first, under a file lock in a folder every worker shares; the others wait for it and read it:
# - the session's strict build (`built_site`), served by one HTTP server in the controlling process (so every worker
#   sees the same URL, the one baked into the pages);
# - the second build from empty caches (`clean_build`), by ProperDocs, which serves both the reproducibility test and
#   the ProperDocs comparison.
# Run as plain `pytest` (one process), the same code path is taken with one participant.

SHARED_ENV = "LLM_TEST_SHARED"  # the shared folder
PORT_ENV = "LLM_TEST_PORT"  # the port the controlling process serves the built site on


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A browser that navigates away mid-download closes its connection: not an error of the site.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


# --------------------------------------------------------------------------- one article's lane
#
# `--article <slug>` (python -m llmsite lane, make test-article) runs the checks of one article: llmsite/lane chooses
# the test files; here, within them, tests whose parameters or body name only other articles are left out
# (llmsite/lane/select.py: `keeps`), and tests that go over every page check only the article's (`lane_pages`).

LANE: list[str] = []  # the --article slugs of this run (empty: the whole suite)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--article", action="append", default=[], metavar="SLUG",
                     help="只运行这篇文章的检查（可重复；python -m llmsite lane 用它）")


@functools.cache
def lane_graph():
    from llmsite.lane import graph

    return graph.load(ROOT)


def lane_pages(pages: list[str], part: slice = slice(None)) -> list[str]:
    """``pages`` (paths from the site root, ``articles/x/`` or ``articles/x/index.html``), then ``part`` of them; under
    ``--article`` only the article's pages (its page and its labs'), and the test is skipped when ``part`` of them is
    empty (a shard with no page of the article)."""
    if not LANE:
        return pages[part]
    own = lane_graph().pages(LANE)
    kept = [p for p in pages if p.startswith(own)][part]
    if not kept:
        pytest.skip(f"--article {' '.join(LANE)}：这一部分里没有它的页面")
    return kept


@pytest.hookimpl(trylast=True)  # after pytest's own tmp_path setup
def pytest_configure(config: pytest.Config) -> None:
    LANE[:] = config.getoption("article") or []
    if LANE:
        unknown = sorted(set(LANE) - set(lane_graph().articles))
        if unknown:
            raise pytest.UsageError(f"--article：没有这篇文章：{'、'.join(unknown)}"
                                    f"（有：{'、'.join(lane_graph().articles)}）")
    # CPU seconds per test, for bench/README.md (python -m bench.suite --cpu); a copy of the repository without bench/
    # (tests/scaffold runs pytest in one) runs without it. Only the outermost run logs (its controller and the xdist
    # workers it started): a test that runs pytest in a copy of the tree would otherwise log that copy's tests as if
    # they were the suite's, and its CPU twice (its own test counts it already).
    owner = os.environ.setdefault("LLM_CPU_LOG_OWNER", str(os.getpid()))
    outermost = owner in (str(os.getpid()), str(os.getppid()))
    if outermost and os.environ.get("LLM_CPU_LOG") and (ROOT / "bench" / "cputime.py").is_file():
        import bench.cputime

        config.pluginmanager.register(bench.cputime, "llm-cputime")
    if hasattr(config, "workerinput"):  # an xdist worker: the controller serves
        os.environ.update({name: config.workerinput[name] for name in (SHARED_ENV, PORT_ENV)})
        return
    # In the run's base temporary folder (pytest keeps the last three runs' folders, screenshots and reports included)
    shared = config._tmp_path_factory.getbasetemp() / "shared"
    shared.mkdir()
    pages = shared / "pages"
    pages.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(pages))
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, name="site-server", daemon=True)
    thread.start()
    config.stash[_SERVER] = (httpd, thread)
    os.environ[SHARED_ENV] = str(shared)
    os.environ[PORT_ENV] = str(httpd.server_address[1])


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist: what each worker is told
    node.workerinput.update({name: os.environ[name] for name in (SHARED_ENV, PORT_ENV)})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the cores this process may use (LLM_TEST_WORKERS overrides).

    With one worker a core, a run from a clean clone kept the two cores busy 62 % of the time (20.8 CPU minutes in
    16.7): workers wait for Chromium, for subprocesses and for the shared build and models. The extra worker fills
    those waits."""
    if os.environ.get("LLM_TEST_WORKERS"):
        return int(os.environ["LLM_TEST_WORKERS"])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1


# Scheduling. xdist hands work units to whichever worker is nearly idle, in collection order
# (`--no-loadscope-reorder`; by default it would sort units by their number of tests). A unit is a whole test file
# (so a module's fixtures are built once), except in the files of tests/scheduling.py's SPLIT (see
# `pytest_xdist_make_scheduler`). The order below keeps both cores busy from the first second: the files that
# start the run's two shared builds go first (each build then runs in its own worker while it waits), then every
# file that needs nothing shared (they fill the cores while the builds run), then the files that read a build.
# Within a group the longest files (bench/README.md's table) start first. The order changes only when tests run,
# never what they do.
STARTERS = ("tests/site/test_built_html.py", "tests/site/test_properdocs.py")
LONGEST = (
    "tests/browser/test_accessibility.py", "tests/site/test_incremental.py", "tests/labs/test_real_labs.py",
    "tests/site/test_pdf.py",
    "tests/figures/test_pipeline.py", "tests/labs/test_pipeline.py", "tests/browser/test_progress.py",
    "tests/scaffold/test_new_article.py", "tests/exercises/test_pipeline.py", "tests/browser/test_playground.py",
    "tests/browser/test_interactive_figures.py", "tests/browser/test_exercises.py",
    "tests/security/test_plain_text_fields.py", "tests/code/test_tiny_transformer.py",
    "tests/code/test_shape_contracts.py", "tests/figures/test_errors.py", "tests/labs/test_lab_pages.py",
    "tests/browser/test_site.py",
)
SHARED_FIXTURES = frozenset({"built_site", "clean_build", "repo_cache", "trained_artifacts", "executed_labs"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if LANE:
        from llmsite.lane.select import keeps

        lane, graph = set(LANE), lane_graph()
        kept, left = [], []
        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            (kept if keeps(graph, lane, params, getattr(item, "function", None)) else left).append(item)
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = kept

    def file_of(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    shared = {file_of(item) for item in items if SHARED_FIXTURES & set(getattr(item, "fixturenames", ()))}

    def rank(item: pytest.Item) -> tuple[int, int]:
        name = file_of(item)
        if name in STARTERS:
            return 0, STARTERS.index(name)
        return (2 if name in shared else 1), (LONGEST.index(name) if name in LONGEST else len(LONGEST))

    items.sort(key=rank)  # stable: tests keep their order within a file, files within a rank


def pytest_unconfigure(config: pytest.Config) -> None:
    served = config.stash.get(_SERVER, None)
    if served is None:
        return
    httpd, thread = served
    httpd.shutdown()
    thread.join(timeout=10)
    httpd.server_close()


_SERVER = pytest.StashKey[tuple]()


def shared_dir() -> Path:
    return Path(os.environ[SHARED_ENV])


def _once(file: str, compute: Callable[[], Any], dump: Callable[[Any], bytes], load: Callable[[bytes], Any]) -> Any:
    """``compute()`` run by the first worker that asks, under a file lock in the shared folder; stored atomically as
    ``dump`` gives it, and read back (``load``) by every worker, the first included."""
    from filelock import FileLock

    result = shared_dir() / file
    with FileLock(str(result.with_suffix(".lock"))):
        if not result.exists():
            tmp = result.with_suffix(".part")
            tmp.write_bytes(dump(compute()))
            os.replace(tmp, result)
    return load(result.read_bytes())


def once_per_run(name: str, compute: Callable[[], dict]) -> dict:
    """``compute()`` (returning a JSON-able dict) run by the first worker that asks, read back by the others."""
    return _once(f"{name}.json", compute, lambda v: json.dumps(v).encode("utf-8"), json.loads)


def computed_once(name: str, compute: Callable[[], Any]) -> Any:
    """``once_per_run`` for a test's own recomputation that tests in several files use and that JSON cannot hold
    (tensors): pickled into the shared folder."""
    import pickle

    return _once(f"{name}.pickle", compute, pickle.dumps, pickle.loads)


# Files worth a look after the run (screenshots); listed in the terminal summary of the controlling process.
def pytest_terminal_summary(terminalreporter):
    listed = shared_dir() / "artifacts.txt"
    if listed.is_file():
        terminalreporter.section("artifacts")
        for line in listed.read_text(encoding="utf-8").splitlines():
            terminalreporter.write_line(line)


# --------------------------------------------------------------------------- build and server


@dataclass
class BuiltSite:
    dir: Path  # <shared>/pages/llm-study-platform
    base_url: str  # http://127.0.0.1:<port>/llm-study-platform/
    output: str
    port: int

    @property
    def tmp(self) -> Path:
        return self.dir.parent


def _build(cmd: list[str], env: dict[str, str], timeout: int) -> dict:
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              encoding="utf-8", timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return {"returncode": None, "output": f"timed out after {exc.timeout} s:\n{exc.output or ''}"}
    return {"returncode": proc.returncode, "output": proc.stdout}


def _require_clean(name: str, cmd: list[str], result: dict, out_dir: Path) -> str:
    output = result["output"]
    if result["returncode"] != 0 or "WARNING" in output:
        pytest.fail(f"`{' '.join(cmd[2:])}` failed (exit code {result['returncode']}"
                    f"{', output contains WARNING' if 'WARNING' in output else ''}):\n{output}", pytrace=False)
    if not (out_dir / "index.html").is_file():
        pytest.fail(f"{name} produced no index.html in {out_dir}:\n{output}", pytrace=False)
    return output


def site_port() -> int:
    return int(os.environ[PORT_ENV])


def site_url() -> str:
    return f"http://127.0.0.1:{site_port()}/{SUBPATH}/"


# A build that runs longer than this has hung (a cold build takes about 260 s once the models are trained, 520 s
# with the run's other tests on the same two cores); the limit only keeps a hang from eating CI's 90 minutes.
BUILD_TIMEOUT = 1800


@pytest.fixture(scope="session")
def built_site(trained_artifacts: dict[str, Path]) -> BuiltSite:
    """The site built once per run with ``--strict`` (repository cache); any failure or warning fails the tests.

    It starts once the run's models are trained (``trained_artifacts``), so its time limit measures the build alone:
    on a fresh machine the training (about 700 CPU seconds since stage 3) ran inside the first build, which then
    took longer than its 900 s limit."""
    out_dir = shared_dir() / "pages" / SUBPATH
    env = {**os.environ, "SITE_URL": site_url(), "NO_MKDOCS_2_WARNING": "1", **lane_build_env()}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out_dir)]
    result = once_per_run("built-site", lambda: _build(cmd, env, BUILD_TIMEOUT))
    output = _require_clean("mkdocs build", cmd, result, out_dir)
    return BuiltSite(out_dir, site_url(), output, site_port())


@dataclass
class CleanBuild:
    dir: Path
    output: str
    cache: Path  # the cache it started empty and filled


@pytest.fixture(scope="session")
def clean_build(trained_artifacts: dict[str, Path]) -> CleanBuild:
    """A second build of the same commit by ProperDocs (MkDocs' maintained fork), with its site cache empty: every
    figure redrawn, every lab re-executed. Compared file by file with ``built_site`` by the reproducibility test (same
    bytes) and the ProperDocs test (only the generator tag differs).

    The trained models are the one thing it reads from the run's artifact cache: they are trained once per run (by
    whichever comes first, under ``artifacts.ensure``'s lock). That training is reproducible bit for bit in a fresh
    process is checked where a reader meets it: the downloaded labs train their models in an empty folder and must
    get the same parameters (``tests/labs/test_real_labs.py``). Not waiting for ``built_site``, the two cold builds
    run side by side on two cores."""
    out_dir = shared_dir() / "clean" / SUBPATH
    empty = shared_dir() / "empty-cache"
    env = {**os.environ, "SITE_URL": site_url(), "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(empty)}
    cmd = [sys.executable, "-m", "properdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out_dir)]
    result = once_per_run("clean-build", lambda: _build(cmd, env, BUILD_TIMEOUT))
    return CleanBuild(out_dir, _require_clean("properdocs build (empty site cache)", cmd, result, out_dir), empty)


@pytest.fixture(scope="session")
def zensical_site(built_site: BuiltSite) -> BuiltSite:
    """The same commit built with Zensical (``python -m llmsite zensical``), once per run, after ``built_site`` so
    that it reads the figures, labs and models that build put in the cache (it recomputes nothing). Its pages are
    served beside the MkDocs build's, at ``/zensical/<subpath>/``. It is built with MkDocs, Material and ProperDocs
    unimportable (``tests/without_mkdocs.py``): the day they are uninstalled, this build still works."""
    out_dir = shared_dir() / "pages" / "zensical" / SUBPATH
    staging = shared_dir() / "zensical-stage"
    url = f"http://127.0.0.1:{site_port()}/zensical/{SUBPATH}/"
    env = {**os.environ, "SITE_URL": url, **lane_build_env()}
    cmd = [sys.executable, "-m", "tests.without_mkdocs", "zensical", "--out", str(out_dir), "--stage", str(staging)]
    result = once_per_run("zensical-site", lambda: _build(cmd, env, BUILD_TIMEOUT))
    output = _require_clean("python -m llmsite zensical", cmd, result, out_dir)
    return BuiltSite(out_dir, url, output, site_port())


@pytest.fixture(scope="session")
def repo_cache(built_site: BuiltSite) -> Path:
    """The repository's build cache once the run's build has filled it: every figure, lab and trained model of this
    commit. Tests that build a changed copy start from a copy of it (and so recompute only what they changed); asking
    for it before copying keeps a test from racing the run's build with a cold build of its own."""
    return Path(os.environ.get("LLM_SITE_CACHE", ROOT / ".cache"))


class _OnDemand(dict):
    """The trained models of a lane: those its articles use, and any other one trained when a test first asks."""

    def __missing__(self, name: str) -> Path:
        import io

        from llmsite import artifacts

        self.update(artifacts.ensure([artifacts.discover()[name]], out=io.StringIO()))
        return self[name]


@pytest.fixture(scope="session")
def trained_artifacts() -> dict[str, Path]:
    """Every declared build artifact (the trained models) in the run's artifact cache, with ``LLM_ARTIFACT_<NAME>``
    set, so ``pretrained_gpt()`` and friends read the file instead of training in the test process. Computed at
    most once per run: ``artifacts.ensure`` holds a file lock, so other workers and the site build wait for it.

    Under ``--article`` only the models the lane's articles use (``lane.graph``: what their figures, answers, labs
    and playground reach) and their upstream; another is trained the first time a test asks for it. From an empty
    cache the lane of a stage-1 article then trains one small model, not the whole course's."""
    import io

    from llmsite import artifacts

    declared = artifacts.discover()
    if not LANE:
        return artifacts.ensure(list(declared.values()), out=io.StringIO())
    used = {name for slug in LANE for name in lane_graph().articles[slug].artifacts}
    return _OnDemand(artifacts.ensure([a for name, a in declared.items() if name in used], out=io.StringIO()))


def lane_build_env() -> dict[str, str]:
    """The lane's builds compute only what its articles are made of (``llmsite/features/stale.py``); a warm cache
    still gives the whole site, and only the articles' pages are checked."""
    from llmsite.features.stale import ENV

    return {ENV: ",".join(LANE)} if LANE else {}


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module's tests (``pytestmark = pytest.mark.usefixtures("one_thread")``): on small
    tensors more threads only add overhead, and on a busy machine two threads waiting on each other run ten times
    slower. The number of threads is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def site_server(built_site: BuiltSite) -> str:
    """The built site under ``/llm-study-platform/`` (served by the controlling process); the base URL."""
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
    pages: list[str] = field(default_factory=list)  # HTML pages loaded (documents and instant-navigation fetches)

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


# Browser timeouts guard against a hang; they never measure speed (bench/ does). With three workers, Chromium and
# a build or a training sharing two cores, the attention article (7,000+ elements) once took over 10 s to fire
# `load` in CI (test_exercises, r7): so a page gets 30 s for an action and 60 s for a navigation.
ACTION_TIMEOUT_MS = 30_000
NAVIGATION_TIMEOUT_MS = 60_000


def guard_timeouts(target) -> None:
    """Apply the suite's hang guards to a Playwright page or browser context."""
    target.set_default_timeout(ACTION_TIMEOUT_MS)
    target.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)


def wait_for_path(page, path: str, **options) -> None:
    """Wait until the page's address is ``path`` (ending with it), whatever its query and fragment: Material's
    navigation tracking adds the section in view as ``#...`` (r12: a glob ending in ``/decoding/`` missed
    ``/decoding/#它写出了什么``)."""
    page.wait_for_url(lambda url: urlsplit(url).path.endswith(path), **options)


def follow_instantly(page, link) -> None:
    """Click ``link`` (a Playwright locator) to another article and wait until its content is in the page.

    Under Material's instant navigation the address changes before the new content is swapped in: a test that
    waits for the address alone and then looks for a link may find it in the old page (CI r10 clicked the old
    article's "edit" button that way). The article's title is what tells the pages apart."""
    before = page.locator("article h1").first.inner_text()
    link.click()
    page.wait_for_function("(t) => { const h = document.querySelector('article h1'); return h && h.innerText !== t; }",
                           arg=before)


def figure_stats(page, figure: str) -> dict[str, str]:
    """The read-outs (``dt`` -> ``dd`` text) an explorable figure shows beside its chart; ``figure`` is a selector."""
    return page.evaluate("""(fig) => {
      const out = {};
      for (const dt of document.querySelectorAll(fig + ' .llm-ix__stats dt'))
        out[dt.textContent] = dt.nextElementSibling.textContent;
      return out;
    }""", figure)


def _is_page(url: str) -> bool:
    path = urlsplit(url).path
    return path.endswith("/") or path.endswith(".html")


def _log_pages(pages: list[str]) -> None:
    """With ``LLM_CPU_LOG`` set (bench/cputime.py), append the pages a test's browser context loaded to
    ``<LLM_CPU_LOG>.pages``, one JSON line per context: which heavy pages the suite opens, and how often."""
    log = os.environ.get("LLM_CPU_LOG")
    if not log or not pages:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    paths = [urlsplit(u).path for u in pages]
    with open(f"{log}.pages", "a", encoding="utf-8") as out:  # one short line per write: appends do not interleave
        out.write(json.dumps({"nodeid": test, "pages": paths}, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def watched_page(browser, built_site: BuiltSite, **context_options: Any) -> Iterator[Any]:
    """A page in a new context (``context_options`` as for ``browser.new_context``; zh-CN unless given) that the site
    must not misbehave in: requests to any other host are aborted and recorded, console errors and uncaught
    exceptions of every page of the context are recorded, and leaving the block fails the test if any were."""
    log = PageLog(allowed_netloc=f"127.0.0.1:{built_site.port}")
    context = browser.new_context(**{"locale": "zh-CN", **context_options})

    def on_request(request):
        log.requests.append(request.url)
        if request.resource_type == "document" or (request.resource_type == "fetch" and _is_page(request.url)):
            log.pages.append(request.url)  # opened, or fetched by Material's instant navigation

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
    try:
        pg = context.new_page()
        watch(pg)
        guard_timeouts(pg)
        pg.log = log  # tests may look at what was requested
        yield pg
    finally:
        context.close()
        _log_pages(log.pages)
    problems = log.problems()
    if problems:
        pytest.fail("the page broke the site's rules:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def page(browser, site_server: str, built_site: BuiltSite):
    """A fresh page (1280x900, zh-CN, light). Teardown fails on third-party requests or console errors."""
    with watched_page(browser, built_site, viewport={"width": 1280, "height": 900}, color_scheme="light") as pg:
        yield pg


@pytest.fixture(scope="session")
def record_artifact():
    """``record_artifact(label, path)``: list a file in the terminal summary (e.g. a screenshot)."""

    def record(label: str, path: Path) -> None:
        with (shared_dir() / "artifacts.txt").open("a", encoding="utf-8") as f:
            f.write(f"{label}: {path}\n")

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
