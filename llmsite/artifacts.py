"""Build artifacts: an expensive result (a trained model) computed once, cached, shared by figures and labs.

A module of ``code/`` declares its artifacts with a module-level literal::

    BUILD_ARTIFACTS = {"tiny-transformer": ("train_reference", "save_trained")}

name -> (function computing the result, function ``save(path, *result)`` writing it to a file). A third
element, a literal (a string, a number or a tuple of them), is passed to the compute function: one function then
declares independent parts of an experiment, each its own artifact, computed in its own process and side by side
(``"capable-sft-0": ("train_capable", "save_capable", (0,))``). The file
is cached at ``.cache/artifacts/<name>/<key>/<name>.pt`` (``LLM_ARTIFACT_CACHE`` overrides the folder).

Key: the definition-level dependencies of both functions (``figures.deps.definition_deps``: the
definitions they use, followed through ``code/``, compared without comments and docstrings), the versions
of Python, torch and numpy, and this pipeline's version. Editing a comment or an unrelated function of a
module they import leaves the key, hence the trained model, unchanged.

A figure or lab *uses* an artifact when its own dependencies reach the compute function: it calls it
itself when the file is absent (a downloaded notebook trains its model). Its key then includes the
artifact's key. Before drawing figures or executing labs, the build computes the stale artifacts they
use (in a fresh process: ``python -m llmsite artifacts``) and points the environment variable
``LLM_ARTIFACT_<NAME>`` (upper case, ``-`` -> ``_``) at each cached file; forked workers and notebook
kernels inherit it.

Planning is cheap: AST and hashes, no torch.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, TextIO

from llmsite import artifact_order
from llmsite import cache as build_cache
from llmsite.cache.deps import definition_deps, key_name, per_build
from llmsite.paths import CACHE, CODE, ROOT, rel

PIPELINE_VERSION = "1"
DECLARATION = "BUILD_ARTIFACTS"
ENV_PREFIX = "LLM_ARTIFACT_"
LIBRARIES = ("torch", "numpy")
_SOURCE = build_cache.source_digest(__file__)


def artifacts_dir() -> Path:
    """Where artifacts are cached (read at call time: tests share one folder between repository copies)."""
    configured = os.environ.get("LLM_ARTIFACT_CACHE")
    return Path(configured) if configured else CACHE / "artifacts"


@dataclass(frozen=True)
class Artifact:
    name: str
    module: Path  # the file of code/ that declares it
    compute: str
    save: str
    line: int
    args: tuple[Any, ...] = ()  # the declaration's third element, if any, as the compute function's one argument

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper().replace("-", "_")

    @property
    def filename(self) -> str:
        return f"{self.name}.pt"

    @property
    def where(self) -> str:
        return f"{rel(self.module)}:{self.line}"

    @property
    def call(self) -> str:
        """How the compute function is called, for messages: ``train_capable((0,))``."""
        return f"{self.compute}({', '.join(map(repr, self.args))})"


class ArtifactError(RuntimeError):
    pass


@lru_cache(maxsize=512)
def _declared(path: Path, mtime_ns: int) -> tuple[Artifact, ...]:
    text = path.read_text(encoding="utf-8")
    if DECLARATION not in text:
        return ()
    # Kept on disk for the next process (a warm build parses no syntax tree); an error is never stored.
    parts = (_SOURCE, str(path), str(path.resolve()), text)
    return build_cache.remembered("artifacts-declared", parts, lambda: _parse_declared(path, text))


NOT_LITERAL = object()  # what ``literal_assignments`` gives for ``NAME = <not a literal>``


def literal_assignments(tree: ast.Module, name: str) -> Iterator[tuple[ast.Assign, Any]]:
    """Each module-level ``name = ...`` of ``tree``: (the node, its literal value or ``NOT_LITERAL``). Declarations
    read without importing the module (``BUILD_ARTIFACTS`` here, ``PLAYGROUND_INT8`` in ``playground/export.py``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                yield node, ast.literal_eval(node.value)
            except ValueError:
                yield node, NOT_LITERAL


def _parse_declared(path: Path, text: str) -> tuple[Artifact, ...]:
    tree = ast.parse(text, filename=str(path))
    found = []
    for node, value in literal_assignments(tree, DECLARATION):
        where = f"{rel(path)}:{node.lineno}"
        if value is NOT_LITERAL:
            raise ArtifactError(f"{where}: {DECLARATION} 必须是字面量字典 {{名字: (计算函数名, 保存函数名)}}")
        if not isinstance(value, dict):
            raise ArtifactError(f"{where}: {DECLARATION} 必须是字典 {{名字: (计算函数名, 保存函数名)}}")
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for name, item in value.items():
            if not (isinstance(name, str) and isinstance(item, tuple) and len(item) in (2, 3)
                    and all(isinstance(f, str) for f in item[:2])):
                raise ArtifactError(f"{where}: {DECLARATION} 的每一项写成 \"名字\": (\"计算函数名\", \"保存函数名\")，"
                                    "或再加一个传给计算函数的参数：(\"计算函数名\", \"保存函数名\", 参数)")
            if len(item) == 3 and not _plain_literal(item[2]):
                raise ArtifactError(f"{where}: 产物 {name} 的参数 {item[2]!r} 应是字符串、数，或由它们组成的元组")
            missing = [f for f in item[:2] if f not in defined]
            if missing:
                raise ArtifactError(f"{where}: 产物 {name} 的函数 {'、'.join(missing)} 没有在 {rel(path)} 的顶层定义")
            found.append(Artifact(name, path.resolve(), item[0], item[1], node.lineno, tuple(item[2:])))
    return tuple(found)


def _plain_literal(value: object) -> bool:
    """A string, a number, or a tuple of them (hashable, and written the same way in every key)."""
    if isinstance(value, tuple):
        return all(_plain_literal(v) for v in value)
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def discover(code_dir: Path = CODE) -> dict[str, Artifact]:
    """Every artifact declared in ``code_dir/*.py`` by name (a name declared twice is an error); within one build
    (``cache.deps.build_snapshot``) read once."""
    return dict(per_build(("artifacts", code_dir), lambda: _discover(code_dir), code_dir))


def _discover(code_dir: Path) -> dict[str, Artifact]:
    found: dict[str, Artifact] = {}
    for path in sorted(code_dir.glob("*.py")):
        for artifact in _declared(path, path.stat().st_mtime_ns):
            if artifact.name in found:
                raise ArtifactError(f"{artifact.where}: 产物 {artifact.name} 已在 {found[artifact.name].where} 声明过")
            found[artifact.name] = artifact
    return found


@cache
def library_versions() -> tuple[tuple[str, str], ...]:
    return build_cache.versions(LIBRARIES)


def key_for(artifact: Artifact, code_dir: Path = CODE, root: Path = ROOT) -> build_cache.Key:
    """The artifact's key; within one build (``cache.deps.build_snapshot``) computed once, however many figures,
    answers and labs use it."""
    return per_build(("artifact-key", artifact, code_dir, root), lambda: _key_for(artifact, code_dir, root), code_dir)


def _key_for(artifact: Artifact, code_dir: Path, root: Path) -> build_cache.Key:
    inputs: dict[str, str] = {
        "pipeline": PIPELINE_VERSION,
        # an argument is added only when there is one: the keys of the other artifacts stay what they were
        "declaration": json.dumps([artifact.name, artifact.compute, artifact.save,
                                   *([repr(artifact.args[0])] if artifact.args else [])], ensure_ascii=False),
        "threads": "1",
    }
    found = definition_deps([(artifact.module, artifact.compute), (artifact.module, artifact.save)], code_dir)
    for path, digest in found.digests.items():
        inputs[f"defs:{key_name(path, root, code_dir)}"] = digest
    for name, version in library_versions():
        inputs[f"lib:{name}"] = version
    return build_cache.key(inputs)


def used_by(reached: set[tuple[Path, str]], code_dir: Path = CODE) -> list[Artifact]:
    """The artifacts whose compute function is among ``reached`` (``DefinitionDeps.roots`` of a consumer)."""
    return [a for a in discover(code_dir).values() if (a.module, a.compute) in reached]


def consumer_inputs(reached: set[tuple[Path, str]], code_dir: Path = CODE, root: Path = ROOT) -> dict[str, str]:
    """``{"artifact:<name>": key digest}`` for a consumer's cache key."""
    return {f"artifact:{a.name}": key_for(a, code_dir, root).digest for a in used_by(reached, code_dir)}


def file_path(artifact: Artifact, key: build_cache.Key, cache_dir: Path | None = None) -> Path:
    return (cache_dir or artifacts_dir()) / artifact.name / key.digest / artifact.filename


@dataclass
class Planned:
    artifact: Artifact
    key: build_cache.Key
    cached: bool

    def path(self, cache_dir: Path | None = None) -> Path:
        return file_path(self.artifact, self.key, cache_dir)


def plan(artifacts: list[Artifact], force: bool = False, code_dir: Path = CODE) -> list[Planned]:
    out = []
    for artifact in artifacts:
        key = key_for(artifact, code_dir)
        out.append(Planned(artifact, key, (not force) and file_path(artifact, key).is_file()))
    return out


# --------------------------------------------------------------------------- building


def build(item: Planned, code_dir: Path = CODE) -> Path:
    """Compute one artifact in this process and commit its file atomically (used by build_artifacts.py)."""
    import torch

    torch.set_num_threads(1)  # the same reductions, hence the same bits, on every machine and in every notebook
    if str(code_dir) not in sys.path:
        sys.path.insert(0, str(code_dir))
    artifact = item.artifact
    module = importlib.import_module(artifact.module.stem)
    cache_dir = artifacts_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = build_cache.staging_dir(cache_dir, artifact.name)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        result = getattr(module, artifact.compute)(*artifact.args)
        args = result if isinstance(result, tuple) else (result,)
        getattr(module, artifact.save)(staging / artifact.filename, *args)
        (staging / "inputs.json").write_text(
            json.dumps(item.key.inputs, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8"
        )
        return build_cache.commit_dir(staging, item.path().parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _cores() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _start(name: str, stdout: Path, stderr: Path) -> subprocess.Popen[bytes]:
    """One artifact computed in a fresh process (``python -m llmsite artifacts --only NAME``); it reads the cached
    artifacts it needs from the ``LLM_ARTIFACT_<NAME>`` variables it inherits."""
    with stdout.open("wb") as out, stderr.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "llmsite", "artifacts", "--only", name], cwd=ROOT,
                                stdout=out, stderr=err)


def _compute_as_ready(stale: list[Artifact], out: TextIO, code_dir: Path) -> list[str]:
    """Compute the ``stale`` artifacts, each in its own fresh process, as many at once as there are cores (each
    trains on one thread, so the bits do not depend on how many run at once). Each starts as soon as the stale
    artifacts its compute function reaches are cached, not when a whole wave is done: a slow artifact holds back
    only what reads it. Of the ready ones, the one with the longest remaining chain starts first (``artifact_order``:
    critical path first, by the committed seconds hints). Each one's lines are printed when it finishes; after a
    failure nothing new starts, and the first failure (in the order of ``stale``) is raised once the running ones have
    finished. Returns the names in the order they were started."""
    import tempfile

    names = [a.name for a in stale]
    needs = {a.name: {u.name for u in upstream(a, code_dir) if u.name in names} for a in stale}
    try:  # a free core goes to the ready artifact the longest remaining chain waits on (artifact_order.py)
        rank = artifact_order.remaining(needs, artifact_order.hints())
    except artifact_order.HintError as exc:
        raise ArtifactError(str(exc)) from exc
    started: list[str] = []
    done: set[str] = set()
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="llm-artifacts-") as tmp:
        logs = {name: (Path(tmp) / f"{i}.out", Path(tmp) / f"{i}.err") for i, name in enumerate(names)}
        pending = list(names)
        running: dict[str, subprocess.Popen[bytes]] = {}
        while pending or running:
            ready = [n for n in pending if needs[n] <= done] if not failures else []
            ready = artifact_order.first_to_start(ready, rank)
            if not running and not ready:
                if failures:
                    break
                raise ArtifactError("产物互相依赖，无法决定先算哪一个：" + "、".join(pending))
            while ready and len(running) < _cores():
                name = ready.pop(0)
                pending.remove(name)
                _export_cached(code_dir)  # the upstream computed so far, for the new process to read
                running[name] = _start(name, *logs[name])
                started.append(name)
            for name, proc in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[name]
                stdout, stderr = (path.read_text(encoding="utf-8") for path in logs[name])
                for line in stdout.splitlines():
                    print(line, file=out, flush=True)
                if proc.returncode == 0:
                    done.add(name)
                else:
                    failures[name] = stderr.strip() or stdout.strip()
            if running:
                time.sleep(0.2)
    for name in names:
        if name in failures:
            raise ArtifactError(failures[name])
    return started


