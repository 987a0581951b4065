"""Execute the hands-on labs (labs/*.py) whose inputs changed.

    python -m llmsite labs             # execute what is out of date
    python -m llmsite labs --force     # execute everything
    python -m llmsite labs --only attention_lab
    python -m llmsite labs --list      # labs, the code/ definitions and artifacts they use, cache state

Stale build artifacts the labs use (the trained model) are computed first
(python -m llmsite artifacts). Executed notebooks are cached under .cache/labs/
(see llmsite/labs.py);
Every build runs the same pipeline from llmsite/features/labs.py and publishes them as
labs/<name>.ipynb pages.
"""

from __future__ import annotations

import sys

from llmsite import artifacts, labs
from llmsite.cli import cached_steps_parser, select
from llmsite.paths import rel


def main(argv: list[str] | None = None) -> int:
    parser = cached_steps_parser("labs", "执行动手实验（带缓存）", "执行")
    args = parser.parse_args(argv)

    found = labs.discover()
    selected = select(found, args.only, "动手实验")
    if selected is None:
        return 2
    found = selected
    items = labs.plan(list(found.values()), force=args.force)

    if args.list:
        for item in items:
            state = "已缓存" if item.cached else "需执行"
            deps = labs.dependencies(item.lab)
            files = ", ".join(rel(p) for p in deps) or "（无）"
            print(f"{item.lab.name}  [{state}]  {item.lab.where}\n    依赖：{files}")
            for path, names in deps.items():
                print(f"      {rel(path)}：{', '.join(names)}")
            used = [f"{a.name}（{item.key.inputs[f'artifact:{a.name}']}）" for a in labs.uses_artifacts(item.lab)]
            print(f"    构建产物：{'、'.join(used) or '（无）'}")
        return 0
    try:
        labs.run(items)
    except (labs.LabError, artifacts.ArtifactError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print(f"缓存目录：{rel(labs.CACHE_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
