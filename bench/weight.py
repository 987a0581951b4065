"""Page weight and speed in headless Chromium, over a local server that gzips text types.

For each page a fresh browser context (empty cache) loads it and waits for the
network to go idle (Material fetches the search index and starts its search
worker after the page's scripts run). Bytes are the encoded body sizes that
Chromium reports (``request.sizes()["responseBodySize"]``), cross-checked with
the server's own log of bytes sent. Load time is navigation start to the load
event (``PerformanceNavigationTiming.loadEventStart``), median of repeats.

The search index is also measured on disk: raw and gzip, in total and per
article, as Material writes it (``\\uXXXX`` escapes) and compact (UTF-8,
no escapes), and how much of it is code blocks.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsite import chromium

from .common import Samples, load_average, log
from .httpd import GzipServer, gzip_size, serve

PAGES = {"home": "", "article_list": "articles/", "attention": "articles/transformer-attention/"}
INDEX = "search/search_index.json"
FIRST_LOAD_GOAL = 1_000_000  # bytes on the wire for the attention article, N = 1000
SCALE_RATIO_GOAL = 1.10  # first load at N = 1000 / first load on the real site (issue 28)
IDLE_EXTRA = 0.5  # seconds after network idle, for late worker requests
_PRE = re.compile(r"<pre\b.*?</pre>", re.S)
_NAV_TIMING = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {load: n.loadEventStart, dcl: n.domContentLoadedEventStart, response_end: n.responseEnd};
}"""


def chromium_path() -> str:
    return chromium.executable()


@dataclass
class Request:
    url: str
    path: str
    resource: str
    status: int
    wire: int  # encoded body bytes
    headers: int  # response header bytes
    before_load: bool


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=shutil.which(chromium_path()) or chromium_path(), args=chromium.ARGS)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


def load_once(b: Any, server: GzipServer, path: str) -> dict[str, Any]:
    """Load ``path`` in a fresh context; every request with its encoded size, and the load timing."""
    context = b.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN", color_scheme="light")
    finished: list[Any] = []
    failed: list[str] = []
    loaded = {"at": False}
    early: set[int] = set()

    def on_finished(req: Any) -> None:
        finished.append(req)
        if not loaded["at"]:
            early.add(id(req))

    context.on("requestfinished", on_finished)
    context.on("requestfailed", lambda req: failed.append(req.url))
    page = context.new_page()
    page.on("load", lambda _p: loaded.update(at=True))
    server.take_log()
    url = server.base_url + path
    try:
        response = page.goto(url, wait_until="load", timeout=60_000)
        status = response.status if response else 0
        page.wait_for_function("() => performance.getEntriesByType('navigation')[0].loadEventStart > 0")
        timing = page.evaluate(_NAV_TIMING)
        page.wait_for_load_state("networkidle", timeout=60_000)
        time.sleep(IDLE_EXTRA)
        requests = []
        for req in finished:
            sizes = req.sizes()
            resp = req.response()
            requests.append(
                Request(
                    url=req.url,
                    path=req.url.removeprefix(server.base_url),
                    resource=req.resource_type,
                    status=resp.status if resp else 0,
                    wire=int(sizes.get("responseBodySize", 0)),
                    headers=int(sizes.get("responseHeadersSize", 0)),
                    before_load=id(req) in early,
                )
            )
        workers = [w.url for w in page.workers]
    finally:
        context.close()
    served = [s for s in server.take_log() if s.status != 404 or s.path.split("?")[0].endswith(INDEX)]
    kinds = {r.path.split("?")[0]: r.resource for r in requests}
    early_paths = {r.path.split("?")[0] for r in requests if r.before_load}
    index = [s for s in served if s.path.split("?")[0].endswith(INDEX)]
    by_type: dict[str, dict[str, int]] = {}
    for item in served:
        path = item.path.lstrip("/").split("?")[0]
        kind = "search_index" if path.endswith(INDEX) else kinds.get(path, "worker")
        slot = by_type.setdefault(kind, {"requests": 0, "wire": 0})
        slot["requests"] += 1
        slot["wire"] += item.wire_bytes
    return {
        "status": status,
        "timing_ms": timing,
        # Bytes from the server's log (the encoded bodies it sent); Chromium's own numbers kept as a
        # cross-check: it reports 0 for the search worker's script and odd values for some XHRs.
        "requests": len(served),
        "wire_bytes": sum(s.wire_bytes for s in served),
        "raw_bytes": sum(s.raw_bytes for s in served),
        "wire_bytes_by_load": sum(s.wire_bytes for s in served if s.path.lstrip("/").split("?")[0] in early_paths),
        "browser_requests": len(requests),
        "browser_wire_bytes": sum(max(0, r.wire) for r in requests),
        "header_bytes": sum(r.headers for r in requests),
        "failed": failed,
        "search_index_fetched": bool(index),
        "search_index_before_load": any(r.before_load for r in requests if r.path.endswith(INDEX)),
        "search_index_wire": sum(s.wire_bytes for s in index),
        "search_index_raw": sum(s.raw_bytes for s in index),
        "workers": workers,
        "largest": sorted(
            ({"path": s.path, "wire": s.wire_bytes, "raw": s.raw_bytes} for s in served), key=lambda x: -x["wire"]
        )[:8],
        "by_type": by_type,
    }


