"""Main-thread cost of opening a page, two built sites side by side (issue 29).

    python -m bench.pagecost BEFORE_SITE AFTER_SITE articles/transformer-attention/ [more pages…] [--repeats 7]

Lighthouse's scores swing by a few points between runs on this shared machine; for a change that moves style or
layout work, this is the quicker, steadier comparison. Each site is served gzipped (``bench/httpd.py``), each page is
opened in a fresh headless Chromium context at a phone's viewport (412 x 823, scale 2, touch), *without* CPU
throttling, and 1.5 s after ``load`` Chromium's own counters are read (CDP ``Performance.getMetrics``): time spent
in layout, in style recalculation, in script, in all main-thread tasks, and the number of DOM nodes. The two sites
alternate on every repeat, so load on the machine hits both; medians are printed with their ratio (after / before).
Nothing is asserted: the figures go to bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from llmsite import chromium

from .httpd import serve
from .layout import VIEWPORT  # the same phone as the layout attribution

SETTLE_MS = 1500
METRICS = (("LayoutDuration", "layout ms"), ("RecalcStyleDuration", "style ms"), ("ScriptDuration", "script ms"),
           ("TaskDuration", "tasks ms"), ("Nodes", "nodes"))


def measure(browser, url: str) -> dict[str, float]:
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=2, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url, wait_until="load")
        page.wait_for_timeout(SETTLE_MS)
        values = {m["name"]: float(m["value"]) for m in cdp.send("Performance.getMetrics")["metrics"]}
    finally:
        context.close()
    return {label: values[name] * (1 if name == "Nodes" else 1000) for name, label in METRICS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("pages", nargs="+", help="paths relative to the site root, e.g. articles/decoding/")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    for site in (args.before, args.after):
        if not (site / "index.html").is_file():
            parser.error(f"{site} is not a built site (no index.html)")
    from playwright.sync_api import sync_playwright

    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    with sync_playwright() as p, serve(args.before) as a, serve(args.after) as b:
        browser = p.chromium.launch(executable_path=chromium.executable())
        for page in args.pages:
            for i in range(args.repeats):
                order = (("before", a), ("after", b)) if i % 2 == 0 else (("after", b), ("before", a))
                for name, server in order:
                    samples.setdefault((page, name), []).append(measure(browser, server.base_url + page))
        browser.close()
    labels = [label for _, label in METRICS]
    print("| page | site | " + " | ".join(labels) + " |")
    print("|---|---|" + "---:|" * len(labels))
    for page in args.pages:
        medians = {}
        for name in ("before", "after"):
            rows = samples[(page, name)]
            medians[name] = {k: statistics.median(r[k] for r in rows) for k in labels}
            print(f"| {page} | {name} | " + " | ".join(f"{medians[name][k]:,.0f}" for k in labels) + " |")
        ratio = [medians["after"][k] / medians["before"][k] if medians["before"][k] else float("nan") for k in labels]
        print(f"| {page} | after / before | " + " | ".join(f"{r:.2f}" for r in ratio) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
