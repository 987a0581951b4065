"""TeX to HTML at build time, with the vendored KaTeX (``llmsite.vendor``) running in embedded V8 (mini-racer).

Readers' browsers then load no KaTeX script: formulas are in the page as HTML and need only
``katex.min.css`` and its fonts, so they show without JavaScript, offline and in print.

- ``render(tex, display)``: KaTeX's HTML for one formula, or ``TexError`` with KaTeX's message.
  One V8 context per process, created on first use (about 0.16 s: loading ``katex.min.js``); results are
  remembered by (tex, display) for the life of the process, so the preview renders a formula once, and across
  builds in ``.cache/tex/``: the site's 278 distinct formulas take 0.43 s with V8 and 0.003 s from that file.
- ``render_arithmatex(html, source, path)``: the spans and divs that ``pymdownx.arithmatex`` (generic mode)
  writes, replaced by KaTeX's HTML inside the same wrapper element (``class="arithmatex"``: the stylesheet
  and ``scroll-focus.js`` select it). An invalid formula is a ``Problem`` at ``path:line`` (the line
  of the formula in the Markdown source).

Output "htmlAndMathml", not "html": KaTeX marks its HTML ``aria-hidden="true"`` in both modes, so with "html"
alone a screen reader gets nothing at all for a formula; the MathML copy is what it reads. Measured on
docs/articles/transformer-attention.md (196 formulas, 2026-12-02): "html" 6,242 elements, 315 kB (40.5 kB gzip);
"htmlAndMathml" 8,168 elements, 365 kB (44.6 kB gzip). Before, with KaTeX in the browser: 2,474 elements and
144 kB (32.5 kB gzip) as sent, plus 281 kB of scripts (78 kB gzip), and the same 8,168 elements once auto-render
had run (its default output is "htmlAndMathml" too). So the DOM a phone lays out is unchanged; 4 kB gzip of
MathML is the price of formulas a screen reader can read.

Material's search plugin indexes a page's text before this runs (``llmsite.mkdocs.formulas``): a formula is
in the index as its TeX source, as it was when the browser rendered it, not as KaTeX's spans.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import html
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from llmsite import atomic
from llmsite.paths import CACHE
from llmsite.problems import Problem
from llmsite.vendor import VENDOR, read_pin

KATEX_JS = VENDOR / "katex.min.js"
OUTPUT = "htmlAndMathml"

# Loaded once into the context: KaTeX looks for a global object under these names, and one function returns
# the HTML, or KaTeX's message for a ParseError (anything else is a bug: it raises).
_PRELUDE = "var window = this; var self = this;"
_CALL = """
function llmRender(tex, display, output) {
  try {
    var options = {displayMode: display, throwOnError: true, output: output};
    return JSON.stringify({html: katex.renderToString(tex, options)});
  } catch (e) {
    if (e instanceof katex.ParseError) return JSON.stringify({error: e.message});
    throw e;
  }
}
"""

# pymdownx.arithmatex, generic mode: <span class="arithmatex">\(...\)</span>, <div class="arithmatex">\[...\]</div>
# (the lab pages write the same, llmsite/labs/page.py). Rendered, the element holds <span class="katex">...:
# it is left alone, so rendering a page twice (the preview re-writes pages) changes nothing.
_ARITHMATEX = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?P<body>.*?)</(?P=tag)>', re.S)
_INLINE = re.compile(r"\A\\\((?P<tex>.*)\\\)\Z", re.S)
_BLOCK = re.compile(r"\A\\\[(?P<tex>.*)\\\]\Z", re.S)


class TexError(ValueError):
    """KaTeX could not parse a formula; the message is KaTeX's."""


@dataclass(frozen=True)
class Formula:
    tex: str
    display: bool


class _Katex:
    """The V8 context with KaTeX loaded."""

    def __init__(self) -> None:
        from py_mini_racer import MiniRacer

        self.ctx: Any = MiniRacer()
        # Closed before the interpreter tears down its modules: a context still open then hangs the exit
        # (measured with mini-racer 0.14.1: the process never ends).
        atexit.register(self.ctx.close)
        self.ctx.eval(_PRELUDE)
        self.ctx.eval(KATEX_JS.read_text(encoding="utf-8"))
        self.ctx.eval(_CALL)

    def render(self, tex: str, display: bool) -> dict[str, str]:
        return json.loads(self.ctx.call("llmRender", tex, display, OUTPUT))


@cache
def _katex() -> _Katex:
    return _Katex()


@cache
def version() -> str:
    """The vendored KaTeX release (part of the cache key of what is rendered with it, e.g. the lab pages)."""
    return read_pin().version


