"""Scaling: build time per article with N synthetic articles (project, plain Material, Hugo).

For each N a fresh temporary copy gets N synthetic articles (``synth``) in new
stages of 50 in data/route.yml, so the project's validation passes. The
project (``mkdocs build --strict`` with all hooks), the plain-Material baseline
(``variants``) and a minimal Hugo site run interleaved, after one untimed
warm-up build each. N = 0 (the real site) gives the fixed cost of a build.

Per-article costs are reported two ways:

- ``per_article_ms``:  build time / number of articles (includes the fixed cost);
- ``marginal_ms``:     (T(N) - T(0)) / N, the cost an extra article adds.

Linearity is ``marginal_ms`` at the largest N over ``marginal_ms`` at N = 100.
"""

from __future__ import annotations

import pstats
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import hugo, synth
from .common import Samples, Workspace, load_average, log, paired_ratio, ratio, rotate
from .httpd import gzip_size
from .variants import BASELINE_CONFIG, prepare_baseline

PROFILE_AT = 300
SMALL_N_REPEATS = 5
_WRAPPER = re.compile(r"runpy|click/|mkdocs/__main__|<string>|builtins\.exec|mkdocs/plugins\.py|method 'join'")
LINEARITY_GOAL = 1.2
_PLUGINS = {
    "material search": "material/plugins/search/",
    "material tags": "material/plugins/tags/",
    "mkdocs-jupyter": "mkdocs_jupyter/",
}


@dataclass
class ScalingContext:
    tmp: Path
    sizes: list[int]
    repeats: int
    seed_cache: Path
    profile: bool = False  # profile even when the build scales linearly
    notes: list[str] = field(default_factory=list)


def _site_stats(site: Path, slug: str | None) -> dict[str, Any]:
    index = site / "search" / "search_index.json"
    data = index.read_bytes() if index.is_file() else b""
    page = site / "articles" / (slug or "transformer-attention") / "index.html"
    return {
        "html_pages": sum(1 for _ in site.rglob("*.html")),
        "search_index_bytes": len(data),
        "search_index_gzip": gzip_size(data) if data else 0,
        "article_html_bytes": page.stat().st_size if page.is_file() else None,
    }


def profile_build(ws: Workspace, dest: Path, top: int = 30) -> dict[str, Any]:
    """One project build under cProfile; the top functions by cumulative time, and our hooks' own."""
    prof = dest / "profile.out"
    run = ws.mkdocs_build("site-profile", profile=prof)
    stats = pstats.Stats(str(prof))
    rows: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []
    plugins: dict[str, dict[str, Any]] = {}
    root = str(ws.root)
    entries = stats.stats  # type: ignore[attr-defined]
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in entries.items():
        row = {
            "function": func,
            "file": f"{filename.replace(root + '/', '')}:{line}",
            "ncalls": ncalls,
            "tottime_s": round(tottime, 3),
            "cumtime_s": round(cumtime, 3),
        }
        rows.append(row)
        if filename.startswith(root + "/llmsite/"):
            ours.append(row)
        for name, marker in _PLUGINS.items():
            # The plugin's own entry point for the heaviest event: its share of the build.
            if marker in filename and func.startswith("on_") and cumtime > plugins.get(name, {}).get("cumtime_s", 0):
                plugins[name] = row
    # Interpreter, CLI and MkDocs' own dispatch frames wrap everything: leave them out of the top list.
    rows = [r for r in rows if not _WRAPPER.search(f"{r['file']} {r['function']}")]
    rows.sort(key=lambda r: r["cumtime_s"], reverse=True)
    ours.sort(key=lambda r: r["cumtime_s"], reverse=True)
    by_self = sorted(rows, key=lambda r: r["tottime_s"], reverse=True)
    return {
        "wall_s": run.seconds,
        "profile_file": str(prof),
        "top_cumulative": rows[:top],
        "top_self": by_self[:15],
        "project_scripts": ours[:20],
        "plugins": plugins,
    }


