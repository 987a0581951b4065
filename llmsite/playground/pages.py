"""Which pages of docs/ mark which models as playable (read from the Markdown sources, no MkDocs)."""

from __future__ import annotations

from pathlib import Path

from llmsite import artifacts
from llmsite.paths import DOCS, rel
from llmsite.playground.registry import Use, uses


def marked(docs: Path = DOCS) -> dict[str, list[Use]]:
    """``{artifact name: [uses]}`` over every Markdown page; a malformed or unknown marker raises MarkerError."""
    known = artifacts.discover()
    found: dict[str, list[Use]] = {}
    for path in sorted(docs.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if "playground" not in text:
            continue
        for use in uses(text, rel(path), known):
            found.setdefault(use.name, []).append(use)
    return found
