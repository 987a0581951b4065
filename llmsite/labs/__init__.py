"""Hands-on labs: jupytext sources in ``labs/``, executed once per change, cached.

A lab is ``labs/<name>.py`` in jupytext's percent format. Its cache key is a
hash of the lab source, the definitions of ``code/`` it really uses (followed
through imports, compared without comments or docstrings:
``llmsite.cache.deps.definition_deps``), the keys of the build artifacts it uses (a
trained model: ``artifacts``), the versions of the libraries that run it, the
kernel name and this pipeline's version. On a miss the stale artifacts are
computed, the lab is converted to a notebook, executed with nbclient (cwd =
the repository root), rendered as a page body (``labs/page.py``: ``page.html``
and ``toc.json``), and the entry is committed atomically to
``.cache/labs/<name>/<key>/`` (the notebook at ``labs/<name>.ipynb`` inside it).

Executed notebooks are byte-stable: cell ids are derived from the cells'
content, timing metadata is dropped, consecutive stream outputs are merged
(how the kernel happened to batch a cell's prints does not matter), and labs
print no wall-clock values (the build log reports timings).

The notebook offered for download (``published``) is built from the cached one:
a first code cell writes the ``code/`` files the lab imports, byte for byte as
they are in the repository now, next to the notebook, so it runs outside the
repository. It and the page with its plots taken out are stored in the entry
(``labs/stored.py``), so a warm build only reads them.

Planning (``discover``, ``plan``) is cheap: no jupytext, nbclient or torch.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, TextIO

from llmsite import artifacts, tex
from llmsite import cache as build_cache
from llmsite.cache.deps import closure, definition_deps, key_name
from llmsite.labs import page
from llmsite.paths import CACHE, CODE, ROOT, rel

PIPELINE_VERSION = "5"  # 3: the rendered page (page.html, toc.json) is part of the entry; 4: focusable text outputs;
# 5: formulas checked with KaTeX, written as arithmatex markup for the build to render (KaTeX version in the key)
KERNEL = "python3"
CELL_TIMEOUT = 300  # seconds per cell
LABS_DIR = "labs"  # top-level folder of the sources, and the site folder of the notebooks
CACHE_DIR = CACHE / "labs"
# What runs the notebook, on top of what draws the figures (torch, numpy, matplotlib, fonts, python).
LIBRARIES = ("torch", "numpy", "matplotlib")  # what the labs compute and plot with
# executing the notebook, and rendering it as a page (labs/page.py)
RUNNER_LIBRARIES = ("jupytext", "nbformat", "nbclient", "ipykernel", "jupyter_client", "mkdocs-jupyter", "nbconvert",
                    "pymdown-extensions")
CELL_MARKER = re.compile(r"^# %%")
TITLE = re.compile(r"^# # (?P<title>.+?)\s*$")


@dataclass(frozen=True)
class Lab:
    name: str
    source: Path  # labs/<name>.py

    @property
    def uri(self) -> str:
        """The notebook's path in the site (docs-relative)."""
        return f"{LABS_DIR}/{self.name}.ipynb"

    @property
    def where(self) -> str:
        return rel(self.source)


class LabError(RuntimeError):
    pass


def discover(labs_dir: Path = ROOT / LABS_DIR) -> dict[str, Lab]:
    """Every ``labs/*.py`` by name (files starting with ``_`` are helpers, not labs)."""
    return {
        p.stem: Lab(p.stem, p)
        for p in sorted(labs_dir.glob("*.py"))
        if not p.name.startswith("_")
    }


def title(lab_uri: str, root: Path = ROOT) -> str | None:
    """The ``# `` heading of a lab's first Markdown cell, read from its source (no jupytext)."""
    name = Path(lab_uri).stem
    source = root / LABS_DIR / f"{name}.py"
    if not source.is_file():
        return None
    in_markdown = False
    for line in source.read_text(encoding="utf-8").splitlines():
        if CELL_MARKER.match(line):
            if in_markdown:
                return None  # the first Markdown cell had no title
            in_markdown = "[markdown]" in line
        elif in_markdown and (m := TITLE.match(line)):
            return m.group("title")
    return None


