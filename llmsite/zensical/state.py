"""What one Zensical build knows about the site: the articles' model and the computed figures, answers, labs and
playground models, built once before Zensical starts and read by the Markdown extension while it renders.

The feature objects are the builder-neutral ones (``llmsite.features``) the MkDocs plugin uses too: they read
the same caches and raise the same ``file:line`` messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmsite import paths
from llmsite.cache import deps
from llmsite.content.articles import Site, load_site
from llmsite.content.memo import MEMO_DIR, ArticleMemo
from llmsite.features.exercises import Exercises
from llmsite.features.figures import Figures
from llmsite.features.files import Generated, url_of
from llmsite.features.labs import Labs
from llmsite.features.listings import Listings
from llmsite.options import SiteOptions
from llmsite.problems import ContentError


@dataclass
class State:
    site: Site
    listings: Listings
    figures: Figures
    exercises: Exercises
    labs: Labs
    playground: Any
    generated: list[Generated]  # the files the staged tree gets besides docs/
    repo_url: str | None = None  # mkdocs.yml's: the articles get 「提问」 slots when it is set

    def __post_init__(self) -> None:
        self._by_uri = {item.uri: item for item in self.generated}

    def url(self, uri: str) -> str | None:
        """The URL of a file of the site (an author's file in docs/ or a generated one) by its uri, or None."""
        item = self._by_uri.get(uri)
        if item is not None:
            return item.url
        return url_of(uri, page=uri.endswith(".md")) if (paths.DOCS / uri).is_file() else None

    def source(self, uri: str) -> tuple[str, str] | None:
        """(where, text) of a page's source by its uri, the path for messages and the Markdown; None if absent."""
        item = self._by_uri.get(uri)
        if item is not None:
            where = paths.rel(item.path) if item.path is not None else f"docs/{uri}"
            return where, item.read_bytes().decode("utf-8")
        path = paths.DOCS / uri
        return (f"docs/{uri}", path.read_text(encoding="utf-8")) if path.is_file() else None

    def pages(self) -> list[str]:
        """The uri of every page the build renders: the authors' Markdown and the generated pages."""
        authored = [p.relative_to(paths.DOCS).as_posix() for p in sorted(paths.DOCS.rglob("*.md"))]
        return authored + [g.uri for g in self.generated if g.page or g.uri.endswith(".md")]


_CURRENT: State | None = None


def compute(options: SiteOptions, repo_url: str | None = None) -> State:
    """Read and check the articles, compute (or read from the cache) everything the pages embed."""
    from llmsite.features.playground import Playground

    memo = ArticleMemo.restore(MEMO_DIR)
    site = load_site(root=paths.ROOT, memo=memo)
    if site.problems:
        raise ContentError(site.problems)
    if memo.misses:
        memo.store(MEMO_DIR)
    listings = Listings(site, options.articles_per_page, options.latest_on_home, options.pdf)
    figures = Figures(serving=False)
    labs = Labs(serving=False)
    playground = Playground(serving=False)
    generated = listings.plan()
    with deps.build_snapshot():
        generated += figures.plan()
        generated += labs.plan()
        generated += playground.plan()
    state = State(site=site, listings=listings, figures=figures, exercises=Exercises(figures, serving=False),
                  labs=labs, playground=playground, generated=generated, repo_url=repo_url)
    use(state)
    return state


def use(state: State) -> None:
    global _CURRENT
    _CURRENT = state


def current() -> State:
    if _CURRENT is None:
        raise RuntimeError(
            "llmsite.zensical.extension 需要构建前的准备：请用 python -m llmsite zensical（make build-zensical）"
            "构建，不要直接运行 zensical build"
        )
    return _CURRENT
