"""``python -m tests.without_mkdocs ARGS`` runs ``python -m llmsite ARGS`` with MkDocs, Material and ProperDocs
unimportable. The suite builds its Zensical site this way: Material for MkDocs reaches its end on 2027-05-05, and
the Zensical build must work once they are uninstalled (ARCHITECTURE.md, 「三个构建器」)."""

from __future__ import annotations

import importlib.abc
import runpy
import sys

BLOCKED = frozenset({"mkdocs", "material", "properdocs"})


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"{name} is not importable here: the Zensical build must not need it", name=name)
        return None


def main(argv: list[str]) -> None:
    sys.meta_path.insert(0, Blocker())
    sys.argv = ["llmsite", *argv]
    runpy.run_module("llmsite", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
