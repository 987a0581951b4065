"""The build's generated files (``llmsite.features.files.Generated``) as MkDocs ``File`` objects."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File

from llmsite.features.files import Generated


class LabPageFile(File):
    """``labs/<name>.ipynb`` as a documentation page (URL ``labs/<name>/``), its Markdown a placeholder."""

    def is_documentation_page(self) -> bool:
        return True


def add(files: Any, config: Any, generated: list[Generated]) -> None:
    """Add each generated file to MkDocs's list: read from the cache, or from memory; nothing is written into
    docs/, so ``mkdocs serve`` does not loop."""
    for item in generated:
        kind = LabPageFile if item.page else File
        if item.path is not None:
            files.append(kind.generated(config, item.uri, abs_src_path=str(item.path)))
        else:
            files.append(kind.generated(config, item.uri, content=item.content))
