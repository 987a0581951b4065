"""Per-article results of ``load_site`` remembered between calls in one process (``mkdocs serve``).

``load_site(..., memo=ArticleMemo())`` reads and checks every article; a later call with the same memo
reuses an article's result (its ``Article``, its problems from ``load_article`` and ``check_document``, and
its title with the title's line for the duplicate-title check) while nothing that result was computed from
has changed, and computes it afresh otherwise. The Site it returns is the one a call without a memo returns:
everything that is cheap and site-wide (data files, route checks, duplicate titles, other pages' snippets,
route order, previous / next) is still computed on every call, from the per-article results.

What an article's result is computed from, and how the memo compares it (by content, not by modification
time: two saves within one clock tick leave the same mtime):

- the article's own file: the digest of its bytes (and its path, the key of the entry);
- the run's inputs, one token per call (``_token``): ``checks``; ``root`` and ``docs`` as given and resolved
  (messages and ``src_uri`` are relative to them); the authors and tags as loaded from data/ and the route's
  stage titles (front matter checks, the ``Article``'s author, ids of the generated route and tags listings);
  the digest of mkdocs.yml (the Markdown extensions that give headings their anchors); the list of every
  entry under docs/ (``docs`` and ``root``/docs when they differ) with whether it is a file or a directory, and
  the lab sources ``labs/*.py``: the link, image and share-image checks only ask whether a path under docs/
  exists (or a generated ``docs/labs/<name>.ipynb`` page, whose source is ``labs/<name>.py``), and the
  suggestion for a missing page lists docs/. Adding or removing any file there recomputes every article;
- every file the checks read through ``Context.read`` (link targets whose anchors are checked), recorded
  while the document is checked (``Context.recording``), by the digest of the text the checks saw;
- every snippet include of the article (``--8<-- "code/x.py:name"``, found in the whole file, a superset of
  the body's): the resolved path and the digest of its bytes, or None when it is missing or not inside the
  repository (code/, labs/, data/ files; the reading time counts the included text);
- when the checks consulted the figure declarations (the article has ``<!-- figure: ... -->`` markers or
  exercise blocks, whose answers are declared there too):
  the digests of ``code/figures/*.py``, which is all ``llmsite.figures.registry.discover`` reads.

The rest of what the loop computes is a pure function of these (front matter parsing, typography, HTML,
image alt texts, reading time). The checks read nothing else: the file accesses of ``articles.py``,
``snippets.py`` and ``checks/*.py`` are the ones listed above (``Path.is_file``/``is_dir``/``rglob`` under
docs/, ``labs/<name>.py``, snippet files, ``Context.read``, code/figures/ through ``Context.figures``).
Not watched: a directory under docs/ reached through a symbolic link (its listing is not walked).

Not remembered: an article that is not UTF-8 (its problem is reported by the loop itself); one whose checks
could not read a link target; one whose own text, as the checks got it, differs from the bytes hashed for
its key (the file changed during the call); and one that consulted the figure declarations while these have
problems: those problems are reported once per run, on the first article that meets them
(``figure_problems_once``), so that article's result depends on which articles came before it.

Results and ``Article`` objects are copied in and out: ``load_site`` sets stage, position, labs and
previous / next on the articles it returns.

Between processes (``store`` / ``restore``, one file in the build cache): a build starts from the results of the
previous one, so a warm build checks only the articles that changed. The file's name carries a digest of the
package's own source (``llmsite/**/*.py``): a change to a check, the parser or this module starts empty.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmsite import atomic
from llmsite.content import snippets
from llmsite.figures.registry import FIGURES_DIR
from llmsite.labs.sources import LABS_DIR
from llmsite.paths import CACHE
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.catalog import Author
    from llmsite.content.checks import Context
    from llmsite.content.model import Article

MEMO_DIR = CACHE / "content"  # where every builder keeps the articles' checks of its previous build


@dataclass(frozen=True)
class Loaded:
    """What ``load_site`` computes for one article file."""

    article: Article | None
    problems: list[Problem]
    title: tuple[str, int] | None  # stripped title and its line, for the duplicate-title check


@dataclass(frozen=True)
class _Entry:
    token: bytes
    digest: bytes
    includes: tuple[tuple[str, Any], ...]  # include path as written -> state
    reads: tuple[tuple[Path, bytes], ...]  # file read by the checks -> digest of its text
    figures: tuple[tuple[str, bytes], ...] | None  # code/figures/*.py when consulted
    loaded: Loaded


class _Never:
    """A state equal to nothing (not even itself): a path that could not be resolved is always re-checked."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=20).digest()