SEARCH_INPUT = "input[data-md-component=search-query]"
SEARCH_RESULT = ".md-search-result__item"
SEARCH_QUERY = "注意力"


def time_to_search(b: Any, server: GzipServer, path: str) -> dict[str, float]:
    """A reader who starts typing a query at the load event: ms from navigation start to the first result."""
    context = b.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN", color_scheme="light")
    try:
        page = context.new_page()
        page.goto(server.base_url + path, wait_until="load", timeout=60_000)
        page.click(SEARCH_INPUT)
        page.fill(SEARCH_INPUT, SEARCH_QUERY)
        typed = float(page.evaluate("() => performance.now()"))
        page.press(SEARCH_INPUT, "End")  # Material searches on keyup
        page.wait_for_selector(SEARCH_RESULT, timeout=120_000)
        shown = float(page.evaluate("() => performance.now()"))
    finally:
        context.close()
    server.take_log()
    return {"typed_ms": typed, "first_result_ms": shown, "wait_after_typing_ms": shown - typed}


def find_lab_pages(site: Path) -> list[str]:
    """URL paths of the lab (notebook) pages of a site (mkdocs-jupyter wraps them in jupyter-wrapper)."""
    found = []
    for path in sorted(site.glob("labs/*/index.html")):
        if "jupyter-wrapper" in path.read_text(encoding="utf-8", errors="replace"):
            found.append(path.relative_to(site).as_posix().removesuffix("index.html"))
    return found


