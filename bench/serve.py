"""``mkdocs serve``: time from saving a file to the rebuilt page being served with the change.

The server runs as the maintainer runs it (``make serve``: ``SITE_URL`` at the
root of 127.0.0.1, here on a free port) in a temporary copy with a warm figure
cache. After each save the page is polled over HTTP until a unique marker
string appears in it. Article edit: a line appended to the article. Code edit:
a comment line inside a snippet section of ``code/positional_encoding.py``,
which the article includes and two figures depend on (so they are redrawn).
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmsite import report as step_report

from .build import append_article_line, edit_module
from .common import PYTHON, BenchError, Samples, Workspace, free_port, load_average, log

PAGE = "articles/transformer-attention/"
POLL = 0.05
SETTLE = 1.5  # seconds of quiet after a change is served, before the next save
_BUILT = re.compile(r"Documentation built in ([\d.]+) seconds")  # MkDocs' CLI drops a repeated message: not a count


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return str(resp.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if check():
            return time.perf_counter() - start
        time.sleep(POLL)
    raise BenchError(f"mkdocs serve: {what} not seen within {timeout:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> str:
    """Stop the server as a person would (Ctrl-C), escalating only if it does not exit."""
    if proc.poll() is not None:
        return f"already exited ({proc.returncode})"
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
        return "stopped with SIGINT"
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=10)
            return "stopped with SIGTERM"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "killed"


def run(tmp: Path, seed_cache: Path, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average()}
    ws = Workspace.create(tmp / "serve", cache_from=seed_cache)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    url = base + PAGE
    log_path = tmp / "serve.log"
    reports = tmp / "serve-steps.jsonl"
    reports.unlink(missing_ok=True)
    with log_path.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            [PYTHON, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}"],
            cwd=ws.root,
            env=ws.env(SITE_URL=base, **{step_report.ENV: str(reports)}),
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:
        out["startup_s"] = wait_for(lambda: fetch(url) is not None, 300, "the first build")
        log(f"serve: first page served after {out['startup_s']:.2f} s")
        time.sleep(SETTLE)
        for kind, edit in (("article_edit", append_article_line), ("code_edit", edit_module)):
            samples = Samples()
            for i in range(repeats):
                marker = edit(ws, f"s{kind[0]}{i}")
                seconds = wait_for(lambda m=marker: m in (fetch(url) or ""), 300, f"marker {marker}")
                samples.add(seconds)
                log(f"serve: {kind.replace('_', ' ')} #{i + 1}: change served after {seconds:.2f} s")
                time.sleep(SETTLE)
            out[kind] = samples.as_dict()
    finally:
        out["stopped"] = stop(proc)
    text = log_path.read_text(encoding="utf-8", errors="replace")
    out["builds_logged"] = [float(x) for x in _BUILT.findall(text)]
    steps = step_report.read(reports)
    out["figures_rebuilt_logged"] = [int(s["count"]) for s in steps if s["step"] == "figures"]
    out["labs_executed_logged"] = [int(s["count"]) for s in steps if s["step"] == "labs"]
    out["errors_logged"] = [line for line in text.splitlines() if "ERROR" in line][:10]
    out["load_average_end"] = load_average()
    return out
