"""A Content-Security-Policy on every page (defense in depth).

Scripts may come only from the site itself, or be one of the inline scripts that the
site's own templates wrote (Material's palette and storage helpers, ...), each allowed
by its SHA-256 hash. Styles, fonts, images, workers and connections: the site's own
origin only (plus ``data:`` images and fonts, which Material's icons and the labs' plots
use, and inline styles, which KaTeX and Material set on elements).

Material's instant navigation keeps the first page's policy and runs the next page's
inline scripts under it, so every page carries the same policy: the hashes of the inline
scripts of the whole site. ``add_meta`` leaves a placeholder in each page as it is written;
``finish`` (after the build) writes the final policy into every page (atomically).

Not under ``mkdocs serve``: its live-reload script is injected after the build.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

from llmsite import atomic

PLACEHOLDER = "__LLM_CONTENT_SECURITY_POLICY__"
META = f'<meta http-equiv="Content-Security-Policy" content="{PLACEHOLDER}">'
_CHARSET = re.compile(r"<meta charset=[\"']?utf-8[\"']?\s*/?>", re.I)
_SCRIPT = re.compile(r"<script(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</script\s*>", re.S | re.I)
_TYPE = re.compile(r"""\stype\s*=\s*["']?(?P<type>[^"'\s>]+)""", re.I)
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


def add_meta(output: str) -> str:
    """The page with the policy's placeholder right after ``<meta charset>``."""
    if PLACEHOLDER in output:
        return output
    m = _CHARSET.search(output)
    if m is None:
        return output
    return output[: m.end()] + META + output[m.end() :]


def finish(site_dir: Path, config: Any) -> None:
    """Replace the placeholder in every built page with the policy (hashes of the whole site's inline scripts)."""
    pages = {}
    for path in sorted(site_dir.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if PLACEHOLDER in text:
            pages[path] = text
    hashes: set[str] = set()
    for text in pages.values():
        hashes |= inline_script_hashes(text)
    value = policy(hashes, config)
    for path, text in pages.items():
        atomic.write_text(path, text.replace(PLACEHOLDER, value))
