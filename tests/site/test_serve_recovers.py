"""``mkdocs serve`` survives a broken figure or lab: it says what failed (in the log, and in the page
where the figure or the lab goes), keeps serving the site, and the next save that fixes it is served
without a restart. (``mkdocs build`` still stops on the same failures: tests/figures, tests/labs.)

A scratch copy of the repository (figure and lab caches copied from the session's build, so only
what the test breaks is recomputed) is served on a free port. The test breaks the figure function
of ``attention-weights``, waits for the error in the server's log, checks the server still answers,
fixes it and waits for the fixed page; then the same for a lab; then content problems (a typography slip,
an unknown author): the preview shows the new text with a banner on every page naming file, line and fix
(checked in Chromium too), and the banner goes away with the save that fixes them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, BuiltSite

FIGURE_MODULE = "code/figures/transformer_attention.py"
LAB = "labs/attention_lab.py"
ARTICLE = "docs/articles/decoding.md"
ARTICLE_URL = "articles/decoding/"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 600) -> tuple[int, str]:
    """One GET. MkDocs' server holds a request while a rebuild is wanted or running (livereload's
    ``_serve_request`` waits until the served epoch is the wanted one), so the answer can take as long as a
    rebuild: one file edit may reach the watcher as two events and start a second rebuild right after the one a
    test waited for. A 10 s limit failed here under load 12-24 (status 0 right after "Reloading browsers")."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except OSError as exc:
        return 0, str(exc)


def _descendants(pid: int) -> str:
    """``ps`` lines of ``pid`` and every process under it (the build's workers run in sessions of their own)."""
    rows = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,etime=,time=,stat=,args="],
                          capture_output=True, text=True, check=False).stdout.splitlines()
    tree, lines = {pid}, []
    for row in rows:  # ps lists parents before their children
        fields = row.split(None, 2)
        if len(fields) == 3 and fields[1].isdigit() and (int(fields[0]) in tree or int(fields[1]) in tree):
            tree.add(int(fields[0]))
            lines.append(row.strip()[:300])
    return "\n".join(lines)


