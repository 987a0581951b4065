"""The lab sources: ``labs/<name>.py`` in jupytext's percent format, found and read without jupytext.

What a lab is (``Lab``), which files are labs (``discover``), a lab's title (the ``# `` heading of its first
Markdown cell), and whether a path under docs/ is a lab page the build generates (``generated_page``). Cheap: the
content checks and the MkDocs process use it on every build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from llmsite.paths import ROOT, rel

LABS_DIR = "labs"  # top-level folder of the sources, and the site folder of the notebooks
CELL_MARKER = re.compile(r"^# %%")
TITLE = re.compile(r"^# # (?P<title>.+?)\s*$")


@dataclass(frozen=True)
class Lab:
    name: str
    source: Path  # labs/<name>.py

    @property
    def uri(self) -> str:
        """The notebook's path in the site (docs-relative)."""
        return f"{LABS_DIR}/{self.name}.ipynb"

    @property
    def where(self) -> str:
        return rel(self.source)


class LabError(RuntimeError):
    pass


def discover(labs_dir: Path = ROOT / LABS_DIR) -> dict[str, Lab]:
    """Every ``labs/*.py`` by name (files starting with ``_`` are helpers, not labs)."""
    return {
        p.stem: Lab(p.stem, p)
        for p in sorted(labs_dir.glob("*.py"))
        if not p.name.startswith("_")
    }


def title(lab_uri: str, root: Path = ROOT) -> str | None:
    """The ``# `` heading of a lab's first Markdown cell, read from its source (no jupytext)."""
    name = Path(lab_uri).stem
    source = root / LABS_DIR / f"{name}.py"
    if not source.is_file():
        return None
    in_markdown = False
    for line in source.read_text(encoding="utf-8").splitlines():
        if CELL_MARKER.match(line):
            if in_markdown:
                return None  # the first Markdown cell had no title
            in_markdown = "[markdown]" in line
        elif in_markdown and (m := TITLE.match(line)):
            return m.group("title")
    return None


def generated_page(target: Path, docs: Path, root: Path = ROOT) -> bool:
    """Whether ``target`` (a path under ``docs``) is a lab page that the build generates.

    ``docs/labs/<name>.ipynb`` is not a file in docs/, but it is a page of the site
    whenever ``labs/<name>.py`` exists: link checks that look at docs/ only can
    accept such targets with this.
    """
    try:
        inside = target.resolve().relative_to(docs.resolve())
    except ValueError:
        return False
    return (
        len(inside.parts) == 2
        and inside.parts[0] == LABS_DIR
        and inside.suffix == ".ipynb"
        and not inside.name.startswith("_")
        and (root / LABS_DIR / f"{inside.stem}.py").is_file()
    )
