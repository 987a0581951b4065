"""The preview's site kept in memory between saves: a save rebuilds only the pages that depend on it.

``IncrementalSite.full()`` builds the whole site the way ``mkdocs serve`` does (the same MkDocs functions, in
the same order as ``mkdocs.commands.build.build``) and keeps what a build throws away: the configuration with
its plugin objects, the files, the navigation, the Jinja environment and every page. ``update()`` then looks
at what changed on disk since the last build (``Snapshot``) and

- rebuilds everything (``full``) when the structure may have changed: a file added, removed or renamed,
  ``mkdocs.yml``, ``data/`` (route, authors, tags), ``overrides/``, the git HEAD (revision dates);
- otherwise re-reads the site model and re-plans figures and labs (the plugin's ``on_files``, on a fresh file
  list that is only compared with the kept one), and re-renders:
  - every page whose **inputs** changed: its source, and what the ``llmsite`` plugin puts into it (the
    article's values, the listings its markers expand to, its figures' markup, its lab body) —
    ``SitePlugin.page_inputs``. Comparing inputs, not guessing from the kind of edit, is what makes a
    front-matter edit reach the list pages, the home page and the route page, and a ``code/`` edit reach
    the pages of the figures and labs that use it;
  - the pages that print such a page's title without reading its inputs: the sidebar of its nav section
    (``navigation.prune`` renders only the active section's items) and its previous / next neighbours;
  - the pages whose previous / next changed (the plugin's ``on_nav`` runs again: an article whose front
    matter became invalid under serve leaves the route's order);
  - Material's tags index when a changed page's title or tags changed (the tags plugin is reset and given
    every page again, in page order);
  - the search index entries of the changed pages (the others keep theirs, in page order), the static
    templates (404, sitemap) and what runs after the build (search index, feed).

The result is byte for byte what a clean ``mkdocs serve`` build of the same tree writes (tested with random
edit sequences, ``tests/site/test_incremental.py``). Anything unexpected during an update falls back to a
full build. The banner of problems is not written into the pages here: the server adds it to the HTML it
sends (``llmsite.mkdocs.serve``), so the files stay identical to a clean build.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mkdocs.commands.build import _build_extra_template, _build_page, _build_theme_template, _populate_page
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files, InclusionLevel, get_files, set_exclusions
from mkdocs.structure.nav import Navigation, get_navigation
from mkdocs.structure.pages import Page
from mkdocs.utils import clean_directory

from llmsite.content.checks.context import TAGS_MARKER

log = logging.getLogger("mkdocs.plugins.llmsite.incremental")

# Changes under these folders (relative to the site's root) can be followed page by page; anything else that
# changes (mkdocs.yml, data/, overrides/, git HEAD) rebuilds the whole site.
PAGE_LEVEL = ("docs/", "code/", "labs/")
_IGNORED_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".pyc")


# --------------------------------------------------------------------------- what changed on disk


def _ignored(name: str) -> bool:
    return name.startswith(".") or name.endswith(_IGNORED_SUFFIXES) or name == "__pycache__"


@dataclass
class Snapshot:
    """Content digests of the watched files, by path relative to the root (mtime and size avoid re-reading)."""

    root: Path
    watched: tuple[str, ...]
    states: dict[str, tuple[int, int, str]] = field(default_factory=dict)

    def scan(self) -> dict[str, tuple[int, int, str]]:
        out: dict[str, tuple[int, int, str]] = {}
        for name in self.watched:
            top = self.root / name
            if top.is_file():
                self._add(out, top)
                continue
            for folder, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if not _ignored(d))
                for f in files:
                    if not _ignored(f):
                        self._add(out, Path(folder) / f)
        return out

    def _add(self, out: dict[str, tuple[int, int, str]], path: Path) -> None:
        key = path.relative_to(self.root).as_posix()
        try:
            st = path.stat()
        except OSError:  # removed while scanning: the next scan sees it gone
            return
        old = self.states.get(key)
        if old is not None and old[0] == st.st_mtime_ns and old[1] == st.st_size:
            out[key] = old
            return
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return
        out[key] = (st.st_mtime_ns, st.st_size, digest)

    def take(self) -> Changes:
        """The changes since the last ``take`` (everything is "added" the first time)."""
        new = self.scan()
        old, self.states = self.states, new
        return Changes(
            added=sorted(set(new) - set(old)),
            removed=sorted(set(old) - set(new)),
            modified=sorted(k for k in set(new) & set(old) if new[k][2] != old[k][2]),
        )


@dataclass
class Changes:
    added: list[str]
    removed: list[str]
    modified: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)

    def structural(self) -> list[str]:
        """The changes a page-level update cannot follow (the reasons for a full build)."""
        out = [f"+{p}" for p in self.added] + [f"-{p}" for p in self.removed]
        out += [p for p in self.modified if not p.startswith(PAGE_LEVEL)]
        return out

    def __str__(self) -> str:
        parts = [f"+{p}" for p in self.added] + [f"-{p}" for p in self.removed] + [f"~{p}" for p in self.modified]
        return ", ".join(parts[:8]) + (f" …（共 {len(parts)} 处）" if len(parts) > 8 else "")


# --------------------------------------------------------------------------- the site in memory


@dataclass
class Result:
    kind: str  # "full", "pages", "nothing"
    seconds: float
    populated: int = 0  # pages read and rendered from Markdown again
    rendered: int = 0  # pages whose HTML was written again
    reason: str = ""


class IncrementalSite:
    """One preview's site: ``full()`` once, then ``update()`` on every save."""

    def __init__(self, load_config: Callable[[], MkDocsConfig], serve_url: str) -> None:
        self._load_config = load_config
        self.serve_url = serve_url
        self.config: MkDocsConfig | None = None
        self.files: Files | None = None
        self.nav: Navigation | None = None
        self.env: Any = None
        self.snapshot: Snapshot | None = None
        self.inputs: dict[str, str] = {}  # page src_uri -> digest of its inputs at its last render
        self.theme_uris: set[str] = set()
        self.started = False

    # ------------------------------------------------------------------ full build

    def full(self) -> Result:
        """A whole build, as ``mkdocs serve`` does it on start and on every save."""
        start = time.perf_counter()
        config = self._load_config()
        if not self.started:
            config.plugins.on_startup(command="serve", dirty=False)
            self.started = True
        config.site_url = self.serve_url
        root = Path(config.config_file_path).resolve().parent
        self.snapshot = self.snapshot or Snapshot(root, _watched(config, root))
        self.snapshot.take()  # the state this build reads (a save during the build shows up in the next take)
        # Drop the kept state first: if this build fails, the next save builds in full again.
        self.config = self.files = self.nav = None
        self.inputs = {}

        config = config.plugins.on_config(config)
        config.plugins.on_pre_build(config=config)
        clean_directory(config.site_dir)
        files = get_files(config)
        env = config.theme.get_env()
        own = {f.src_uri for f in files}
        files.add_files_from_theme(env, config)
        self.theme_uris = {f.src_uri for f in files} - own  # a change of theme or overrides/ is a full build
        files = config.plugins.on_files(files, config=config)
        set_exclusions(files, config)
        nav = get_navigation(files, config)
        nav = config.plugins.on_nav(nav, config=config, files=files)
        for file in files.documentation_pages(inclusion=InclusionLevel.is_in_serve):
            if file.page is None and file.inclusion.is_not_in_nav():
                Page(None, file, config)
            assert file.page is not None
            _populate_page(file.page, config, files)
        env = config.plugins.on_env(env, config=config, files=files)
        files.copy_static_files(inclusion=InclusionLevel.is_in_serve)
        self._templates(config, env, files, nav)
        doc_files = files.documentation_pages(inclusion=InclusionLevel.is_in_serve)
        for file in doc_files:
            assert file.page is not None
            _build_page(file.page, config, doc_files, nav, env, excluded=file.inclusion.is_excluded())
        for file in doc_files:
            assert file.page is not None
            file.page.validate_anchor_links(files=files, log_level=config.validation.links.anchors)
        config.plugins.on_post_build(config=config)

        self.config, self.files, self.nav, self.env = config, files, nav, env
        plugin = self.plugin
        self.inputs = {p.file.src_uri: plugin.page_inputs(p.file) for p in self._pages()}
        seconds = time.perf_counter() - start
        return Result("full", seconds, len(doc_files), len(doc_files))

    # ------------------------------------------------------------------ a save

    def update(self) -> Result:
        """Bring the built site up to date with the files on disk."""
        start = time.perf_counter()
        if self.config is None or self.snapshot is None:
            return self.full()
        changes = self.snapshot.take()
        if not changes:
            return Result("nothing", time.perf_counter() - start)
        structural = changes.structural()
        if structural:
            result = self.full()
            result.reason = "、".join(structural[:5])
            return result
        try:
            done = self._pages_only(changes)
        except _NeedsFull as exc:
            result = self.full()
            result.reason = str(exc)
            return result
        except BaseException:
            self.config = None  # half updated: the next save builds in full
            raise
        done.seconds = time.perf_counter() - start
        return done

    def _pages_only(self, changes: Changes) -> Result:
        config, files, nav, env = self.config, self.files, self.nav, self.env
        assert config is not None and files is not None and nav is not None
        plugin = self.plugin

        # 1. The plugin's view of the site again (model, checks, figures, labs) on a fresh list of files, and
        #    previous / next again (an article whose front matter became invalid leaves the route's order).
        pages = self._pages()
        neighbours = {p.file.src_uri: (p.previous_page, p.next_page) for p in pages}
        fresh = get_files(config)  # the theme's files are kept as they are (listing them costs 0.3 s)
        fresh = config.plugins.on_files(fresh, config=config)
        set_exclusions(fresh, config)
        to_copy = _merge_generated(files, fresh, self.theme_uris)
        for uri in changes.modified:  # an edited image or stylesheet in docs/
            if uri.startswith("docs/"):
                f = files.get_file_from_path(uri[len("docs/"):])
                if f is not None and not f.is_documentation_page() and f not in to_copy:
                    to_copy.append(f)

        nav = config.plugins.on_nav(nav, config=config, files=files)
        relinked = {p.file.src_uri for p in pages
                    if p.previous_page is not neighbours[p.file.src_uri][0]
                    or p.next_page is not neighbours[p.file.src_uri][1]}

        # 2. Pages whose inputs changed are read and rendered from Markdown again.
        inputs = {p.file.src_uri: plugin.page_inputs(p.file) for p in pages}
        changed = {p.file.src_uri for p in pages if inputs[p.file.src_uri] != self.inputs.get(p.file.src_uri)}
        before = {p.file.src_uri: (p.title, _tags(p)) for p in pages if p.file.src_uri in changed}
        listing = {p.file.src_uri for p in pages if _has_tags_listing(p)}
        for page in pages:
            if page.file.src_uri in changed - listing:
                _populate_page(page, config, files)
        retitled = [p for p in pages if p.file.src_uri in changed and before[p.file.src_uri][0] != p.title]
        retagged = [p for p in pages if p.file.src_uri in changed and before[p.file.src_uri] != (p.title, _tags(p))]

        # 3. Material's tags: given every page again, in order, when a title or the tags of a page changed.
        if retagged or changed & listing:
            tags = _tags_plugin(config)
            if tags is not None:
                tags.on_config(config)
                for page in pages:
                    if page.file.src_uri in listing:
                        _populate_page(page, config, files)
                    else:
                        tags.on_page_markdown(page.markdown or "", page=page, config=config, files=files)
                env = config.plugins.on_env(env, config=config, files=files)
                changed |= listing

        # 4. Pages that print a changed title: the same nav section's sidebar, previous / next.
        render = changed | relinked
        for page in retitled:
            render |= {p.file.src_uri for p in _title_readers(page, nav, pages)}

        # 5. Write: copied files, the pages, their search entries, the templates, the post-build steps.
        for f in to_copy:
            f.copy_file()
        search = _search_index(config)
        kept = list(search.entries) if search is not None else []
        doc_files = files.documentation_pages(inclusion=InclusionLevel.is_in_serve)
        for file in doc_files:
            if file.src_uri in render:
                assert file.page is not None
                if file.src_uri in changed:
                    _build_page(file.page, config, doc_files, nav, env, excluded=file.inclusion.is_excluded())
                else:  # only its sidebar or previous / next changed: it keeps its search entries
                    with _not_indexed(file.page):
                        _build_page(file.page, config, doc_files, nav, env, excluded=file.inclusion.is_excluded())
        if search is not None:
            search.entries = _merged_entries(kept, search.entries[len(kept):], pages, changed)
        for page in pages:
            if page.file.src_uri in changed:
                page.validate_anchor_links(files=files, log_level=config.validation.links.anchors)
        self._templates(config, env, files, nav)
        config.plugins.on_post_build(config=config)

        self.env = env
        self.inputs = inputs
        return Result("pages", 0.0, populated=len(changed), rendered=len(render))

    # ------------------------------------------------------------------ helpers

    @property
    def plugin(self) -> Any:
        assert self.config is not None
        return self.config.plugins["llmsite"]

    def _pages(self) -> list[Page]:
        assert self.files is not None
        out = []
        for f in self.files.documentation_pages(inclusion=InclusionLevel.is_in_serve):
            assert f.page is not None
            out.append(f.page)
        return out

    @staticmethod
    def _templates(config: MkDocsConfig, env: Any, files: Files, nav: Navigation) -> None:
        for template in config.theme.static_templates:
            _build_theme_template(template, env, files, config, nav)
        for template in config.extra_templates:
            _build_extra_template(template, files, config, nav)