def run(ctx: ScalingContext) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average(), "sizes": {}, "hugo": hugo.available()}
    if not hugo.available():
        ctx.notes.append("hugo is not installed (apt-get install -y hugo): Hugo columns are empty")
    keep: dict[int, Workspace] = {}
    sizes = [0, *ctx.sizes]
    for n in sizes:
        ws = Workspace.create(ctx.tmp / f"scale-{n}", cache_from=ctx.seed_cache, git=False)
        if n:
            synth.add_articles(ws.root, n)
        ws.commit(f"bench: {n} synthetic articles")
        first = ws.mkdocs_build()  # validation passes, .pyc written, figures cached
        baseline_cfg = prepare_baseline(ws, ws.root / "site")
        ws.mkdocs_build("site-baseline", config=BASELINE_CONFIG, strict=False)
        variants = ["project", "baseline"]
        if hugo.available():
            hugo.write_site(ws.docs, ws.root / "hugo")
            hugo.build(ws.root / "hugo", ws.root / "hugo-public", ws.env())
            variants.append("hugo")
        times = {v: Samples() for v in variants}
        # Small N: short builds, where noise weighs most on T(N) - T(0); more repeats are cheap there.
        repeats = max(ctx.repeats, SMALL_N_REPEATS) if n <= 100 and ctx.repeats > 1 else ctx.repeats
        for i in range(repeats):
            for v in rotate(variants, i):
                if v == "project":
                    times[v].add(ws.mkdocs_build().seconds)
                elif v == "baseline":
                    times[v].add(ws.mkdocs_build("site-baseline", config=baseline_cfg.name, strict=False).seconds)
                else:
                    times[v].add(hugo.build(ws.root / "hugo", ws.root / "hugo-public", ws.env()).seconds)
        articles = len(list((ws.docs / "articles").glob("*.md"))) - 1  # minus the list page
        entry: dict[str, Any] = {
            "n_synthetic": n,
            "articles": articles,
            "first_build_s": first.seconds,
            **{v: s.as_dict() for v, s in times.items()},
            "project_over_baseline": ratio(times["project"].median, times["baseline"].median),
            "project_over_baseline_paired": paired_ratio(times["project"], times["baseline"]),
            "project_site": _site_stats(ws.root / "site", "bench-0001" if n else None),
            "baseline_site": _site_stats(ws.root / "site-baseline", "bench-0001" if n else None),
        }
        if "hugo" in times:
            entry["project_over_hugo"] = ratio(times["project"].median, times["hugo"].median)
        for v, s in times.items():
            entry[f"{v}_per_article_ms"] = 1000 * s.median / articles
        out["sizes"][str(n)] = entry
        log(
            f"scaling: N={n}: project {times['project'].median:.2f} s, baseline {times['baseline'].median:.2f} s"
            + (f", hugo {times['hugo'].median:.2f} s" if "hugo" in times else "")
        )
        if n in (max(sizes), PROFILE_AT):
            keep[n] = ws
        else:
            shutil.rmtree(ws.root, ignore_errors=True)

    base = out["sizes"]["0"]
    for key, entry in out["sizes"].items():
        n = int(key)
        if n == 0:
            continue
        for v in ("project", "baseline", "hugo"):
            if v in entry and v in base:
                entry[f"{v}_marginal_ms"] = 1000 * (entry[v]["median"] - base[v]["median"]) / n
    largest = max(ctx.sizes, default=0)
    if "100" in out["sizes"] and largest > 100:
        big, small = out["sizes"][str(largest)], out["sizes"]["100"]
        med = {int(k): {v: e[v]["median"] for v in ("project", "baseline") if v in e} for k, e in out["sizes"].items()}
        mid = max((k for k in med if 100 < k < largest), default=None)

        def slope(v: str, a: int, b: int) -> float:
            return 1000 * (med[b][v] - med[a][v]) / (b - a)

        lin: dict[str, Any] = {
            "n_from": 100,
            "n_to": largest,
            # (T(N) - T(0)) / N at both ends: rests on the small, noisy T(100) - T(0) difference.
            "marginal_ratio": ratio(big["project_marginal_ms"], small["project_marginal_ms"]),
            "per_article_ratio": ratio(big["project_per_article_ms"], small["project_per_article_ms"]),
            "baseline_marginal_ratio": ratio(big["baseline_marginal_ms"], small["baseline_marginal_ms"]),
            "goal": LINEARITY_GOAL,
        }
        if mid is not None:
            # Cost of one more article near the top (mid -> largest) over near N = 100 (100 -> mid): the judged one.
            lin["n_mid"] = mid
            lin["slope_ms"] = {"project": [slope("project", 100, mid), slope("project", mid, largest)]}
            lin["slope_ms"]["baseline"] = [slope("baseline", 100, mid), slope("baseline", mid, largest)]
            lin["slope_ratio"] = ratio(lin["slope_ms"]["project"][1], lin["slope_ms"]["project"][0])
            lin["baseline_slope_ratio"] = ratio(lin["slope_ms"]["baseline"][1], lin["slope_ms"]["baseline"][0])
        out["linearity"] = lin
    lin_out = out.get("linearity", {})
    superlinear = lin_out.get("slope_ratio", lin_out.get("marginal_ratio", 0)) > LINEARITY_GOAL
    target = PROFILE_AT if PROFILE_AT in keep else largest
    if (superlinear or ctx.profile) and target in keep:
        log(f"scaling: profiling one build at N={target} (cProfile)")
        out["profile"] = {"n": target, "reason": "superlinear" if superlinear else "requested"}
        out["profile"].update(profile_build(keep[target], ctx.tmp))
    out["largest_site"] = str(keep[largest].root / "site") if largest in keep else None
    out["largest_n"] = largest
    for n, ws in keep.items():
        if n != largest:
            shutil.rmtree(ws.root, ignore_errors=True)
    out["load_average_end"] = load_average()
    return out