def search_index_stats(site: Path, articles: int) -> dict[str, Any]:
    """Sizes of the search index: as written, escaped (Material's format), compact UTF-8, without code."""
    path = site / INDEX
    if not path.is_file():
        return {"missing": True}
    raw = path.read_bytes()
    data = json.loads(raw)
    escaped = json.dumps(data, separators=(",", ":"), default=str).encode()
    compact = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    no_code = {**data, "docs": [{**d, "text": _PRE.sub("", d.get("text", ""))} for d in data.get("docs", [])]}
    compact_no_code = json.dumps(no_code, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    titles_only = {**data, "docs": [{k: v for k, v in d.items() if k != "text"} for d in data.get("docs", [])]}
    compact_titles = json.dumps(titles_only, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    pages = {d.get("location", "").split("#")[0] for d in data.get("docs", [])}
    out: dict[str, Any] = {
        "as_written_bytes": len(raw),
        "as_written_gzip": gzip_size(raw),
        "as_written_is_compact": len(raw) == len(compact),
        "escaped_bytes": len(escaped),
        "escaped_gzip": gzip_size(escaped),
        "compact_bytes": len(compact),
        "compact_gzip": gzip_size(compact),
        "compact_no_code_bytes": len(compact_no_code),
        "compact_no_code_gzip": gzip_size(compact_no_code),
        "compact_titles_only_gzip": gzip_size(compact_titles),
        "sections": len(data.get("docs", [])),
        "pages_indexed": len(pages),
        "articles": articles,
    }
    for key in ("as_written", "escaped", "compact"):
        out[f"{key}_bytes_per_article"] = out[f"{key}_bytes"] / max(1, articles)
        out[f"{key}_gzip_per_article"] = out[f"{key}_gzip"] / max(1, articles)
    return out


def largest_figure(site: Path) -> dict[str, Any]:
    files = sorted((site / "figures").glob("*"), key=lambda p: p.stat().st_size, reverse=True)
    if not files:
        return {}
    f = files[0]
    data = f.read_bytes()
    return {"file": f.relative_to(site).as_posix(), "bytes": len(data), "gzip": gzip_size(data)}


def measure_site(b: Any, site: Path, label: str, repeats: int, pages: dict[str, str]) -> dict[str, Any]:
    """Every page of ``pages`` loaded ``repeats`` times in fresh contexts."""
    out: dict[str, Any] = {"site": str(site), "pages": {}}
    with serve(site) as server:
        for name, path in pages.items():
            loads = [load_once(b, server, path) for _ in range(repeats)]
            first = loads[0]
            load_ms = Samples([float(x["timing_ms"]["load"]) for x in loads])
            first["load_ms"] = load_ms.as_dict()
            first["wire_bytes_all_loads"] = [x["wire_bytes"] for x in loads]
            out["pages"][name] = first
            if name == "attention":
                tries = [time_to_search(b, server, path) for _ in range(repeats)]
                first["search"] = {
                    "query": SEARCH_QUERY,
                    "first_result_ms": Samples([t["first_result_ms"] for t in tries]).as_dict(),
                    "wait_after_typing_ms": Samples([t["wait_after_typing_ms"] for t in tries]).as_dict(),
                }
            log(
                f"weight: {label} {name}: {first['requests']} requests, {first['wire_bytes'] / 1024:.0f} KiB on the "
                f"wire (search index {first['search_index_wire'] / 1024:.0f} KiB), load {load_ms.median:.0f} ms"
            )
    return out


def run(tmp: Path, real_site: Path, scaled_site: Path | None, scaled_n: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average()}
    articles_real = sum(1 for p in (real_site / "articles").iterdir() if (p / "index.html").is_file())
    pages = dict(PAGES)
    labs = find_lab_pages(real_site)
    for lab in labs:
        pages["lab:" + lab.strip("/").rsplit("/", 1)[-1]] = lab
    if not labs:
        out["lab"] = "no lab page in the built site (labs not added yet)"
    out["largest_figure"] = largest_figure(real_site)
    out["search_index_real"] = search_index_stats(real_site, articles_real)
    with browser() as b:
        out["real"] = measure_site(b, real_site, "real site", repeats, pages)
        if scaled_site is not None and scaled_site.is_dir():
            scaled_articles = sum(1 for p in (scaled_site / "articles").iterdir() if (p / "index.html").is_file())
            out["search_index_scaled"] = search_index_stats(scaled_site, scaled_articles)
            out["scaled"] = measure_site(b, scaled_site, f"N={scaled_n}", repeats, dict(PAGES))
            out["scaled_n"] = scaled_n
            att = out["scaled"]["pages"]["attention"]
            si = out["search_index_scaled"]
            out["first_load_goal"] = {
                "n": scaled_n,
                "goal_bytes": FIRST_LOAD_GOAL,
                "attention_wire_bytes": att["wire_bytes"],
                "search_index_wire_bytes": att["search_index_wire"],
                "search_index_share": att["search_index_wire"] / max(1, att["wire_bytes"]),
                "search_index_fetched_on_first_load": att["search_index_fetched"],
                "without_search_index": att["wire_bytes"] - att["search_index_wire"],
                # The same page with the index as Material writes it (\uXXXX escapes), and with titles only.
                "with_escaped_index": att["wire_bytes"] - att["search_index_wire"] + si["escaped_gzip"],
                "with_titles_only_index": att["wire_bytes"] - att["search_index_wire"] + si["compact_titles_only_gzip"],
                "met": att["wire_bytes"] < FIRST_LOAD_GOAL,
                # issue 28: the same article's first load on the real site (a handful of articles) vs at N
                "real_articles": articles_real,
                "real_attention_wire_bytes": out["real"]["pages"]["attention"]["wire_bytes"],
                "ratio_to_real": att["wire_bytes"] / max(1, out["real"]["pages"]["attention"]["wire_bytes"]),
                "ratio_goal": SCALE_RATIO_GOAL,
            }
    out["load_average_end"] = load_average()
    return out