class _NeedsFull(Exception):
    """A page-level update cannot follow this change (the message says why); build everything."""


def _watched(config: MkDocsConfig, root: Path) -> tuple[str, ...]:
    names = {"docs", "code", "data", "labs", "overrides", "mkdocs.yml"}
    for item in config.watch:
        path = Path(item).resolve()
        if path.is_relative_to(root):
            names.add(path.relative_to(root).as_posix())
    git_head = root / ".git" / "HEAD"
    if git_head.is_file():
        names.add(".git/HEAD")
        ref = git_head.read_text(encoding="utf-8").strip()
        if ref.startswith("ref: "):
            names.add(".git/" + ref[5:])
    names = {n for n in names if (root / n).exists() or n.startswith(".git/")}
    return tuple(sorted(names))


def _merge_generated(files: Files, fresh: Files, theme: set[str]) -> list[Any]:
    """Carry the fresh generated files' contents into the kept ones; the files whose output must be copied."""
    kept = {f.src_uri: f for f in files if f.src_uri not in theme}
    new = {f.src_uri: f for f in fresh}
    if kept.keys() != new.keys():
        raise _NeedsFull("文件列表变了")
    out = []
    for uri, nf in new.items():
        of = kept[uri]
        if of.dest_uri != nf.dest_uri or of.generated_by != nf.generated_by:
            raise _NeedsFull(f"{uri} 的输出位置变了")
        if nf.generated_by is None:
            continue
        if nf._content is not None:  # generated from a string or bytes
            if of._content != nf._content:
                of.content_bytes = nf.content_bytes
                if not of.is_documentation_page():
                    out.append(of)
        elif of.abs_src_path != nf.abs_src_path:  # generated from a cached file
            of.abs_src_path = nf.abs_src_path
            out.append(of)
    return out


