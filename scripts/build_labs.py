"""Execute the hands-on labs (labs/*.py) whose inputs changed.

    python scripts/build_labs.py             # execute what is out of date
    python scripts/build_labs.py --force     # execute everything
    python scripts/build_labs.py --only attention_lab
    python scripts/build_labs.py --list      # labs, the code/ definitions and artifacts they use, cache state

Stale build artifacts the labs use (the trained model) are computed first
(scripts/build_artifacts.py). Executed notebooks are cached under .cache/labs/
(see scripts/sitelib/labs.py);
MkDocs runs the same pipeline from scripts/hook_labs.py and publishes them as
labs/<name>.ipynb pages.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sitelib import artifacts, labs
from sitelib.paths import rel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="执行动手实验（带缓存）")
    parser.add_argument("--force", action="store_true", help="忽略缓存，全部重新执行")
    parser.add_argument("--only", action="append", metavar="NAME", help="只处理这个实验（可重复）")
    parser.add_argument("--list", action="store_true", help="列出所有实验、依赖和缓存状态，不执行")
    args = parser.parse_args(argv)

    found = labs.discover()
    if args.only:
        unknown = sorted(set(args.only) - set(found))
        if unknown:
            print(f"错误：没有这个动手实验：{'、'.join(unknown)}（已有：{'、'.join(found) or '无'}）", file=sys.stderr)
            return 2
        found = {name: found[name] for name in args.only}
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
    print(f"缓存目录：{rel(labs.ROOT_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