class Server:
    def __init__(self, root: Path, log: Path) -> None:
        self.root, self.log_path, self.port = root, log, _free_port()
        # PYTHONFAULTHANDLER: when a wait times out, SIGABRT makes the server print every thread's stack
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(root / ".cache"),
               "SITE_URL": f"http://127.0.0.1:{self.port}/", "PYTHONFAULTHANDLER": "1"}
        self._log = log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{self.port}"],
            cwd=root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.base = f"http://127.0.0.1:{self.port}/"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_log(self, needle: str, after: int, timeout: float, fail: str | None = None) -> str:
        """The log from ``after`` on, once ``needle`` is in it; an assertion error at once if ``fail`` is."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.log()[after:]
            if needle in text:
                return text
            assert fail is None or fail not in text, text[-3000:]
            assert self.proc.poll() is None, f"mkdocs serve exited:\n{self.log()[-3000:]}"
            time.sleep(0.5)
        raise AssertionError(f"{needle!r} not in the serve log within {timeout:.0f} s:\n{self.diagnose(after)}")

    def wait_built(self, after: int, timeout: float) -> str:
        """Wait until a rebuild that started after ``after`` has finished and been served.

        Not by "Documentation built in X s": MkDocs' CLI puts a duplicate filter on that logger, so the line is
        dropped whenever a build takes as long (to 1/100 s) as an earlier one. livereload's own lines are not
        filtered: "Building documentation..." when a rebuild starts, "Reloading browsers" when it succeeded."""
        end = time.monotonic() + timeout
        start = after + self.wait_log("Building documentation...", after, timeout).index("Building documentation...")
        return self.wait_log("Reloading browsers", start, end - time.monotonic(),
                             fail="An error happened during the rebuild")

    def wait_page(self, path: str, needle: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        body = ""
        while time.monotonic() < end:
            status, body = _get(self.base + path, timeout=max(1.0, end - time.monotonic()))
            if status == 200 and needle in body:
                return
            time.sleep(0.5)
        raise AssertionError(f"{path} never showed {needle!r}; last response: {body[:300]}\n{self.diagnose(0)}")

    def diagnose(self, after: int) -> str:
        """What a timed-out wait reports: the processes the server started, the log since ``after`` and, if
        the server still runs, the stack of each of its threads (it is stopped with SIGABRT to print them)."""
        ps = _descendants(self.proc.pid)
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=20)
        text = self.log()
        stacks = text.find("Fatal Python error", after)
        shown = text[after:][-6000:] if stacks < 0 else text[after:stacks][-4000:] + "\n" + text[stacks:][:30000]
        return f"processes of the server:\n{ps}\nlog (full: {self.log_path}):\n{shown}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@pytest.mark.slow
def test_serve_reports_a_broken_figure_and_lab_and_recovers(built_site: BuiltSite, browser, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ipynb")
    for folder in ("docs", "data", "code", "labs", "llmsite", "scripts", "overrides"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    shutil.copy2(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    if (ROOT / "node_modules").exists():
        (root / "node_modules").symlink_to(ROOT / "node_modules")
    cache = Path(os.environ.get("LLM_SITE_CACHE", ROOT / ".cache"))
    shutil.copytree(cache, root / ".cache", symlinks=True)

    server = Server(root, tmp_path / "serve.log")
    try:
        server.wait_page("articles/transformer-attention/", "<h1", timeout=600)
        # a preview writes no service worker and no offline list: offline.js has nothing to register
        for name in ("sw.js", "offline.json"):
            status, body = _get(server.base + name)
            assert status == 0 and "404" in body, (name, status)

        # 1. a figure function that raises
        module = root / FIGURE_MODULE
        good = module.read_text(encoding="utf-8")
        line = good.splitlines().index("def attention_weights():") + 1
        mark = len(server.log())
        module.write_text(good.replace("def attention_weights():\n",
                                       "def attention_weights():\n    raise ValueError('测试：图坏了')\n", 1),
                          encoding="utf-8")
        text = server.wait_log("测试：图坏了", mark, timeout=600)
        assert "attention-weights" in text and f"{FIGURE_MODULE}:{line}" in text, text[-3000:]
        # the preview goes on: the page is served, with the error where the figure goes
        server.wait_page("articles/transformer-attention/", "图 attention-weights 生成失败", timeout=120)
        status, body = _get(server.base + "articles/transformer-attention/")
        assert status == 200 and "测试：图坏了" in body and f"{FIGURE_MODULE}:{line}" in body
        mark = len(server.log())
        module.write_text(good, encoding="utf-8")
        server.wait_built(mark, timeout=600)
        server.wait_page("articles/transformer-attention/", "attention-weights.light.svg", timeout=60)
        assert "生成失败" not in _get(server.base + "articles/transformer-attention/")[1]

        # 2. a lab whose cell raises
        lab = root / LAB
        good_lab = lab.read_text(encoding="utf-8")
        first_code = good_lab.index("# %%\n")
        mark = len(server.log())
        lab.write_text(good_lab[:first_code] + "# %%\nraise RuntimeError('测试：实验坏了')\n\n" + good_lab[first_code:],
                       encoding="utf-8")
        text = server.wait_log("测试：实验坏了", mark, timeout=600)
        assert "attention_lab" in text, text[-3000:]
        server.wait_built(mark, timeout=600)  # the rest of the site is rebuilt and served
        status, body = _get(server.base)
        assert status == 200, body[:300]
        server.wait_page("labs/attention_lab/", "测试：实验坏了", timeout=60)  # the error where the lab goes
        mark = len(server.log())
        lab.write_text(good_lab, encoding="utf-8")
        server.wait_built(mark, timeout=900)
        status, body = _get(server.base + "labs/attention_lab/")
        assert status == 200 and "执行失败" not in body

        # 3. content problems: a typography slip (a warning under serve) and an unknown author (an error).
        # The preview is rebuilt with the new text, and every page says what is wrong, where, and the fix.
        article = root / ARTICLE
        good_article = article.read_text(encoding="utf-8")
        lines = good_article.splitlines()
        author_line = lines.index("author: guohua") + 1
        slip_line = len(lines) + 2
        article.write_text(good_article.replace("author: guohua", "author: nobody", 1) + "\n编辑标记123的测试段落。\n",
                           encoding="utf-8")
        server.wait_page(ARTICLE_URL, "编辑标记123", timeout=300)
        for url in (ARTICLE_URL, "", "labs/attention_lab/"):
            status, body = _get(server.base + url)
            assert status == 200 and "data-llm-build-problems" in body, url
            assert f"{ARTICLE}:{author_line}</code>" in body and "未知作者 nobody" in body, url
            assert f"{ARTICLE}:{slip_line}</code>" in body and "排版规则 A" in body, url
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
        try:
            page = context.new_page()
            page.goto(server.base + ARTICLE_URL, wait_until="load")
            banner = page.locator("[data-llm-build-problems]")
            assert banner.is_visible() and banner.get_attribute("role") == "alert"
            text = banner.inner_text()
            assert "1 个错误、1 个排版提醒" in text and "修改建议" in text, text
            assert page.locator("article h1").first.is_visible()  # the page itself is still there, below
            # a preview offers no offline reading (its pages must stay fresh): the footer's control stays hidden
            page.wait_for_function("() => typeof window.livereload === 'function'")
            assert page.locator(".llm-offline").count() == 1 and not page.locator(".llm-offline").is_visible()
        finally:
            context.close()
        mark = len(server.log())
        article.write_text(good_article, encoding="utf-8")
        server.wait_built(mark, timeout=300)
        for url in (ARTICLE_URL, ""):
            status, body = _get(server.base + url)
            assert status == 200 and "data-llm-build-problems" not in body and "编辑标记123" not in body, url
    finally:
        server.stop()