def generated_page(target: Path, docs: Path, root: Path = ROOT) -> bool:
    """Whether ``target`` (a path under ``docs``) is a lab page that the build generates.

    ``docs/labs/<name>.ipynb`` is not a file in docs/, but it is a page of the site
    whenever ``labs/<name>.py`` exists: link checks that look at docs/ only can
    accept such targets with this.
    """
    try:
        inside = target.resolve().relative_to(docs.resolve())
    except ValueError:
        return False
    return (
        len(inside.parts) == 2
        and inside.parts[0] == LABS_DIR
        and inside.suffix == ".ipynb"
        and not inside.name.startswith("_")
        and (root / LABS_DIR / f"{inside.stem}.py").is_file()
    )


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


def code_files(lab: Lab, code_dir: Path = CODE) -> list[Path]:
    """The files of ``code/`` a lab imports, transitively, whole: what a downloaded notebook needs."""
    source = lab.source.resolve()
    return [p for p in closure(lab.source, code_dir) if p != source]


DATA_DECLARATION = "DATA_FILES"  # in a code/ module: the data files it reads (repository paths), bundled too


@lru_cache(maxsize=256)
def _declared_data(path: Path, mtime_ns: int) -> tuple[str, ...]:
    text = path.read_text(encoding="utf-8")
    if DATA_DECLARATION not in text:  # most modules: no syntax tree needed
        return ()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == DATA_DECLARATION
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
                raise LabError(f"{rel(path)}:{node.lineno}: {DATA_DECLARATION} 应是由字符串组成的元组，"
                               "写仓库里的路径，例如 (\"data/x/y.txt\",)")
            return value
    return ()


def bundled_files(lab: Lab, code_dir: Path = CODE, repo: Path = ROOT) -> dict[str, Path]:
    """{file name: path} of what a downloaded notebook writes next to itself: the ``code/`` files the lab
    imports and the data files those modules declare in ``DATA_FILES``."""
    out: dict[str, Path] = {}
    for module in code_files(lab, code_dir):
        out[module.name] = module
    for module in code_files(lab, code_dir):
        for item in _declared_data(module, module.stat().st_mtime_ns):
            path = repo / item
            if not path.is_file():
                raise LabError(f"{rel(module)}: {DATA_DECLARATION} 里的 {item} 不存在")
            if path.name in out and out[path.name] != path:
                raise LabError(f"{rel(module)}: 数据文件 {item} 与 {rel(out[path.name])} 同名，下载时会互相覆盖")
            out[path.name] = path
    return out


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


# --------------------------------------------------------------------------- execution


def _cell_lines(source: Path) -> list[int]:
    """1-based line of each ``# %%`` cell marker of a percent-format source."""
    lines = source.read_text(encoding="utf-8").splitlines()
    return [n for n, line in enumerate(lines, 1) if CELL_MARKER.match(line)]


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")


def cell_ids(cells: list[Any]) -> None:
    """Give every cell an id derived from its type and source (the same notebook -> the same ids)."""
    seen: dict[str, int] = {}
    for cell in cells:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        base = hashlib.sha256(f"{cell['cell_type']}\0{source}".encode()).hexdigest()[:16]
        n = seen.get(base, 0)
        seen[base] = n + 1
        cell["id"] = base if n == 0 else f"{base}-{n}"


def merge_streams(outputs: list[Any]) -> list[Any]:
    """Each run of consecutive stream outputs as one stdout output, then one stderr output.

    The kernel flushes stdout and stderr on their own timers, so how a cell's prints are cut into
    outputs, and how the two streams interleave, varies run to run; a plot or other display output
    flushes both first, so the runs between them do not.
    """
    merged: list[Any] = []
    run: dict[str, Any] = {}
    for out in [*outputs, None]:
        if out is not None and out.get("output_type") == "stream":
            if out["name"] in run:
                run[out["name"]]["text"] += out["text"]
            else:
                run[out["name"]] = out
            continue
        merged += [run[name] for name in ("stdout", "stderr") if name in run]
        run = {}
        if out is not None:
            merged.append(out)
    return merged