def _tags(page: Page) -> tuple[str, ...]:
    value = page.meta.get("tags") or ()
    return tuple(str(t) for t in value) if isinstance(value, list) else ()


def _has_tags_listing(page: Page) -> bool:
    try:
        return TAGS_MARKER in page.file.content_string
    except (OSError, UnicodeDecodeError):
        return False


def _tags_plugin(config: MkDocsConfig) -> Any:
    for name, plugin in config.plugins.items():
        if name in ("tags", "material/tags"):
            return plugin
    return None


def _search_index(config: MkDocsConfig) -> Any:
    for name, plugin in config.plugins.items():
        if name in ("search", "material/search"):
            return getattr(plugin, "search_index", None)
    return None


@contextmanager
def _not_indexed(page: Page) -> Iterator[None]:
    """Render a page without Material's search plugin indexing it again (``search: exclude`` in its meta, which
    the plugin reads and the templates do not): its kept entries are the same, and indexing (jieba) is the
    slowest part of rendering a page."""
    missing = object()
    saved = page.meta.get("search", missing)
    page.meta["search"] = {"exclude": True}
    try:
        yield
    finally:
        if saved is missing:
            del page.meta["search"]
        else:
            page.meta["search"] = saved


def _title_readers(page: Page, nav: Navigation, pages: Iterable[Page]) -> list[Page]:
    """The pages whose HTML prints ``page``'s title: its nav section's pages (all, for a top-level page) and
    the pages that link to it as previous / next."""
    out: list[Page] = []
    if any(p is page for p in nav.pages):
        section = page.parent
        out += list(_section_pages(section)) if section is not None else list(nav.pages)
    out += [p for p in pages if p.previous_page is page or p.next_page is page]
    return out


def _section_pages(section: Any) -> Iterable[Page]:
    for child in section.children or ():
        if child.is_page:
            yield child
        elif child.is_section:
            yield from _section_pages(child)


def _merged_entries(kept: list[dict[str, Any]], added: list[dict[str, Any]], pages: list[Page],
                    changed: set[str]) -> list[dict[str, Any]]:
    """The search entries in page order: the changed pages' new ones, everyone else's kept ones."""

    def by_page(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            out.setdefault(str(entry["location"]).split("#", 1)[0], []).append(entry)
        return out

    old, new = by_page(kept), by_page(added)
    merged: list[dict[str, Any]] = []
    for page in pages:
        source = new if page.file.src_uri in changed else old
        merged += source.get(page.url, [])
    return merged
