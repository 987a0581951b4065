"""The lab pages in the built site (one strict build per session: ``built_site`` in tests/conftest.py)."""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup

from tests.conftest import lane_build_env

from .conftest import ROOT

LABS = sorted(p.stem for p in (ROOT / "labs").glob("*.py") if not p.name.startswith("_"))
PAGE_BUDGET = 300 * 1024  # bytes of HTML (the plots are files beside it: llmsite/labs/images.py)
_DATA_URI = re.compile(r'data:image/')


def _title(name: str) -> str:
    for line in (ROOT / "labs" / f"{name}.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    raise AssertionError(f"labs/{name}.py has no title")


def _page(built_site, name: str) -> tuple[str, BeautifulSoup]:
    path = built_site.dir / "labs" / name / "index.html"
    assert path.is_file(), f"no page for labs/{name}.ipynb"
    text = path.read_text(encoding="utf-8")
    return text, BeautifulSoup(text, "html.parser")


def _resolve(built_site, page_url: str, href: str) -> Path | None:
    absolute = urljoin(built_site.base_url + page_url, href)
    if not absolute.startswith(built_site.base_url):
        return None
    rel = unquote(urlsplit(absolute).path[len(urlsplit(built_site.base_url).path):])
    target = built_site.dir / rel
    return target / "index.html" if rel.endswith("/") or rel == "" else target


@pytest.mark.parametrize("name", LABS)
def test_lab_page_weight_and_assets(built_site, name: str) -> None:
    text, soup = _page(built_site, name)
    assert not _DATA_URI.search(text), f"labs/{name}/: an image is still inlined as a data: URI"
    assert len(text.encode()) < PAGE_BUDGET, f"labs/{name}/: {len(text.encode()) // 1024} KB of HTML"
    assert not soup.find_all("style"), "mkdocs-jupyter's inlined stylesheets are removed"
    lowered = text.lower()
    for word in ("mathjax.js", "cdnjs", "require.js", "mermaid.esm", "clipboard-copy"):
        assert word not in lowered, word
    sheets = [link["href"] for link in soup.find_all("link", rel="stylesheet")]
    assert len(sheets) == 1 and sheets[0].endswith("assets/stylesheets/site.css"), sheets
    bundle = _resolve(built_site, f"labs/{name}/", sheets[0])
    assert (built_site.dir / "assets/stylesheets/lab.css").read_bytes() in bundle.read_bytes(), "lab.css is in it"
    for script in soup.find_all("script", src=True):
        assert _resolve(built_site, f"labs/{name}/", script["src"]) is not None, script["src"]


@pytest.mark.parametrize("name", LABS)
def test_lab_page_content(built_site, name: str) -> None:
    _, soup = _page(built_site, name)
    main = soup.select_one("article.md-content__inner")
    h1 = main.find("h1")
    assert h1.get_text().removesuffix("¶").strip() == _title(name)
    assert soup.title.get_text().startswith(_title(name))
    # Code cells are Material code blocks (highlighting and copy button come from Material).
    blocks = main.select(".jp-CodeCell div.highlight > pre > code")
    assert len(blocks) >= 5
    assert not main.select(".highlight-ipynb, .clipboard-copy-txt, .zeroclipboard-container, .celltoolbar")
    assert main.select(".jp-RenderedImage img"), "plots are shown"
    for img in main.select("img"):
        assert "No description" not in img.get("alt", "") and img["alt"].strip()
    # Text outputs scroll sideways on narrow screens (or with wider fonts): each is a keyboard stop as built,
    # with no script in between (the axe run at 1280 px found one unreachable before this).
    outputs = main.select(".jp-RenderedText > pre")
    assert outputs, "the lab prints something"
    unreachable = [p.get_text()[:40] for p in outputs if p.get("tabindex") != "0"]
    assert not unreachable, f"{len(unreachable)} of {len(outputs)} text outputs cannot be focused: {unreachable[:3]}"
    assert not main.select(".jp-RenderedText[tabindex]"), "one stop per output: the <pre> that scrolls, not its box"
    # Headings: readable ids, and the table of contents points at them.
    ids = {h["id"] for h in main.find_all(["h1", "h2", "h3"])}
    assert all(re.search(r"[\u4e00-\u9fff]", i) for i in ids), ids
    toc = [unquote(a["href"]) for a in soup.select(".md-nav--secondary a.md-nav__link")]
    assert toc, "the page has a table of contents"
    assert all(href.startswith("#") and href[1:] in ids for href in toc), toc
    # Every relative link in the notebook leads to a page of the site (the article first).
    links = [a["href"] for a in main.find_all("a", href=True) if not urlsplit(a["href"]).scheme]
    targets = {_resolve(built_site, f"labs/{name}/", h) for h in links if not h.startswith("#")}
    assert all(t is not None and t.is_file() for t in targets), links
    articles = {t for t in targets if t.parent.parent == built_site.dir / "articles"}
    assert articles, "the lab links to its article"


@pytest.mark.parametrize("name", LABS)
def test_plots_are_the_notebooks_own_images_in_files_loaded_lazily(built_site, name: str) -> None:
    """Each plot the page shows is a file beside it, holding exactly an image output of the published notebook."""
    import base64
    import hashlib

    _, soup = _page(built_site, name)
    notebook = json.loads((built_site.dir / "labs" / name / f"{name}.ipynb").read_text(encoding="utf-8"))
    outputs = [base64.b64decode("".join(out["data"]["image/png"]))
               for cell in notebook["cells"] if cell["cell_type"] == "code"
               for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert outputs, f"labs/{name}: the notebook has no plot"
    shown = []
    for img in soup.select("article.md-content__inner .jp-RenderedImage img"):
        target = _resolve(built_site, f"labs/{name}/", img["src"])
        assert target is not None and target.is_file(), img["src"]
        assert target.parent == built_site.dir / "labs" / name, img["src"]
        assert img.get("loading") == "lazy" and img.get("width") and img.get("height"), img.attrs
        shown.append(target.read_bytes())
    assert [hashlib.sha256(b).hexdigest() for b in shown] == [hashlib.sha256(b).hexdigest() for b in outputs]


@pytest.mark.parametrize("name", LABS)
def test_download_and_edit_buttons(built_site, name: str) -> None:
    _, soup = _page(built_site, name)
    download = soup.select_one("a.md-content__button[download]")
    assert download is not None and download["href"] == f"{name}.ipynb"
    file = _resolve(built_site, f"labs/{name}/", download["href"])
    nb = json.loads(file.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "the download has outputs"
    edit = soup.select_one('a.md-content__button[rel="edit"]')
    assert edit is not None and edit["href"].endswith(f"/labs/{name}.py"), edit


@pytest.mark.parametrize("name", LABS)
def test_visible_download_link_under_the_title(built_site, name: str) -> None:
    """Readers see where to get the notebook, what it needs and what it writes, right under the title."""
    _, soup = _page(built_site, name)
    main = soup.select_one("article.md-content__inner")
    h1 = main.find("h1")
    note = h1.find_next_sibling()
    assert note is not None and "llm-lab-download" in note.get("class", []), note
    link = note.select_one("a.md-button[download]")
    assert link is not None and link["href"] == f"{name}.ipynb" and "下载这个 Notebook" in link.get_text()
    explanation = note.find_next_sibling("p").get_text()
    assert "torch、numpy 和 matplotlib" in explanation and "llm_code/" in explanation
    from llmsite import labs

    lab = labs.discover()[name]
    bundled = [p.name for p in labs.code_files(lab)]
    data = [Path(item).name for item in _declared_data_files(bundled)]
    assert f"{len(bundled) + len(data)} 个文件" in explanation and all(n in explanation for n in bundled + data)


def _declared_data_files(modules: list[str]) -> list[str]:
    """DATA_FILES of the given code/ modules, read with a plain regex (not the build's AST reader)."""
    out: list[str] = []
    for name in modules:
        m = re.search(r"^DATA_FILES = \((.*?)\)", (ROOT / "code" / name).read_text(encoding="utf-8"), re.M | re.S)
        if m:
            out += re.findall(r'"([^"]+)"', m.group(1))
    return out


@pytest.mark.parametrize("name", LABS)
def test_the_site_offers_the_self_contained_notebook(built_site, name: str) -> None:
    """The .ipynb on the site is the executed notebook plus the cell carrying the code files (see
    tests/labs/test_real_labs.py for running it outside the repository)."""
    from llmsite import labs

    lab = labs.discover()[name]
    [item] = labs.plan([lab])
    assert item.cached, "the build executed the lab"
    served = (built_site.dir / "labs" / name / f"{name}.ipynb").read_bytes()
    assert served == labs.published(item.notebook(), lab)


def test_nav_and_route_show_lab_titles(built_site) -> None:
    route = (built_site.dir / "route" / "index.html").read_text(encoding="utf-8")
    soup = BeautifulSoup(route, "html.parser")
    main = soup.select_one("article.md-content__inner")
    for name in LABS:
        links = [a for a in main.find_all("a", href=True) if a["href"].rstrip("/").endswith(f"labs/{name}")]
        assert [a.get_text(strip=True) for a in links] == [_title(name)], links
        assert links[0].find_parent("ul") is not None, "listed as a sub-list of its article"
    # The sidebar of each article's stage lists its labs right after it (navigation.prune keeps only the current
    # page's own stage, so look from each article that has labs: stage 2's labs are not in stage 1's sidebar).
    from llmsite.content.catalog import load_route

    route, _ = load_route(ROOT / "data" / "route.yml", root=ROOT)
    listed = set()
    for entry in (e for e in route.entries if e.labs):
        page = f"articles/{entry.slug}/"
        article = BeautifulSoup((built_site.dir / page / "index.html").read_text(encoding="utf-8"), "html.parser")
        items = [
            (posixpath.normpath(posixpath.join(page, a["href"])), a.get_text(" ", strip=True))
            for a in article.select("nav.md-nav--primary a.md-nav__link[href]")
            if "#" not in a["href"]  # the current page's own table of contents
        ]
        urls = [u for u, _ in items]
        start = urls.index(f"articles/{entry.slug}")
        names = [Path(lab).stem for lab in entry.labs]
        assert urls[start + 1 : start + 1 + len(names)] == [f"labs/{n}" for n in names], items
        for name in names:
            assert (f"labs/{name}", _title(name)) in items, items
            listed.add(name)
    assert listed == set(LABS), f"labs not on the route: {set(LABS) - listed}"


def test_article_links_to_both_labs(built_site) -> None:
    """The attention article links to its two labs (other articles have their own)."""
    text = (built_site.dir / "articles" / "transformer-attention" / "index.html").read_text(encoding="utf-8")
    main = BeautifulSoup(text, "html.parser").select_one("article.md-content__inner")
    section = main.find(id="动手实验")
    assert section is not None
    hrefs = [a["href"] for a in section.find_all_next("a", href=True)]
    for name in ("attention_lab", "attention_heads_lab"):
        assert f"../../labs/{name}/" in hrefs, hrefs


WARM_BUILD = """
import sys
from mkdocs.commands.build import build
from mkdocs.config import load_config

build(load_config("mkdocs.yml", site_dir=sys.argv[1], strict=True))
heavy = ("mkdocs_jupyter", "nbconvert", "nbclient", "jupytext", "nbformat", "torch", "matplotlib", "numpy")
print("IMPORTED", sorted(name for name in heavy if name in sys.modules))
"""


@pytest.mark.slow
def test_a_warm_build_reads_lab_pages_from_the_cache_without_the_notebook_libraries(built_site, tmp_path: Path):
    """After the session's build (cache warm), building again imports none of the notebook libraries, and
    the lab pages come out the same: they are read from the cache, not rendered again. In a lane it builds what the
    lane's build built (``lane_build_env``): unfocused, it would compute every other article's labs and models."""
    env = {**os.environ, "SITE_URL": built_site.base_url, "NO_MKDOCS_2_WARNING": "1", **lane_build_env()}
    proc = subprocess.run([sys.executable, "-c", WARM_BUILD, str(tmp_path / "site")], cwd=ROOT, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "IMPORTED []" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    for name in LABS:
        first = (built_site.dir / "labs" / name / "index.html").read_text(encoding="utf-8")
        again = (tmp_path / "site" / "labs" / name / "index.html").read_text(encoding="utf-8")
        assert again == first, f"labs/{name}: the warm build's page differs"
