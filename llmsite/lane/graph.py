"""What each article is made of, read from the same declarations the build reads (no MkDocs, no torch).

For an article ``docs/articles/<slug>.md``:

- the files its snippets include (``content/snippets.py``: ``--8<-- "code/x.py:name"``);
- its figures and exercise answers (``figures/registry.py``: ``@figure(article=...)`` and the ``@exercise_answer``
  functions of ``code/figures/<slug with _>.py``), its exercises (``exercises.parse``);
- its labs (``data/route.yml``), its playground models (``playground/registry.py``'s marker);
- every file of ``code/`` that any of these imports, followed through imports (``cache/deps.py``'s ``closure``,
  the graph a downloaded lab bundles) and the data files they declare;
- the build artifacts (trained models) its figures, answers, labs and playground models use, as the cache keys
  find them (``artifacts.used_by``): what its lane trains from an empty cache.

``SiteGraph.owners`` answers the reverse question for a piece of text (a test's parameter or one of its string
literals): which articles does it name?
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from llmsite import artifacts, exercises
from llmsite import labs as lab_pipeline
from llmsite.cache.deps import closure, definition_deps
from llmsite.content import frontmatter, snippets
from llmsite.content.articles import article_files
from llmsite.content.catalog import load_route
from llmsite.figures import cache as figure_cache
from llmsite.figures import registry
from llmsite.paths import ROOT, rel
from llmsite.playground.registry import MARKER as PLAYGROUND_MARKER
from llmsite.playground.registry import names as playground_names

ARTICLES = "docs/articles"


@dataclass(frozen=True)
class Article:
    """One article and everything its page, figures, answers and labs are made from."""

    slug: str
    source: Path  # docs/articles/<slug>.md
    includes: tuple[Path, ...]  # files its snippets include, in the order they appear
    figures: tuple[str, ...]
    answers: tuple[str, ...]
    exercises: tuple[str, ...]  # exercise ids on its page
    labs: tuple[str, ...]  # lab names (labs/<name>.py), from data/route.yml
    models: tuple[str, ...]  # playground models on its page (build artifacts)
    figure_modules: tuple[Path, ...]  # the code/figures/ files declaring its figures and answers
    modules: tuple[Path, ...]  # every file of code/ the above import, transitively (file level)
    data: tuple[Path, ...]  # data files its figures and answers declare, and the DATA_FILES of its modules
    include_lines: dict[Path, int] = field(default_factory=dict, compare=False)  # first line including each file
    model_modules: dict[Path, tuple[str, ...]] = field(default_factory=dict, compare=False)  # code/ file -> models
    # the build artifacts (trained models) its figures, answers, labs and playground use; ensure() adds their upstream
    artifacts: tuple[str, ...] = ()

    @property
    def pages(self) -> tuple[str, ...]:
        """Its pages in the built site, as paths relative to the site root."""
        return (f"articles/{self.slug}/", *(f"labs/{lab}/" for lab in self.labs))

    @property
    def included_modules(self) -> tuple[Path, ...]:
        """The files of ``code/`` (not ``code/figures/``) its text includes."""
        return tuple(p for p in self.includes if p.suffix == ".py" and p.parent.name == "code")

    def inputs(self, root: Path) -> dict[Path, str]:
        """{file: why it belongs to the article} for every file of the repository the article is made from."""
        why: dict[Path, str] = {self.source: "文章本身"}
        for path in self.includes:
            why.setdefault(path, f"文章引用（{rel(self.source, root)}:{self.include_lines.get(path, 1)}）")
        for path in self.figure_modules:
            why.setdefault(path, "文章的图和练习答案")
        for lab in self.labs:
            why.setdefault(root / "labs" / f"{lab}.py", f"文章的动手实验 {lab}")
        for path in self.modules:
            why.setdefault(path, "文章的代码、图、答案或实验导入它")
        for path in self.data:
            why.setdefault(path, "文章的图、答案或代码读取它")
        return why


# A page, a file or a name in a string: "articles/<slug>/" or "<slug>.md", "#fig-<figure>", "labs/<lab>".
_PAGE = re.compile(r"articles/(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)(?:/|\.md\b)")
_FIGURE_ID = re.compile(r"\bfig-(?P<name>[\w-]+)")
_LAB = re.compile(r"\blabs/(?P<name>\w+)")


@dataclass
class SiteGraph:
    root: Path
    articles: dict[str, Article]  # by slug, in file order

    @cached_property
    def _names(self) -> dict[str, set[str]]:
        """{a name the site gives to something of an article: the articles it belongs to}."""
        out: dict[str, set[str]] = {}
        for art in self.articles.values():
            for name in (art.slug, f"{art.slug}.md", *art.figures, *art.answers, *art.labs):
                out.setdefault(name, set()).add(art.slug)
        return out

    def owners(self, texts: Iterable[str]) -> set[str]:
        """The articles the strings name: a slug, an article's file name (``<slug>.md``, as in ``ROOT / "docs" /
        "articles" / "<slug>.md"``), a figure, an answer or a lab name as the whole string, or inside it
        a page (``articles/<slug>/``), an article file (``<slug>.md``), a figure's id (``fig-<name>``), a lab page
        (``labs/<name>``). Exercise ids and playground models are left out: ids repeat from page to page, and a
        model is named by the pages that show it."""
        names = self._names
        found: set[str] = set()
        for text in texts:
            found |= names.get(text, set())
            for m in _PAGE.finditer(text):
                if m["slug"] in self.articles:
                    found.add(m["slug"])
            for pattern in (_FIGURE_ID, _LAB):
                for m in pattern.finditer(text):
                    found |= names.get(m["name"], set())
        return found

    def pages(self, slugs: Iterable[str]) -> tuple[str, ...]:
        return tuple(p for slug in slugs for p in self.articles[slug].pages)


def _declared_data(module: Path) -> tuple[str, ...]:
    """The data files a module of ``code/`` declares it reads (``DATA_FILES = ("data/x",)``, what a downloaded lab
    bundles); nothing when the declaration is missing or malformed (the build reports that)."""
    text = module.read_text(encoding="utf-8")
    if lab_pipeline.DATA_DECLARATION not in text:
        return ()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == lab_pipeline.DATA_DECLARATION
                                                for t in node.targets):
            with contextlib.suppress(ValueError):
                value = ast.literal_eval(node.value)
                if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
                    return value
    return ()


def _model_modules(models: tuple[str, ...], declared: dict[str, artifacts.Artifact]) -> dict[Path, tuple[str, ...]]:
    """The ``code/`` files that train the page's playground models, each with the models it trains."""
    out: dict[Path, list[str]] = {}
    for name in models:
        if name in declared:
            out.setdefault(declared[name].module.resolve(), []).append(name)
    return {module: tuple(names) for module, names in out.items()}


