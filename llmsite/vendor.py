"""The vendored KaTeX files: where they live, which release files they are, and their manifest.

One copy of this contract: the build checks the folder against it (``llmsite.mkdocs``), and the
maintainers' script ``scripts/vendor_katex.py`` writes the folder from it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from llmsite.paths import DOCS

VENDOR_URI = "assets/vendor/katex"  # inside docs/, published as is
VENDOR = DOCS / VENDOR_URI
PACKAGE = "katex"
MANIFEST = "SHA256SUMS"
VERSION_FILE = "VERSION"
# Release files the site uses, as paths under the tarball's package/dist/.
# katex.min.js runs at build time only (llmsite/tex.py); pages load the CSS and the fonts.
DIST_FILES = ("katex.min.js", "katex.min.css")
FONT_GLOB = "fonts/*.woff2"
CSS = "katex.min.css"



class VendorError(Exception):
    pass


@dataclass(frozen=True)
class Pin:
    version: str
    integrity: str


# --------------------------------------------------------------------------- reading what is committed


def read_pin(folder: Path = VENDOR) -> Pin:
    """Version and integrity recorded in ``VERSION`` (``key: value`` lines, ``#`` comments)."""
    fields: dict[str, str] = {}
    for line in (folder / VERSION_FILE).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    try:
        return Pin(fields["version"], fields["integrity"])
    except KeyError as exc:
        raise VendorError(f"{folder / VERSION_FILE}: missing field {exc}") from None


def read_manifest(folder: Path = VENDOR) -> dict[str, str]:
    """{relative path: sha256 hex} from ``SHA256SUMS``."""
    entries: dict[str, str] = {}
    for n, line in enumerate((folder / MANIFEST).read_text(encoding="utf-8").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](\S+)", line)
        if not m:
            raise VendorError(f"{folder / MANIFEST}:{n}: not a sha256sum line: {line!r}")
        entries[m[2]] = m[1]
    return entries


def files_on_disk(folder: Path = VENDOR) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def verify(folder: Path = VENDOR) -> list[str]:
    """Problems with the vendored files (empty when every file matches SHA256SUMS exactly)."""
    if not (folder / MANIFEST).is_file():
        return [f"{folder / MANIFEST} is missing"]
    try:
        manifest = read_manifest(folder)
    except VendorError as exc:
        return [str(exc)]
    problems = []
    on_disk = set(files_on_disk(folder))
    for rel in sorted(set(manifest) - on_disk):
        problems.append(f"{rel}: listed in {MANIFEST} but missing")
    for rel in sorted(on_disk - set(manifest)):
        problems.append(f"{rel}: not listed in {MANIFEST}")
    for rel in sorted(set(manifest) & on_disk):
        if hashlib.sha256((folder / rel).read_bytes()).hexdigest() != manifest[rel]:
            problems.append(f"{rel}: sha256 differs from {MANIFEST}")
    return problems