def _text_digest(text: str) -> bytes:
    return _digest(text.encode("utf-8", "surrogatepass"))


def _file_digest(path: Path) -> bytes | None:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


def _as_read(data: bytes) -> str | None:
    """``data`` decoded as ``Path.read_text(encoding="utf-8")`` decodes a file (universal newlines)."""
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return None


def _listing(top: Path) -> tuple[tuple[str, bool, bool], ...]:
    """(relative path, is file, is directory) of every entry under ``top``; symlinked dirs are not entered."""
    out: list[tuple[str, bool, bool]] = []
    stack = [(top, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = prefix + entry.name
            is_dir = entry.is_dir()
            out.append((name, entry.is_file(), is_dir))
            if is_dir and not entry.is_symlink():
                stack.append((Path(entry.path), name + "/"))
    return tuple(sorted(out))


_PACKAGE = Path(__file__).resolve().parents[1]


def _package_version() -> str:
    """A digest of the package's Python source: results computed by other code are not reused."""
    h = hashlib.blake2b(digest_size=10)
    for path in sorted(_PACKAGE.rglob("*.py")):
        h.update(path.relative_to(_PACKAGE).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


class ArticleMemo:
    """Per-article results of ``load_site``, kept across calls (one object per long-running process)."""

    @classmethod
    def restore(cls, folder: Path) -> ArticleMemo:
        """The memo a previous process stored in ``folder``, or an empty one (none, damaged, other code)."""
        with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                                 TypeError, ValueError):
            found = pickle.loads((folder / f"articles-{_package_version()}.pickle").read_bytes())
            if isinstance(found, cls):
                found.hits = found.misses = 0
                return found
        return cls()

    def store(self, folder: Path) -> None:
        """Write the memo for the next process (atomically; older versions' files removed)."""
        name = f"articles-{_package_version()}.pickle"
        with contextlib.suppress(OSError):  # a read-only cache only costs time
            atomic.write_bytes(folder / name, pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
            for old in folder.glob("articles-*.pickle"):
                if old.name != name:
                    old.unlink(missing_ok=True)

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.hits = 0  # articles reused by the last call
        self.misses = 0  # articles computed by the last call

    def __len__(self) -> int:
        return len(self._entries)


class MemoRun:
    """One ``load_site`` call with a memo."""

    def __init__(
        self,
        memo: ArticleMemo,
        *,
        root: Path,
        docs: Path,
        authors: dict[str, Author],
        tags: dict[str, str],
        ctx: Context,
        checks: bool,
    ) -> None:
        """Start one ``load_site`` call: the run's token is taken now, before any article is read."""
        memo.hits = memo.misses = 0
        self._memo = memo
        self._root = root
        self._authors = authors
        self._ctx = ctx
        self._seen: set[str] = set()
        self._includes: dict[str, Any] = {}
        self._texts: dict[Path, bytes | None] = {}
        listings = tuple(_listing(d) for d in sorted({docs.resolve(), (root / "docs").resolve()}))
        labs = root / LABS_DIR
        lab_sources = tuple(sorted(p.name for p in labs.glob("*.py") if p.is_file())) if labs.is_dir() else ()
        token = (
            checks,
            str(root),
            str(root.resolve()),
            str(docs),
            str(docs.resolve()),
            repr(list(authors.items())),
            repr(list(tags.items())),
            tuple(ctx.stage_titles),
            tuple(ctx.tags),
            _file_digest(root / "mkdocs.yml"),
            listings,
            lab_sources,
        )
        self._token = _digest(repr(token).encode("utf-8", "surrogatepass"))  # compared once per article
        # Taken before any check runs: a declaration edited during this call makes the next call recompute.
        self._figures = tuple(
            (p.name, _file_digest(p) or b"") for p in sorted((ctx.code / FIGURES_DIR).glob("*.py"))
        )

    def load(self, file: Path, compute: Callable[[], Loaded]) -> Loaded:
        """The remembered result for ``file`` when still valid, else ``compute()`` (remembered when it may be)."""
        key = str(file)
        self._seen.add(key)
        try:
            data = file.read_bytes()
        except OSError:
            return compute()  # raises as a call without memo would
        digest = _digest(data)
        entry = self._memo._entries.get(key)
        if entry is not None and self._valid(entry, digest):
            self._memo.hits += 1
            return self._copy_out(entry.loaded)
        self._memo.misses += 1
        self._memo._entries.pop(key, None)
        # Include states are taken before computing, so a snippet file edited meanwhile is seen as changed.
        raw_paths = sorted({inc.path for inc in snippets.find(data.decode("utf-8", "replace")) if inc.path})
        includes = tuple((raw, self._include_state(raw)) for raw in raw_paths)
        with self._ctx.recording() as recording:
            loaded = compute()  # an exception (a file that is not UTF-8) propagates: nothing is remembered
        if recording.figures and self._ctx.figures.problems:
            return loaded  # the declarations' problems go to the first article that meets them in a run
        if any(text is None for text in recording.reads.values()):
            return loaded
        own = file.resolve()
        if recording.reads.get(own) != _as_read(data):
            return loaded  # the checks saw another version of the file (read earlier in this call, or since)
        reads = tuple(
            (path, _text_digest(text))
            for path, text in sorted(recording.reads.items())
            if text is not None and path != own
        )
        figures = self._figures if recording.figures else None
        self._memo._entries[key] = _Entry(self._token, digest, includes, reads, figures, self._copy_in(loaded))
        return loaded

    def finish(self) -> None:
        """Forget files that are gone (this call did not see them)."""
        for key in set(self._memo._entries) - self._seen:
            del self._memo._entries[key]

    # ------------------------------------------------------------------ validity

    def _valid(self, entry: _Entry, digest: bytes) -> bool:
        if entry.digest != digest or entry.token != self._token:
            return False
        if entry.figures is not None and entry.figures != self._figures:
            return False
        if any(self._include_state(raw) != state for raw, state in entry.includes):
            return False
        return all(self._read_state(path) == state for path, state in entry.reads)

    def _include_state(self, raw: str) -> Any:
        if raw not in self._includes:
            try:
                resolved = (self._root / raw).resolve()
                inside = resolved.is_relative_to(self._root.resolve())
            except (OSError, ValueError, RuntimeError):
                self._includes[raw] = _Never()
            else:
                self._includes[raw] = (str(resolved), _file_digest(resolved) if inside else None)
        return self._includes[raw]

    def _read_state(self, path: Path) -> bytes | None:
        if path not in self._texts:
            try:
                self._texts[path] = _text_digest(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                self._texts[path] = None
        return self._texts[path]

    # ------------------------------------------------------------------ copies

    @staticmethod
    def _copy_in(loaded: Loaded) -> Loaded:
        article = loaded.article
        if article is not None:
            article = dataclasses.replace(article, tags=list(article.tags), labs=list(article.labs))
        return Loaded(article, list(loaded.problems), loaded.title)

    def _copy_out(self, loaded: Loaded) -> Loaded:
        article = loaded.article
        if article is not None:
            # the token holds the authors, so the current object with this id is equal to the stored one
            author = self._authors.get(article.author.id, article.author)
            article = dataclasses.replace(article, author=author, tags=list(article.tags), labs=list(article.labs))
        return Loaded(article, list(loaded.problems), loaded.title)
