"""Check the site's content: front matter, data files, route, snippets, HTML,
images, links, figure markers and Chinese typography.

    python -m llmsite check                     # everything
    python -m llmsite check docs/articles/x.md  # only problems in these files
    python -m llmsite check --root /path/to/repo

The whole site is always read (route, duplicate titles and links need it);
paths only narrow which problems are printed. The same checks run in
``mkdocs build`` (the llmsite plugin) and in CI. Nothing is written:
exit status 0 when there is no problem, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.dont_write_bytecode = True  # a check must not leave files behind (not even __pycache__)

import argparse
import time
from pathlib import Path

from llmsite.content.articles import article_files, load_site
from llmsite.paths import ROOT, rel
from llmsite.problems import Problem


def _selected(problems: list[Problem], paths: list[str], root: Path) -> list[Problem]:
    """Problems located in ``paths`` (files or folders, relative to the current directory or root)."""
    wanted: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_absolute() and not path.exists():
            path = root / raw
        wanted.append(rel(path, root).rstrip("/"))
    return [p for p in problems if any(p.path == w or p.path.startswith(w + "/") for w in wanted)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmsite check",
        description="检查文章与数据文件（front matter、学习路线、代码片段、HTML、图片、链接、图、中文排版）。",
    )
    parser.add_argument("paths", nargs="*", help="只显示这些文件（或目录）中的问题；默认检查全部文章和数据文件")
    parser.add_argument("--root", type=Path, default=ROOT, help="仓库根目录（默认：本仓库）")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    if not (root / "docs").is_dir():
        parser.error(f"{root} 下没有 docs/ 目录")

    started = time.perf_counter()
    site = load_site(root=root)
    problems = sorted(set(site.problems))
    if args.paths:
        missing = [p for p in args.paths if not Path(p).exists() and not (root / p).exists()]
        problems = sorted(set(_selected(problems, args.paths, root)) | {Problem(p, 1, "文件不存在") for p in missing})
    n_articles = len(article_files(root / "docs"))
    elapsed = time.perf_counter() - started

    for problem in problems:
        print(problem)
    if problems:
        files = len({p.path for p in problems})
        print(f"\n发现 {len(problems)} 个问题（{files} 个文件），请按上面的修改建议处理。")
        return 1
    print(f"检查通过：{n_articles} 篇文章，0 个问题（{elapsed:.2f} 秒）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
