"""Every module of ``code/`` runs on its own (``python code/<m>.py``), so its ``if __name__ == "__main__":`` block
is the module's last top-level statement: a block placed earlier runs before the functions below it are defined, and
fails with a ``NameError`` as soon as it calls one of them (``code/evaluation.py`` did, until 2026-12-07).

The one block allowed elsewhere is the path set-up near the top (it only puts ``code/`` on ``sys.path``). Read from
the syntax trees; nothing is imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "code").rglob("*.py"))


def main_blocks(tree: ast.Module) -> list[int]:
    """Indices of the top-level ``if __name__ == "__main__":`` statements."""
    return [i for i, node in enumerate(tree.body)
            if isinstance(node, ast.If) and {"__name__", "'__main__'"} <= set(ast.unparse(node.test).split(" == "))]


def only_sets_the_path(node: ast.If) -> bool:
    return all("sys.path" in ast.unparse(stmt) for stmt in node.body) and not node.orelse


def misplaced(source: str) -> list[int]:
    """Line numbers of main blocks that do more than set the path and are not the last statement."""
    tree = ast.parse(source)
    last = len(tree.body) - 1
    return [tree.body[i].lineno for i in main_blocks(tree)
            if i != last and not only_sets_the_path(tree.body[i])]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOT)) for p in MODULES])
def test_main_block_comes_last(path: Path) -> None:
    lines = misplaced(path.read_text(encoding="utf-8"))
    assert not lines, f"{path.relative_to(ROOT)}:{lines[0]}: move the __main__ block to the end of the file"


def test_a_block_before_the_functions_it_calls_is_found() -> None:
    early = 'if __name__ == "__main__":\n    run()\n\n\ndef run():\n    pass\n'
    path_only = 'import sys\nif __name__ == "__main__":\n    sys.path.insert(0, "code")\n\n\ndef run():\n    pass\n'
    assert misplaced(early) == [1]
    assert misplaced(path_only) == []
    assert misplaced(path_only + '\n\nif __name__ == "__main__":\n    run()\n') == []
    assert len(MODULES) > 20