class _Remembered:
    """The HTML of the formulas rendered by earlier processes, in one JSON file of the build cache whose name holds
    the KaTeX version and this module's code (so anything that changes the output starts a new file). A warm
    build then starts no V8 at all. Only successes are kept: an invalid formula is checked by KaTeX every time.
    Written when the process exits, atomically, if it rendered something new (a lost race only costs time)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries: dict[str, str] | None = None
        self.added = False

    def _path(self) -> Path:
        return self.folder / f"katex-{version()}-{_CODE}.json"

    def get(self, key: str) -> str | None:
        if self.entries is None:
            self.entries = {}
            with contextlib.suppress(OSError, ValueError):
                self.entries = json.loads(self._path().read_text(encoding="utf-8"))
            atexit.register(self.store)
        return self.entries.get(key)

    def put(self, key: str, value: str) -> None:
        if self.entries is not None:
            self.entries[key] = value
            self.added = True

    def store(self) -> None:
        if not self.added or self.entries is None:
            return
        with contextlib.suppress(OSError):  # a read-only cache only costs time
            atomic.write_text(self._path(), json.dumps(self.entries, ensure_ascii=False, sort_keys=True))
            for old in self.folder.glob("katex-*.json"):
                if old != self._path():
                    old.unlink(missing_ok=True)
        self.added = False


_CODE = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=6).hexdigest()
_REMEMBERED = _Remembered(CACHE / "tex")


@cache
def _render(tex: str, display: bool) -> tuple[str, str]:
    key = f"{'D' if display else 'I'}{tex}"
    if (known := _REMEMBERED.get(key)) is not None:
        return known, ""
    out = _katex().render(tex, display)
    if "error" in out:
        return "", out["error"]
    _REMEMBERED.put(key, out["html"])
    return out["html"], ""


def render(tex: str, display: bool = False) -> str:
    """KaTeX's HTML for ``tex`` (display or inline style); raises ``TexError`` when KaTeX cannot parse it."""
    result, error = _render(tex, display)
    if error:
        raise TexError(error)
    return result


def render_or_error(tex: str, display: bool = False) -> str:
    """Like ``render``, but an invalid formula becomes a visible error (the preview shows it until a save)."""
    try:
        return render(tex, display)
    except TexError as exc:
        return f'<span class="katex-error" title="{html.escape(str(exc))}">{html.escape(tex)}</span>'


# --------------------------------------------------------------------------- arithmatex in article pages


def formulas(content: str) -> list[Formula]:
    """The arithmatex formulas of a page's HTML, in order."""
    return [f for m in _ARITHMATEX.finditer(content) if (f := _formula(m)) is not None]


def _formula(match: re.Match[str]) -> Formula | None:
    """The formula of an arithmatex element; None for one already rendered."""
    body = html.unescape(match.group("body"))
    if (found := _INLINE.match(body)) is not None:
        return Formula(found.group("tex"), False)
    if (found := _BLOCK.match(body)) is not None:
        return Formula(found.group("tex").strip("\n"), True)
    return None


def arithmatex(tex: str, display: bool, *, block: bool = False) -> str:
    """A formula as ``pymdownx.arithmatex`` (generic mode) writes it, which ``render_arithmatex`` renders."""
    body = html.escape(tex, quote=False)
    wrapped = "\\[" + body + "\\]" if display else "\\(" + body + "\\)"
    tag = "div" if block else "span"
    return f'<{tag} class="arithmatex">{wrapped}</{tag}>'


def render_arithmatex(content: str, source: str, path: str) -> tuple[str, list[Problem]]:
    """``content`` with every arithmatex formula rendered, and a problem for each formula KaTeX rejects, at
    ``path:line`` (``source`` is the page's Markdown). A rejected formula is shown in place as an error (what
    the preview keeps showing until a save fixes it; a build stops on the problems)."""
    if 'class="arithmatex"' not in content:
        return content, []
    problems: list[Problem] = []

    def replace(match: re.Match[str]) -> str:
        formula = _formula(match)
        if formula is None:
            return match.group(0)
        try:
            rendered = render(formula.tex, formula.display)
        except TexError as exc:
            problems.append(Problem(path, source_line(source, formula.tex), f"公式无法渲染：{exc}",
                                    "检查公式的 TeX 写法（KaTeX 支持的命令见 https://katex.org/docs/supported）"))
            rendered = render_or_error(formula.tex, formula.display)
        tag = match.group("tag")
        return f'<{tag} class="arithmatex">{rendered}</{tag}>'

    return _ARITHMATEX.sub(replace, content), problems


def source_line(source: str, tex: str) -> int:
    """The 1-based line of ``source`` where ``tex`` (or, for a formula re-indented by a list or an admonition,
    its first non-blank line) first appears; 1 when it cannot be found."""
    for needle in (tex, next((line.strip() for line in tex.splitlines() if line.strip()), "")):
        if needle:
            at = source.find(needle)
            if at >= 0:
                return source.count("\n", 0, at) + 1
    return 1