def to_notebook(source: Path) -> Any:
    """The lab as an (unexecuted) notebook with the python3 kernel and content-derived cell ids."""
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.pop("jupytext", None)  # the downloaded notebook stands on its own
    cell_ids(nb.cells)
    return nb


def _describe_failure(lab: Lab, nb: Any, index: int | None, exc: BaseException) -> str:
    if index is None:
        return f"动手实验 {lab.where} 执行失败：{type(exc).__name__}: {exc}"
    markers = _cell_lines(lab.source)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    number = code_cells.index(index) + 1 if index in code_cells else index + 1
    raw = getattr(exc, "traceback", None) or ""  # CellExecutionError: one string; kernel replies: a list
    trace = _ANSI.sub("", raw if isinstance(raw, str) else "\n".join(raw))
    line = markers[index] if len(markers) == len(nb.cells) else None
    if line is not None and (m := _CELL_LINE.search(trace)):
        line += int(m.group(1))  # the failing line inside the cell (the marker is the cell's line 0)
    where = f"{lab.where}:{line}" if line else lab.where
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = nb.cells[index].source.strip().splitlines()
    shown = "\n".join(f"    {s}" for s in source[:12]) + ("\n    ……" if len(source) > 12 else "")
    tail = "\n".join(trace.strip().splitlines()[-8:]) if trace else ""
    out = f"动手实验 {lab.where} 的第 {number} 个代码单元出错（{where}）：{ename}: {evalue}\n单元内容：\n{shown}"
    return out + (f"\n出错位置：\n{tail}" if tail else "")


def _kernel_run(item: Planned, cwd: Path) -> Any:
    """Execute one lab's notebook in a fresh kernel and return it; raise LabError naming the lab and cell.

    Safe to call from several threads at once: each call has its own kernel (a process) and its own event loop."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    lab = item.lab
    nb = to_notebook(lab.source)
    current: dict[str, int | None] = {"index": None}

    def on_cell_start(cell: Any, cell_index: int) -> None:
        current["index"] = cell_index

    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
        on_cell_start=on_cell_start,
        # The kernel logs a warning about plain-TCP transport on every start (loopback only): keep it quiet.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        raise LabError(_describe_failure(lab, nb, current["index"], exc)) from exc
    return nb


def _commit(item: Planned, nb: Any, cache_dir: Path, cwd: Path) -> Path:
    """Write an executed notebook and its page into the cache, atomically (in the calling thread: KaTeX runs here)."""
    import nbformat

    lab = item.lab
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = build_cache.staging_dir(cache_dir, lab.name)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        # What differs run to run and means nothing to a reader: timing metadata, the batching of prints.
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
            if cell.cell_type == "code":
                cell.outputs = merge_streams(cell.outputs)
        (staging / LABS_DIR).mkdir(parents=True)
        nbformat.write(nb, staging / LABS_DIR / f"{lab.name}.ipynb")
        try:
            page.write(staging / LABS_DIR / f"{lab.name}.ipynb", title(lab.uri, cwd) or lab.name, staging, lab.source)
        except page.PageError as exc:  # e.g. a formula KaTeX rejects: reported like a cell that fails
            raise LabError(f"动手实验 {lab.where} 的页面无法生成：\n{exc}") from exc
        from llmsite.labs import stored  # imports this module

        stored.prepare(staging, lab)  # what the build derives from the entry, so that it only reads it
        (staging / "inputs.json").write_text(
            json.dumps(item.key.inputs, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8"
        )
        return build_cache.commit_dir(staging, entry_dir(lab, item.key, cache_dir))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def workers_for(count: int) -> int:
    """Kernels run side by side: one per core, at most two (as the figures); ``LLM_LAB_WORKERS`` overrides."""
    configured = os.environ.get("LLM_LAB_WORKERS")
    limit = int(configured) if configured else min(2, os.cpu_count() or 1)
    return max(1, min(limit, count))


def run(
    items: list[Planned], cache_dir: Path = CACHE_DIR, cwd: Path = ROOT, out: TextIO | None = None
) -> tuple[int, int]:
    """Execute every stale lab, print a line per lab and a total. Returns (executed, cached).

    Stale labs run in kernels side by side (``workers_for``); each kernel is its own process and the notebooks are
    byte-stable, so the cache holds the same bytes whatever the number of workers. Each notebook is committed in
    this thread as soon as its kernel is done. When a lab fails, the labs not yet started are not started, the
    running ones finish, and the first failure is raised."""
    out = out or sys.stdout
    build_cache.clean_stale_staging(cache_dir)
    start = time.perf_counter()
    stale = [item for item in items if not item.cached]
    needed: list[artifacts.Artifact] = []
    for item in stale:
        needed += [a for a in uses_artifacts(item.lab) if a not in needed]
    if stale:
        artifacts.ensure(needed, out)  # the kernels inherit LLM_ARTIFACT_<NAME>
    for item in items:
        if item.cached:
            print(f"  [缓存] {item.lab.name:<24} {0.0:6.2f} s", file=out, flush=True)

    def timed(item: Planned) -> tuple[Any, float]:
        t0 = time.perf_counter()
        return _kernel_run(item, cwd), t0

    from concurrent.futures import ThreadPoolExecutor, as_completed  # only when executing: not on a warm build

    with ThreadPoolExecutor(max_workers=workers_for(len(stale)), thread_name_prefix="lab") as pool:
        futures = {pool.submit(timed, item): item for item in stale}
        try:
            for future in as_completed(futures):
                item = futures[future]
                nb, t0 = future.result()
                _commit(item, nb, cache_dir, cwd)
                print(f"  [执行] {item.lab.name:<24} {time.perf_counter() - t0:6.2f} s  ({item.lab.where})",
                      file=out, flush=True)
        except BaseException:
            for other in futures:
                other.cancel()
            raise
    total = time.perf_counter() - start
    executed, cached = len(stale), len(items) - len(stale)
    print(f"共 {len(items)} 个动手实验：{executed} 个重新执行，{cached} 个来自缓存，用时 {total:.2f} s",
          file=out, flush=True)
    return executed, cached


# --------------------------------------------------------------------------- the notebook offered for download

BUNDLE_DIR = "llm_code"  # next to the downloaded notebook; the labs' first code cell looks there too
BUNDLE_TAG = "llm-code-files"


def bundle_cell_source(files: dict[str, str]) -> str:
    """A code cell that writes ``files`` ({file name: text}) into ``llm_code/`` next to the notebook."""
    entries = "\n".join(f"        {name!r}: {text!r}," for name, text in files.items())
    return f"""# 这一格是网站生成下载文件时加上的：把这个实验要用到的 {len(files)} 个文件
