"""Build the figures that the articles embed, and the answers of their exercises.

    python -m llmsite figures            # build what is out of date
    python -m llmsite figures --force    # rebuild everything
    python -m llmsite figures --only attention-weights
    python -m llmsite figures --list     # declarations, dependencies, cache state

Figures are declared in code/figures/*.py with @figure(...) (see code/figkit.py), exercise answers
beside them with @exercise_answer(...), the numbers an article states with @article_values (planned as
``values-<article>``); ``--only`` takes any of these names. The answers are computed
after the figures. Every build runs the same pipeline from llmsite/features/figures.py.
"""

from __future__ import annotations

import sys

from llmsite.cache.deps import definition_deps
from llmsite.cli import cached_steps_parser
from llmsite.figures import answers, cache, registry, runner
from llmsite.paths import rel


def main(argv: list[str] | None = None) -> int:
    parser = cached_steps_parser("figures", "生成文章中的图和练习的答案（带缓存）", "重画")
    args = parser.parse_args(argv)

    try:
        specs = registry.discover()
        answer_specs = registry.discover_computed()
    except registry.DeclarationError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    if args.only:
        unknown = sorted(set(args.only) - set(specs) - set(answer_specs))
        if unknown:
            known = "、".join([*specs, *answer_specs]) or "无"
            print(f"错误：没有这个图或练习答案：{'、'.join(unknown)}（已有：{known}）", file=sys.stderr)
            return 2
        specs = {name: specs[name] for name in args.only if name in specs}
        answer_specs = {name: answer_specs[name] for name in args.only if name in answer_specs}
    items = runner.plan(specs.values(), force=args.force)
    answer_items = answers.plan(answer_specs.values(), force=args.force)

    if args.list:
        for item in items:
            state = "已缓存" if item.cached else "需生成"
            found = definition_deps([(item.spec.module, f) for f in cache.functions(item.spec)])
            print(f"{item.spec.name}  [{state}]  文章 {item.spec.article}  {item.spec.where}")
            print(f"    依赖：{', '.join(rel(p) for p in found.names)}")
            for path, names in found.names.items():
                print(f"      {rel(path)}：{', '.join(names)}")
        if answer_items:  # indented under one heading: the lines above stay one figure each
            print(f"练习答案（{len(answer_items)} 个）")
        for answer in answer_items:
            state = "已缓存" if answer.cached else "需计算"
            found = definition_deps([(answer.spec.module, answer.spec.function)])
            print(f"  {answer.spec.name}  [{state}]  文章 {answer.spec.article}  {answer.spec.where}")
            for path, names in found.names.items():
                print(f"    用到 {rel(path)}：{', '.join(names)}")
        return 0
    try:
        runner.run(items)
        answers.run(answer_items)
    except (runner.FigureError, answers.AnswerError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print(f"缓存目录：{rel(cache.CACHE_DIR)}" + (f"、{rel(answers.CACHE_DIR)}" if answer_items else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
