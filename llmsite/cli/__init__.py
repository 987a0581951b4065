"""The command line: ``python -m llmsite check | figures | labs | artifacts | new | bench``.

Each subcommand is a module here with ``main(argv) -> int``; ``llmsite/__main__.py`` dispatches.
"""

from __future__ import annotations

import argparse
import sys
from typing import TypeVar

T = TypeVar("T")


def cached_steps_parser(prog: str, description: str, what: str) -> argparse.ArgumentParser:
    """The options shared by the cached steps (figures, labs, artifacts): --force, --only, --list."""
    parser = argparse.ArgumentParser(prog=f"python -m llmsite {prog}", description=description)
    parser.add_argument("--force", action="store_true", help=f"忽略缓存，全部重新{what}")
    parser.add_argument("--only", action="append", metavar="NAME", help="只处理这一项（可重复）")
    parser.add_argument("--list", action="store_true", help=f"列出每一项的依赖和缓存状态，不{what}")
    return parser


def select(found: dict[str, T], only: list[str] | None, kind: str) -> dict[str, T] | None:
    """``found`` narrowed to ``--only`` names; None (after saying which names are unknown) when some are."""
    if not only:
        return found
    unknown = sorted(set(only) - set(found))
    if unknown:
        print(f"错误：没有这个{kind}：{'、'.join(unknown)}（已有：{'、'.join(found) or '无'}）", file=sys.stderr)
        return None
    return {name: found[name] for name in only}
