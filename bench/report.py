"""The printed table and the goals, from the results of every family."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

KB = 1000  # the page-weight goal is "1 MB" = 1,000,000 bytes: sizes are shown in kB (1,000 bytes)


def _num(x: Any, fmt: str = ".2f", unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:{fmt}}{unit}"


def _s(d: dict[str, Any] | None, key: str = "median") -> str:
    """Seconds of a Samples dict: median and (min-max)."""
    if not d or d.get(key) is None:
        return "-"
    spread = f" ({d['min']:.2f}-{d['max']:.2f}, n={d['n']})" if d.get("n", 0) > 1 else ""
    return f"{d[key]:.2f} s{spread}"


def _kb(x: float | None) -> str:
    return "-" if x is None else f"{x / KB:,.1f} kB"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(), line]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(out)


def _met(value: float | None, goal: float, *, below: bool = True) -> str:
    if value is None or math.isnan(value):
        return "-"
    ok = value <= goal if below else value >= goal
    return "MET" if ok else "MISSED"


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    b = results.get("build") or {}
    if "figure_hook_ratio" in b:
        out.append(
            {
                "goal": "warm build with / without the figure step <= 1.05",
                "value": b["figure_hook_ratio"],
                "paired": b.get("figure_hook_ratio_paired"),
                "status": _met(b["figure_hook_ratio"], 1.05),
            }
        )
    if "figure_step_over_import" in b:
        out.append(
            {
                "goal": "cold figure step / bare `import torch, matplotlib.pyplot` <= 2",
                "value": b["figure_step_over_import"],
                "paired": b.get("figure_step_over_import_paired"),
                "status": _met(b["figure_step_over_import"], 2.0),
            }
        )
    lin = (results.get("scaling") or {}).get("linearity")
    if lin:
        judged = lin.get("slope_ratio", lin["marginal_ratio"])
        what = (
            f"slope {lin['n_mid']}->{lin['n_to']} / 100->{lin['n_mid']}"
            if "slope_ratio" in lin
            else f"marginal N={lin['n_to']} / N={lin['n_from']}"
        )
        out.append(
            {
                "goal": f"per-article cost at N={lin['n_to']} / at N={lin['n_from']} ({what}) <= {lin['goal']}",
                "value": judged,
                "paired": lin.get("marginal_ratio"),
                "status": _met(judged, lin["goal"]) if lin["n_to"] >= 1000 else "N<1000 (quick)",
            }
        )
    fl = (results.get("weight") or {}).get("first_load_goal")
    if fl:
        out.append(
            {
                "goal": f"attention article first load at N={fl['n']} < 1 MB on the wire",
                "value": fl["attention_wire_bytes"],
                "status": ("MET" if fl["met"] else "MISSED") if fl["n"] >= 1000 else "N<1000 (quick)",
            }
        )
        if "ratio_to_real" in fl:
            out.append(
                {
                    "goal": f"attention article first load at N={fl['n']} / with {fl['real_articles']} articles "
                            f"<= {fl['ratio_goal']}",
                    "value": round(fl["ratio_to_real"], 3),
                    "status": ("MET" if fl["ratio_to_real"] <= fl["ratio_goal"] else "MISSED") if fl["n"] >= 1000
                    else "N<1000 (quick)",
                }
            )
    return out


def render(results: dict[str, Any]) -> str:
    parts: list[str] = []
    m = results.get("machine") or {}
    pk = m.get("packages") or {}
    parts.append(
        "Machine: {cpu} x{cores} cores, {mem} GiB, Python {py}; mkdocs {mk}, material {mat}, pymdownx {pmd}, "
        "jieba {jb}, torch {torch}, matplotlib {mpl}; {hugo}; {chrome}".format(
            cpu=m.get("cpu_model"),
            cores=m.get("cores"),
            mem=m.get("memory_gib"),
            py=m.get("python"),
            mk=pk.get("mkdocs"),
            mat=pk.get("mkdocs-material"),
            pmd=pk.get("pymdown-extensions"),
            jb=pk.get("jieba"),
            torch=pk.get("torch"),
            mpl=pk.get("matplotlib"),
            hugo=(m.get("hugo") or "no hugo").split(" BuildDate")[0],
            chrome=m.get("chromium") or "no chromium",
        )
    )
    repo = m.get("repo") or {}
    fp = m.get("source") or {}
    parts.append(
        f"Date {m.get('date')}; tree {fp.get('sha256')} ({fp.get('files')} files copied); "
        f"repo {repo.get('commit')}{' (dirty tree)' if repo.get('dirty') else ''}; "
        f"load average at start {m.get('load_average_start')}, at end {results.get('load_average_end')}; "
        f"mode {'quick' if results.get('quick') else 'full'}; bench took {results.get('bench_seconds', 0):.0f} s"
    )

    b = results.get("build")
    if b and "error" not in b:
        n_fig = b.get("figures_total")
        bd = b.get("figure_step_breakdown") or {}
        per = bd.get("per_figure_s") or {}
        draw_sum = bd.get("draw_sum_s", sum(per.values()) if per else None)
        per_figure = " ".join(f"{k} {v:.2f}" for k, v in (bd.get("per_figure_s") or {}).items())
        rebuilt = b.get("code_edit_figures_rebuilt") or []
        rows = [
            ["cold build (empty .cache, fresh site)", _s(b.get("cold")), f"{n_fig} figures drawn"],
            ["  figure step inside it (hook log)", _s(b.get("cold_figure_step_logged")), "rounded to 0.1 s"],
            [
                "  lab step inside it (hook log)",
                _s(b.get("cold_labs_step_logged")),
                f"{b.get('cold_labs_executed', 0)} labs executed",
            ],
            ["warm build (nothing changed)", _s(b.get("warm")), f"mkdocs' own: {_s(b.get('warm_mkdocs_internal'))}"],
            ["plain Material, same docs (baseline)", _s(b.get("baseline")), "no hooks, search only"],
            [
                "warm / baseline",
                _num(b.get("warm_over_baseline")),
                f"paired {_num(b.get('warm_over_baseline_paired'))}",
            ],
            [
                "warm Zensical build (python -m llmsite zensical)",
                _s(b.get("warm_zensical")),
                f"/ warm MkDocs: {_num(b.get('zensical_over_warm'))}, "
                f"paired {_num(b.get('zensical_over_warm_paired'))}",
            ],
            [
                "after editing one article",
                _s(b.get("article_edit")),
                f"/ unchanged build right after: {_num(b.get('article_edit_over_unchanged_paired'))}",
            ],
            [
                "after editing code/positional_encoding.py",
                _s(b.get("code_edit")),
                f"figures redrawn per build: {rebuilt} of {n_fig}; labs executed: {b.get('code_edit_labs_executed')}",
            ],
            ["  figure step inside it (hook log)", _s(b.get("code_edit_figure_step_logged")), ""],
            ["  lab step inside it (hook log)", _s(b.get("code_edit_labs_step_logged")), ""],
            ["warm without the figure step (figures: false)", _s(b.get("warm_without_figure_hook")), "same output"],
            [
                "warm with / without figure hook",
                _num(b.get("figure_hook_ratio"), ".3f"),
                f"goal <= 1.05; paired {_num(b.get('figure_hook_ratio_paired'), '.3f')}",
            ],
            ["cold figure step alone (build_figures.py)", _s(b.get("figure_step_cold")), "empty cache"],
            [
                "  sum of per-figure draw times",
                _num(draw_sum, ".2f", " s"),
                "as printed by build_figures.py; may overlap (parallel workers)",
            ],
            ["bare `import torch, matplotlib.pyplot`", _s(b.get("bare_import")), ""],
            [
                "figure step / bare import",
                _num(b.get("figure_step_over_import")),
                f"goal <= 2; paired {_num(b.get('figure_step_over_import_paired'))}",
            ],
        ]
        for failure in b.get("cold_failures") or []:
            rows.append(["  FAILED", failure[:60], failure[60:200]])
        labs = b.get("labs") or {}
        if "skipped" in labs:
            rows.append(["labs (cold vs cached)", "skipped", labs["skipped"][:90]])
        else:
            rows.append(["labs cold", _s(labs.get("cold")), ""])
            rows.append(["labs cached", _s(labs.get("cached")), f"cold/cached {_num(labs.get('cold_over_cached'))}"])
        for failure in labs.get("failures") or []:
            rows.append(["  labs FAILED", failure[:60], failure[60:200]])
        text = "\n1. Build (wall clock; median (min-max, n))\n" + table(rows, ["what", "time", "note"])
        if per_figure:
            text += f"\ncold figure step, per figure (median s): {per_figure}"
        parts.append(text)
    elif b:
        parts.append(f"\n1. Build: FAILED: {b['error'][:500]}")

    cb = results.get("cold-builders")
    if cb and "error" not in cb:
        rows = [[f"cold {which} build (empty .cache)", _s(cb.get(f"cold_{which}")),
                 f"figure and lab steps inside it: {_s(cb.get(f'cold_{which}_computed'))}"]
                for which in ("mkdocs", "zensical")]
        rows.append(["Zensical / MkDocs, cold", _num(cb.get("zensical_over_mkdocs")),
                     f"paired {_num(cb.get('zensical_over_mkdocs_paired'))}; load "
                     f"{cb.get('load_average_start')} -> {cb.get('load_average_end')}"])
        parts.append("\nCold build, MkDocs and Zensical interleaved\n" + table(rows, ["", "seconds", "note"]))
    elif cb:
        parts.append(f"\nCold builders: FAILED: {cb['error'][:500]}")

    sg = results.get("stage-growth")
    if sg and "error" not in sg:
        rows = [[f"cold build {which} stage {sg.get('stage')}", _s(sg.get(f"cold_{which}")),
                 f"CPU {_s(sg.get(f'cold_{which}_cpu'))}; figure and lab steps {_s(sg.get(f'cold_{which}_computed'))}"]
                for which in ("without", "with")]
        rows.append([f"growth ({', '.join(sg.get('articles') or [])})", _num(sg.get("growth_s"), ".1f", " s"),
                     f"CPU {_num(sg.get('growth_cpu_s'), '.1f', ' s')}; load "
                     f"{sg.get('load_average_start')} -> {sg.get('load_average_end')}"])
        parts.append(f"\nCold build with and without stage {sg.get('stage')} ({sg.get('title')}), interleaved\n"
                     + table(rows, ["", "seconds", "note"]))
    elif sg:
        parts.append(f"\nStage growth: FAILED: {sg['error'][:500]}")

    s = results.get("serve")
    if s and "error" not in s:
        figs = s.get("figures_rebuilt_logged") or []
        rows = [
            ["first page served after start", _num(s.get("startup_s"), ".2f", " s"), "warm figure cache"],
            ["article edit -> page served", _s(s.get("article_edit")), "save to marker visible over HTTP"],
            [
                "code edit -> page served",
                _s(s.get("code_edit")),
                f"figures redrawn per rebuild: {figs}; labs executed: {s.get('labs_executed_logged')}",
            ],
            ["server stop", s.get("stopped", "-"), ""],
        ]
        parts.append("\n2. mkdocs serve (save -> changed page served)\n" + table(rows, ["what", "time", "note"]))
    elif s:
        parts.append(f"\n2. Serve: FAILED: {s['error'][:500]}")

    sc = results.get("scaling")
    if sc and "error" not in sc:
        rows = []
        for key, e in sorted(sc["sizes"].items(), key=lambda kv: int(kv[0])):
            rows.append(
                [
                    key,
                    str(e["articles"]),
                    _num(e["project"]["median"]),
                    _num(e["baseline"]["median"]),
                    _num((e.get("hugo") or {}).get("median")),
                    _num(e.get("project_per_article_ms"), ".1f"),
                    _num(e.get("baseline_per_article_ms"), ".1f"),
                    _num(e.get("hugo_per_article_ms"), ".1f"),
                    _num(e.get("project_marginal_ms"), ".1f"),
                    _num(e.get("baseline_marginal_ms"), ".1f"),
                    _num(e.get("hugo_marginal_ms"), ".2f"),
                    _num(e.get("project_over_baseline")),
                    _num(e.get("project_over_hugo"), ".1f"),
                    _num(e["project_site"]["search_index_gzip"] / KB, ",.0f"),
                    _num(e["project_site"].get("article_html_bytes", 0) / KB, ",.0f"),
                ]
            )
        header = [
            "N",
            "articles",
            "proj s",
            "base s",
            "hugo s",
            "proj ms/art",
            "base ms/art",
            "hugo ms/art",
            "proj marg",
            "base marg",
            "hugo marg",
            "proj/base",
            "proj/hugo",
            "index gz kB",
            "page kB",
        ]
        text = (
            "\n3. Scaling (warm builds, median; ms/art = time / articles; marg = (T(N)-T(0))/N ms;"
            " index gz = project's search index gzip; page = one article's HTML)\n"
        )
        text += table(rows, header)
        lin = sc.get("linearity")
        if lin:
            text += (
                f"\nlinearity N={lin['n_to']} vs N={lin['n_from']}: marginal {_num(lin['marginal_ratio'])} "
                f"(baseline {_num(lin['baseline_marginal_ratio'])}), time/article {_num(lin['per_article_ratio'])}"
            )
            if "slope_ratio" in lin:
                sp, sb = lin["slope_ms"]["project"], lin["slope_ms"]["baseline"]
                text += (
                    f"; ms per extra article 100->{lin['n_mid']} / {lin['n_mid']}->{lin['n_to']}: "
                    f"project {sp[0]:.1f} / {sp[1]:.1f} (ratio {_num(lin['slope_ratio'])}, goal <= {lin['goal']}), "
                    f"baseline {sb[0]:.1f} / {sb[1]:.1f} (ratio {_num(lin['baseline_slope_ratio'])})"
                )
        prof = sc.get("profile")
        if prof:
            text += f"\ncProfile of one project build at N={prof['n']} ({prof['reason']}), {prof['wall_s']:.1f} s:\n"
            prow = [
                [r["function"], r["file"], str(r["ncalls"]), _num(r["cumtime_s"], ".2f"), _num(r["tottime_s"], ".2f")]
                for r in prof["top_cumulative"][:18]
            ]
            text += table(prow, ["function", "file:line", "calls", "cum s", "self s"])
            if prof.get("plugins"):
                text += "\nplugins (heaviest event of each, cumulative):\n"
                prow = [
                    [name, r["function"], r["file"], str(r["ncalls"]), _num(r["cumtime_s"], ".2f")]
                    for name, r in prof["plugins"].items()
                ]
                text += table(prow, ["plugin", "function", "file:line", "calls", "cum s"])
            if prof.get("project_scripts"):
                text += "\nproject hooks and llmsite (cumulative):\n"
                prow = [
                    [
                        r["function"],
                        r["file"],
                        str(r["ncalls"]),
                        _num(r["cumtime_s"], ".3f"),
                        _num(r["tottime_s"], ".3f"),
                    ]
                    for r in prof["project_scripts"][:12]
                ]
                text += table(prow, ["function", "file:line", "calls", "cum s", "self s"])
        parts.append(text)
    elif sc:
        parts.append(f"\n3. Scaling: FAILED: {sc['error'][:500]}")

    w = results.get("weight")
    if w and "error" not in w:
        rows = []
        for label, key in (("real", "real"), (f"N={w.get('scaled_n')}", "scaled")):
            site = w.get(key)
            if not site:
                continue
            for name, p in site["pages"].items():
                rows.append(
                    [
                        label,
                        name,
                        str(p["requests"]),
                        _kb(p["wire_bytes"]),
                        _kb(p["raw_bytes"]),
                        _kb(p["search_index_wire"]),
                        ("yes" if p["search_index_fetched"] else "no")
                        + (" (done before load)" if p["search_index_before_load"] else ""),
                        _num((p.get("load_ms") or {}).get("median"), ".0f", " ms"),
                    ]
                )
        text = "\n4. Page weight, first load in a fresh Chromium context (gzip as GitHub Pages; 1 kB = 1000 B)\n"
        text += table(
            rows, ["site", "page", "requests", "wire (gzip)", "decoded", "search index", "index fetched", "load"]
        )
        for label, key in (("real site", "real"), (f"N={w.get('scaled_n')}", "scaled")):
            srch = ((w.get(key) or {}).get("pages", {}).get("attention") or {}).get("search")
            if srch:
                text += (
                    f"\nsearch on the attention article, {label}: typing 「{srch['query']}」 at the load event, first "
                    f"result {_num(srch['first_result_ms']['median'], '.0f')} ms after navigation start "
                    f"({_num(srch['wait_after_typing_ms']['median'], '.0f')} ms after typing)"
                )
        if "lab" in w and isinstance(w["lab"], str):
            text += f"\nlab page: {w['lab']}"
        fig = w.get("largest_figure") or {}
        if fig:
            text += f"\nlargest figure: {fig['file']} {_kb(fig['bytes'])} ({_kb(fig['gzip'])} gzip)"
        for label, key in (("real site", "search_index_real"), (f"N={w.get('scaled_n')}", "search_index_scaled")):
            si = w.get(key)
            if not si or si.get("missing"):
                continue
            form = " [compact UTF-8]" if si.get("as_written_is_compact") else " [\\uXXXX escapes]"
            text += (
                f"\nsearch index, {label} ({si['articles']} articles, {si['sections']} sections): as written "
                f"{_kb(si['as_written_bytes'])} raw / {_kb(si['as_written_gzip'])} gzip "
                f"({_kb(si['as_written_bytes_per_article'])} / {_kb(si['as_written_gzip_per_article'])} per article)"
                f"{form}; "
                f"escaped {_kb(si['escaped_bytes'])} / {_kb(si['escaped_gzip'])}; "
                f"compact UTF-8 {_kb(si['compact_bytes'])} / {_kb(si['compact_gzip'])}; "
                f"compact without code blocks {_kb(si['compact_no_code_bytes'])} / {_kb(si['compact_no_code_gzip'])}; "
                f"titles only {_kb(si['compact_titles_only_gzip'])} gzip"
            )
        fl = w.get("first_load_goal")
        if fl:
            text += (
                f"\nfirst load of the attention article at N={fl['n']}: {_kb(fl['attention_wire_bytes'])} on the wire, "
                f"of which search_index.json {_kb(fl['search_index_wire_bytes'])} "
                f"({100 * fl['search_index_share']:.0f}%), fetched on first load: "
                f"{'yes' if fl['search_index_fetched_on_first_load'] else 'no'}; without it "
                f"{_kb(fl['without_search_index'])}; goal < 1,000 kB: {'MET' if fl['met'] else 'MISSED'}"
            )
            if "ratio_to_real" in fl:
                text += (
                    f"\n  with {fl['real_articles']} articles the same page is {_kb(fl['real_attention_wire_bytes'])}: "
                    f"ratio {fl['ratio_to_real']:.3f} (goal <= {fl['ratio_goal']})"
                )
            if "with_escaped_index" in fl:
                text += (
                    f"\n  same page with Material's own (escaped) index: {_kb(fl['with_escaped_index'])}; "
                    f"with a titles-only index: {_kb(fl['with_titles_only_index'])}"
                )
        parts.append(text)
    elif w:
        parts.append(f"\n4. Page weight: FAILED: {w['error'][:500]}")

    g = results.get("goals") or []
    if g:
        rows = []
        for item in g:
            v = item["value"]
            shown = _kb(v) if isinstance(v, int) and v > 1000 else _num(v, ".3f")
            rows.append([item["goal"], shown, _num(item.get("paired"), ".3f"), item["status"]])
        parts.append("\nGoals\n" + table(rows, ["goal", "value", "paired/alt", "status"]))
    notes = results.get("notes") or []
    if notes:
        parts.append("\nNotes\n" + "\n".join(f"- {n}" for n in notes))
    return "\n".join(parts) + "\n"
