"""MkDocs hook: publish third-party front-end assets from node_modules.

KaTeX comes from the npm registry (pinned in package.json / package-lock.json)
and is served from the site itself: no CDN, nothing copied into docs/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
KATEX = ROOT / "node_modules" / "katex" / "dist"
TARGET = "assets/vendor/katex"
# Only woff2 fonts: every browser that runs KaTeX reads woff2 and stops there.
PATTERNS = ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js", "fonts/*.woff2")


def on_files(files: Any, config: Any) -> Any:
    if not (KATEX / "katex.min.js").is_file():
        raise PluginError(
            "找不到 node_modules/katex：公式渲染所需的 KaTeX 还没有安装。"
            "请运行 make setup（或 npm ci --ignore-scripts）。"
        )
    for pattern in PATTERNS:
        for path in sorted(KATEX.glob(pattern)):
            uri = f"{TARGET}/{path.relative_to(KATEX).as_posix()}"
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
