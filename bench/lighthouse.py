"""Lighthouse's mobile preset on every kind of page, this site against its plain-Material twin, in one run.

    python -m llmsite bench --only lighthouse [--lighthouse-repeats N]

Lighthouse 12.2.3 (pinned in ``bench/package.json``, installed by ``make bench-tools``; not in the root
``package.json``, so ``make test`` does not download its 111 MB) runs with its default mobile settings:
simulated slow 4G and a 4x CPU slowdown, Debian's Chromium headless. Both sites are served by ``bench/httpd.py``,
which gzips text as GitHub Pages does. For each page the two sites alternate (ours, then the twin), so a busy
moment of this shared machine hits both; with repeats, the median of each figure is reported.

Pages: home, the article list, the route, every article, every lab, the tag index. The twin (``variants.py``'s
baseline: the same Markdown, plain Material with its search plugin only) has no list or route content of its
own; those rows compare our page with the twin's page at the same address when it exists.

Per page: performance score, TBT, LCP, CLS, DOM elements, transferred bytes, the main-thread breakdown
(Lighthouse's ``mainthread-work-breakdown`` groups) and the scripts with the most main-thread time
(``bootup-time``), and the long tasks with the script they are attributed to.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsite import chromium

from .common import REPO, BenchError, Workspace, load_average, log
from .httpd import serve
from .variants import prepare_baseline

TOOLS = REPO / "bench"  # bench/package.json, bench/node_modules
BIN = TOOLS / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
FIXED_PAGES = {"home": "", "list": "articles/", "route": "route/", "tags": "tags/"}
TIMEOUT = 240  # seconds for one Lighthouse run


@dataclass(frozen=True)
class Page:
    name: str
    path: str  # relative to the site root, "" for home


def pages_of(site: Path) -> list[Page]:
    """Every kind of page of a built site: the fixed ones, each article, each lab."""
    out = [Page(name, path) for name, path in FIXED_PAGES.items() if (site / path / "index.html").is_file()]
    articles = site / "articles"
    for child in sorted(articles.iterdir()) if articles.is_dir() else []:
        if child.name != "page" and (child / "index.html").is_file():
            out.append(Page(f"article:{child.name}", f"articles/{child.name}/"))
    labs = site / "labs"
    for child in sorted(labs.iterdir()) if labs.is_dir() else []:
        if (child / "index.html").is_file():
            out.append(Page(f"lab:{child.name}", f"labs/{child.name}/"))
    return out


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """The figures this benchmark reports, from one Lighthouse JSON report."""
    audits = report.get("audits", {})

    def value(audit: str) -> float | None:
        v = (audits.get(audit) or {}).get("numericValue")
        return float(v) if v is not None else None

    def items(audit: str) -> list[dict[str, Any]]:
        return list(((audits.get(audit) or {}).get("details") or {}).get("items") or [])

    breakdown = {str(i.get("groupLabel") or i.get("group")): round(float(i.get("duration") or 0.0))
                 for i in items("mainthread-work-breakdown")}
    scripts = sorted(items("bootup-time"), key=lambda i: -float(i.get("total") or 0.0))[:5]
    long_tasks = sorted(items("long-tasks"), key=lambda i: -float(i.get("duration") or 0.0))[:5]
    categories = report.get("categories", {})
    return {
        "scores": {c: round(100 * float(categories[c]["score"])) for c in CATEGORIES
                   if c in categories and categories[c].get("score") is not None},
        "tbt_ms": value("total-blocking-time"),
        "lcp_ms": value("largest-contentful-paint"),
        "fcp_ms": value("first-contentful-paint"),
        "cls": value("cumulative-layout-shift"),
        "dom_elements": value("dom-size"),
        "bytes": value("total-byte-weight"),
        "main_thread_ms": breakdown,
        "scripts_ms": {str(i.get("url")): round(float(i.get("total") or 0.0)) for i in scripts},
        "long_tasks": [{"url": str(i.get("url")), "ms": round(float(i.get("duration") or 0.0))} for i in long_tasks],
        "runtime_error": (report.get("runtimeError") or {}).get("message"),
    }


def median_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the numeric figures over repeats (the breakdowns of the median-TBT run)."""
    ok = [r for r in runs if not r.get("runtime_error")]
    if not ok:
        return runs[0] if runs else {}
    by_tbt = sorted(ok, key=lambda r: r.get("tbt_ms") or 0.0)[len(ok) // 2]
    out = dict(by_tbt)
    for key in ("tbt_ms", "lcp_ms", "fcp_ms", "cls", "dom_elements", "bytes"):
        values = [r[key] for r in ok if r.get(key) is not None]
        out[key] = statistics.median(values) if values else None
    out["scores"] = {c: statistics.median([r["scores"][c] for r in ok if c in r["scores"]])
                     for c in CATEGORIES if any(c in r["scores"] for r in ok)}
    out["repeats"] = len(ok)
    return out


def lighthouse(url: str, out_json: Path) -> dict[str, Any]:
    if not BIN.is_file():
        raise BenchError(f"Lighthouse is not installed: run `make bench-tools` (npm ci in {TOOLS})")
    env = {**os.environ, "CHROME_PATH": shutil.which(chromium.executable()) or chromium.executable()}
    cmd = [str(BIN), url, "--output=json", f"--output-path={out_json}", "--quiet",
           "--chrome-flags=--headless --no-sandbox --disable-gpu", f"--only-categories={','.join(CATEGORIES)}"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if proc.returncode != 0 or not out_json.is_file():
        raise BenchError(f"lighthouse {url} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return summarize(json.loads(out_json.read_text(encoding="utf-8")))


def build_sites(tmp: Path, seed_cache: Path) -> tuple[Path, Path]:
    """(our site, the plain-Material twin), built in one copy of the repository from the warm seed cache."""
    ws = Workspace.create(tmp / "lighthouse")
    if seed_cache.is_dir():
        shutil.copytree(seed_cache, ws.cache, dirs_exist_ok=True)
    ws.mkdocs_build("site")
    config = prepare_baseline(ws, ws.root / "site")
    ws.mkdocs_build("site-baseline", config=config.name, strict=False)
    return ws.root / "site", ws.root / "site-baseline"


def run(tmp: Path, seed_cache: Path, repeats: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average(), "repeats": repeats}
    ours, twin = build_sites(tmp, seed_cache)
    pages = pages_of(ours)
    reports = tmp / "lighthouse-reports"
    reports.mkdir(exist_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    with serve(ours) as a, serve(twin) as b:
        for page in pages:
            samples: dict[str, list[dict[str, Any]]] = {"ours": [], "material": []}
            for i in range(repeats):
                for variant, server, site in (("ours", a, ours), ("material", b, twin)):
                    if not (site / page.path / "index.html").is_file():
                        continue
                    name = f"{page.name.replace(':', '-')}-{variant}-{i}.json"
                    samples[variant].append(lighthouse(server.base_url + page.path, reports / name))
                    log(f"lighthouse {page.name} {variant}: perf {samples[variant][-1]['scores'].get('performance')}"
                        f", TBT {samples[variant][-1]['tbt_ms']:.0f} ms")
            rows[page.name] = {"path": page.path, **{k: median_summary(v) for k, v in samples.items() if v}}
    out["pages"] = rows
    out["table"] = table(rows)
    out["load_average_end"] = load_average()
    return out


def _cell(summary: dict[str, Any] | None) -> list[str]:
    if not summary:
        return ["—"] * 6
    scores = summary.get("scores", {})
    return [str(scores.get("performance", "—")), f"{summary['tbt_ms']:.0f} ms", f"{summary['lcp_ms'] / 1000:.1f} s",
            f"{summary['cls']:.3f}", f"{summary['dom_elements']:.0f}", f"{summary['bytes'] / 1024:.0f} KiB"]


def table(rows: dict[str, dict[str, Any]]) -> str:
    head = "| page | perf | TBT | LCP | CLS | DOM | bytes | Material: perf | TBT | LCP | CLS | DOM | bytes |"
    lines = [head, "|" + "---|" * 13]
    for name, row in rows.items():
        lines.append("| " + " | ".join([name, *_cell(row.get("ours")), *_cell(row.get("material"))]) + " |")
    lines.append("")
    lines.append("Main thread (ours), ms: style & layout / script evaluation / rendering / parse HTML & CSS")
    for name, row in rows.items():
        mt = (row.get("ours") or {}).get("main_thread_ms", {})
        picked = [mt.get(k, 0) for k in ("Style & Layout", "Script Evaluation", "Rendering", "Parse HTML & CSS")]
        tasks = ", ".join(f"{t['ms']} ms {t['url'].rsplit('/', 1)[-1] or t['url']}"
                          for t in (row.get("ours") or {}).get("long_tasks", [])[:3])
        lines.append(f"- {name}: {' / '.join(str(p) for p in picked)}; longest tasks: {tasks or 'none'}")
    return "\n".join(lines)
