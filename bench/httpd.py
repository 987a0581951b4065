"""A tiny static HTTP server that gzips text types, as GitHub Pages does.

Text types (HTML, CSS, JavaScript, JSON, SVG, XML, plain text) are sent with
``Content-Encoding: gzip`` when the client accepts it; fonts and images that
are compressed already are sent as they are. Every response is logged with its
body size on the wire and its decoded size, so page weight can be cross-checked
independently of the browser.
"""

from __future__ import annotations

import gzip
import http.server
import mimetypes
import posixpath
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

GZIP_LEVEL = 6  # the usual default of web servers and CDNs
_TEXT_TYPES = (
    "text/",
    "application/javascript",
    "application/json",
    "application/xml",
    "application/atom+xml",
    "image/svg+xml",
    "application/manifest+json",
)
_EXTRA_TYPES = {
    ".js": "application/javascript",
    ".mjs": "application/javascript",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".xml": "application/xml",
    ".ipynb": "application/json",
}


@dataclass(frozen=True)
class Served:
    path: str
    status: int
    wire_bytes: int  # body bytes sent (gzip-encoded when encoding == "gzip")
    raw_bytes: int  # decoded body size
    encoding: str


def content_type(path: Path) -> str:
    ctype = _EXTRA_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if ctype.startswith("text/") or ctype in ("application/javascript", "application/json", "image/svg+xml"):
        return f"{ctype}; charset=utf-8"
    return ctype


def compressible(ctype: str) -> bool:
    return ctype.startswith(_TEXT_TYPES)


def gzip_size(data: bytes, level: int = GZIP_LEVEL) -> int:
    return len(gzip.compress(data, compresslevel=level, mtime=0))


class GzipServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root.resolve()
        self.log: list[Served] = []
        self._lock = threading.Lock()
        self._gz: dict[Path, bytes] = {}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def record(self, item: Served) -> None:
        with self._lock:
            self.log.append(item)

    def take_log(self) -> list[Served]:
        with self._lock:
            out, self.log = self.log, []
        return out

    def gzipped(self, path: Path, data: bytes) -> bytes:
        with self._lock:
            cached = self._gz.get(path)
        if cached is None:
            cached = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
            with self._lock:
                self._gz[path] = cached
        return cached


class _Handler(http.server.BaseHTTPRequestHandler):
    server: GzipServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _resolve(self) -> tuple[Path | None, str | None]:
        """(file to send, or None) and a redirect location for directories without a slash."""
        url_path = unquote(urlsplit(self.path).path)
        rel = posixpath.normpath(url_path).lstrip("/")
        target = (self.server.root / rel).resolve() if rel not in ("", ".") else self.server.root
        if target != self.server.root and self.server.root not in target.parents:
            return None, None
        if target.is_dir():
            if not url_path.endswith("/"):
                return None, url_path + "/"
            target = target / "index.html"
        return (target if target.is_file() else None), None

    def _send(self, head_only: bool) -> None:
        target, redirect = self._resolve()
        if redirect is not None:
            self.send_response(301)
            self.send_header("Location", redirect)
            self.send_header("Content-Length", "0")
            self.server.record(Served(self.path, 301, 0, 0, ""))
            self.end_headers()
            return
        if target is None:
            body = b"not found"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.server.record(Served(self.path, 404, len(body), len(body), ""))
            self.end_headers()
            if not head_only:
                self.wfile.write(body)
            return
        data = target.read_bytes()
        ctype = content_type(target)
        accepts = "gzip" in (self.headers.get("Accept-Encoding") or "")
        body, encoding = data, ""
        if compressible(ctype) and accepts:
            body, encoding = self.server.gzipped(target, data), "gzip"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")  # as GitHub Pages
        if compressible(ctype):
            self.send_header("Vary", "Accept-Encoding")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        # Logged before anything goes out: once a client has the response, the log has it too.
        self.server.record(Served(self.path, 200, len(body), len(data), encoding))
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(head_only=False)

    def do_HEAD(self) -> None:
        self._send(head_only=True)


@contextmanager
def serve(root: Path) -> Iterator[GzipServer]:
    """Serve ``root`` on a free 127.0.0.1 port in a background thread."""
    server = GzipServer(root)
    thread = threading.Thread(target=server.serve_forever, name="bench-gzip-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
