"""What a build derives from a lab's cache entry, stored in the entry, so that a warm build only reads files.

A committed entry (``labs/execute.py``) never changes, but two things were derived from it on every build:

- the page with its plots as files of their own (``labs/images.py``): stored as ``extracted-<version>/``
  (``page.html`` with the images' placeholders, ``images.json`` naming the image files in page order, the image
  files), ``<version>`` being a digest of ``images.py``, so that a change in how images are taken out is seen;
- the notebook offered for download (``labs/download.py``: ``published``), which carries the ``code/`` files the
  lab imports as they are *now* (a comment edited there changes the download, not the lab's key): stored as
  ``published-<digest>.ipynb``, the digest covering the bundled files' names and bytes and the source of
  ``labs/download.py``, which writes that cell, and of ``labs/notebook.py``, which gives the cells their ids.

The lab worker stores both in the entry when it executes the lab (``prepare``); a build stores what is missing
(an entry from before this module, a comment edited in ``code/``) the first time it needs it. Each is written
in one rename (a staging directory, ``atomic.write_bytes``), so a reader sees all of it or none; a cache that
cannot be written only costs time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsite import atomic
from llmsite import cache as build_cache
from llmsite.labs import download as lab_download
from llmsite.labs import images as lab_images
from llmsite.labs import notebook as lab_notebook
from llmsite.labs import page as lab_page
from llmsite.labs.sources import LABS_DIR, Lab, LabError
from llmsite.paths import CODE

_IMAGES_VERSION = hashlib.sha256(Path(lab_images.__file__).read_bytes()).hexdigest()[:12]
_PUBLISHED_VERSION = hashlib.sha256(
    b"".join(hashlib.sha256(Path(m.__file__).read_bytes()).digest() for m in (lab_download, lab_notebook))
).hexdigest()
EXTRACTED = f"extracted-{_IMAGES_VERSION}"
INDEX = "images.json"


@dataclass(frozen=True)
class Page:
    body: str  # the page body, each image's data URI replaced by its placeholder (``lab_images.link``)
    toc: list[dict[str, Any]]
    images: dict[str, bytes]  # file name -> bytes, in page order


def page(entry: Path, where: str) -> Page:
    """The entry's page with its images taken out, stored beside it the first time. ``where`` names the lab in
    the ``lab_images.ImageError`` raised when an image cannot be read."""
    folder = entry / EXTRACTED
    toc = json.loads((entry / lab_page.TOC_FILE).read_text(encoding="utf-8"))
    try:
        names = json.loads((folder / INDEX).read_text(encoding="utf-8"))
        body = (folder / lab_page.PAGE_FILE).read_text(encoding="utf-8")
        return Page(body, toc, {name: (folder / name).read_bytes() for name in names})
    except (OSError, ValueError):
        pass
    extracted = lab_images.extract((entry / lab_page.PAGE_FILE).read_text(encoding="utf-8"), where)
    with contextlib.suppress(OSError):
        _store_extracted(entry, extracted)
    return Page(extracted.body, toc, extracted.files)


def _store_extracted(entry: Path, extracted: lab_images.Extracted) -> None:
    build_cache.clean_stale_staging(entry)
    staging = build_cache.staging_dir(entry, "extracted")
    try:
        (staging / lab_page.PAGE_FILE).write_text(extracted.body, encoding="utf-8")
        for name, data in extracted.files.items():
            (staging / name).write_bytes(data)
        (staging / INDEX).write_text(json.dumps(list(extracted.files)), encoding="utf-8")
        os.rename(staging, entry / EXTRACTED)
    except OSError:  # e.g. another build stored the same first
        shutil.rmtree(staging, ignore_errors=True)
        return
    for old in entry.glob("extracted-*"):  # an earlier version of images.py
        if old.name != EXTRACTED:
            shutil.rmtree(old, ignore_errors=True)


def published_name(lab: Lab, code_dir: Path = CODE) -> str:
    """The stored download's file name for the bundled files as they are now."""
    digest = hashlib.sha256(_PUBLISHED_VERSION.encode())
    for name, path in sorted(lab_download.bundled_files(lab, code_dir).items()):
        digest.update(b"\0" + name.encode("utf-8") + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return f"published-{digest.hexdigest()[:20]}.ipynb"


def download(entry: Path, lab: Lab, code_dir: Path = CODE) -> bytes:
    """The notebook readers download (``lab_download.published``) for the entry, stored beside it the first time."""
    name = published_name(lab, code_dir)
    with contextlib.suppress(OSError):
        return (entry / name).read_bytes()
    data = lab_download.published(entry / LABS_DIR / f"{lab.name}.ipynb", lab, code_dir)
    with contextlib.suppress(OSError):
        atomic.write_bytes(entry / name, data)
        for old in entry.glob("published-*.ipynb"):  # made with code/ files as they were before
            if old.name != name:
                old.unlink(missing_ok=True)
    return data


def prepare(entry: Path, lab: Lab, code_dir: Path = CODE) -> None:
    """Store both in a lab's entry as it is executed (its staging directory). What cannot be derived (an image
    that cannot be read, a missing data file) is left for the build to report, as it always has been."""
    with contextlib.suppress(lab_images.ImageError):
        page(entry, lab.name)
    with contextlib.suppress(LabError):  # e.g. a data file missing: the build reports it
        download(entry, lab, code_dir)
