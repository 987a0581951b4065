"""Which script code forces style and layout when a page opens on a (simulated) phone.

    python -m bench.layout SITE_DIR articles/transformer-attention/ [more pages…]

Lighthouse says *that* a long page spends seconds in Style & Layout inside Material's ``bundle.js``; this says
*where*. One headless Chromium load per page at a phone's viewport (412 x 823) with a 4x CPU slowdown, traced with
the timeline's stack category: every ``Layout`` and ``UpdateLayoutTree`` event that JavaScript forced carries the
stack of the code that asked for it. Their durations are summed by the top frame, and each frame is mapped through
the script's source map (Material ships ``bundle.*.min.js.map``) to the original file and line, e.g. Material's
``components/toc`` or ``components/content/code``. Layout the browser does on its own (no script on the stack) is
reported as one line. Nothing here is timed against a goal: the shares are what matter.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from llmsite import chromium

from .httpd import serve

VIEWPORT = {"width": 412, "height": 823}
CPU_SLOWDOWN = 4
CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline",
              "disabled-by-default-devtools.timeline.stack", "blink.user_timing"]
FORCED = ("Layout", "UpdateLayoutTree")
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def _vlq(segment: str) -> list[int]:
    values, shift, value = [], 0, 0
    for char in segment:
        digit = _B64[char]
        value += (digit & 31) << shift
        if digit & 32:
            shift += 5
            continue
        values.append(-(value >> 1) if value & 1 else value >> 1)
        shift = value = 0
    return values


class SourceMap:
    """A source map's mappings: (generated line, column) -> (source file, line), both 0-based."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.sources: list[str] = list(data.get("sources") or [])
        self.lines: list[list[tuple[int, int, int]]] = []
        src = src_line = 0
        for line in str(data.get("mappings") or "").split(";"):
            col = 0
            row: list[tuple[int, int, int]] = []
            for segment in filter(None, line.split(",")):
                fields = _vlq(segment)
                col += fields[0]
                if len(fields) >= 4:
                    src += fields[1]
                    src_line += fields[2]
                    row.append((col, src, src_line))
            self.lines.append(row)

    def lookup(self, line: int, column: int) -> tuple[str, int] | None:
        if not 0 <= line < len(self.lines):
            return None
        best = None
        for col, src, src_line in self.lines[line]:
            if col > column:
                break
            best = (self.sources[src], src_line + 1)
        return best


@cache
def _source_map(script: Path) -> SourceMap | None:
    path = script.with_name(script.name + ".map")
    return SourceMap(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


def _origin(site: Path, frame: dict[str, Any]) -> str:
    url = str(frame.get("url") or "")
    line, column = int(frame.get("lineNumber") or 0), int(frame.get("columnNumber") or 0)
    name = frame.get("functionName") or "(anonymous)"
    rel = url.split("/", 3)[3] if url.count("/") >= 3 else url
    script = site / rel.split("?", 1)[0]
    found = _source_map(script).lookup(line - 1, column - 1) if script.is_file() and _source_map(script) else None
    if found:  # trace stack frames count lines and columns from 1
        source, src_line = found
        return f"{source.split('node_modules/')[-1].lstrip('./')}:{src_line}"
    return f"{rel or '(page)'}:{line}:{column} {name}"


def forced_layout(site: Path, path: str) -> dict[str, Any]:
    """Load ``path`` of ``site`` once; style and layout time by the code that forced it (ms)."""
    from playwright.sync_api import sync_playwright

    by_origin: Counter[str] = Counter()
    unforced = 0.0
    with serve(site) as server, sync_playwright() as pw:
        exe = shutil.which(chromium.executable()) or chromium.executable()
        browser = pw.chromium.launch(executable_path=exe, args=chromium.ARGS)
        try:
            page = browser.new_context(viewport=VIEWPORT, device_scale_factor=2.625, is_mobile=True,
                                       has_touch=True, locale="zh-CN").new_page()
            cdp = page.context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
            browser.start_tracing(page=page, categories=CATEGORIES)
            page.goto(server.base_url + path, wait_until="load")
            page.wait_for_timeout(3000)
            trace = json.loads(browser.stop_tracing())
        finally:
            browser.close()
    for event in trace.get("traceEvents", []):
        if event.get("name") not in FORCED or event.get("ph") != "X":
            continue
        ms = float(event.get("dur") or 0) / 1000
        stack = ((event.get("args") or {}).get("beginData") or {}).get("stackTrace") or []
        if stack:
            # the low-level helper that read the layout, and the first caller in a Material component (the feature)
            frames = [_origin(site, f) for f in stack]
            feature = next((f for f in frames if "/components/" in f), frames[-1])
            by_origin[f"{frames[0]}  <-  {feature}" if feature != frames[0] else frames[0]] += ms
        else:
            unforced += ms
    forced = sum(by_origin.values())
    return {"forced_ms": round(forced), "unforced_ms": round(unforced),
            "by_origin_ms": {k: round(v) for k, v in by_origin.most_common(15)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    for path in args.paths:
        result = forced_layout(args.site, path)
        print(f"{path}: forced by scripts {result['forced_ms']} ms, by the browser itself {result['unforced_ms']} ms")
        for origin, ms in result["by_origin_ms"].items():
            print(f"  {ms:6d} ms  {origin}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
