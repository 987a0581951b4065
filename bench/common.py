"""Shared pieces: temporary workspaces, timed subprocess runs, statistics and machine info."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llmsite import report as step_report

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO  # the tree that workspaces copy (python -m llmsite bench --source)
PYTHON = sys.executable
# What a workspace copies from the repository (labs/ only when it exists).
COPY_DIRS = ("docs", "code", "data", "llmsite", "scripts", "overrides", "labs")
COPY_FILES = ("mkdocs.yml",)
LINKS: tuple[str, ...] = ()  # nothing outside these is needed (KaTeX is vendored in docs/)
_IGNORE = shutil.ignore_patterns("__pycache__", "*.py[co]", ".ipynb_checkpoints")
# Environment variables of the caller that would leak into the measured builds.
_SCRUB = ("LLM_SITE_CACHE", "SITE_URL", "REPO_URL", "COMMENTS_ENABLED")
SITE_URL = "http://127.0.0.1:8000/"
PACKAGES = (
    "mkdocs",
    "mkdocs-material",
    "pymdown-extensions",
    "jieba",
    "mkdocs-jupyter",
    "torch",
    "matplotlib",
    "numpy",
    "playwright",
    "PyYAML",
)
_BUILT_IN = re.compile(r"Documentation built in ([\d.]+) seconds")


class BenchError(RuntimeError):
    """A measured command failed: the benchmark cannot go on with this family."""


def log(message: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- statistics


@dataclass
class Samples:
    """Repeated measurements of one quantity, in seconds (or any unit)."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    def as_dict(self) -> dict[str, Any]:
        vals = self.values
        return {
            "median": self.median,
            "min": min(vals) if vals else None,
            "max": max(vals) if vals else None,
            "n": len(vals),
            "values": [round(v, 4) for v in vals],
        }


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def paired_ratio(a: Samples, b: Samples) -> float:
    """Median of the per-repeat ratios a[i] / b[i] (robust to drift in machine load)."""
    pairs = [x / y for x, y in zip(a.values, b.values, strict=False) if y]
    return statistics.median(pairs) if pairs else float("nan")


def rotate(items: Sequence[Any], i: int) -> list[Any]:
    """``items`` rotated by ``i``: alternates which variant runs first in each repeat."""
    k = i % len(items) if items else 0
    return list(items[k:]) + list(items[:k])


# --------------------------------------------------------------------------- processes


@dataclass
class Run:
    seconds: float
    returncode: int
    output: str
    steps: list[dict[str, Any]] = field(default_factory=list)  # the build's step reports (llmsite.report)
    # user + sys CPU seconds of the command and every descendant it waited for (getrusage(RUSAGE_CHILDREN) before
    # and after; the bench runs one command at a time, so nothing else is counted; ``timed_together`` reads each
    # job's own from os.wait4)
    cpu: float = 0.0

    @property
    def built_in(self) -> float | None:
        """MkDocs' own "Documentation built in X seconds" (without interpreter start-up)."""
        m = _BUILT_IN.search(self.output)
        return float(m.group(1)) if m else None

    @property
    def figures_built(self) -> tuple[int, float]:
        """(figures rebuilt, seconds) as the build reported them (llmsite.report); (0, 0.0) when none."""
        return step_report.total(self.steps, "figures")

    @property
    def labs_executed(self) -> tuple[int, float]:
        """(labs executed, seconds) as the build reported them (llmsite.report); (0, 0.0) when none."""
        return step_report.total(self.steps, "labs")

    def warnings(self) -> list[str]:
        return [line for line in self.output.splitlines() if "WARNING" in line]


def timed(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float = 1800, check: bool = True) -> Run:
    """Run ``cmd`` and measure its wall-clock time."""
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}") from exc
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = Run(time.perf_counter() - start, proc.returncode, proc.stdout, cpu=cpu)
    if check and proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-30:])
        raise BenchError(f"exit code {proc.returncode}: {' '.join(cmd)} (in {cwd})\n{tail}")
    return run


@dataclass(frozen=True)
class Job:
    """One command of ``timed_together``; its output goes to ``log`` (a file, so a chatty command cannot block)."""

    cmd: Sequence[str]
    cwd: Path
    env: dict[str, str]
    log: Path


