"""Which changes to the page make Chromium recompute the style of many elements while a page opens.

    python -m bench.restyle SITE_DIR articles/transformer-attention/ [more pages…] [--min-ms 20] [--slowdown 1]

``bench.layout`` says which code *asked* for style and layout; the code that asks is often not the code that made
the work (the first script to read a size pays for every change before it). This says what the work was for. One
headless Chromium load per page at a phone's viewport, traced with the timeline's invalidation-tracking category:
for each style recalculation (``UpdateLayoutTree``) of at least ``--min-ms``, the changes recorded since the one
before it (an attribute or class set on an element, a node inserted, a changed stylesheet) and, for changes that
invalidate a whole subtree, the selectors Chromium names for it. Round twelve of bench/README.md found this way that
Material's instant navigation rewrote stylesheet URLs, that a class on <html> restyled every element, and that one
Material rule (``.md-typeset table:not([class]) + *``) restyles a whole article when anything is inserted into it.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmsite import chromium

from .httpd import serve
from .layout import VIEWPORT, _origin

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline",
              "disabled-by-default-devtools.timeline.stack",
              "disabled-by-default-devtools.timeline.invalidationTracking"]
SCHEDULED = "ScheduleStyleInvalidationTracking"  # a change that will invalidate (attribute, class, id, pseudo)
APPLIED = "StyleInvalidatorInvalidationTracking"  # an invalidation set applied to an element (self or subtree)
MARKED = "StyleRecalcInvalidationTracking"  # an element marked for recalculation, with the reason


@dataclass
class Restyle:
    at_ms: float
    ms: float
    elements: int
    forced_by: str  # the top stack frame of the script that asked, or "" when the browser did it on its own
    causes: Counter[str] = field(default_factory=Counter)
    selectors: Counter[str] = field(default_factory=Counter)  # of the subtree invalidations


def _main_thread(events: list[dict[str, Any]]) -> tuple[Any, Any]:
    counts = Counter((e.get("pid"), e.get("tid")) for e in events if e.get("name") == "UpdateLayoutTree")
    if not counts:
        raise ValueError("the trace has no style recalculation (UpdateLayoutTree) at all")
    return counts.most_common(1)[0][0]


def _cause(event: dict[str, Any]) -> str | None:
    data = (event.get("args") or {}).get("data") or {}
    node = str(data.get("nodeName") or "?")[:60]
    name = event.get("name")
    if name == SCHEDULED:
        what = data.get("changedClass") or data.get("changedAttribute") or data.get("changedId") or \
            data.get("changedPseudo") or "?"
        return f"{node}: {what} changed"
    if name == APPLIED and "subtree" in str(data.get("reason") or ""):
        return f"{node}: whole subtree invalidated"
    if name == MARKED and data.get("reason") != "Related style rule":
        return f"{node}: {data.get('reason')}"
    return None


def restyles(events: list[dict[str, Any]], min_ms: float, site: Path | None = None) -> list[Restyle]:
    """The style recalculations of at least ``min_ms`` on the page's main thread, with what caused each."""
    main = _main_thread(events)
    ordered = sorted((e for e in events if (e.get("pid"), e.get("tid")) == main), key=lambda e: e.get("ts", 0))
    start = next((e["ts"] for e in ordered if e.get("ph") == "X"), 0)
    causes: Counter[str] = Counter()
    selectors: Counter[str] = Counter()
    out: list[Restyle] = []
    for event in ordered:
        name = event.get("name")
        if name in (SCHEDULED, APPLIED, MARKED):
            cause = _cause(event)
            if cause:
                causes[cause] += 1
            if name == APPLIED and "subtree" in str(((event.get("args") or {}).get("data") or {}).get("reason")):
                for s in ((event.get("args") or {}).get("data") or {}).get("selectors") or []:
                    selectors[str(s.get("selector"))] += 1
        elif name == "UpdateLayoutTree" and event.get("ph") == "X":
            ms = float(event.get("dur") or 0) / 1000
            if ms >= min_ms:
                args = event.get("args") or {}
                stack = (args.get("beginData") or {}).get("stackTrace") or []
                top = (_origin(site, stack[0]) if site else str(stack[0].get("functionName"))) if stack else ""
                out.append(Restyle(round((event["ts"] - start) / 1000, 1), round(ms, 1),
                                   int(args.get("elementCount") or 0), top, causes, selectors))
            causes, selectors = Counter(), Counter()
    return out


def trace(site: Path, path: str, slowdown: float = 1) -> list[dict[str, Any]]:
    """The trace events of one load of ``path`` (and 2.5 s after ``load``)."""
    from playwright.sync_api import sync_playwright

    with serve(site) as server, sync_playwright() as pw:
        exe = shutil.which(chromium.executable()) or chromium.executable()
        browser = pw.chromium.launch(executable_path=exe, args=chromium.ARGS)
        try:
            page = browser.new_context(viewport=VIEWPORT, device_scale_factor=2, is_mobile=True, has_touch=True,
                                       locale="zh-CN").new_page()
            if slowdown != 1:
                page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
            browser.start_tracing(page=page, categories=CATEGORIES)
            page.goto(server.base_url + path, wait_until="load")
            page.wait_for_timeout(2500)
            return json.loads(browser.stop_tracing()).get("traceEvents", [])
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--min-ms", type=float, default=20.0)
    parser.add_argument("--slowdown", type=float, default=1.0, help="CPU throttling rate (Lighthouse's is 4)")
    args = parser.parse_args(argv)
    for path in args.paths:
        print(f"{path}:")
        for r in restyles(trace(args.site, path, args.slowdown), args.min_ms, args.site):
            asked = f", asked by {r.forced_by}" if r.forced_by else ", in a rendering step"
            print(f"  at {r.at_ms:8.1f} ms: {r.ms:6.1f} ms for {r.elements:,} elements{asked}")
            for cause, n in r.causes.most_common(6):
                print(f"      {n:4d} x {cause}")
            for selector, n in r.selectors.most_common(4):
                print(f"      {n:4d} x selector {selector}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
