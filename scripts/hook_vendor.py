"""MkDocs hook: check the vendored front-end assets before building.

KaTeX is committed under docs/assets/vendor/katex/ (see scripts/vendor_katex.py),
so MkDocs publishes it like any other static file: no Node, no npm install, no
CDN. This hook only stops the build when those files no longer match their
SHA256SUMS manifest (a partial copy, a hand edit, a bad merge), which would
otherwise show up as broken math in the browser. Hashing the 26 files (~580 KB)
takes about 10 ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from vendor_katex import verify

VENDOR = "assets/vendor/katex"


def on_config(config: Any) -> Any:
    problems = verify(Path(config["docs_dir"]) / VENDOR)
    if problems:
        raise PluginError(
            "docs/assets/vendor/katex/ 中的 KaTeX 文件与清单 SHA256SUMS 不一致：\n  "
            + "\n  ".join(problems)
            + "\n请不要手工修改这些文件；用 python scripts/vendor_katex.py 重新生成（需要 npm），"
            "或 git checkout 恢复它们。"
        )
    return config
