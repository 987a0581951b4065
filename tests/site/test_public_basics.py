"""What a public site needs, and a build that needs nothing but Python.

- The vendored KaTeX (docs/assets/vendor/katex/) matches its SHA256SUMS manifest, its CSS names only
  files that are shipped, its version note agrees with the JavaScript, and scripts/vendor_katex.py
  rebuilds such a folder from a release tarball (a synthetic one here: no network in tests).
- The build never reads node_modules: a copy of the project without it, built with a PATH that
  holds only python and git, writes the attention article's math as KaTeX's HTML (no KaTeX script in
  the page) and Chromium shows it with the vendored fonts.
- Every built page carries og:image / twitter:image that resolve to a PNG of the site (1200x630,
  at most 150 KB); the favicon and logo resolve; sitemap.xml's lastmod is the date the page shows.
- LICENSE (MIT) and LICENSE-CONTENT (CC BY-SA 4.0) are there, and the README says which applies where.
- The share image is what scripts/make_share_image.py draws today, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
from pathlib import Path
from urllib.parse import urlsplit
from xml.etree import ElementTree

import pytest
from bs4 import BeautifulSoup

from tests.conftest import ROOT, SUBPATH

VENDOR = ROOT / "docs" / "assets" / "vendor" / "katex"
SHARE = ROOT / "docs" / "assets" / "images" / "share.png"
ATTENTION = "transformer-attention"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the PNG signature and IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


# --------------------------------------------------------------------------- vendored KaTeX


def test_every_vendored_file_matches_the_manifest_and_nothing_is_unlisted():
    lines = (VENDOR / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    listed = {}
    for line in lines:
        digest, name = line.split("  ", 1)
        listed[name] = digest
    on_disk = {p.relative_to(VENDOR).as_posix() for p in VENDOR.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert set(listed) == on_disk
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    # What the build runs (katex.min.js, llmsite/tex.py) and the pages load (the CSS, the fonts) is among them.
    for needed in ("katex.min.js", "katex.min.css", "LICENSE", "VERSION"):
        assert needed in listed
    fonts = [n for n in listed if n.startswith("fonts/")]
    assert fonts and all(n.endswith(".woff2") for n in fonts)


def test_vendored_css_names_only_shipped_fonts_and_every_font_is_used():
    css = (VENDOR / "katex.min.css").read_text(encoding="utf-8")
    urls = re.findall(r"url\(([^)]+)\)", css)
    assert urls, "no url() in katex.min.css"
    assert not [u for u in urls if not u.endswith(".woff2")], "woff/ttf fallbacks would 404: the site ships woff2 only"
    for url in urls:
        assert (VENDOR / url).is_file(), f"katex.min.css names {url}, which is not vendored"
    assert {u for u in urls} == {p.relative_to(VENDOR).as_posix() for p in (VENDOR / "fonts").iterdir()}
    # 20 font faces in KaTeX 0.16, each with exactly one source left.
    assert css.count("@font-face") == len(urls) == 20


def test_version_note_agrees_with_the_javascript_and_pins_an_integrity():
    note = dict(
        line.split(": ", 1)
        for line in (VENDOR / "VERSION").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    js = (VENDOR / "katex.min.js").read_text(encoding="utf-8")
    assert f'version:"{note["version"]}"' in js
    assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", note["integrity"])
    assert note["package"] == "katex"
    assert "Permission is hereby granted" in (VENDOR / "LICENSE").read_text(encoding="utf-8")


def test_nothing_in_the_build_reads_node_modules():
    assert "katex" not in json.loads((ROOT / "package.json").read_text(encoding="utf-8")).get("dependencies", {})
    for path in [*sorted((ROOT / "llmsite").rglob("*.py")), ROOT / "mkdocs.yml"]:
        assert "node_modules" not in path.read_text(encoding="utf-8"), path
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    # What `make build` and `make serve` would run (-n: print, do not run): no npm, no node_modules.
    proc = subprocess.run([make, "-n", "-C", str(ROOT), "build", "serve"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "mkdocs build --strict" in proc.stdout and "llmsite serve" in proc.stdout
    assert "npm" not in proc.stdout and "node_modules" not in proc.stdout, proc.stdout


def _tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _release(css_src: str) -> dict[str, bytes]:
    fonts = ("Main-Regular", "Math-Italic")
    css = "".join(
        f"@font-face{{font-family:KaTeX_{f.split('-')[0]};src:{css_src.format(f=f)}}}" for f in fonts
    ) + ".katex{font:normal 1.21em KaTeX_Main}"
    files = {
        "package/LICENSE": b"The MIT License (MIT)\n",
        "package/README.md": b"not wanted\n",
        "package/dist/katex.min.js": b'var katex={version:"9.9.9"};',
        "package/dist/katex.js": b"not wanted",
        "package/dist/katex.min.css": css.encode(),
        "package/dist/contrib/auto-render.min.js": b"renderMathInElement",
        "package/dist/contrib/mhchem.min.js": b"not wanted",
    }
    for f in fonts:
        for ext in ("woff2", "woff", "ttf"):
            files[f"package/dist/fonts/KaTeX_{f}.{ext}"] = f"{f}.{ext}".encode()
    return files


def _maintainer_script(name: str = "vendor_katex"):
    """scripts/<name>.py (a maintainers' script, not part of the build package), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FULL_SRC = 'url(fonts/KaTeX_{f}.woff2) format("woff2"),url(fonts/KaTeX_{f}.woff) format("woff"),' \
           'url(fonts/KaTeX_{f}.ttf) format("truetype")'


def test_refresh_script_builds_a_verified_folder_from_a_release_tarball(tmp_path: Path, capsys):
    vendor_katex = _maintainer_script()

    data = _tarball(_release(FULL_SRC))
    (tmp_path / "katex.tgz").write_bytes(data)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    dest = tmp_path / "vendor" / "katex"
    args = ["--tarball", str(tmp_path / "katex.tgz"), "--dest", str(dest), "--version", "9.9.9"]

    assert vendor_katex.main([*args, "--integrity", "sha512-" + "A" * 86 + "=="]) == 1
    assert "does not match" in capsys.readouterr().err
    assert not dest.exists(), "a tarball with the wrong integrity must leave nothing behind"

    assert vendor_katex.main([*args, "--integrity", integrity]) == 0
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert got == ["LICENSE", "SHA256SUMS", "VERSION",
                   "fonts/KaTeX_Main-Regular.woff2", "fonts/KaTeX_Math-Italic.woff2", "katex.min.css", "katex.min.js"]
    css = (dest / "katex.min.css").read_text()
    assert css == (
        '@font-face{font-family:KaTeX_Main;src:url(fonts/KaTeX_Main-Regular.woff2) format("woff2")}'
        '@font-face{font-family:KaTeX_Math;src:url(fonts/KaTeX_Math-Italic.woff2) format("woff2")}'
        ".katex{font:normal 1.21em KaTeX_Main}"
    )
    assert (dest / "katex.min.js").read_bytes() == b'var katex={version:"9.9.9"};'
    assert f"integrity: {integrity}" in (dest / "VERSION").read_text()
    assert dest.stat().st_mode & 0o777 == 0o777 & ~_umask(), "the folder must be as readable as any other"
    assert vendor_katex.verify(dest) == []

    # The pinned version and integrity are now read from VERSION: --check finds nothing to change.
    capsys.readouterr()
    assert vendor_katex.main(["--tarball", str(tmp_path / "katex.tgz"), "--dest", str(dest), "--check"]) == 0
    (dest / "fonts" / "KaTeX_Main-Regular.woff2").write_bytes(b"edited")
    assert vendor_katex.verify(dest) == ["fonts/KaTeX_Main-Regular.woff2: sha256 differs from SHA256SUMS"]
    assert vendor_katex.main(["--tarball", str(tmp_path / "katex.tgz"), "--dest", str(dest), "--check"]) == 1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_refresh_script_refuses_a_css_without_a_woff2_source(tmp_path: Path, capsys):
    vendor_katex = _maintainer_script()

    data = _tarball(_release('url(fonts/KaTeX_{f}.ttf) format("truetype")'))
    (tmp_path / "katex.tgz").write_bytes(data)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    dest = tmp_path / "katex"
    code = vendor_katex.main(["--tarball", str(tmp_path / "katex.tgz"), "--dest", str(dest), "--version", "1.0.0",
                              "--integrity", integrity])
    assert code == 1 and "expected one woff2 source" in capsys.readouterr().err
    assert not dest.exists()


def test_build_stops_when_a_vendored_file_was_edited(tmp_path: Path):
    from mkdocs.exceptions import PluginError

    from llmsite.mkdocs.vendor import check_katex

    docs = tmp_path / "docs"
    shutil.copytree(VENDOR, docs / "assets" / "vendor" / "katex")
    check_katex(docs)  # no problem: no error
    css = docs / "assets" / "vendor" / "katex" / "katex.min.css"
    css.write_text(css.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    (docs / "assets" / "vendor" / "katex" / "fonts" / "KaTeX_AMS-Regular.woff2").unlink()
    with pytest.raises(PluginError) as exc:
        check_katex(docs)
    message = str(exc.value)
    assert "katex.min.css: sha256 differs" in message
    assert "fonts/KaTeX_AMS-Regular.woff2: listed in SHA256SUMS but missing" in message


# --------------------------------------------------------------------------- a build without Node


def _python_only_path(tmp_path: Path) -> str:
    """A PATH holding only python and git (symlinks), so that no node or npm can be found."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (("python", sys.executable), ("python3", sys.executable), ("git", shutil.which("git"))):
        if target:
            (bin_dir / name).symlink_to(target)
    return str(bin_dir)


@pytest.mark.slow
@pytest.mark.browser
def test_a_copy_without_node_builds_and_renders_math(page, built_site, tmp_path: Path):
    """A project copy without node_modules, built with a PATH that has no node, shows rendered math."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for part in ("docs", "code", "data", "llmsite", "scripts", "overrides", "labs", "mkdocs.yml"):
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, repo / part, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
        else:
            shutil.copy2(src, repo / part)
    path = _python_only_path(tmp_path)
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    # Served next to the session's site by the same server: <server root>/no-node/
    out = built_site.tmp / "no-node"
    base = f"http://127.0.0.1:{built_site.port}/no-node/"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("NODE_PATH", "NODE_OPTIONS")},
        "PATH": path,
        "SITE_URL": base,
        "NO_MKDOCS_2_WARNING": "1",
        # the session's figure and lab caches: the copy's inputs are the same, so nothing is redrawn
        "LLM_SITE_CACHE": os.environ.get("LLM_SITE_CACHE", str(ROOT / ".cache")),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=repo, env=env, capture_output=True, text=True, encoding="utf-8", timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (repo / "node_modules").exists()
    # The formulas are KaTeX's HTML in the written page (llmsite/tex.py), and the page loads no KaTeX script.
    written = (out / "articles" / ATTENTION / "index.html").read_text(encoding="utf-8")
    assert written.count('<span class="katex">') >= written.count('class="arithmatex"') > 0
    assert "\\(" not in BeautifulSoup(written, "html.parser").select_one("article").get_text()
    assert not re.findall(r"<script[^>]*katex", written, re.I)

    page.goto(f"{base}articles/{ATTENTION}/")
    page.wait_for_selector("article .arithmatex .katex", state="attached")
    counts = page.evaluate("""() => ({
      formulas: document.querySelectorAll('article .arithmatex').length,
      rendered: document.querySelectorAll('article .arithmatex .katex').length,
      errors: document.querySelectorAll('article .katex-error').length,
      fonts: [...document.fonts].filter(f => f.family.startsWith('KaTeX') && f.status === 'loaded').length,
    })""")
    assert counts["formulas"] > 0 and counts["rendered"] >= counts["formulas"] and counts["errors"] == 0, counts
    assert counts["fonts"] > 0, "no KaTeX font was loaded from the vendored woff2 files"
    vendor_requests = [u for u in page.log.requests if "/assets/vendor/katex/" in u]
    assert any(u.endswith(".woff2") for u in vendor_requests)
    assert not [u for u in vendor_requests if u.endswith((".woff", ".ttf"))]


# --------------------------------------------------------------------------- share image, favicon, sitemap


def _meta(soup: BeautifulSoup, attr: str, name: str) -> list[str]:
    return [m.get("content", "") for m in soup.find_all("meta", attrs={attr: name})]


def _site_file(built_site, url: str) -> Path:
    """The file in the built site that an absolute URL under the site's base URL names."""
    assert url.startswith(built_site.base_url), f"{url} is not under {built_site.base_url}"
    return built_site.dir / urlsplit(url).path.removeprefix(f"/{SUBPATH}/")


def test_every_page_has_a_share_image_that_is_a_file_of_the_site(built_site):
    pages = html_pages(built_site.dir)
    assert len(pages) > 5
    images = set()
    for page in pages:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        og, tw = _meta(soup, "property", "og:image"), _meta(soup, "name", "twitter:image")
        assert len(og) == 1 and og == tw, f"{page}: og:image {og}, twitter:image {tw}"
        assert _meta(soup, "name", "twitter:card") == ["summary_large_image"], page
        target = _site_file(built_site, og[0])
        assert target.is_file(), f"{page}: og:image {og[0]} is not in the site"
        images.add(target)
    for image in images:
        data = image.read_bytes()
        assert png_size(data) == (1200, 630), image
        assert len(data) <= 150 * 1024, f"{image}: {len(data)} bytes"


def test_favicon_and_logo_resolve_in_every_page(built_site):
    for page in html_pages(built_site.dir):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        icons = soup.find_all("link", rel="icon")
        assert len(icons) == 1, page
        logos = soup.select("a.md-logo img")
        assert logos, f"{page}: no logo in the header"
        for ref in [icons[0]["href"], *(img["src"] for img in logos)]:
            target = (page.parent / ref).resolve()
            assert target.is_file(), f"{page}: {ref} does not resolve"
            assert target.name == "logo.svg"
    svg = ElementTree.parse(built_site.dir / "assets" / "images" / "logo.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("viewBox") == "0 0 64 64"
    # Its own white tile: it stays visible on the indigo header and on dark browser tabs alike.
    tile = svg.find("{http://www.w3.org/2000/svg}rect")
    assert tile is not None and tile.get("fill") == "#ffffff" and tile.get("width") == tile.get("height") == "60"


def _shown_date(html: str) -> str | None:
    """The "last updated" date Material prints in the page's source-file block."""
    soup = BeautifulSoup(html, "html.parser")
    block = soup.select_one(".md-source-file")
    if block is None:
        return None
    m = re.search(r"\d{4}-\d{2}-\d{2}", block.get_text(" "))
    return m[0] if m else None


def test_sitemap_lastmod_is_the_date_each_page_shows(built_site):
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    root = ElementTree.parse(built_site.dir / "sitemap.xml").getroot()
    urls = root.findall("s:url", ns)
    assert len(urls) > 5
    dated = 0
    for url in urls:
        loc = url.findtext("s:loc", namespaces=ns)
        lastmod = url.findtext("s:lastmod", namespaces=ns)
        target = _site_file(built_site, loc)
        html = (target / "index.html" if target.is_dir() or loc.endswith("/") else target).read_text(encoding="utf-8")
        assert lastmod == _shown_date(html), f"{loc}: sitemap says {lastmod}, the page shows {_shown_date(html)}"
        dated += lastmod is not None
    assert dated >= 2, "no page has a date"


def test_article_dates_come_from_git_or_front_matter(built_site, content):
    """Recomputed here with one git call per article (the build uses one for the whole folder)."""
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    root = ElementTree.parse(built_site.dir / "sitemap.xml").getroot()
    lastmod = {u.findtext("s:loc", namespaces=ns): u.findtext("s:lastmod", namespaces=ns)
               for u in root.findall("s:url", ns)}
    for slug, article in content.articles.items():
        proc = subprocess.run(["git", "log", "-1", "--format=%cs", "--", f"docs/articles/{slug}.md"],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        expected = proc.stdout.strip() or article.date.isoformat()
        assert lastmod[f"{built_site.base_url}{article.url}"] == expected, slug


# --------------------------------------------------------------------------- licenses and the share image source


def test_license_files_and_readme_line():
    mit = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert mit.startswith("MIT License") and "Permission is hereby granted, free of charge" in mit
    content = " ".join((ROOT / "LICENSE-CONTENT").read_text(encoding="utf-8").split())
    assert "Creative Commons Attribution-ShareAlike 4.0 International Public License" in content
    for n in range(1, 9):
        assert f"Section {n} -- " in content, f"LICENSE-CONTENT lacks Section {n}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "LICENSE-CONTENT" in readme and "CC BY-SA 4.0" in readme and "MIT" in readme


def test_share_image_is_what_the_script_draws_today():
    make_share_image = _maintainer_script("make_share_image")

    committed = SHARE.read_bytes()
    assert png_size(committed) == (1200, 630) and len(committed) <= 150 * 1024
    assert make_share_image.render() == committed, "run: python scripts/make_share_image.py"
    name, tagline = make_share_image.site_text()
    assert name == "大模型学习交流平台" and tagline and all(tagline)