# （仓库 code/ 目录里的代码和它们读取的数据，原样内容）写到 Notebook 旁边的 {BUNDLE_DIR}/ 目录里，下一格从那里导入。
# 已经存在而内容不同的文件不会被覆盖：那是你改过的版本，想恢复原样就删掉它，再运行这一格。
def write_code_files():
    from pathlib import Path

    code_files = {{
{entries}
    }}
    folder = Path("{BUNDLE_DIR}")
    folder.mkdir(exist_ok=True)
    for name, text in code_files.items():
        path = folder / name
        if not path.exists():
            path.write_text(text, encoding="utf-8")
        elif path.read_text(encoding="utf-8") != text:
            print(f"保留你改过的 {{path}}（与下载时的版本不同）")
    print(f"文件写在 {{folder.resolve()}}：" + "、".join(code_files))


write_code_files()"""


def published(executed: Path, lab: Lab, code_dir: Path = CODE) -> bytes:
    """The notebook readers download: the executed one with a first code cell carrying the ``code/`` files.

    The files are read now, so they match the repository even when only a comment changed since the
    lab was executed (a change that, by design, does not execute it again). Plain JSON: no jupytext or
    nbformat import in the MkDocs process.
    """
    nb = json.loads(executed.read_text(encoding="utf-8"))
    files = {name: path.read_text(encoding="utf-8") for name, path in sorted(bundled_files(lab, code_dir).items())}
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"jupyter": {"source_hidden": True}, "tags": [BUNDLE_TAG]},
        "outputs": [],
        "source": bundle_cell_source(files).splitlines(keepends=True),
    }
    first_code = next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"), len(nb["cells"]))
    nb["cells"].insert(first_code, cell)
    cell_ids(nb["cells"])
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
