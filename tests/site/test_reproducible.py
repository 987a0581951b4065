"""Same commit, same site: a second build from an empty cache gives byte-identical files.

The session's build (``built_site``) and a second one whose figure, artifact and lab caches
start empty (so every figure is redrawn, every model retrained, every lab re-executed)
are compared file by file. The only file allowed to differ is none: ``sitemap.xml.gz`` is
compared by its decompressed content, since its gzip header may carry a timestamp.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, BuiltSite


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                data = gzip.decompress(data)
            out[path.relative_to(root).as_posix()] = data
    return out


@pytest.mark.slow
def test_a_clean_second_build_is_byte_identical(built_site: BuiltSite, tmp_path: Path) -> None:
    second = tmp_path / built_site.dir.name
    env = {**os.environ, "SITE_URL": built_site.base_url, "NO_MKDOCS_2_WARNING": "1",
           "LLM_SITE_CACHE": str(tmp_path / "empty-cache")}
    env.pop("LLM_ARTIFACT_CACHE", None)  # artifacts then live in the (empty) site cache too
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(second)],
        cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    a, b = _files(built_site.dir), _files(second)
    assert sorted(a) == sorted(b), f"different file sets: {sorted(set(a) ^ set(b))[:20]}"
    differing = [name for name in a if a[name] != b[name]]
    assert not differing, f"{len(differing)} files differ between two builds of the same commit: {differing[:20]}"
