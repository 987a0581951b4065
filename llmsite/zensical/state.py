"""What one Zensical build knows about the site: the articles' model and the computed figures, answers, labs and
playground models, built once before Zensical starts and read by the Markdown extension while it renders.

The feature objects are the MkDocs adapter's own (``llmsite.mkdocs.figures`` ...): they read the same caches
and raise the same ``file:line`` messages. They still describe generated files with MkDocs's ``File`` class,
a plain data class here (the builder-neutral list of generated files is the next step of issue 48).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mkdocs.structure.files import File, Files

from llmsite import paths
from llmsite.cache import deps
from llmsite.content.articles import Site
from llmsite.content.memo import ArticleMemo
from llmsite.mkdocs import content
from llmsite.mkdocs.config import SiteConfig
from llmsite.mkdocs.exercises import Exercises
from llmsite.mkdocs.figures import Figures
from llmsite.mkdocs.labs import Labs
from llmsite.mkdocs.listings import Listings
from llmsite.mkdocs.plugin import MEMO_DIR


@dataclass
class State:
    site: Site
    listings: Listings
    figures: Figures
    exercises: Exercises
    labs: Labs
    playground: Any
    files: Files  # every generated file, by its uri in the site
    generated: list[File] = field(default_factory=list)
    repo_url: str | None = None  # mkdocs.yml's: the articles get 「提问」 slots when it is set


_CURRENT: State | None = None


def file_config(site_dir: Path) -> Any:
    """The few settings ``File.generated`` reads (MkDocs's ``File`` as a data class)."""
    return SimpleNamespace(site_dir=str(site_dir), use_directory_urls=True,
                           plugins=SimpleNamespace(_current_plugin="llmsite"))


def compute(site_dir: Path, options: SiteConfig, repo_url: str | None = None) -> State:
    """Read and check the articles, compute (or read from the cache) everything the pages embed."""
    from llmsite.mkdocs.playground import Playground

    memo = ArticleMemo.restore(MEMO_DIR)
    site = content.load(paths.ROOT, serving=False, memo=memo)
    if memo.misses:
        memo.store(MEMO_DIR)
    config = file_config(site_dir)
    generated: list[File] = []
    listings = Listings(site, options.articles_per_page, options.latest_on_home, options.pdf)
    listings.add_pages(generated, config)
    figures = Figures(serving=False)
    labs = Labs(serving=False)
    playground = Playground(serving=False)
    with deps.build_snapshot():
        figures.add_files(generated, config)
        labs.add_files(generated, config)
        playground.add_files(generated, config)
    # the labs' links resolve against every page: the authors' and the generated ones
    authored = [File(p.relative_to(paths.DOCS).as_posix(), str(paths.DOCS), str(site_dir), True)
                for p in sorted(paths.DOCS.rglob("*")) if p.is_file()]
    state = State(site=site, listings=listings, figures=figures, exercises=Exercises(figures, serving=False),
                  labs=labs, playground=playground, files=Files(authored + generated), generated=generated,
                  repo_url=repo_url)
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
