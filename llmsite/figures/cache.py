"""The figures' inputs to the build cache (``llmsite.cache``), under ``.cache/figures``.

Key = hash of: the pipeline version, the declaration, the definitions of ``code/`` that the figure's
functions use (followed through helpers and imports, compared by their syntax tree: a comment or a
docstring does not count; an unrelated function in the same module does not count either), the shared
style module figkit.py as a whole, the data files it names, the keys of the build artifacts it uses
(a trained model, see ``llmsite/artifacts.py``), and the versions of Python and of the libraries that
draw it. Entries are directories written atomically.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from llmsite import cache as build_cache
from llmsite.cache import Key, commit_dir, file_digest
from llmsite.cache.deps import STYLE_MODULE, definition_deps, key_name
from llmsite.figures.registry import FigureSpec
from llmsite.paths import CACHE, CODE, ROOT

PIPELINE_VERSION = "2"  # 2: definition-level inputs
THEMES = ("light", "dark")
FORMAT = "svg"
DATA_FILE = "data.json"  # the interactive view's data (@figure_data), next to the SVGs of the same entry
LIBRARIES = ("torch", "numpy", "matplotlib", "pylopdf-fonts-zh-cn")
CACHE_DIR = CACHE / "figures"


@cache
def library_versions() -> tuple[tuple[str, str], ...]:
    return build_cache.versions(LIBRARIES)


def key_for(spec: FigureSpec, code_dir: Path = CODE, root: Path = ROOT) -> Key:
    inputs: dict[str, str] = {"pipeline": PIPELINE_VERSION, "format": FORMAT}
    declaration: list = [spec.name, spec.function, spec.article, spec.title, spec.caption, list(spec.data)]
    if spec.data_function:  # only then: the keys of figures without an interactive view stay as they were
        declaration += [spec.data_function, spec.view]
    inputs["declaration"] = json.dumps(declaration, ensure_ascii=False)
    inputs.update(definition_inputs(spec.module, functions(spec), code_dir, root))
    style = code_dir / f"{STYLE_MODULE}.py"
    if style.is_file():  # the shared style applies to every figure as a whole (rcParams, fonts, sizes)
        inputs[f"style:{key_name(style, root, code_dir)}"] = file_digest(style)
    inputs.update(data_inputs(spec.data, root))
    for name, version in library_versions():
        inputs[f"lib:{name}"] = version
    inputs.update(artifact_inputs(spec, code_dir, root))
    return build_cache.key(inputs)


def definition_inputs(module: Path, names: list[str], code_dir: Path = CODE, root: Path = ROOT) -> dict[str, str]:
    """``{"defs:<file>": digest}``: the definitions of ``code/`` that these functions of ``module`` use."""
    found = definition_deps([(module, f) for f in names], code_dir)
    return {f"defs:{key_name(path, root, code_dir)}": digest for path, digest in found.digests.items()}


def data_inputs(data: tuple[str, ...], root: Path = ROOT) -> dict[str, str]:
    """``{"data:<file>": digest}`` for the declared data files ("missing" for one that is not there)."""
    return {f"data:{item}": file_digest(root / item) if (root / item).is_file() else "missing" for item in data}


def functions(spec: FigureSpec) -> list[str]:
    """The functions that make the figure: the drawing and, for an interactive view, its data."""
    return [spec.function] + ([spec.data_function] if spec.data_function else [])


def artifact_inputs(spec: FigureSpec, code_dir: Path = CODE, root: Path = ROOT) -> dict[str, str]:
    """``{"artifact:<name>": key}`` for the build artifacts (a trained model) the figure's functions use."""
    return used_artifact_inputs(spec.module, functions(spec), code_dir, root)


def used_artifact_inputs(module: Path, names: list[str], code_dir: Path = CODE, root: Path = ROOT) -> dict[str, str]:
    """``{"artifact:<name>": key}`` for the build artifacts that these functions of ``module`` use."""
    from llmsite import artifacts  # imports this module

    reached = definition_deps([(module, f) for f in names], code_dir).roots
    return artifacts.consumer_inputs(reached, code_dir, root)


def artifacts_used(spec: FigureSpec, code_dir: Path = CODE) -> list:
    from llmsite import artifacts

    return artifacts.used_by(definition_deps([(spec.module, f) for f in functions(spec)], code_dir).roots, code_dir)


def entry_dir(spec: FigureSpec, key: Key, cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / spec.name / key.digest


def outputs(spec: FigureSpec, key: Key, cache_dir: Path = CACHE_DIR) -> dict[str, Path]:
    base = entry_dir(spec, key, cache_dir)
    return {theme: base / f"{theme}.{FORMAT}" for theme in THEMES}


def data_output(spec: FigureSpec, key: Key, cache_dir: Path = CACHE_DIR) -> Path | None:
    """The interactive view's data file of the entry, for a figure that has one (@figure_data)."""
    return entry_dir(spec, key, cache_dir) / DATA_FILE if spec.data_function else None


def is_cached(spec: FigureSpec, key: Key, cache_dir: Path = CACHE_DIR) -> bool:
    data = data_output(spec, key, cache_dir)
    return all(p.is_file() for p in outputs(spec, key, cache_dir).values()) and (data is None or data.is_file())


def staging_dir(spec: FigureSpec, cache_dir: Path = CACHE_DIR) -> Path:
    return build_cache.staging_dir(cache_dir, spec.name)


def commit(staging: Path, spec: FigureSpec, key: Key, cache_dir: Path = CACHE_DIR) -> Path:
    """Record what went into a figure next to it and move the entry into place."""
    (staging / "inputs.json").write_text(json.dumps(key.inputs, indent=1, sort_keys=True, ensure_ascii=False))
    return commit_dir(staging, entry_dir(spec, key, cache_dir))


def clean_stale_staging(cache_dir: Path = CACHE_DIR) -> None:
    build_cache.clean_stale_staging(cache_dir)
