"""python -m llmsite <command> [options]: the site's command line (see ``python -m llmsite --help``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from llmsite import paths

COMMANDS = {
    "serve": ("llmsite.mkdocs.serve", "本地预览，保存后只重建受影响的页面"),
    "check": ("llmsite.cli.check", "检查文章与数据文件（与构建中的检查相同）"),
    "figures": ("llmsite.cli.figures", "生成文章中的图和练习的答案（带缓存）"),
    "labs": ("llmsite.cli.labs", "执行动手实验（带缓存）"),
    "artifacts": ("llmsite.cli.artifacts", "计算构建产物，例如训练好的小模型（带缓存）"),
    "new": ("llmsite.scaffold", "新建一篇文章：文章、配套代码、图和练习答案、测试，并加入学习路线"),
    "zensical": ("llmsite.zensical.build", "用 Zensical 构建网站到 site-zensical/（make build-zensical）"),
    "pdf": ("llmsite.cli.pdf", "把学习路线打印成一个 PDF（先构建网站）"),
    "lane": ("llmsite.cli.lane", "只运行一篇文章的检查（make test-article SLUG=…）；--changed 列出改动涉及的文章"),
    "bench": ("bench.run", "基准测试（在仓库的 bench/ 中，不属于构建）"),
}


def usage() -> str:
    lines = ["用法：python -m llmsite <命令> [选项]", "", "命令："]
    lines += [f"  {name:<10} {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "每个命令的选项：python -m llmsite <命令> --help"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"没有这个命令：{name}\n\n{usage()}", file=sys.stderr)
        return 2
    here = Path.cwd().resolve()
    if (here / "mkdocs.yml").is_file() and (here / "llmsite").is_dir() and here != paths.ROOT:
        print(f"当前目录 {here} 是另一个站点，但导入的 llmsite 属于 {paths.ROOT}。"
              "请在站点目录里用 python -m llmsite 运行（当前目录在导入路径的最前面）。", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
