"""Build the figures that the articles embed.

    python -m llmsite figures            # build what is out of date
    python -m llmsite figures --force    # rebuild everything
    python -m llmsite figures --only attention-weights
    python -m llmsite figures --list     # declarations, dependencies, cache state

Figures are declared in code/figures/*.py with @figure(...) (see code/figkit.py).
MkDocs runs the same pipeline from llmsite/mkdocs/figures.py.
"""

from __future__ import annotations

import sys

from llmsite.cache.deps import definition_deps
from llmsite.cli import cached_steps_parser, select
from llmsite.figures import cache, registry, runner
from llmsite.paths import rel


def main(argv: list[str] | None = None) -> int:
    parser = cached_steps_parser("figures", "生成文章中的图（带缓存）", "重画")
    args = parser.parse_args(argv)

    try:
        specs = registry.discover()
    except registry.DeclarationError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    selected = select(specs, args.only, "图")
    if selected is None:
        return 2
    specs = selected
    items = runner.plan(specs.values(), force=args.force)

    if args.list:
        for item in items:
            state = "已缓存" if item.cached else "需生成"
            found = definition_deps([(item.spec.module, f) for f in cache.functions(item.spec)])
            print(f"{item.spec.name}  [{state}]  文章 {item.spec.article}  {item.spec.where}")
            print(f"    依赖：{', '.join(rel(p) for p in found.names)}")
            for path, names in found.names.items():
                print(f"      {rel(path)}：{', '.join(names)}")
        return 0
    try:
        runner.run(items)
    except runner.FigureError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print(f"缓存目录：{rel(cache.CACHE_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
