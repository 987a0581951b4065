"""The builder-neutral description of generated files (``llmsite.features.files``) names URLs and links exactly as
MkDocs does for the same files: MkDocs's own ``File`` and ``get_relative_url`` are the oracle."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from llmsite.features.files import Generated, relative_url, url_of
from llmsite.mkdocs.files import LabPageFile

URIS = ["index.md", "articles/index.md", "articles/x.md", "articles/page/2.md", "route.md", "figures/a.light.svg",
        "figures/a.data.json", "labs/x/x.ipynb", "labs/x/image-1.png", "playground/tang-gpt.json", "README.md"]
FOLDERS = ["./", "", "labs/x/", "labs/", "articles/x/", "articles/page/2/"]


def _config(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(site_dir=str(tmp_path), use_directory_urls=True,
                           plugins=SimpleNamespace(_current_plugin="llmsite"))


@pytest.mark.parametrize("uri", URIS)
def test_a_generated_file_has_the_url_mkdocs_gives_it(uri: str, tmp_path: Path) -> None:
    ours = Generated(uri, content="x")
    theirs = File.generated(_config(tmp_path), uri, content="x")
    assert ours.url == theirs.url


def test_a_lab_page_has_the_url_of_a_page(tmp_path: Path) -> None:
    ours = Generated("labs/attention_lab.ipynb", content="---\ntitle: t\n---\n", page=True)
    theirs = LabPageFile.generated(_config(tmp_path), ours.uri, content=ours.content)
    assert ours.url == theirs.url == "labs/attention_lab/"
    assert url_of("labs/attention_lab.ipynb", page=False) == "labs/attention_lab.ipynb"  # the download


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("uri", URIS)
def test_a_link_between_two_urls_is_the_one_mkdocs_writes(uri: str, folder: str, tmp_path: Path) -> None:
    url = File.generated(_config(tmp_path), uri, content="x").url
    assert relative_url(url, folder) == get_relative_url(url, folder)


def test_a_generated_file_comes_from_the_cache_or_from_memory_not_both(tmp_path: Path) -> None:
    path = tmp_path / "a.svg"
    path.write_bytes(b"<svg/>")
    assert Generated("figures/a.svg", path=path).read_bytes() == b"<svg/>"
    assert Generated("x.md", content="正文").read_bytes() == "正文".encode()
    with pytest.raises(ValueError, match="只能二选一"):
        Generated("x.md")
    with pytest.raises(ValueError, match="只能二选一"):
        Generated("x.md", path=path, content="x")
