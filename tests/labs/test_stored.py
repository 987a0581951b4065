"""What a build derives from a lab's cache entry (the page with its plots as files, the notebook offered for
download) is stored in the entry when the lab is executed, read as stored by a warm build, and made again when
what it is made from changes: the notebook (a new entry), the ``code/`` files the download carries (a comment
edited there: same entry, new download) or the entry predates the stored files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmsite import labs
from llmsite.labs import download as lab_download
from llmsite.labs import images as lab_images
from llmsite.labs import stored

from .conftest import PREAMBLE, LabRepo, status_lines

# A lab with one plot: a 1x1 PNG of the given colour, shown as a notebook image (base64 in the page's HTML).
PLOT_LAB = '''# %% [markdown]
# # 动手实验：一张图

''' + PREAMBLE + '''
# %%
import struct
import zlib

from IPython.display import Image, display

import lab_shared


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


pixel = zlib.compress(bytes([0, *COLOUR]))
header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
display(Image(data=b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel) + chunk(b"IEND", b"")))
print("值", lab_shared.VALUE)
'''


def _plot_lab(repo: LabRepo, colour: tuple[int, int, int]) -> labs.Lab:
    path = repo.write("labs/lab_plot.py", PLOT_LAB.replace("COLOUR", repr(colour)))
    return labs.Lab("lab_plot", path)


def _entry(repo: LabRepo) -> Path:
    return repo.notebooks()["lab_plot"].parent.parent


def _forbid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deriving again is an error from here on: only what is stored may be used."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("derived again although it is stored")

    monkeypatch.setattr(lab_images, "extract", fail)
    monkeypatch.setattr(lab_download, "published", fail)  # where stored.download looks it up


def test_the_executed_lab_stores_its_page_and_download_and_a_warm_build_reads_them(
    lab_repo: LabRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = _plot_lab(lab_repo, (255, 0, 0))
    lab_repo.run("--only", "lab_plot")
    entry, code = _entry(lab_repo), lab_repo.root / "code"
    # What deriving gives (as every build did before the entry stored it).
    expected = lab_images.extract((entry / "page.html").read_text(encoding="utf-8"), "x")
    expected_download = labs.published(lab_repo.notebooks()["lab_plot"], lab, code)
    assert len(expected.files) == 1 and 'src="data:' not in expected.body
    assert [p.name for p in entry.glob("published-*.ipynb")] == [stored.published_name(lab, code)]
    assert json.loads((entry / stored.EXTRACTED / stored.INDEX).read_text()) == list(expected.files)

    with monkeypatch.context() as m:
        _forbid(m)
        page = stored.page(entry, "x")
        assert (page.body, page.images) == (expected.body, expected.files)
        assert page.toc == json.loads((entry / "toc.json").read_text(encoding="utf-8"))
        assert stored.download(entry, lab, code) == expected_download

    # A comment in a bundled code/ file: the lab's key and entry stay, the download carries the new text.
    lab_repo.append("code/lab_shared.py", "\n# 只是一行注释\n")
    assert status_lines(lab_repo.run("--only", "lab_plot").stdout) == {"lab_plot": "缓存"}
    assert _entry(lab_repo) == entry
    fresh = stored.download(entry, lab, code)
    assert "只是一行注释" in fresh.decode("utf-8")
    assert fresh == labs.published(lab_repo.notebooks()["lab_plot"], lab, code)
    assert [p.name for p in entry.glob("published-*.ipynb")] == [stored.published_name(lab, code)], "old one pruned"
    with monkeypatch.context() as m:
        _forbid(m)
        assert stored.download(entry, lab, code) == fresh, "stored for the next build"

    # The notebook changes (another plot): a new entry with its own stored page; the old entry is pruned.
    _plot_lab(lab_repo, (0, 0, 255))
    lab_repo.run("--only", "lab_plot")
    new_entry = _entry(lab_repo)
    assert new_entry != entry and not entry.exists()
    with monkeypatch.context() as m:
        _forbid(m)
        page = stored.page(new_entry, "x")
    assert len(page.images) == 1 and page.images != expected.files
    assert page.images == lab_images.extract((new_entry / "page.html").read_text(encoding="utf-8"), "x").files


def test_an_entry_without_stored_files_gets_them_from_the_first_build(lab_repo: LabRepo) -> None:
    lab = _plot_lab(lab_repo, (0, 128, 0))
    lab_repo.run("--only", "lab_plot")
    entry, code = _entry(lab_repo), lab_repo.root / "code"
    written = {p.relative_to(entry): p.read_bytes() for p in entry.rglob("*") if p.is_file()}
    for path in [*entry.glob("published-*.ipynb"), *(entry / stored.EXTRACTED).iterdir()]:
        path.unlink()
    (entry / stored.EXTRACTED).rmdir()  # as an entry executed before the build stored these

    page = stored.page(entry, "x")
    stored.download(entry, lab, code)
    assert {p.relative_to(entry): p.read_bytes() for p in entry.rglob("*") if p.is_file()} == written, (
        "the build stores the same bytes the lab worker stored")
    assert page.images == lab_images.extract((entry / "page.html").read_text(encoding="utf-8"), "x").files
    assert not list(entry.glob(".*")), "no staging folder or temporary file left behind"
