"""Stop the build when the vendored KaTeX no longer matches its SHA256SUMS manifest.

KaTeX is committed under docs/assets/vendor/katex/ (``llmsite.vendor``; written by
scripts/vendor_katex.py), so MkDocs publishes it like any other static file: no Node, no CDN.
A partial copy, a hand edit or a bad merge would otherwise show up as broken math in the browser.
Hashing the 25 files (~580 KB) takes about 10 ms.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError

from llmsite.vendor import VENDOR_URI, verify


def check_katex(docs_dir: Path) -> None:
    problems = verify(docs_dir / VENDOR_URI)
    if problems:
        raise PluginError(
            "docs/assets/vendor/katex/ 中的 KaTeX 文件与清单 SHA256SUMS 不一致：\n  "
            + "\n  ".join(problems)
            + "\n请不要手工修改这些文件；用 python scripts/vendor_katex.py 重新生成（需要 npm），"
            "或 git checkout 恢复它们。"
        )
