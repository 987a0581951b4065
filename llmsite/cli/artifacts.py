"""Compute the build artifacts (e.g. the trained tiny Transformer) whose inputs changed.

    python -m llmsite artifacts            # compute what is out of date
    python -m llmsite artifacts --force    # compute everything again
    python -m llmsite artifacts --only tiny-transformer
    python -m llmsite artifacts --list     # artifacts, the definitions they depend on, users, cache state

Artifacts are declared in code/*.py with BUILD_ARTIFACTS = {...} (see llmsite/artifacts.py).
The figure and lab scripts call this script for the stale artifacts they use, before drawing or executing.
"""

from __future__ import annotations

import sys

from llmsite import artifacts, labs
from llmsite.cache.deps import definition_deps
from llmsite.cli import cached_steps_parser, select
from llmsite.figures import registry
from llmsite.paths import CODE, rel


def _users(artifact: artifacts.Artifact) -> list[str]:
    out = []
    for spec in registry.discover().values():
        if artifact in artifacts.used_by(definition_deps([(spec.module, spec.function)]).roots):
            out.append(f"图 {spec.name}")
    for lab in labs.discover().values():
        if artifact in artifacts.used_by(definition_deps([(lab.source, None)]).roots):
            out.append(f"实验 {lab.name}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = cached_steps_parser("artifacts", "计算构建产物（例如训练好的小模型，带缓存）", "计算")
    args = parser.parse_args(argv)

    try:
        found = artifacts.discover()
    except artifacts.ArtifactError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    selected = select(found, args.only, "构建产物")
    if selected is None:
        return 2
    found = selected
    items = artifacts.plan(list(found.values()), force=args.force)

    if args.list:
        for item in items:
            a = item.artifact
            state = "已缓存" if item.cached else "需计算"
            print(f"{a.name}  [{state}]  {a.where}  {a.call} → {a.save}()")
            uses = definition_deps([(a.module, a.compute), (a.module, a.save)], CODE)
            for path, names in uses.names.items():
                print(f"    依赖 {rel(path)}：{', '.join(names)}")
            print(f"    使用者：{'、'.join(_users(a)) or '（无）'}")
        return 0
    stale = [item.artifact for item in items if not item.cached]
    try:
        if len(stale) > 1 and not args.force:
            # Several stale artifacts: each in its own process, in the order they depend on each other and side by side
            # (as the build does), so one that reads another finds it cached instead of training it again inside.
            artifacts.ensure(stale)
        else:
            artifacts.run(items)
    except Exception as exc:  # a failing training names the artifact and its function
        import traceback

        names = "、".join(f"{i.artifact.name}（{i.artifact.where}）" for i in items if not i.cached)
        print(f"错误：计算构建产物 {names} 失败：{exc}\n{traceback.format_exc()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
