"""Vendored KaTeX: refresh it from the npm registry, or verify it against its manifest.

The site renders math with KaTeX at build time (``llmsite/tex.py`` runs katex.min.js
in embedded V8; no Node) and serves its CSS and fonts from the site itself (no CDN).
The release files it uses live in ``docs/assets/vendor/katex/``:

    katex.min.js, katex.min.css, fonts/*.woff2, LICENSE
    VERSION     package, version and the tarball's npm integrity (sha512)
    SHA256SUMS  one line per file above (``sha256sum -c SHA256SUMS`` checks it too)

Only one file differs from the release: in ``katex.min.css`` every ``@font-face``
keeps its woff2 source alone (the woff and ttf fallbacks are not shipped, so the
CSS names no file the site lacks). Every browser that runs KaTeX reads woff2.

Maintainers (needs npm, which knows the registry)::

    python scripts/vendor_katex.py                    # re-fetch the pinned version, rewrite the folder
    python scripts/vendor_katex.py --version 0.16.23  # move to another release
    python scripts/vendor_katex.py --check            # re-fetch and compare, change nothing
    python scripts/vendor_katex.py --verify           # offline: files against SHA256SUMS

``--tarball katex-X.tgz`` uses a tarball fetched some other way; its sha512 must
still match the pinned integrity (or ``--integrity`` for a new version).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from llmsite.vendor import (
    CSS,
    DIST_FILES,
    FONT_GLOB,
    MANIFEST,
    PACKAGE,
    VENDOR,
    VERSION_FILE,
    Pin,
    VendorError,
    read_manifest,
    read_pin,
    verify,
)

# --------------------------------------------------------------------------- building the folder from a tarball

_SRC = re.compile(r"src:([^;}]*)")
_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


def integrity_of(data: bytes) -> str:
    """npm's Subresource-Integrity string for a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def css_woff2_only(css: str) -> str:
    """Keep only the woff2 entry of every ``src:`` list; refuse a CSS that has none."""

    def keep(m: re.Match[str]) -> str:
        entries = [e.strip() for e in m[1].split(",")]
        woff2 = [e for e in entries if 'format("woff2")' in e or "format('woff2')" in e]
        if len(woff2) != 1:
            raise VendorError(f"{CSS}: expected one woff2 source in {m[0]!r}")
        return "src:" + woff2[0]

    out, count = _SRC.subn(keep, css)
    if count == 0:
        raise VendorError(f"{CSS}: no @font-face src found")
    return out


def css_urls(css: str) -> list[str]:
    return _URL.findall(css)


def extract(tarball: bytes) -> dict[str, bytes]:
    """{relative path: bytes} of the files the site uses, read member by member (nothing is extracted to disk)."""
    wanted: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            path = PurePosixPath(member.name)
            if path.parts[:1] != ("package",) or ".." in path.parts:
                continue
            inner = PurePosixPath(*path.parts[1:])
            if inner == PurePosixPath("LICENSE"):
                rel = "LICENSE"
            elif inner.parts[:1] == ("dist",):
                dist = PurePosixPath(*inner.parts[1:])
                if dist.as_posix() not in DIST_FILES and not dist.match(FONT_GLOB):
                    continue
                rel = dist.as_posix()
            else:
                continue
            fh = tar.extractfile(member)
            assert fh is not None
            wanted[rel] = fh.read()
    missing = [f for f in (*DIST_FILES, "LICENSE") if f not in wanted]
    if missing or not any(PurePosixPath(r).match(FONT_GLOB) for r in wanted):
        raise VendorError(f"tarball lacks {missing or [FONT_GLOB]}")
    wanted[CSS] = css_woff2_only(wanted[CSS].decode("utf-8")).encode("utf-8")
    fonts = {r for r in wanted if PurePosixPath(r).match(FONT_GLOB)}
    referenced = set(css_urls(wanted[CSS].decode("utf-8")))
    if referenced != fonts:
        raise VendorError(f"{CSS} references {sorted(referenced ^ fonts)} that the release does not pair with it")
    return wanted


def version_note(pin: Pin) -> str:
    return (
        "# KaTeX release files served by the site (no CDN, no Node at build time).\n"
        "# Written by scripts/vendor_katex.py: do not edit by hand; run it to refresh or upgrade.\n"
        "# katex.min.css is the release file with every @font-face src reduced to its woff2 entry.\n"
        f"package: {PACKAGE}\n"
        f"version: {pin.version}\n"
        f"integrity: {pin.integrity}\n"
        "license: MIT (LICENSE in this folder)\n"
    )


