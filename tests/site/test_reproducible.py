"""Same commit, same site: a second build from an empty site cache gives byte-identical files.

The run's build (``built_site``, MkDocs) and a second one (``clean_build``: ProperDocs, with its figure and lab
caches empty, so every figure is redrawn and every lab re-executed) are compared file by file. The one
difference allowed is the generator meta tag, which names the builder; ``sitemap.xml.gz`` is compared by its
decompressed content, since its gzip header may carry a timestamp. The second build also serves
``test_properdocs.py``: one cold build checks both claims.

The trained models are trained once per run and read by both builds. That training itself reproduces bit for
bit in a fresh process is checked by the downloaded labs, which train them in an empty folder and must get the
cached parameters (``tests/labs/test_real_labs.py``).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from llmsite import offline
from tests.conftest import BuiltSite, CleanBuild

pytestmark = pytest.mark.slow

GENERATOR = re.compile(rb'<meta name="generator" content="([^"]*)">')


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                data = gzip.decompress(data)
            out[path.relative_to(root).as_posix()] = data
    return out


# Derived from the pages, generator tag included (its length and bytes differ between the two builders): each must be
# exactly what its own site gives, and list the same files; compared that way instead of byte for byte.
OFFLINE = ("offline.json", "sw.js")


def test_a_clean_second_build_is_byte_identical(built_site: BuiltSite, clean_build: CleanBuild) -> None:
    a, b = _files(built_site.dir), _files(clean_build.dir)
    assert sorted(a) == sorted(b), f"different file sets: {sorted(set(a) ^ set(b))[:20]}"
    for site in (built_site.dir, clean_build.dir):
        kept = offline.manifest(site)
        assert json.loads((site / "offline.json").read_text(encoding="utf-8")) == kept, site
        assert f'const VERSION = "{kept["version"]}";' in (site / "sw.js").read_text(encoding="utf-8"), site
    listed = [[f["url"] for f in json.loads(x["offline.json"])["files"]] for x in (a, b)]
    assert listed[0] == listed[1], "the two builds keep different files for offline reading"
    builders = set()
    differing = []
    for name in (n for n in a if n not in OFFLINE):
        first, second = a[name], b[name]
        if name.endswith(".html"):
            tags = GENERATOR.findall(first), GENERATOR.findall(second)
            builders.update(t[0].decode() for t in tags if t)
            first, second = GENERATOR.sub(b"", first), GENERATOR.sub(b"", second)
        if first != second:
            differing.append(name)
    assert not differing, f"{len(differing)} files differ between two builds of the same commit: {differing[:20]}"
    # the tag that was left out really names the two builders (and nothing else differed)
    assert any(t.startswith("mkdocs-") for t in builders) and any("ProperDocs" in t for t in builders), builders


def test_the_second_build_started_from_empty_caches(clean_build: CleanBuild) -> None:
    """The comparison above means something only if the second build computed everything itself."""
    out = clean_build.output
    figures = re.search(r"共 (\d+) 张图：(\d+) 张重新生成，(\d+) 张来自缓存", out)
    labs = re.search(r"共 (\d+) 个动手实验：(\d+) 个重新执行，(\d+) 个来自缓存", out)
    assert figures and labs, out[-3000:]
    assert int(figures[1]) > 0 and figures[1] == figures[2] and figures[3] == "0", figures[0]
    assert int(labs[1]) > 0 and labs[1] == labs[2] and labs[3] == "0", labs[0]
    # nothing was left in the site cache it started from but what this build computed
    assert {p.name for p in clean_build.cache.iterdir()} >= {"figures", "labs"}
    # the trained models were read from the run's artifact cache, not trained a third time (none in its own cache)
    assert not (clean_build.cache / "artifacts").exists() or not any((clean_build.cache / "artifacts").iterdir())
    assert "[产物]" not in out, "the second build trained a model the run had already trained"