def timed_together(jobs: Sequence[Job], *, timeout: float = 1800) -> list[Run]:
    """Start every job at once and wait for all; each one's wall time and its own CPU seconds.

    Side by side, the jobs see the same machine at the same moment, so a slow hour of a shared machine slows them
    alike and their difference keeps what is theirs. Each job's CPU comes from ``os.wait4`` on its own process
    (user + sys of it and every descendant it waited for): ``getrusage(RUSAGE_CHILDREN)`` would mix the jobs.
    A job still running after ``timeout`` seconds is killed with its process group and raises ``BenchError``."""
    procs: list[subprocess.Popen[bytes]] = []
    outputs = []
    start = time.perf_counter()
    for job in jobs:
        out = job.log.open("wb")
        outputs.append(out)
        procs.append(subprocess.Popen(list(job.cmd), cwd=job.cwd, env=job.env, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    results: dict[int, tuple[float, int, float]] = {}

    def wait(i: int, proc: subprocess.Popen[bytes]) -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
        results[i] = (time.perf_counter() - start, proc.returncode, usage.ru_utime + usage.ru_stime)

    waiters = [threading.Thread(target=wait, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    for w in waiters:
        w.start()
    deadline = start + timeout
    for w in waiters:
        w.join(max(0.0, deadline - time.perf_counter()))
    late = [i for i, w in enumerate(waiters) if w.is_alive()]
    for i in late:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(procs[i].pid, signal.SIGKILL)
    for w in waiters:
        w.join()
    for out in outputs:
        out.close()
    if late:
        names = "; ".join(" ".join(jobs[i].cmd) for i in late)
        raise BenchError(f"timed out after {timeout:.0f} s: {names}")
    runs = []
    for i, job in enumerate(jobs):
        seconds, code, cpu = results[i]
        runs.append(Run(seconds, code, job.log.read_text(encoding="utf-8", errors="replace"), cpu=cpu))
    return runs


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- mkdocs.yml


class _LenientLoader(yaml.SafeLoader):
    """Reads mkdocs.yml: ``!ENV [NAME, default]`` gives the default, python tags give None."""


def _env_tag(loader: _LenientLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node)
        return items[-1] if items else None
    if isinstance(node, yaml.ScalarNode):
        return None
    return None


_LenientLoader.add_constructor("!ENV", _env_tag)
_LenientLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def read_config(path: Path) -> dict[str, Any]:
    """mkdocs.yml as plain data (custom tags resolved leniently); for reading hooks and nav."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LenientLoader)
    return data if isinstance(data, dict) else {}


def write_child_config(path: Path, overrides: dict[str, Any], parent: str = "mkdocs.yml") -> Path:
    """A config that inherits ``parent`` (MkDocs' INHERIT: dicts merge, lists are replaced)."""
    data = {"INHERIT": parent, **overrides}
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- workspaces


@dataclass
class Workspace:
    """A temporary copy of the repository: docs/, code/, data/, llmsite/, scripts/, overrides/, labs/, mkdocs.yml."""

    root: Path

    @classmethod
    def create(
        cls, dest: Path, *, source: Path | None = None, cache_from: Path | None = None, git: bool = True
    ) -> Workspace:
        source = source or SOURCE
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in COPY_DIRS:
            if (source / name).is_dir():
                shutil.copytree(source / name, dest / name, ignore=_IGNORE, symlinks=True)
        for name in COPY_FILES:
            shutil.copy2(source / name, dest / name)
        for name in LINKS:
            target = (source / name).resolve()
            if target.exists():
                (dest / name).symlink_to(target, target_is_directory=True)
        ws = cls(dest)
        if cache_from is not None and cache_from.is_dir():
            shutil.copytree(cache_from, ws.cache, symlinks=True)
        if git:
            ws.commit("bench: workspace")
        return ws

    @property
    def cache(self) -> Path:
        return self.root / ".cache"

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env.update(
            {
                "NO_MKDOCS_2_WARNING": "1",
                "LLM_SITE_CACHE": str(self.cache),
                "SITE_URL": SITE_URL,
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(extra)
        return env

    def clear_cache(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)

    def commit(self, message: str) -> None:
        """Commit everything, so the git-dates hook does its real work (one ``git log``)."""
        if shutil.which("git") is None:
            return
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]
        if not (self.root / ".git").is_dir():
            subprocess.run([*git, "init", "-q"], cwd=self.root, check=True)
            (self.root / ".gitignore").write_text("/site*/\n/.cache/\n/node_modules\n__pycache__/\n/hugo*/\n")
        subprocess.run([*git, "add", "-A"], cwd=self.root, check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], cwd=self.root, check=True)

    def mkdocs_build(
        self,
        site: str = "site",
        *,
        config: str = "mkdocs.yml",
        strict: bool = True,
        check: bool = True,
        extra_env: dict[str, str] | None = None,
        profile: Path | None = None,
    ) -> Run:
        """``mkdocs build`` as the maintainer runs it (from the repository root, so snippets resolve)."""
        runner = [PYTHON, "-m", "cProfile", "-o", str(profile)] if profile else [PYTHON]
        cmd = [*runner, "-m", "mkdocs", "build", "-f", config, "-d", site, *(["--strict"] if strict else [])]
        reports = self.root / ".bench-step-report.jsonl"
        reports.unlink(missing_ok=True)
        env = self.env(**{step_report.ENV: str(reports), **(extra_env or {})})
        run = timed(cmd, cwd=self.root, env=env, check=check)
        run.steps = step_report.read(reports)
        return run

    def python(self, *args: str, check: bool = True) -> Run:
        reports = self.root / ".bench-step-report.jsonl"
        reports.unlink(missing_ok=True)
        run = timed([PYTHON, *args], cwd=self.root, env=self.env(**{step_report.ENV: str(reports)}), check=check)
        run.steps = step_report.read(reports)
        return run


# --------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version_of(cmd: list[str]) -> str | None:
    exe = shutil.which(cmd[0]) or (cmd[0] if Path(cmd[0]).exists() else None)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def _git_state() -> dict[str, Any]:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return {}
    return {"commit": head, "dirty": bool(dirty)}


def fingerprint(source: Path = REPO) -> dict[str, Any]:
    """Hash of every file a workspace copies: tells whether two runs measured the same tree."""
    digest = hashlib.sha256()
    count = 0
    for name in (*COPY_DIRS, *COPY_FILES):
        base = source / name
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for path in files:
            if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                continue
            digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes())
            count += 1
    return {"source": str(source), "files": count, "sha256": digest.hexdigest()[:16]}


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine_info() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    mem_gib = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem_gib = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
        "hugo": _version_of(["hugo", "version"]),
        "chromium": _version_of([os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), "--version"]),
        "git": _version_of(["git", "--version"]),
        "repo": _git_state(),
        "load_average_start": load_average(),
    }
