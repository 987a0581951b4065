"""One article's checks and nothing else: its lane (``make test-article SLUG=<slug>``).

    python -m llmsite lane transformer-attention        # the lane: content checks, then its tests
    python -m llmsite lane transformer-attention --list # what it would run, and why
    python -m llmsite lane --changed origin/main...HEAD # the articles these commits touch, one per line
    python -m llmsite lane --changed origin/main...HEAD --run   # and run their lanes (CI's first job)

What a lane runs is read from the build's own dependency graph (``llmsite/lane/``): nothing to edit for a new
article. Exit status 0 when everything passed, 1 when something failed, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llmsite.lane import changes, run
from llmsite.lane.graph import SiteGraph, load
from llmsite.paths import rel


def _list(graph: SiteGraph, slugs: list[str], also: list[Path] | None = None) -> None:
    for slug in slugs:
        art = graph.articles[slug]
        print(f"{slug}（{rel(art.source, graph.root)}）")
        print(f"  页面：{'、'.join(art.pages)}")
        if art.figures or art.answers:
            print(f"  图 {len(art.figures)} 张、练习答案 {len(art.answers)} 个、练习 {len(art.exercises)} 道")
        if art.models:
            print(f"  模型演示：{'、'.join(art.models)}")
        print("  测试文件：")
        for chosen in run.chosen_tests(graph, [slug]):
            print(f"    {rel(chosen.path, graph.root)}  ← {chosen.why}")
    if also:
        print("另外运行（改动的模块自己的测试）：")
        for path in also:
            print(f"    {rel(path, graph.root)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmsite lane",
        description="只运行一篇文章的检查：内容检查、它的代码和图的测试、论断、严格构建、浏览器里的页面、实验。",
        epilog="pytest 的其他参数写在 -- 之后，例如：python -m llmsite lane decoding -- -x",
    )
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="文章的 slug（docs/articles/<slug>.md）")
    parser.add_argument("--changed", metavar="REVISIONS",
                        help="git diff 的范围（如 origin/main...HEAD）：列出这些改动涉及的文章，每行一个")
    parser.add_argument("--run", action="store_true", help="与 --changed 一起：运行这些文章的车道")
    parser.add_argument("--list", action="store_true", help="只列出车道会运行什么、为什么，不运行")
    parser.add_argument("-n", "--workers", metavar="N",
                        help="pytest-xdist 的进程数（默认同 make test：核数加一；0 表示一个进程）")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []  # for pytest
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if bool(args.slugs) == bool(args.changed):
        parser.error("给出文章的 slug，或者 --changed <范围>（二者选一）")
    if args.run and not args.changed:
        parser.error("--run 只和 --changed 一起用；运行一篇文章的车道直接写它的 slug")
    try:
        graph = load()
    except Exception as exc:  # a declaration the build would refuse too: say so, as the build does
        print(f"读不出文章的依赖：{exc}", file=sys.stderr)
        return 1
    if args.changed:
        return _changed(graph, args.changed, args.run, args.list, args.workers, extra)
    unknown = [s for s in args.slugs if s not in graph.articles]
    if unknown:
        parser.error(f"没有这篇文章：{'、'.join(unknown)}（有：{'、'.join(graph.articles)}）")
    slugs = list(dict.fromkeys(args.slugs))
    if args.list:
        _list(graph, slugs)
        return 0
    return run.run(graph, slugs, args.workers, extra)


def _changed(graph: SiteGraph, revisions: str, run_them: bool, listing: bool, workers: str | None,
             extra: list[str]) -> int:
    try:
        paths = changes.changed_files(revisions, graph.root)
        before = changes.file_at(changes.base_of(revisions, graph.root), graph.root)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    selection = changes.articles_for_changes(paths, graph, before)
    for line in selection.explain():
        print(line, file=sys.stderr)
    slugs = list(graph.articles) if selection.whole_suite else selection.slugs()
    own = changes.own_tests(paths, graph.root)
    if not run_them or listing:
        for slug in slugs:
            print(slug)
        if listing:
            _list(graph, slugs, own)
        return 0
    if selection.whole_suite:
        print("改动影响每一篇文章：车道不单独运行，全套测试会检查全部内容。", file=sys.stderr)
        return 0
    if not slugs:
        print(f"改动（{len(paths)} 个文件）不涉及任何文章：没有车道要运行，全套测试会检查它们。", file=sys.stderr)
        return 0
    return run.run(graph, slugs, workers, extra, also=own)
