"""Content-addressed figure cache under ``.cache/figures`` (outside docs/ and git).

Key = hash of: the pipeline version, the declaration, the bytes of the
declaring module and of every ``code/`` module the figure's function uses,
followed through helpers and imports (figkit, the shared style, always), the
data files it names, the keys of the build artifacts it uses (a trained model,
see ``llmsite/artifacts.py``), and the versions of Python and of the libraries
that draw it. Entries are directories written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from llmsite.cache.deps import definition_deps, function_deps
from llmsite.figures.registry import FigureSpec
from llmsite.paths import CACHE, CODE, ROOT, rel

PIPELINE_VERSION = "1"
THEMES = ("light", "dark")
FORMAT = "svg"
DATA_FILE = "data.json"  # the interactive view's data (@figure_data), next to the SVGs of the same entry
LIBRARIES = ("torch", "numpy", "matplotlib", "pylopdf-fonts-zh-cn")
ROOT_DIR = CACHE / "figures"


@cache
def library_versions() -> tuple[tuple[str, str], ...]:
    out = []
    for name in LIBRARIES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            out.append((name, "missing"))
    out.append(("python", f"{sys.version_info.major}.{sys.version_info.minor}"))
    return tuple(out)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Key:
    digest: str
    inputs: dict[str, str]  # what went into it, for --explain and debugging


def key_for(spec: FigureSpec, code_dir: Path = CODE, root: Path = ROOT) -> Key:
    inputs: dict[str, str] = {"pipeline": PIPELINE_VERSION, "format": FORMAT}
    declaration: list = [spec.name, spec.function, spec.article, spec.title, spec.caption, list(spec.data)]
    if spec.data_function:  # only then: the keys of figures without an interactive view stay as they were
        declaration += [spec.data_function, spec.view]
    inputs["declaration"] = json.dumps(declaration, ensure_ascii=False)
    for path in _functions_deps(spec, code_dir):
        inputs[f"module:{rel(path)}"] = file_digest(path)
    for item in spec.data:
        path = root / item
        inputs[f"data:{item}"] = file_digest(path) if path.is_file() else "missing"
    for name, version in library_versions():
        inputs[f"lib:{name}"] = version
    inputs.update(artifact_inputs(spec, code_dir, root))
    blob = json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode()
    return Key(hashlib.sha256(blob).hexdigest()[:20], inputs)


def functions(spec: FigureSpec) -> list[str]:
    """The functions that make the figure: the drawing and, for an interactive view, its data."""
    return [spec.function] + ([spec.data_function] if spec.data_function else [])


def _functions_deps(spec: FigureSpec, code_dir: Path = CODE) -> list[Path]:
    found: set[Path] = set()
    for function in functions(spec):
        found.update(function_deps(spec.module, function, code_dir))
    return sorted(found)


def artifact_inputs(spec: FigureSpec, code_dir: Path = CODE, root: Path = ROOT) -> dict[str, str]:
    """``{"artifact:<name>": key}`` for the build artifacts (a trained model) the figure's functions use."""
    from llmsite import artifacts  # imports this module

    reached = definition_deps([(spec.module, f) for f in functions(spec)], code_dir).roots
    return artifacts.consumer_inputs(reached, code_dir, root)


def artifacts_used(spec: FigureSpec, code_dir: Path = CODE) -> list:
    from llmsite import artifacts

    return artifacts.used_by(definition_deps([(spec.module, f) for f in functions(spec)], code_dir).roots, code_dir)


def entry_dir(spec: FigureSpec, key: Key, root: Path = ROOT_DIR) -> Path:
    return root / spec.name / key.digest


def outputs(spec: FigureSpec, key: Key, root: Path = ROOT_DIR) -> dict[str, Path]:
    base = entry_dir(spec, key, root)
    return {theme: base / f"{theme}.{FORMAT}" for theme in THEMES}


def data_output(spec: FigureSpec, key: Key, root: Path = ROOT_DIR) -> Path | None:
    """The interactive view's data file of the entry, for a figure that has one (@figure_data)."""
    return entry_dir(spec, key, root) / DATA_FILE if spec.data_function else None


def is_cached(spec: FigureSpec, key: Key, root: Path = ROOT_DIR) -> bool:
    data = data_output(spec, key, root)
    return all(p.is_file() for p in outputs(spec, key, root).values()) and (data is None or data.is_file())


def staging_dir(spec: FigureSpec, root: Path = ROOT_DIR) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / f".tmp-{spec.name}-{os.getpid()}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    return path


def commit_dir(staging: Path, target: Path) -> Path:
    """Move a finished staging directory to ``target`` in one rename; prune its older siblings.

    An existing ``target`` (a forced rebuild of the same key) is moved aside first.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        aside = target.parent / f".old-{target.name}-{os.getpid()}"
        os.rename(target, aside)
        shutil.rmtree(aside, ignore_errors=True)
    try:
        os.rename(staging, target)
    except OSError:
        # Someone else finished the same entry first: theirs is identical.
        shutil.rmtree(staging, ignore_errors=True)
    for old in target.parent.iterdir():
        if old != target and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return target


def commit(staging: Path, spec: FigureSpec, key: Key, root: Path = ROOT_DIR) -> Path:
    """Record what went into a figure next to it and move the entry into place."""
    (staging / "inputs.json").write_text(json.dumps(key.inputs, indent=1, sort_keys=True, ensure_ascii=False))
    return commit_dir(staging, entry_dir(spec, key, root))


def clean_stale_staging(root: Path = ROOT_DIR) -> None:
    """Remove staging directories left by an interrupted run (their process is gone)."""
    if not root.is_dir():
        return
    for path in root.glob(".tmp-*"):
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed worker not yet reaped by its new parent is a zombie: dead for us
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