def upstream(artifact: Artifact, code_dir: Path = CODE) -> list[Artifact]:
    """The other artifacts whose compute function ``artifact``'s compute function reaches (e.g. a fine-tuning run
    that starts from the pretrained model): they must be cached first, so its process reads them instead of
    training them again. Artifacts declared with the same compute function (other arguments) are not among them."""
    reached = definition_deps([(artifact.module, artifact.compute)], code_dir).roots
    # the other parts computed by the same function (another argument) are siblings, not upstream: none reads another
    return [a for a in used_by(reached, code_dir) if (a.module, a.compute) != (artifact.module, artifact.compute)]


def _export_cached(code_dir: Path) -> list[Planned]:
    """Point ``LLM_ARTIFACT_<NAME>`` at every declared artifact that is cached (child processes inherit it)."""
    items = plan(list(discover(code_dir).values()), code_dir=code_dir)
    for item in items:
        if item.cached:
            os.environ[item.artifact.env] = str(item.path())
        else:
            os.environ.pop(item.artifact.env, None)
    return items


def ensure(needed: list[Artifact], out: TextIO | None = None, code_dir: Path = CODE) -> dict[str, Path]:
    """Make sure the ``needed`` artifacts are cached (computing stale ones in fresh processes), then point
    ``LLM_ARTIFACT_<NAME>`` at every declared artifact that is cached. Returns {name: file}.

    Stale artifacts are computed side by side (``_compute_as_ready``): one whose compute function reaches another
    stale artifact starts once that one is cached, with its path in the environment."""
    from filelock import FileLock  # a dependency of torch, which every artifact needs

    out = out or sys.stdout
    cache_dir = artifacts_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    wanted = list(needed)
    for artifact in wanted:  # grows while it is walked: the upstream of the upstream too
        wanted += [a for a in upstream(artifact, code_dir) if a not in wanted]
    # Nothing stale among what this caller needs (or it needs nothing): read the cache without the lock. Entries are
    # committed atomically, and waiting here for another build that is training other artifacts (minutes) would
    # stall a caller that uses none of them (tests/figures/test_pipeline.py timed out on that under load).
    if all(item.cached for item in plan(wanted, code_dir=code_dir)):
        return _cached_paths(needed, code_dir)
    # Two builds at once (a preview and the tests, or two test workers) train a stale model once: the second
    # waits here for the first, then finds it cached.
    with FileLock(str(cache_dir / ".lock")):
        build_cache.clean_stale_staging(cache_dir)
        stale = [item.artifact for item in plan(wanted, code_dir=code_dir) if not item.cached]
        if stale:
            _compute_as_ready(stale, out, code_dir)
    return _cached_paths(needed, code_dir)


def _cached_paths(needed: list[Artifact], code_dir: Path) -> dict[str, Path]:
    """Export every cached artifact's path (``LLM_ARTIFACT_<NAME>``); {name: file}. A needed one missing is an error."""
    paths = {}
    for item in _export_cached(code_dir):
        if item.cached:
            paths[item.artifact.name] = item.path()
        if item.artifact in needed and not item.cached:
            raise ArtifactError(f"产物 {item.artifact.name} 计算后仍不在缓存里：{item.path()}")
    return paths


def run(items: list[Planned], out: TextIO | None = None, code_dir: Path = CODE) -> int:
    """Compute every stale artifact of ``items`` in this process; a line per artifact. Returns how many."""
    out = out or sys.stdout
    build_cache.clean_stale_staging(artifacts_dir())
    built = 0
    for item in items:
        if item.cached:
            continue
        t0 = time.perf_counter()
        build(item, code_dir)
        built += 1
        a = item.artifact
        print(f"  [产物] {a.name:<24} {time.perf_counter() - t0:6.2f} s  ({rel(a.module)}: {a.call})",
              file=out, flush=True)
    return built