def render(files: dict[str, bytes], pin: Pin) -> dict[str, bytes]:
    """Every file of the vendor folder, VERSION and SHA256SUMS included."""
    out = dict(files)
    out[VERSION_FILE] = version_note(pin).encode("utf-8")
    lines = [f"{hashlib.sha256(out[rel]).hexdigest()}  {rel}\n" for rel in sorted(out)]
    out[MANIFEST] = "".join(lines).encode("utf-8")
    return out


def write_folder(folder: Path, content: dict[str, bytes]) -> None:
    """Replace ``folder`` with exactly ``content`` (built next to it, then swapped in)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes it 0700; the site's files must stay world-readable
    try:
        for rel, data in content.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        old = folder.with_name(f".{folder.name}.old")
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
        staging.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def diff(folder: Path, content: dict[str, bytes]) -> list[str]:
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()
    out = [f"{rel}: would be added" for rel in sorted(set(content) - on_disk)]
    out += [f"{rel}: would be removed" for rel in sorted(on_disk - set(content))]
    out += [f"{rel}: differs" for rel in sorted(set(content) & on_disk) if (folder / rel).read_bytes() != content[rel]]
    return out


# --------------------------------------------------------------------------- fetching


def npm_pack(version: str, dest: Path) -> tuple[bytes, str]:
    """(tarball, integrity reported by npm) of ``katex@version``, fetched with ``npm pack``."""
    npm = shutil.which("npm")
    if npm is None:
        raise VendorError("npm is not installed: install Node.js, or fetch the tarball yourself and pass --tarball")
    proc = subprocess.run(
        [npm, "pack", f"{PACKAGE}@{version}", "--json", "--pack-destination", str(dest)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise VendorError(f"npm pack {PACKAGE}@{version} failed:\n{proc.stderr.strip()}")
    (info,) = json.loads(proc.stdout)
    return (dest / info["filename"]).read_bytes(), info["integrity"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--version", help="KaTeX version (default: the one in VERSION)")
    parser.add_argument("--tarball", type=Path, help="use this katex-X.tgz instead of running npm pack")
    parser.add_argument("--integrity", help="expected sha512 integrity of a new version's tarball")
    parser.add_argument("--dest", type=Path, default=VENDOR, help="vendor folder (default: %(default)s)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the folder, change nothing")
    mode.add_argument("--verify", action="store_true", help="offline: check the folder against SHA256SUMS")
    args = parser.parse_args(argv)

    try:
        if args.verify:
            problems = verify(args.dest)
            for p in problems:
                print(f"{args.dest}: {p}", file=sys.stderr)
            if not problems:
                print(f"{args.dest}: {len(read_manifest(args.dest))} files match {MANIFEST}")
            return 1 if problems else 0

        pinned = read_pin(args.dest) if (args.dest / VERSION_FILE).is_file() else None
        version = args.version or (pinned.version if pinned else None)
        if not version:
            parser.error("--version is required (no VERSION file yet)")
        expected = args.integrity or (pinned.integrity if pinned and pinned.version == version else None)

        with tempfile.TemporaryDirectory() as tmp:
            if args.tarball:
                data, reported = args.tarball.read_bytes(), None
            else:
                data, reported = npm_pack(version, Path(tmp))
        actual = integrity_of(data)
        if reported is not None and reported != actual:
            raise VendorError(f"npm reported {reported}, the tarball hashes to {actual}")
        if expected is None:
            if reported is None:
                raise VendorError("a new version from --tarball needs --integrity (`npm view katex@X dist.integrity`)")
            expected = reported
            print(f"new version {version}: trusting the integrity npm reports, {expected}")
        if actual != expected:
            raise VendorError(f"tarball integrity {actual} does not match the pinned {expected}")

        content = render(extract(data), Pin(version, expected))
        if args.check:
            changes = diff(args.dest, content)
            for c in changes:
                print(f"{args.dest}: {c}", file=sys.stderr)
            if not changes:
                print(f"{args.dest}: identical to {PACKAGE} {version} ({len(content)} files)")
            return 1 if changes else 0
        write_folder(args.dest, content)
        size = sum(len(b) for b in content.values())
        print(f"{args.dest}: {PACKAGE} {version}, {len(content)} files, {size / 1024:.0f} KiB")
        return 0
    except VendorError as exc:
        print(f"vendor_katex: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
