"""Planning: each lab's cache key and entry, and which labs are stale. Cheap: no jupytext, nbclient or torch.

The key is a hash of the lab source, the definitions of ``code/`` it really uses (followed through imports,
compared without comments or docstrings: ``llmsite.cache.deps.definition_deps``), the keys of the build artifacts
it uses (a trained model: ``artifacts``), the versions of the libraries that run it, the kernel name, the KaTeX
version and this pipeline's version. An entry is ``.cache/labs/<name>/<key>/`` (the notebook at
``labs/<name>.ipynb`` inside it, the page beside it: ``labs/page.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llmsite import artifacts, tex
from llmsite import cache as build_cache
from llmsite.cache.deps import definition_deps, key_name
from llmsite.labs import page
from llmsite.labs.notebook import KERNEL
from llmsite.labs.sources import LABS_DIR, Lab
from llmsite.paths import CACHE, CODE, ROOT, rel

PIPELINE_VERSION = "5"  # 3: the rendered page (page.html, toc.json) is part of the entry; 4: focusable text outputs;
# 5: formulas checked with KaTeX, written as arithmatex markup for the build to render (KaTeX version in the key)
CACHE_DIR = CACHE / "labs"
# What runs the notebook, on top of what draws the figures (torch, numpy, matplotlib, fonts, python).
LIBRARIES = ("torch", "numpy", "matplotlib")  # what the labs compute and plot with
# executing the notebook, and rendering it as a page (labs/page.py)
RUNNER_LIBRARIES = ("jupytext", "nbformat", "nbclient", "ipykernel", "jupyter_client", "mkdocs-jupyter", "nbconvert",
                    "pymdown-extensions")


@cache
def library_versions() -> tuple[tuple[str, str], ...]:
    return build_cache.versions(LIBRARIES + RUNNER_LIBRARIES)


def key_for(lab: Lab, code_dir: Path = CODE, root: Path = ROOT) -> build_cache.Key:
    inputs: dict[str, str] = {"pipeline": PIPELINE_VERSION, "kernel": KERNEL, "katex": tex.version()}
    inputs[f"lab:{rel(lab.source, root)}"] = build_cache.file_digest(lab.source)
    found = definition_deps([(lab.source, None)], code_dir)
    for path, digest in found.digests.items():
        if path != lab.source.resolve():
            inputs[f"defs:{key_name(path, root, code_dir)}"] = digest
    inputs.update(artifacts.consumer_inputs(found.roots, code_dir, root))
    for name, version in library_versions():
        inputs[f"lib:{name}"] = version
    return build_cache.key(inputs)


def dependencies(lab: Lab, code_dir: Path = CODE) -> dict[Path, list[str]]:
    """The files of ``code/`` whose definitions a lab uses, with those definitions' names."""
    found = definition_deps([(lab.source, None)], code_dir)
    return {p: names for p, names in found.names.items() if p != lab.source.resolve()}


def uses_artifacts(lab: Lab, code_dir: Path = CODE) -> list[artifacts.Artifact]:
    return artifacts.used_by(definition_deps([(lab.source, None)], code_dir).roots, code_dir)


def entry_dir(lab: Lab, key: build_cache.Key, cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / lab.name / key.digest


def notebook_path(lab: Lab, key: build_cache.Key, cache_dir: Path = CACHE_DIR) -> Path:
    return entry_dir(lab, key, cache_dir) / LABS_DIR / f"{lab.name}.ipynb"


@dataclass
class Planned:
    lab: Lab
    key: build_cache.Key
    cached: bool

    def notebook(self, cache_dir: Path = CACHE_DIR) -> Path:
        return notebook_path(self.lab, self.key, cache_dir)


def plan(
    labs: list[Lab], force: bool = False, cache_dir: Path = CACHE_DIR, code_dir: Path = CODE, repo: Path = ROOT
) -> list[Planned]:
    out = []
    for lab in labs:
        key = key_for(lab, code_dir, repo)
        entry = entry_dir(lab, key, cache_dir)
        done = notebook_path(lab, key, cache_dir).is_file() and (entry / page.PAGE_FILE).is_file()
        out.append(Planned(lab, key, (not force) and done))
    return out
