"""Build benchmarks: cold, warm, after an article edit, after a code edit; baseline; figure hook; Zensical; labs.

All builds are ``mkdocs build --strict`` run from the root of a temporary copy of the
repository, timed wall-clock (what the maintainer waits for). Variants measured
against each other run interleaved (the order rotates every repeat), so that a
change in machine load hits both.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import PYTHON, BenchError, Run, Samples, Workspace, load_average, log, paired_ratio, ratio, rotate, timed
from .variants import prepare_baseline, prepare_nofig

ARTICLE = "docs/articles/transformer-attention.md"
MODULE = "code/positional_encoding.py"
SNIPPET_START = "# --8<-- [start:sinusoidal]"
IMPORT_BARE = "import torch, matplotlib.pyplot"
LABS_STEP = ("-m", "llmsite", "labs")
ZENSICAL_BUILD = ("-m", "llmsite", "zensical", "--out", "site-zensical")


@dataclass
class BuildContext:
    tmp: Path
    repeats: int  # edit repeats
    warm_repeats: int  # interleaved warm / baseline / without-figure-hook repeats
    cold_repeats: int
    seed_site: Path | None = None  # the real site, built (unedited)
    seed_cache: Path | None = None  # a populated figure cache for it
    notes: list[str] = field(default_factory=list)


def append_article_line(ws: Workspace, tag: str) -> str:
    """Append a paragraph with a unique marker to the attention article; returns the marker."""
    marker = f"benchmark{tag}{uuid.uuid4().hex[:8]}"
    path = ws.root / ARTICLE
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n基准测试标记 {marker}\n")
    return marker


def edit_module(ws: Workspace, tag: str) -> str:
    """Put a unique comment line into a snippet section of a module that figures depend on."""
    marker = f"benchmark{tag}{uuid.uuid4().hex[:8]}"
    path = ws.root / MODULE
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if "基准测试标记" not in line]
    at = next(i for i, line in enumerate(lines) if line.strip() == SNIPPET_START)
    lines.insert(at + 1, f"# 基准测试标记 {marker}")
    path.write_text("\n".join(lines), encoding="utf-8")
    return marker


def _figure_step(ws: Workspace) -> Run:
    """The figure step alone, as the build runs it (``python -m llmsite figures`` in a subprocess), empty cache."""
    ws.clear_cache()
    return ws.python("-m", "llmsite", "figures")


def cold_builders(ctx: BuildContext) -> dict[str, Any]:
    """A cold build (empty cache: artifacts, figures, labs) with MkDocs and with Zensical, interleaved
    (``--only cold-builders``): what each builder costs around the same computations, measured in one run."""
    out: dict[str, Any] = {"load_average_start": load_average()}
    ws = Workspace.create(ctx.tmp / "cold-builders")
    total = {"mkdocs": Samples(), "zensical": Samples()}
    computed = {"mkdocs": Samples(), "zensical": Samples()}  # the figure and lab steps inside the build
    for i in range(ctx.cold_repeats):
        for which in rotate(["mkdocs", "zensical"], i):
            ws.clear_cache()
            r = ws.mkdocs_build() if which == "mkdocs" else ws.python(*ZENSICAL_BUILD)
            (_, figures), (_, labs) = r.figures_built, r.labs_executed
            total[which].add(r.seconds)
            computed[which].add(figures + labs)
            log(f"cold-builders: {which} #{i + 1}: {r.seconds:.1f} s (figure step {figures:.1f} s, labs {labs:.1f} s)")
    for which in total:
        out[f"cold_{which}"] = total[which].as_dict()
        out[f"cold_{which}_computed"] = computed[which].as_dict()
    out["zensical_over_mkdocs"] = ratio(total["zensical"].median, total["mkdocs"].median)
    out["zensical_over_mkdocs_paired"] = paired_ratio(total["zensical"], total["mkdocs"])
    out["load_average_end"] = load_average()
    return out


def run(ctx: BuildContext) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average()}
    ws = Workspace.create(ctx.tmp / "build")

    # Cold: empty cache, fresh site dir.
    cold, cold_fig, cold_labs = Samples(), Samples(), Samples()
    figures_cold = labs_cold = 0
    failures: list[str] = []
    for i in range(ctx.cold_repeats):
        ws.clear_cache()
        shutil.rmtree(ws.root / "site", ignore_errors=True)
        try:
            r = ws.mkdocs_build()
        except BenchError as exc:  # e.g. a lab that hangs: recorded, the other repeats still count
            failures.append(_failure(f"cold build #{i + 1}", exc))
            log(f"build: cold #{i + 1} FAILED: {failures[-1][:300]}")
            continue
        n, secs = r.figures_built
        labs_cold, lab_secs = r.labs_executed
        figures_cold = n
        cold.add(r.seconds)
        cold_fig.add(secs)
        cold_labs.add(lab_secs)
        log(
            f"build: cold #{i + 1}: {r.seconds:.2f} s ({n} figures, {secs:.1f} s in the figure step; "
            f"{labs_cold} labs, {lab_secs:.1f} s)"
        )
    out["cold"] = cold.as_dict()
    out["cold_failures"] = failures
    if not cold.values:
        raise BenchError("every cold build failed:\n" + "\n".join(failures))
    out["cold_figure_step_logged"] = cold_fig.as_dict()
    out["cold_figures_built"] = figures_cold
    out["cold_labs_step_logged"] = cold_labs.as_dict()
    out["cold_labs_executed"] = labs_cold

    # Figure step alone (empty cache) vs a bare import of torch + matplotlib, interleaved.
    step, bare = Samples(), Samples()
    per_figure: dict[str, list[float]] = {}
    for i in range(ctx.cold_repeats):
        for which in rotate(["step", "bare"], i):
            if which == "step":
                r = _figure_step(ws)
                step.add(r.seconds)
                for entry in r.steps:
                    if entry["step"] == "figure":
                        per_figure.setdefault(entry["name"], []).append(float(entry["seconds"]))
            else:
                bare.add(ws.python("-c", IMPORT_BARE).seconds)
        log(f"build: figure step {step.values[-1]:.2f} s vs bare import {bare.values[-1]:.2f} s")
    out["figure_step_cold"] = step.as_dict()
    out["bare_import"] = bare.as_dict()
    out["figure_step_over_import"] = ratio(step.median, bare.median)
    out["figure_step_over_import_paired"] = paired_ratio(step, bare)
    # Where the step's time goes: each figure's draw time as build_figures.py prints it. The pipeline may
    # import the libraries once up front and draw in parallel workers, so the draw times can overlap.
    medians = {name: Samples(v).median for name, v in per_figure.items()}
    out["figure_step_breakdown"] = {"per_figure_s": medians, "draw_sum_s": sum(medians.values())}

    # Warm cache and site for the comparisons (the loop above may have ended on a failed build).
    _build_with_retry(ws, failures, "build after the figure steps")
    baseline_cfg = prepare_baseline(ws, ws.root / "site")
    nofig = Workspace.create(ctx.tmp / "build-nofig", cache_from=ws.cache)
    nofig_cfg = prepare_nofig(nofig, ws.root / "site")
    baseline_run = ws.mkdocs_build("site-baseline", config=baseline_cfg.name, strict=False)
    out["baseline_warnings"] = baseline_run.warnings()
    # The variant without the figure step inlines each figure's Markdown; since exercises name the figure they
    # refer to (``figure:``), the content check rejects it. It is then left out and recorded, not faked.
    try:
        nofig.mkdocs_build(config=nofig_cfg.name)
        variants = ["warm", "base", "nofig"]
    except BenchError as exc:
        out["warm_without_figure_hook_error"] = _failure("build without the figure step", exc)
        log("build: the variant without the figure step does not build; measuring warm against baseline only")
        variants = ["warm", "base"]
    # The same site built with Zensical (llmsite/zensical/: staged, built, finished), warm from the same cache.
    try:
        ws.python(*ZENSICAL_BUILD)
        variants.append("zensical")
    except BenchError as exc:
        out["warm_zensical_error"] = _failure("the Zensical build", exc)
    # Snapshot of the unedited site and a warm cache, for the other families.
    shutil.copytree(ws.root / "site", ctx.tmp / "seed-site")
    shutil.copytree(ws.cache, ctx.tmp / "seed-cache")
    ctx.seed_site, ctx.seed_cache = ctx.tmp / "seed-site", ctx.tmp / "seed-cache"

    warm, base, without, zensical = Samples(), Samples(), Samples(), Samples()
    warm_internal = Samples()
    for i in range(ctx.warm_repeats):
        for which in rotate(variants, i):
            if which == "warm":
                r = ws.mkdocs_build()
                if r.figures_built[0]:
                    ctx.notes.append(f"warm build #{i + 1} rebuilt {r.figures_built[0]} figures (cache miss?)")
                warm.add(r.seconds)
                if r.built_in is not None:
                    warm_internal.add(r.built_in)
            elif which == "base":
                base.add(ws.mkdocs_build("site-baseline", config=baseline_cfg.name, strict=False).seconds)
            elif which == "zensical":
                zensical.add(ws.python(*ZENSICAL_BUILD).seconds)
            else:
                without.add(nofig.mkdocs_build(config=nofig_cfg.name).seconds)
        log(
            f"build: warm {warm.values[-1]:.2f} s, baseline {base.values[-1]:.2f} s"
            + (f", without figure hook {without.values[-1]:.2f} s" if without.values else "")
            + (f", Zensical {zensical.values[-1]:.2f} s" if zensical.values else "")
        )
    out["warm"] = warm.as_dict()
    out["warm_mkdocs_internal"] = warm_internal.as_dict()
    out["baseline"] = base.as_dict()
    out["warm_without_figure_hook"] = without.as_dict()
    out["warm_over_baseline"] = ratio(warm.median, base.median)
    out["warm_over_baseline_paired"] = paired_ratio(warm, base)
    out["warm_zensical"] = zensical.as_dict()
    if zensical.values:
        out["zensical_over_warm"] = ratio(zensical.median, warm.median)
        out["zensical_over_warm_paired"] = paired_ratio(zensical, warm)
    if without.values:
        out["figure_hook_ratio"] = ratio(warm.median, without.median)
        out["figure_hook_ratio_paired"] = paired_ratio(warm, without)

    # One article edited (a new line appended each time).
    # Each edited build is paired with a no-change build right after it (same machine load).
    edited, unchanged = Samples(), Samples()
    for i in range(ctx.repeats):
        append_article_line(ws, f"a{i}")
        edited.add(ws.mkdocs_build().seconds)
        unchanged.add(ws.mkdocs_build().seconds)
        log(f"build: after an article edit {edited.values[-1]:.2f} s (then unchanged {unchanged.values[-1]:.2f} s)")
    out["article_edit"] = edited.as_dict()
    out["article_edit_unchanged_pair"] = unchanged.as_dict()
    out["article_edit_over_unchanged_paired"] = paired_ratio(edited, unchanged)

    # One module of code/ edited: only the figures that depend on it are redrawn.
    code_edit, code_fig, code_labs = Samples(), Samples(), Samples()
    rebuilt: list[int] = []
    labs_rerun: list[int] = []
    for i in range(ctx.repeats):
        edit_module(ws, f"c{i}")
        r = ws.mkdocs_build()
        n, secs = r.figures_built
        n_labs, lab_secs = r.labs_executed
        rebuilt.append(n)
        labs_rerun.append(n_labs)
        code_edit.add(r.seconds)
        code_fig.add(secs)
        code_labs.add(lab_secs)
        log(
            f"build: after editing {MODULE}: {r.seconds:.2f} s ({n} figures redrawn in {secs:.1f} s, "
            f"{n_labs} labs executed in {lab_secs:.1f} s)"
        )
    out["code_edit"] = code_edit.as_dict()
    out["code_edit_figure_step_logged"] = code_fig.as_dict()
    out["code_edit_figures_rebuilt"] = rebuilt
    out["code_edit_labs_step_logged"] = code_labs.as_dict()
    out["code_edit_labs_executed"] = labs_rerun
    out["figures_total"] = figures_cold
    out["labs"] = labs(ctx, ws)
    out["load_average_end"] = load_average()
    shutil.rmtree(nofig.root, ignore_errors=True)
    return out


def labs(ctx: BuildContext, ws: Workspace) -> dict[str, Any]:
    """Lab execution cold vs cached (``python -m llmsite labs``), when the project has labs."""
    if not any((ws.root / "labs").glob("*.py")):
        return {"skipped": "labs/ holds no lab"}
    cold, cached = Samples(), Samples()
    failures: list[str] = []
    for i in range(ctx.cold_repeats):
        # A fresh cache folder: the first run executes every notebook, the second finds them cached.
        env = ws.env(LLM_SITE_CACHE=str(ctx.tmp / f"labs-cache-{i}"))
        try:
            cold.add(timed([PYTHON, *LABS_STEP], cwd=ws.root, env=env).seconds)
            cached.add(timed([PYTHON, *LABS_STEP], cwd=ws.root, env=env).seconds)
        except BenchError as exc:  # the labs are new: report a failure, do not abort the benchmark
            failures.append(_failure(f"labs run #{i + 1}", exc))
            log(f"build: labs run #{i + 1} FAILED: {failures[-1][:300]}")
    if not cold.values or not cached.values:
        return {"skipped": "every run of python -m llmsite labs failed", "failures": failures}
    log(f"build: labs cold {cold.median:.2f} s, cached {cached.median:.2f} s")
    return {
        "cold": cold.as_dict(),
        "cached": cached.as_dict(),
        "cold_over_cached": ratio(cold.median, cached.median),
        "failures": failures,
    }


def _failure(what: str, exc: Exception) -> str:
    """A failed run, short: the command's last lines hold the reason (e.g. a lab's CellTimeoutError)."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    reason = [line for line in lines if "错误" in line or "Error" in line][:3]
    return f"{what}: " + " | ".join(reason or lines[-3:])[:700]


def _build_with_retry(ws: Workspace, failures: list[str], what: str) -> Run:
    try:
        return ws.mkdocs_build()
    except BenchError as exc:
        failures.append(_failure(what, exc))
        log(f"build: {what} FAILED, trying once more: {failures[-1][:300]}")
        return ws.mkdocs_build()


def ensure_seed(ctx: BuildContext) -> tuple[Path, Path]:
    """(built site, warm cache) of the unedited repository; built once when the build family did not run."""
    if ctx.seed_site is None or ctx.seed_cache is None:
        ws = Workspace.create(ctx.tmp / "seed")
        log("seed: one cold build of the real site (figures and labs into a fresh cache)")
        _build_with_retry(ws, [], "seed build")
        ctx.seed_site, ctx.seed_cache = ws.root / "site", ws.cache
    return ctx.seed_site, ctx.seed_cache
