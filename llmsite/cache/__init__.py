"""The build cache shared by figures, labs and artifacts (under ``LLM_SITE_CACHE``, default ``.cache/``).

Each pipeline supplies only its inputs; this module turns them into a ``Key`` (a digest of a sorted JSON
object, the inputs kept for ``--list`` and debugging) and writes entries as directories that appear in one
rename (``commit_dir``), so an interrupted build never leaves a half-written entry. ``deps`` is the import
graph of ``code/`` that the keys are computed from.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TypeVar, cast

from llmsite import atomic, numerics
from llmsite.paths import CACHE

T = TypeVar("T")


@dataclass(frozen=True)
class Key:
    digest: str
    inputs: dict[str, str]  # what went into it, for --list and debugging


def key(inputs: dict[str, str]) -> Key:
    inputs = {**inputs, "numerics": numerics.fingerprint()}  # results computed under other kernels are not reused
    blob = json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode()
    return Key(hashlib.sha256(blob).hexdigest()[:20], inputs)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def versions(libraries: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, version) of each installed distribution ("missing" when it is not), then Python's."""
    out = [(name, _version(name)) for name in libraries]
    out.append(("python", f"{sys.version_info.major}.{sys.version_info.minor}"))
    return tuple(out)


@cache
def _version(name: str) -> str:
    """Looked up once per process, as each pipeline's ``library_versions`` already was (torch and numpy are in
    four of them)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def remembered(kind: str, parts: tuple[str, ...], compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned in an earlier process for the same ``parts``: pickled under
    ``<cache>/<kind>/``, written atomically. For a result that is a function of ``parts`` alone (a file's path and
    text, and the source of the code that reads it); an exception is raised again next time, never stored. A
    damaged entry is computed again; a cache that cannot be written only costs time."""
    digest = hashlib.sha256("\0".join((kind, *parts)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    path = CACHE / kind / f"{digest}.pickle"
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
                             ValueError):
        return cast(T, pickle.loads(path.read_bytes()))
    result = compute()
    with contextlib.suppress(OSError):
        atomic.write_bytes(path, pickle.dumps(result))
    return result


def source_digest(module_file: str) -> str:
    """A digest of a module's own source, for ``remembered``: the results of older code are not reused."""
    return hashlib.sha256(Path(module_file).read_bytes()).hexdigest()[:16]


def staging_dir(root: Path, name: str) -> Path:
    """A fresh ``.tmp-<name>-<pid>`` folder under ``root``, to be moved into place by ``commit_dir``."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f".tmp-{name}-{os.getpid()}"
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


def clean_stale_staging(root: Path) -> None:
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
