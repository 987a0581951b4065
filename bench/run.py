"""Benchmarks of the site: build, serve, scaling and page weight, in one command.

    python -m llmsite bench                  # everything but serve-scale (about 20 minutes on 2 cores)
    python -m llmsite bench --quick          # fewer repeats, N = 10 and 100 only
    python -m llmsite bench --only build --only serve
    python -m llmsite bench --only serve-scale --serve-sizes 100,1000   # preview servers at N articles
    python -m llmsite bench --only cold-builders --quick   # cold build, MkDocs and Zensical interleaved
    python -m llmsite bench --only scaling --sizes 1000 --scaling-repeats 8   # per-article ratio at N = 1,000
    python -m llmsite bench --only marginal [--marginal-suite]   # cost of one more article: cold build (and suite)
    python -m llmsite bench --only stage-growth [--stage 3]   # what one stage of the route adds to a cold build
    python -m llmsite bench --only lighthouse [--lighthouse-repeats N]   # mobile Lighthouse, ours vs plain Material
    python -m llmsite bench --only playground      # the model in the browser: tokens/s against PyTorch, bytes
    python -m llmsite bench --out bench-results/ --keep

Everything runs in temporary copies of the repository (docs/, code/, data/,
scripts/, overrides/, labs/, mkdocs.yml; KaTeX is vendored in docs/): the working
tree is never modified. Prints a table and writes ``<out>/latest.json`` (and a
dated copy) with the machine (CPU, cores, Python, package versions, date) and
every sample. The machine is shared and noisy: compare ratios measured in the
same run (variants run interleaved) and medians over repeats.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    build,
    common,
    lighthouse,
    marginal,
    playground,
    report,
    scaling,
    serve,
    serve_scale,
    stage_growth,
    weight,
)
from bench.common import REPO, BenchError, fingerprint, load_average, log, machine_info

FAMILIES = ("build", "cold-builders", "serve", "scaling", "weight", "lighthouse", "serve-scale", "marginal",
            "playground", "stage-growth")
# Without --only: all but serve-scale (three preview servers at N = 100 and 1,000: about 30 minutes more) and
# marginal (two cold builds, and with --marginal-suite two runs of the test suite: about an hour) and stage-growth
# (two cold builds, one of them of the whole site: about 12 minutes).
DEFAULT_FAMILIES = ("build", "serve", "scaling", "weight", "lighthouse", "playground")
FULL_SIZES = [10, 100, 300, 1000]
QUICK_SIZES = [10, 100]


def _guard(name: str, fn: Callable[[], dict[str, Any]], results: dict[str, Any]) -> None:
    """Run one family; a failure is recorded in the results and the next family still runs."""
    start = time.perf_counter()
    log(f"== {name}")
    try:
        results[name] = fn()
    except (BenchError, OSError, RuntimeError, ValueError, KeyError) as exc:
        log(f"{name} failed: {exc}")
        results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    results[name]["family_seconds"] = time.perf_counter() - start


def _write(results: dict[str, Any], paths: list[Path]) -> None:
    for path in paths:
        path.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmarks of the site build, serve, scaling and page weight")
    parser.add_argument("--quick", action="store_true", help="fewer repeats; scaling at N = 10, 100 only")
    parser.add_argument("--out", type=Path, default=REPO / "bench-results", help="folder for latest.json")
    parser.add_argument("--only", action="append", choices=FAMILIES, help="run only this family (repeatable)")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], help="scaling N list, e.g. 10,100")
    parser.add_argument(
        "--serve-sizes", type=lambda s: [int(x) for x in s.split(",")], help="serve-scale N list (default 100,1000)"
    )
    parser.add_argument(
        "--serve-repeats", type=int, default=serve_scale.DEFAULT_REPEATS, help="serve-scale: saves of each kind"
    )
    parser.add_argument(
        "--serve-variants",
        type=lambda s: s.split(","),
        default=[v.name for v in serve_scale.VARIANTS],
        help="serve-scale servers, e.g. incremental,mkdocs,material",
    )
    parser.add_argument(
        "--scaling-repeats", type=int, help="scaling: interleaved builds of each variant (default 3; 1 with --quick)"
    )
    parser.add_argument(
        "--marginal-repeats",
        type=int,
        default=marginal.DEFAULT_REPEATS,
        help="marginal: interleaved pairs (without, with the generated article) of each measurement",
    )
    parser.add_argument(
        "--marginal-suite", action="store_true", help="marginal: also time the test suite in both copies (long)"
    )
    parser.add_argument(
        "--marginal-together", action="store_true",
        help="marginal: run the two copies' suites side by side (each with half the cores), not one after the other",
    )
    parser.add_argument("--stage", type=int, default=stage_growth.DEFAULT_STAGE,
                        help="stage-growth: the stage of data/route.yml to leave out (1-based)")
    parser.add_argument("--stage-repeats", type=int, default=stage_growth.DEFAULT_REPEATS,
                        help="stage-growth: interleaved pairs of cold builds (with, without the stage)")
    parser.add_argument(
        "--lighthouse-repeats", type=int, default=1, help="lighthouse: runs of each page on each site (median)"
    )
    parser.add_argument("--profile", action="store_true", help="profile one scaled build even if linear")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies (path is printed)")
    parser.add_argument("--tmp", type=Path, default=None, help="parent folder of the temporary copies")
    parser.add_argument("--source", type=Path, default=REPO, help="tree to copy (default: this repository)")
    parser.add_argument("--render", type=Path, metavar="JSON", help="only print the table of an earlier run")
    args = parser.parse_args(argv)
    if args.render:
        print(report.render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0

    families = args.only or list(DEFAULT_FAMILIES)
    quick = args.quick
    repeats = 2 if quick else 5  # builds after an edit
    warm_repeats = 3 if quick else 7  # interleaved warm / baseline / without figure hook
    cold_repeats = 1 if quick else 3
    serve_repeats = 2 if quick else 3
    scale_repeats = args.scaling_repeats or (1 if quick else 3)  # a shared machine's noise needs more at N = 1000
    load_repeats = 2 if quick else 3
    sizes = args.sizes or (QUICK_SIZES if quick else FULL_SIZES)

    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="llm-bench-", dir=args.tmp))
    log(f"temporary copies in {tmp}")
    common.SOURCE = args.source.resolve()
    results: dict[str, Any] = {
        "machine": {**machine_info(), "source": fingerprint(common.SOURCE)},
        "quick": quick,
        "settings": {
            "families": families,
            "repeats": repeats,
            "warm_repeats": warm_repeats,
            "cold_repeats": cold_repeats,
            "serve_repeats": serve_repeats,
            "scaling_repeats": scale_repeats,
            "load_repeats": load_repeats,
            "sizes": sizes,
        },
        "notes": [],
    }
    bctx = build.BuildContext(tmp, repeats, warm_repeats, cold_repeats)
    sctx: scaling.ScalingContext | None = None
    ssctx: serve_scale.ServeScaleContext | None = None
    mctx: marginal.MarginalContext | None = None
    try:
        if "build" in families:
            _guard("build", lambda: build.run(bctx), results)
        if "cold-builders" in families:
            _guard("cold-builders", lambda: build.cold_builders(bctx), results)
        if "serve" in families:
            _guard("serve", lambda: serve.run(tmp, build.ensure_seed(bctx)[1], serve_repeats), results)
        if "scaling" in families:
            sctx = scaling.ScalingContext(tmp, sizes, scale_repeats, build.ensure_seed(bctx)[1], profile=args.profile)
            _guard("scaling", lambda: scaling.run(sctx), results)  # type: ignore[arg-type]
        if "serve-scale" in families:
            ssctx = serve_scale.ServeScaleContext(
                tmp,
                build.ensure_seed(bctx)[1],
                sizes=args.serve_sizes or list(serve_scale.DEFAULT_SIZES),
                repeats=args.serve_repeats,
                variants=args.serve_variants,
            )
            results["settings"]["serve_scale"] = {
                "sizes": ssctx.sizes,
                "repeats": ssctx.repeats,
                "variants": list(ssctx.variants),
            }
            _guard("serve-scale", lambda: serve_scale.run(ssctx), results)  # type: ignore[arg-type]
        if "marginal" in families:
            mctx = marginal.MarginalContext(tmp, repeats=args.marginal_repeats, suite=args.marginal_suite,
                                            together=args.marginal_together)
            results["settings"]["marginal"] = {"repeats": mctx.repeats, "suite": mctx.suite,
                                               "together": mctx.together}
            _guard("marginal", lambda: marginal.run(mctx), results)  # type: ignore[arg-type]
        if "stage-growth" in families:
            gctx = stage_growth.StageContext(tmp, stage=args.stage, repeats=args.stage_repeats)
            results["settings"]["stage_growth"] = {"stage": gctx.stage, "repeats": gctx.repeats}
            _guard("stage-growth", lambda: stage_growth.run(gctx), results)
        if "lighthouse" in families:
            results["settings"]["lighthouse_repeats"] = args.lighthouse_repeats
            _guard("lighthouse", lambda: lighthouse.run(tmp, build.ensure_seed(bctx)[1], args.lighthouse_repeats),
                   results)
        if "playground" in families:
            _guard("playground", lambda: playground.run(build.ensure_seed(bctx)[0]), results)
        if "weight" in families:
            sc = results.get("scaling") or {}
            scaled = Path(sc["largest_site"]) if sc.get("largest_site") else None
            if scaled is None:
                results["notes"].append("page weight at scale skipped: the scaling family did not run")
            _guard(
                "weight",
                lambda: weight.run(
                    tmp, build.ensure_seed(bctx)[0], scaled, int(sc.get("largest_n") or 0), load_repeats
                ),
                results,
            )
    finally:
        results["notes"] += bctx.notes + (sctx.notes if sctx else []) + (ssctx.notes if ssctx else [])
        results["notes"] += mctx.notes if mctx else []
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    results["bench_seconds"] = time.perf_counter() - started
    results["load_average_end"] = load_average()
    results["goals"] = report.goals(results)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    paths = [args.out / "latest.json", args.out / f"bench-{stamp}.json"]
    _write(results, paths)  # first without the table: a broken report must not lose the measurements
    text = report.render(results)
    if (results.get("serve-scale") or {}).get("table"):
        text += "\n\nPreview servers at scale (save -> page served; ratios against plain Material)\n"
        text += results["serve-scale"]["table"]
    if (results.get("playground") or {}).get("browser_median"):
        text += "\n\nThe model in the browser (issue 25), side by side with PyTorch on one thread\n"
        text += playground.table(results["playground"])
    if (results.get("lighthouse") or {}).get("table"):
        text += "\n\nLighthouse, mobile (slow 4G, 4x CPU slowdown), gzip server; ours vs plain Material\n"
        text += results["lighthouse"]["table"]
    if (results.get("marginal") or {}).get("table"):
        text += "\n\nMarginal cost of one more article (a copy without it against a copy with it)\n"
        text += results["marginal"]["table"]
    results["table"] = text
    _write(results, paths)
    (args.out / "latest.txt").write_text(text, encoding="utf-8")
    print(text)
    log(f"wrote {paths[0]} ({results['bench_seconds']:.0f} s)")
    failed = [f for f in families if "error" in (results.get(f) or {})]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
