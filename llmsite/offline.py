"""Offline reading: the list of files a reader's browser keeps, and the service worker that keeps them.

After a build (not under a preview server) two files are written at the site's root:

- ``offline.json``: ``{"version", "bytes", "files": [{"url", "bytes"}, ...]}``, every page a reader of the route
  opens (home, lists, route, tags, about, each article, each lab) and every file those pages load: stylesheets,
  scripts, images, figures and their interactive data, KaTeX's fonts (``woff2`` only: every browser that has a
  service worker reads it), the search index, Material's search worker and the lunr files it imports for Chinese,
  and the sitemap that instant navigation reads; for a page with a playable model (``data-llm-header``), the
  model's header, the weights file it names and ``playground.js``, so the model runs offline too.
  URLs are relative to the root, so the list holds under the Pages sub-path too.
- ``sw.js``: ``llmsite/templates/sw.js`` with that version written in. A new deploy changes the version, so the
  browser installs the new worker next to the old one and the page offers 「有更新」
  (``docs/assets/javascripts/offline.js``).

The version is a digest of every listed file's path and bytes: the same site gives the same files, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from llmsite import atomic, stylesheets

MANIFEST = "offline.json"
WORKER = "sw.js"
TEMPLATE = Path(__file__).with_name("templates") / "sw.js"
_REF = re.compile(r"""\b(?:src|href|data-llm-data|data-llm-header)\s*=\s*["']([^"'#]+)""")
# The same without its leading ``\b``, which keeps the regex engine from skipping ahead to the attributes' first
# letters (ten times slower on the site's pages); ``_refs`` checks the word boundary itself.
_REF_BODY = re.compile(_REF.pattern.removeprefix("\\b"))
_WORD = re.compile(r"\w")
_PLAYGROUND_SCRIPT = "assets/javascripts/playground.js"  # loaded by playground-start.js on the reader's press
_CONFIG = re.compile(r'<script id="__config" type="application/json">(.*?)</script>', re.S)
ASSET_SUFFIXES = {".css", ".js", ".svg", ".png", ".jpg", ".jpeg", ".webp", ".ico", ".json", ".woff2"}
# What Material's search worker imports for `lang: zh` (workers/search.*.js: lunr's stemmer support and the
# Chinese lunr plugin; the multi-language wrapper when more languages are set), and the index it reads.
_LUNR = "assets/javascripts/lunr/min/"
# Material's instant navigation reads the sitemap first (which addresses are the site's own): without it, a click
# offline would load the whole page instead of swapping its content.
# Zensical's search reads search.json at the site's root (the Zensical build, llmsite/zensical/).
EXTRAS = (_LUNR + "lunr.stemmer.support.min.js", _LUNR + "lunr.multi.min.js", _LUNR + "lunr.zh.min.js",
          "search/search_index.json", "search.json", "sitemap.xml")


def reading_pages(site: Path) -> list[str]:
    """Root-relative URLs of the pages kept for offline reading (a directory URL for each ``index.html``)."""
    out = []
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        parts = rel.split("/") if rel != "." else []
        if len(parts) >= 2 and parts[0] == "articles" and parts[1] == "page":
            continue  # the article list's later pages: the first lists the route's articles already
        out.append("" if not parts else rel + "/")
    return out


def _resolve(base: str, ref: str) -> str | None:
    """``ref`` (as written in the file at root-relative ``base``) as a root-relative path, or None if off-site."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or ref.startswith(("/", "data:", "mailto:", "javascript:")):
        return None
    joined = PurePosixPath(base).parent / unquote(parts.path) if base else PurePosixPath(unquote(parts.path))
    stack: list[str] = []
    for piece in joined.parts:
        if piece == "..":
            if not stack:
                return None
            stack.pop()
        elif piece not in (".", ""):
            stack.append(piece)
    return "/".join(stack)


def _refs(html: str) -> list[str]:
    """``_REF.findall(html)``: where ``_REF_BODY`` matches at a position that is no word boundary (a word character
    before it), the search goes on from the next position, as ``findall`` does with ``_REF``."""
    found: list[str] = []
    pos = 0
    while (match := _REF_BODY.search(html, pos)) is not None:
        start = match.start()
        if start and _WORD.match(html, start - 1):
            pos = start + 1
            continue
        found.append(match.group(1))
        pos = match.end()
    return found


def files_to_keep(site: Path) -> list[str]:
    """Every root-relative file URL offline reading needs, sorted: the pages, then what they load."""
    pages = reading_pages(site)
    assets: set[str] = set()
    for url in pages:
        file_rel = url + "index.html"
        html = (site / file_rel).read_text(encoding="utf-8")
        for ref in set(_refs(html)):
            found = _resolve(file_rel, ref)
            if found in assets or not found:
                continue
            if PurePosixPath(found).suffix in ASSET_SUFFIXES and (site / found).is_file():
                assets.add(found)
        config = _CONFIG.search(html)
        if config:
            worker = json.loads(config.group(1)).get("search")
            found = _resolve(file_rel, worker) if isinstance(worker, str) else None
            if found and (site / found).is_file():
                assets.add(found)
    for css in sorted(a for a in assets if a.endswith(".css")):
        for ref in stylesheets.CSS_URL.finditer((site / css).read_text(encoding="utf-8")):
            found = _resolve(css, ref.group(2))
            if found and PurePosixPath(found).suffix in ASSET_SUFFIXES - {".css"} and (site / found).is_file():
                assets.add(found)
    for header in sorted(a for a in assets if a.startswith("playground/") and a.endswith(".json")):
        weights = json.loads((site / header).read_text(encoding="utf-8")).get("weights", {}).get("file")
        found = _resolve(header, weights) if isinstance(weights, str) else None
        if found and (site / found).is_file():
            assets.add(found)
        if (site / _PLAYGROUND_SCRIPT).is_file():
            assets.add(_PLAYGROUND_SCRIPT)
    assets.update(extra for extra in EXTRAS if (site / extra).is_file())
    return pages + sorted(assets - set(pages))


def manifest(site: Path) -> dict:
    files = []
    digest = hashlib.sha256()
    for url in files_to_keep(site):
        data = (site / (url + "index.html" if url == "" or url.endswith("/") else url)).read_bytes()
        files.append({"url": url, "bytes": len(data)})
        digest.update(url.encode("utf-8") + b"\0" + hashlib.sha256(data).digest())
    return {"version": digest.hexdigest()[:16], "bytes": sum(f["bytes"] for f in files), "files": files}


def write(site: Path) -> dict:
    """Write ``offline.json`` and ``sw.js`` into the built ``site`` (atomically); returns the manifest."""
    found = manifest(site)
    atomic.write_text(site / MANIFEST, json.dumps(found, ensure_ascii=False, separators=(",", ":")) + "\n")
    worker = TEMPLATE.read_text(encoding="utf-8").replace('"__VERSION__"', json.dumps(found["version"]))
    atomic.write_text(site / WORKER, worker)
    return found
