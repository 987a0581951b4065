"""Export the models that articles mark as playable (``<!-- playground: NAME -->``) for the browser.

    python -m llmsite.playground                 # export what is out of date (every marked model)
    python -m llmsite.playground --only tang-gpt
    python -m llmsite.playground --force         # export again
    python -m llmsite.playground --list          # which models, which pages, cache state

The MkDocs plugin runs it in a subprocess (``llmsite/features/playground.py``): only this process imports torch.
"""

from __future__ import annotations

import argparse
import sys

from llmsite import artifacts
from llmsite.paths import rel
from llmsite.playground import export, pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmsite.playground",
                                     description="导出文章里可以运行的模型（带缓存）")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="只导出这个模型（可重复）")
    parser.add_argument("--force", action="store_true", help="不管缓存，重新导出")
    parser.add_argument("--list", action="store_true", help="列出模型、用到它们的页面和缓存状态")
    args = parser.parse_args(argv)
    try:
        used = pages.marked()
    except (export.ExportError, artifacts.ArtifactError, ValueError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    names = args.only or sorted(used)
    declared = artifacts.discover()
    unknown = [n for n in names if n not in declared]
    if unknown:
        known = "、".join(sorted(declared)) or "无"
        print(f"错误：没有这个构建产物：{'、'.join(unknown)}（已有：{known}）", file=sys.stderr)
        return 2
    items = export.plan(names, force=args.force)
    if args.list:
        for item in items:
            state = "已缓存" if item.cached else "需导出"
            where = "、".join(u.where for u in used.get(item.name, [])) or "（没有页面用到）"
            print(f"{item.name}  [{state}]  {rel(item.entry())}  页面：{where}")
        return 0
    try:
        built = export.run(items)
    except export.ExportError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print(f"共 {len(items)} 个模型演示：{built} 个重新导出，{len(items) - built} 个来自缓存")
    return 0


if __name__ == "__main__":
    sys.exit(main())