def _artifacts_used(figures: list[registry.FigureSpec], answers: list[registry.AnswerSpec],
                    labs: list[lab_pipeline.Lab], models: tuple[str, ...], code: Path) -> tuple[str, ...]:
    """The artifacts these figures, answers and labs use (as their cache keys find them), and the models."""
    used = [a for spec in figures for a in figure_cache.artifacts_used(spec, code)]
    used += [a for lab in labs for a in lab_pipeline.uses_artifacts(lab, code)]
    for answer in answers:
        used += artifacts.used_by(definition_deps([(answer.module, answer.function)], code).roots, code)
    return tuple(dict.fromkeys([*(a.name for a in used), *models]))


def load(root: Path = ROOT) -> SiteGraph:
    """Every article of the repository at ``root``; reads declarations, never runs code."""
    root = root.resolve()
    code = root / "code"
    docs = root / "docs"
    figures = registry.discover(code)
    answers = registry.discover_computed(code)
    route, _ = load_route(root / "data" / "route.yml", root=root)
    labs_of = {entry.slug: entry.lab_names for entry in route.entries}
    known_labs = lab_pipeline.discover(root / "labs")
    declared = artifacts.discover(code)
    out: dict[str, Article] = {}
    for path in article_files(docs):
        slug = path.stem
        fm = frontmatter.split(path.read_text(encoding="utf-8"))
        include_lines: dict[Path, int] = {}
        for inc in snippets.find(fm.body, fm.body_line):
            target = (root / inc.path).resolve() if inc.path else None
            if target is not None and target.is_file() and target.is_relative_to(root):
                include_lines.setdefault(target, inc.line)
        parsed = exercises.parse(fm.body, fm.body_line, rel(path, root))
        own_figures = tuple(name for name, spec in figures.items() if spec.article == slug)
        own_answers = tuple(name for name, spec in answers.items() if spec.article == slug)
        figure_modules = sorted({figures[n].module.resolve() for n in own_figures}
                                | {answers[n].module.resolve() for n in own_answers})
        labs = tuple(name for name in labs_of.get(slug, ()) if name in known_labs)
        models = tuple(n for m in PLAYGROUND_MARKER.finditer(fm.body) for n in playground_names(m))
        roots = [p for p in include_lines if p.suffix == ".py" and p.is_relative_to(code)]
        roots += figure_modules
        roots += [known_labs[name].source.resolve() for name in labs]
        roots += [declared[m].module for m in models if m in declared]
        modules: set[Path] = set()
        for module in roots:
            modules.update(closure(module, code))
        data = {(root / d).resolve() for n in own_figures for d in figures[n].data}
        data |= {(root / d).resolve() for n in own_answers for d in answers[n].data}
        for module in modules:
            data |= {(root / d).resolve() for d in _declared_data(module)}
        out[slug] = Article(
            slug=slug,
            source=path.resolve(),
            includes=tuple(include_lines),
            figures=own_figures,
            answers=own_answers,
            exercises=tuple(e.id for e in parsed.exercises),
            labs=labs,
            models=models,
            figure_modules=tuple(figure_modules),
            modules=tuple(sorted(m for m in modules if m.is_relative_to(code.resolve()))),
            data=tuple(sorted(data)),
            include_lines=include_lines,
            model_modules=_model_modules(models, declared),
            artifacts=_artifacts_used([figures[n] for n in own_figures], [answers[n] for n in own_answers],
                                      [known_labs[name] for name in labs],
                                      tuple(m for m in models if m in declared), code),
        )
    return SiteGraph(root, out)
