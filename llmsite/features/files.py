"""The files a build adds to the site without writing them into docs/, and the links between them."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Generated:
    """One generated file: read from the cache (``path``) or made in memory (``content``)."""

    uri: str  # where it goes in the site's source tree (docs/ relative): figures/x.light.svg, labs/x.ipynb
    path: Path | None = None
    content: str | bytes | None = None
    page: bool = False  # a page whose source is not Markdown (a lab's labs/<name>.ipynb): the builder renders it

    def __post_init__(self) -> None:
        if (self.path is None) == (self.content is None):
            raise ValueError(f"{self.uri}: 生成的文件要么来自缓存（path），要么在内存里（content），只能二选一")

    @property
    def url(self) -> str:
        return url_of(self.uri, page=self.page or self.uri.endswith(".md"))

    def read_bytes(self) -> bytes:
        if self.path is not None:
            return self.path.read_bytes()
        return self.content.encode("utf-8") if isinstance(self.content, str) else bytes(self.content or b"")


def url_of(uri: str, page: bool) -> str:
    """The URL (relative to the site's root) a source file is published at, as MkDocs names it with directory URLs:
    a page at its folder (``articles/x.md`` -> ``articles/x/``, ``index.md`` -> ``./``), any other file at its own
    path."""
    if not page:
        return uri
    stem = posixpath.splitext(uri)[0]
    if posixpath.basename(stem) in ("index", "README"):
        folder = posixpath.dirname(stem)
        return f"{folder}/" if folder else "./"
    return f"{stem}/"


def relative_url(url: str, folder: str) -> str:
    """A link to ``url`` written in a page published at the directory URL ``folder`` ("" or ending in "/"; both
    relative to the site's root)."""
    out = posixpath.relpath("/" + url, posixpath.normpath("/" + folder))
    return out + "/" if url.endswith("/") else out
