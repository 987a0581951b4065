"""Formulas rendered at build time (``llmsite.tex``): the page's arithmatex spans become KaTeX's HTML.

Called from the plugin's ``on_page_context`` after Material's search plugin has indexed the page, so the index
holds each formula's TeX. Lab pages carry the same markup (``llmsite/labs/page.py`` writes it, after checking
every formula with KaTeX at lab-render time, where an error names ``labs/<name>.py:line``).
A formula KaTeX rejects stops ``mkdocs build`` with ``docs/...md:line``; under ``mkdocs serve`` it is logged
and shown in the page as an error until a save fixes it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from llmsite import tex
from llmsite.paths import rel
from llmsite.problems import ContentError

log = logging.getLogger("mkdocs.plugins.llmsite.formulas")


def page_content(html: str, page: Any, *, serving: bool) -> str:
    if 'class="arithmatex"' not in html:
        return html
    src = page.file.abs_src_path
    path = rel(Path(src)) if src else f"docs/{page.file.src_uri}"
    out, problems = tex.render_arithmatex(html, page.file.content_string, path)
    if problems and not serving:
        raise PluginError(str(ContentError(problems)))
    for problem in problems:
        log.error("%s", problem)
    return out
