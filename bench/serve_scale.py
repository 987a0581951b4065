"""Preview at scale: save -> page served, with N synthetic articles, for three preview servers.

For each N (``--serve-sizes``, default 100 and 1000) a temporary copy gets N synthetic
articles (``synth``, stages of 50 in data/route.yml) and one untimed build (validation
passes, figures cached, the SVGs the plain-Material docs need). Then each server variant
(``VARIANTS``, a list of data: command, config, docs folder) runs in turn on that copy:

- ``incremental``: ``python -m llmsite serve`` (re-renders only what a save touches);
- ``mkdocs``:      ``python -m mkdocs serve`` with our config (a full rebuild per save);
- ``material``:    ``python -m mkdocs serve`` on the plain-Material config (``variants.prepare_baseline``);
- ``zensical``:    Zensical's own preview of the staged tree (``python -m llmsite zensical --serve``): only the body
                   edit, in the staged copy (titles in listings and code snippets are staged once).

Measured for each variant:

- startup: process start -> the first page served (HTTP 200);
- for each kind of edit (``EDITS``), save -> every page that must change served with a unique marker:
  - ``body``: a sentence with the marker appended to one synthetic article -> that article's page;
  - ``title``: the article's front-matter ``title`` set to a new title holding the marker -> every page
    that showed the old title when the server started (found by fetching: the article, its previous and
    next pages in the footer, the article list page that lists it, route/, tags/, the home page); the
    time is when the last of them shows it;
  - ``code``: a comment line in a snippet section of a ``code/`` module (``build.edit_module``) ->
    the real article that includes that snippet;
- memory: the server process's peak resident set (``VmHWM`` of /proc/PID/status, children not included)
  after the first build and after the edits.

Between edits the server must have logged a finished build and then written nothing for ``SETTLE``
seconds. Every edit is undone before the next variant starts, so all variants see the same files.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import yaml

from . import common, synth
from .build import MODULE, edit_module
from .common import PYTHON, BenchError, Samples, Workspace, fingerprint, free_port, load_average, log, ratio
from .serve import fetch, stop
from .variants import BASELINE_CONFIG, BASELINE_DOCS, prepare_baseline

DEFAULT_SIZES = (100, 1000)
DEFAULT_REPEATS = 2
SLOW_N = 1000  # from this N on, the full-rebuild variants get SLOW_REPEATS (a rebuild takes about a minute)
SLOW_REPEATS = 1
POLL = 0.1  # seconds between polling rounds (every pending page once a round)
SETTLE = 2.0  # seconds without log output after a finished build, before the next save
TIMEOUT = 600.0  # per wait
CODE_PAGE = "articles/transformer-attention/"  # includes snippets of MODULE (code/positional_encoding.py)
EDITS = ("body", "title", "code")
_BUILT = re.compile(r"Documentation built in ([\d.]+) seconds")  # MkDocs' CLI drops a repeated message: not a count
# MkDocs' live-reload server (also under python -m llmsite serve) logs one of these after every build.
_FINISHED = re.compile(r"Reloading browsers|An error happened during the rebuild")
_FOOTER = re.compile(r'<a href="([^"]+)" class="md-footer__link md-footer__link--(prev|next)"')
_TITLE_LINE = re.compile(r"^title:.*$", re.MULTILINE)


@dataclass(frozen=True)
class Variant:
    """One preview server: how to start it (after the Python interpreter; ``{addr}`` is host:port)."""

    name: str
    command: tuple[str, ...]
    docs: str  # the docs folder its pages come from (where the article edits go)
    probe: tuple[str, ...] | None = None  # must exit 0, else the variant is skipped (command not there yet)
    listings: bool = True  # the site has article list pages, route/ and tags/ listing titles
    finished: str = _FINISHED.pattern  # what its log says after each rebuild
    edits: tuple[str, ...] = ("body", "title", "code")  # the kinds of edit its pages follow
    setup: tuple[str, ...] | None = None  # run once before it starts (makes its docs folder)


VARIANTS: tuple[Variant, ...] = (
    Variant(
        "incremental",
        ("-m", "llmsite", "serve", "--dev-addr", "{addr}"),
        "docs",
        probe=("-m", "llmsite", "serve", "--help"),
    ),
    Variant("mkdocs", ("-m", "mkdocs", "serve", "--dev-addr", "{addr}"), "docs"),
    Variant(
        "material",
        ("-m", "mkdocs", "serve", "-f", BASELINE_CONFIG, "--dev-addr", "{addr}"),
        BASELINE_DOCS,
        listings=False,
    ),
    # Zensical's own preview of the staged tree (llmsite/zensical/build.py serve): a save in the staged copy of an
    # article. The staging is one-shot, so the pages that list a title (route, tags, lists) and the code snippets
    # do not follow an edit: only the body edit is measured.
    Variant(
        "zensical",
        ("-m", "llmsite", "zensical", "--serve", "--dev-addr", "{addr}"),
        ".zensical/docs",
        probe=("-m", "zensical", "--version"),
        listings=False,
        finished=r"issues? found",
        edits=("body",),
        setup=("-m", "llmsite", "zensical"),
    ),
)
BASELINE = "material"


@dataclass
class ServeScaleContext:
    tmp: Path
    seed_cache: Path | None
    sizes: Sequence[int] = DEFAULT_SIZES
    repeats: int = DEFAULT_REPEATS
    variants: Sequence[str] = tuple(v.name for v in VARIANTS)
    # Called after every measured edit while the server still runs (tests check the pages independently).
    after_edit: Callable[[Server, dict[str, Any]], None] | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the server process


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to the default, so the new Python turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Server:
    """A preview server started in a workspace, with its log; pages are fetched over HTTP."""

    def __init__(self, ws: Workspace, variant: Variant, log_path: Path) -> None:
        self.ws, self.variant, self.log_path = ws, variant, log_path
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def start(self) -> None:
        cmd = [PYTHON, *(a.replace("{addr}", f"127.0.0.1:{self.port}") for a in self.variant.command)]
        with self.log_path.open("w", encoding="utf-8") as fh:
            self.started = time.perf_counter()
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.ws.root,
                env=self.ws.env(SITE_URL=self.base),
                stdout=fh,
                stderr=subprocess.STDOUT,
                # Ctrl-C must stop it (stop() sends SIGINT) even when the bench runs in the background of a
                # shell, whose children inherit SIGINT ignored: Python then never raises KeyboardInterrupt.
                preexec_fn=_default_sigint,
            )

    def url(self, path: str) -> str:
        return urljoin(self.base, path)

    def page(self, path: str) -> str | None:
        return fetch(self.url(path))

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def builds(self) -> list[float]:
        """Build times the server logged ("Documentation built in X seconds"), in order."""
        return [float(x) for x in _BUILT.findall(self.log_text())]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_started(self, path: str, timeout: float = TIMEOUT) -> float:
        """Seconds from process start to ``path`` served."""
        deadline = self.started + timeout
        while time.perf_counter() < deadline:
            if self.page(path) is not None:
                return time.perf_counter() - self.started
            if not self.alive():
                raise BenchError(f"{self.variant.name}: server exited before serving:\n{self.log_text()[-2000:]}")
            time.sleep(POLL)
        raise BenchError(f"{self.variant.name}: {path} not served within {timeout:.0f} s")

    def finished(self) -> int:
        """Rebuilds the server has finished (after the first build, which is before it serves)."""
        return len(re.findall(self.variant.finished, self.log_text()))

    def wait_quiet(self, finished_before: int | None, timeout: float = TIMEOUT) -> None:
        """Until a rebuild finished after ``finished_before`` (None: no rebuild expected) and the log then
        stayed unchanged for SETTLE s."""
        deadline = time.perf_counter() + timeout
        while finished_before is not None and self.finished() <= finished_before:
            if time.perf_counter() > deadline or not self.alive():
                raise BenchError(f"{self.variant.name}: no finished rebuild logged within {timeout:.0f} s")
            time.sleep(0.2)
        size, since = -1, time.perf_counter()
        while time.perf_counter() < deadline:
            now = self.log_path.stat().st_size
            if now != size:
                size, since = now, time.perf_counter()
            elif time.perf_counter() - since >= SETTLE:
                return
            time.sleep(0.2)
        raise BenchError(f"{self.variant.name}: the log did not go quiet within {timeout:.0f} s")

    def memory_kib(self) -> dict[str, int]:
        """VmHWM (peak resident set) and VmRSS of the server process, in KiB."""
        out: dict[str, int] = {}
        if self.proc is None:
            return out
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return out
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
        return out

    def stop(self) -> str:
        return stop(self.proc) if self.proc is not None else "not started"


def wait_all(
    server: Server, pages: Sequence[str], marker: str, start: float, timeout: float = TIMEOUT
) -> dict[str, float]:
    """Poll every page until each shows ``marker``; seconds from ``start`` at which each first did."""
    seen: dict[str, float] = {}
    deadline = start + timeout
    while True:
        for path in pages:
            if path not in seen and marker in (server.page(path) or ""):
                seen[path] = time.perf_counter() - start
        if len(seen) == len(pages):
            return seen
        if time.perf_counter() > deadline:
            missing = [p for p in pages if p not in seen]
            raise BenchError(f"{server.variant.name}: marker {marker} not on {missing} within {timeout:.0f} s")
        if not server.alive():
            raise BenchError(f"{server.variant.name}: server exited:\n{server.log_text()[-2000:]}")
        time.sleep(POLL)


# --------------------------------------------------------------------------- edits


def new_marker(tag: str) -> str:
    return f"benchmark{tag}{uuid.uuid4().hex[:8]}"


def append_body(path: Path, marker: str) -> None:
    """One more paragraph at the end of the article (the site's typography: the Latin marker set off by a space)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n保存之后这一句应当出现在页面上，基准测试标记 {marker}\n")


def set_title(path: Path, marker: str) -> str:
    """Replace the front matter's ``title``; returns the new title."""
    title = f"基准测试改过的标题 {marker}"
    text = path.read_text(encoding="utf-8")
    new, count = _TITLE_LINE.subn(f"title: {title}", text, count=1)
    if count != 1:
        raise BenchError(f"no title line in {path}")
    path.write_text(new, encoding="utf-8")
    return title


def front_title(text: str) -> str:
    """The ``title`` of a Markdown file's front matter."""
    meta = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
    if not isinstance(meta, dict) or not meta.get("title"):
        raise BenchError("no title in the front matter")
    return str(meta["title"])


def target_slug(n: int) -> str:
    """A synthetic article inside its stage (previous and next are synthetic articles when n >= 3)."""
    return f"{synth.SLUG_PREFIX}-{(min(n, synth.STAGE_SIZE) + 1) // 2:04d}"


def title_pages(server: Server, slug: str, title: str) -> dict[str, Any]:
    """Pages that show the article's title now (so must show a new one): found by fetching the candidates."""
    article = f"articles/{slug}/"
    html = server.page(article) or ""
    candidates = [article]
    for href, _kind in _FOOTER.findall(html):
        candidates.append(urljoin(article, href).lstrip("/") if not href.startswith("http") else href)
    candidates += ["", "route/", "tags/"]
    listing: str | None = None
    for k in range(1, 10_000):
        path = "articles/" if k == 1 else f"articles/page/{k}/"
        text = server.page(path)
        if text is None:
            break
        if title in text:
            listing = path
            break
    if listing:
        candidates.append(listing)
    pages = [p for p in dict.fromkeys(candidates) if title in (server.page(p) or "")]
    return {"pages": pages, "listing": listing}


# --------------------------------------------------------------------------- one variant, one size


def _measure(
    server: Server, kind: str, i: int, files: dict[str, Path], pages: list[str], ctx: ServeScaleContext
) -> dict[str, Any]:
    before, built_before = server.finished(), len(server.builds())
    log_at = server.log_path.stat().st_size
    marker = new_marker(f"{kind[0]}{i}")
    start = time.perf_counter()
    if kind == "body":
        append_body(files["article"], marker)
    elif kind == "title":
        set_title(files["article"], marker)
    else:
        marker = edit_module(server.ws, f"c{i}")  # its own marker; the time starts just before the save
    seen = wait_all(server, pages, marker, start)
    server.wait_quiet(before)
    builds = server.builds()[built_before:]
    delta = server.log_text().encode("utf-8")[log_at:].decode("utf-8", "replace")
    sample = {
        "seconds": max(seen.values()),
        "marker": marker,
        "pages": seen,
        "builds_logged": builds,
        "log": [line for line in delta.splitlines() if "构建" in line or "built" in line][:6],
    }
    if ctx.after_edit is not None:
        ctx.after_edit(server, sample)
    return sample


def run_variant(ws: Workspace, variant: Variant, n: int, repeats: int, ctx: ServeScaleContext) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average(), "repeats": repeats}
    if variant.setup is not None:
        proc = subprocess.run([PYTHON, *variant.setup], cwd=ws.root, env=ws.env(), capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise BenchError(f"{variant.name}: `{' '.join(variant.setup)}` exits {proc.returncode}: "
                             f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
    slug = target_slug(n)
    article = ws.root / variant.docs / "articles" / f"{slug}.md"
    files = {"article": article, "module": ws.root / MODULE}
    saved = {key: path.read_text(encoding="utf-8") for key, path in files.items()}
    old_title = front_title(saved["article"])
    server = Server(ws, variant, ctx.tmp / f"serve-scale-{n}-{variant.name}.log")
    server.start()
    try:
        out["startup_s"] = server.wait_started(f"articles/{slug}/")
        server.wait_quiet(None)
        out["memory_after_start_kib"] = server.memory_kib()
        log(f"serve-scale: N={n} {variant.name}: first page after {out['startup_s']:.2f} s")
        found = title_pages(server, slug, old_title)
        out["title_pages"] = found["pages"]
        if variant.listings:
            wanted = ["route/", "tags/", found["listing"]]
            missing = [p for p in wanted if p not in found["pages"]]
            if missing or found["listing"] is None:
                raise BenchError(f"{variant.name}: the title {old_title} is not on {missing} (listing {found})")
        code_source = (ws.root / variant.docs / "articles" / "transformer-attention.md").read_text(encoding="utf-8")
        plan: dict[str, list[str]] = {"body": [f"articles/{slug}/"], "title": found["pages"]}
        if MODULE in code_source:
            plan["code"] = [CODE_PAGE]
        else:
            out["code"] = {"skipped": f"{CODE_PAGE} of this variant does not include {MODULE}"}
        for kind in EDITS:
            if kind not in variant.edits:
                out[kind] = {"skipped": f"{variant.name} does not follow this edit"}
                continue
            if kind not in plan:
                continue
            samples = Samples()
            details = []
            for i in range(repeats):
                sample = _measure(server, kind, i, files, plan[kind], ctx)
                samples.add(sample["seconds"])
                details.append(sample)
                log(f"serve-scale: N={n} {variant.name}: {kind} edit #{i + 1}: {sample['seconds']:.2f} s")
            out[kind] = {**samples.as_dict(), "samples": details}
        out["memory_end_kib"] = server.memory_kib()
    finally:
        out["stopped"] = server.stop()
        for key, path in files.items():
            path.write_text(saved[key], encoding="utf-8")
    text = server.log_text()
    out["builds_logged"] = server.builds()
    out["errors_logged"] = [line for line in text.splitlines() if "ERROR" in line][:10]
    out["load_average_end"] = load_average()
    return out


def prepare(ctx: ServeScaleContext, n: int) -> Workspace:
    """A copy with N synthetic articles, built once (validation, figure cache) and the plain-Material docs."""
    ws = Workspace.create(ctx.tmp / f"serve-scale-{n}", cache_from=ctx.seed_cache)
    synth.add_articles(ws.root, n)
    first = ws.mkdocs_build()
    log(f"serve-scale: N={n}: untimed first build {first.seconds:.1f} s")
    prepare_baseline(ws, ws.root / "site")
    ws.commit(f"bench: {n} synthetic articles and the plain-Material docs")
    return ws


def available(ws: Workspace, variant: Variant) -> str | None:
    """None when the variant can run, else why not."""
    if variant.probe is None:
        return None
    proc = subprocess.run(
        [PYTHON, *variant.probe], cwd=ws.root, env=ws.env(), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return f"`{' '.join(variant.probe)}` exits {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
    return None


def run_size(ctx: ServeScaleContext, n: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "load_average_start": load_average(),
        "article": target_slug(n),
        "source": fingerprint(common.SOURCE),  # the tree copied for this N (others may commit meanwhile)
        "variants": {},
    }
    ws = prepare(ctx, n)
    for variant in VARIANTS:
        if variant.name not in ctx.variants:
            continue
        why = available(ws, variant)
        if why is not None:
            entry["variants"][variant.name] = {"skipped": why}
            ctx.notes.append(f"serve-scale N={n}: {variant.name} skipped: {why}")
            log(f"serve-scale: N={n} {variant.name} skipped: {why}")
            continue
        repeats = SLOW_REPEATS if n >= SLOW_N and variant.name != "incremental" else ctx.repeats
        try:
            entry["variants"][variant.name] = run_variant(ws, variant, n, repeats, ctx)
        except BenchError as exc:  # recorded; the other variants and sizes still run
            entry["variants"][variant.name] = {"error": str(exc)[:2000]}
            ctx.notes.append(f"serve-scale N={n}: {variant.name} failed: {str(exc)[:300]}")
            log(f"serve-scale: N={n} {variant.name} FAILED: {str(exc)[:300]}")
    entry["over_material"] = ratios(entry["variants"])
    entry["load_average_end"] = load_average()
    return entry


def ratios(variants: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each variant's medians over plain Material's, measured on the same copy in the same run."""
    base = variants.get(BASELINE) or {}
    if "startup_s" not in base:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, v in variants.items():
        if name == BASELINE or "startup_s" not in v:
            continue
        r = {"startup": ratio(v["startup_s"], base["startup_s"])}
        for kind in EDITS:
            if "median" in (v.get(kind) or {}) and "median" in (base.get(kind) or {}):
                r[kind] = ratio(v[kind]["median"], base[kind]["median"])
        hwm, base_hwm = (v.get("memory_end_kib") or {}).get("VmHWM"), (base.get("memory_end_kib") or {}).get("VmHWM")
        if hwm and base_hwm:
            r["peak_rss"] = ratio(hwm, base_hwm)
        out[name] = r
    return out


def run(ctx: ServeScaleContext) -> dict[str, Any]:
    out: dict[str, Any] = {
        "load_average_start": load_average(),
        "settle_s": SETTLE,
        "poll_s": POLL,
        "repeats": ctx.repeats,
        "sizes": {},
    }
    for n in ctx.sizes:
        try:
            out["sizes"][str(n)] = run_size(ctx, n)
        except (BenchError, OSError) as exc:  # e.g. the untimed build failed: the other sizes still run
            out["sizes"][str(n)] = {"error": f"{type(exc).__name__}: {str(exc)[:2000]}", "variants": {}}
            ctx.notes.append(f"serve-scale N={n} failed: {str(exc)[:300]}")
            log(f"serve-scale: N={n} FAILED: {str(exc)[:300]}")
    out["load_average_end"] = load_average()
    out["table"] = render(out)
    return out


# --------------------------------------------------------------------------- the table


def _cell(d: dict[str, Any] | None, base: dict[str, Any] | None) -> str:
    if not d:
        return "—"
    if "skipped" in d:
        return "跳过"
    vals = d.get("values") or []
    text = f"{d['median']:.2f} s" if len(vals) < 2 else f"{d['median']:.2f} s（{min(vals):.2f}–{max(vals):.2f}）"
    if base and base.get("median"):
        text += f"，{d['median'] / base['median']:.2f}×"
    return text


def render(results: dict[str, Any]) -> str:
    """A Markdown table: one row per N and variant; ratios against plain Material of the same N."""
    rows = [
        "| N | 服务器 | 启动到第一页 | 改正文 | 改标题（全部相关页） | 改 `code/` 注释 | 峰值内存 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n, entry in results.get("sizes", {}).items():
        variants = entry.get("variants", {})
        base = variants.get(BASELINE) or {}
        for name, v in variants.items():
            if "skipped" in v or "error" in v:
                why = f"跳过：{v['skipped']}" if "skipped" in v else f"失败：{v['error']}"
                rows.append(f"| {n} | {name} | {why[:100]} | | | | |")
                continue
            startup = f"{v['startup_s']:.1f} s"
            if base.get("startup_s") and name != BASELINE:
                startup += f"，{v['startup_s'] / base['startup_s']:.2f}×"
            hwm = (v.get("memory_end_kib") or {}).get("VmHWM")
            mem = f"{hwm / 1024:.0f} MiB" if hwm else "—"
            base_hwm = (base.get("memory_end_kib") or {}).get("VmHWM")
            if hwm and base_hwm and name != BASELINE:
                mem += f"，{hwm / base_hwm:.2f}×"
            cells = [_cell(v.get(k), None if name == BASELINE else base.get(k)) for k in EDITS]
            rows.append(f"| {n} | {name} | {startup} | {' | '.join(cells)} | {mem} |")
    return "\n".join(rows)
