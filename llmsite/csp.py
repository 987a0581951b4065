"""A Content-Security-Policy on every page (defense in depth).

Scripts may come only from the site itself, or be one of the inline scripts that the
site's own templates wrote (Material's palette and storage helpers, ...), each allowed
by its SHA-256 hash. Styles, fonts, images, workers and connections: the site's own
origin only (plus ``data:`` images and fonts, which Material's icons and the labs' plots
use, and inline styles, which KaTeX and Material set on elements).

Material's instant navigation keeps the first page's policy and runs the next page's
inline scripts under it, so every page carries the same policy: the hashes of the inline
scripts of the whole site, known only when the last page is written. ``Policy`` writes
a guess into each page as it is written (the hashes the previous build found, kept in
the build cache) and collects the hashes of what it writes; ``finish`` (after the build)
rewrites every page (atomically) only when the guess was wrong (first build, a template
or a script changed). The pages are the same bytes either way; a warm build of 1,000
articles no longer reads and writes every page a second time.

Not under ``mkdocs serve``: its live-reload script is injected after the build.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from llmsite import atomic

_CHARSET = re.compile(r"<meta charset=[\"']?utf-8[\"']?\s*/?>", re.I)
_SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script\s*>", re.S | re.I)
_TYPE = re.compile(r"""\stype\s*=\s*["']?(?P<type>[^"'\s>]+)""", re.I)
_HASH = re.compile(r"'sha256-[A-Za-z0-9+/]+=*'")  # a source expression as inline_script_hashes writes it
_JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/ecmascript"}


def inline_script_hashes(html: str) -> set[str]:
    """CSP source expressions (``'sha256-…'``) of the executable inline scripts in ``html``."""
    out = set()
    for m in _SCRIPT.finditer(html):
        attrs = m.group("attrs") or ""
        if re.search(r"\ssrc\s*=", attrs, re.I):
            continue
        t = _TYPE.search(attrs)
        if t and t.group("type").lower() not in _JS_TYPES:
            continue  # data blocks (application/json, ...) are not executed
        digest = hashlib.sha256(m.group("body").encode("utf-8")).digest()
        out.add(f"'sha256-{base64.b64encode(digest).decode('ascii')}'")
    return out


def policy(hashes: set[str], config: Any) -> str:
    scripts = ["'self'", *sorted(hashes)]
    frames = ["'none'"]
    connect = ["'self'"]
    comments = (config.get("extra") or {}).get("comments") or {}
    if comments.get("enabled"):  # Giscus, off by default
        scripts.append("https://giscus.app")
        frames = ["https://giscus.app"]
        connect.append("https://giscus.app")
    directives = {
        "default-src": ["'self'"],
        "script-src": scripts,
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": connect,
        "worker-src": ["'self'"],
        "frame-src": frames,
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


def meta(value: str) -> str:
    return f'<meta http-equiv="Content-Security-Policy" content="{value}">'


class Policy:
    """One build's policy: created in ``on_config``, fed every page in ``on_post_page``, finished after the build."""

    def __init__(self, config: Any, store: Path) -> None:
        self.config = config
        self.store = store  # the hashes the previous build found (a guess; never trusted for the result)
        self.guess = frozenset(_read_hashes(store))
        self.guess_meta = meta(policy(set(self.guess), config))
        self.found: set[str] = set()
        self.pages = 0

    def add(self, output: str) -> str:
        """The page with the guessed policy right after ``<meta charset>``; its inline scripts are noted."""
        m = _CHARSET.search(output)
        if m is None:
            return output
        self.found |= inline_script_hashes(output)
        self.pages += 1
        return output[: m.end()] + self.guess_meta + output[m.end() :]

    def finish(self, site_dir: Path) -> int:
        """Correct a wrong guess in every written page; returns how many pages were rewritten."""
        if self.found == self.guess or not self.pages:
            return 0
        right = meta(policy(self.found, self.config))
        rewritten = 0
        for path in sorted(site_dir.rglob("*.html")):
            text = path.read_text(encoding="utf-8")
            if self.guess_meta in text:
                atomic.write_text(path, text.replace(self.guess_meta, right, 1))
                rewritten += 1
        atomic.write_text(self.store, json.dumps(sorted(self.found), indent=0) + "\n")
        return rewritten


def _read_hashes(store: Path) -> list[str]:
    try:
        hashes = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    # a damaged or edited cache must not put anything but hashes into the pages, even until finish corrects them
    return [h for h in hashes if isinstance(h, str) and _HASH.fullmatch(h)] if isinstance(hashes, list) else []
