"""Build-time figures.

- plan: finds the declared figures, builds the out-of-date ones in a
  subprocess (``python -m llmsite figures``; the MkDocs process never imports
  torch, and edited modules are always loaded fresh) and returns the cached SVGs
  as generated files ``figures/<name>.<theme>.svg``: nothing is written into
  docs/, so ``mkdocs serve`` does not loop.
- expand: replaces ``<!-- figure: NAME -->`` with the light and dark
  images (Material shows the one matching the palette) and the caption.
  A figure with an interactive view (``@figure_data``) also gets its cached data
  as the generated file ``figures/<name>.data.json``, named in the figure's
  ``data-llm-data`` attribute; docs/assets/javascripts/figures.js fetches it from
  the site and draws the view, and the static images stay the fallback (no
  JavaScript, print, feed, search engines). Not an inline ``<script>`` data block:
  Material's instant navigation re-creates every inline script of the new page
  without its ``type``, which would run the JSON as JavaScript (and break the CSP).
- under serve: code/ is watched through ``watch:`` in mkdocs.yml; an edit there
  triggers a rebuild and only the figures whose inputs changed are redrawn.
- exercise answers (``@exercise_answer``) are planned and computed in the same
  step (the same subprocess, after the figures); ``answers`` holds their cached
  values for ``llmsite.features.exercises``. They are not files of the site: each
  value is written into its exercise on the page.
- a focused build (``features/stale.py``: ``LLM_SITE_ONLY``) draws only the stale
  figures and answers of its articles; another article's stale figure shows a note.
"""

from __future__ import annotations

import html
import logging
import posixpath
import re
import time
from collections.abc import Sequence
from typing import Any

from llmsite import report, worker
from llmsite.features.files import Generated
from llmsite.features.stale import Focus, compute
from llmsite.figures import answers, cache, registry, runner
from llmsite.paths import rel
from llmsite.problems import BuildStop, Problem

log = logging.getLogger("mkdocs.plugins.llmsite.figures")
MARKER = registry.MARKER  # one pattern for the build, the content checks and the benchmark
TARGET = "figures"

def _build(specs: dict[str, registry.FigureSpec], names: list[str], answer_names: Sequence[str] = ()) -> None:
    start = time.perf_counter()
    # Each figure has its own limit inside the script. This backstop also covers a figure stuck in C code,
    # with room for the trained artifacts the figures may need first (minutes on a loaded 2-core machine).
    backstop = sum(specs[n].timeout for n in names) + answers.TIMEOUT * len(answer_names) + 900
    proc = worker.run_step("figures", [*names, *answer_names], log, "figures", timeout=backstop)
    if proc.returncode != 0:
        raise BuildStop(f"生成文章插图失败：\n{worker.failure(proc)}")
    seconds = time.perf_counter() - start
    if names:
        log.info("figures: 重新生成 %d 张图，用时 %.1f s", len(names), seconds)
        report.record("figures", len(names), seconds)
    if answer_names:
        log.info("figures: 重新计算 %d 个练习答案", len(answer_names))


class Figures:
    """The figures of one build. Under ``mkdocs serve`` a figure that fails does not stop the preview: the error
    is logged and shown in the page where the figure goes, and the next save that fixes it draws it
    (``mkdocs build`` stops)."""

    def __init__(self, serving: bool, enabled: bool = True) -> None:
        self.serving = serving
        self.enabled = enabled  # off: markers stay in the page (the benchmark inlines them to measure this step)
        self.specs: dict[str, registry.FigureSpec] = {}
        self.failed: dict[str, str] = {}  # figure name -> error message, for this build
        self.answer_specs: dict[str, registry.AnswerSpec] = {}
        self.answers: dict[str, answers.Value] = {}  # exercise answer name -> its cached value
        self.failed_answers: dict[str, str] = {}  # answer name -> error message, for this build
        self.focus = Focus()  # the articles this build computes stale items for (stale.py: LLM_SITE_ONLY)
        self.skipped: list[str] = []  # stale figures of other articles, left out by the focus
        self.skipped_answers: list[str] = []  # stale answers of other articles, left out by the focus
        self.values: dict[str, dict[str, str]] = {}  # article slug -> its stated values (@article_values)

    def plan(self) -> list[Generated]:
        """Draw the stale figures and compute the stale answers; every figure's images and interactive data."""
        files: list[Generated] = []
        if not self.enabled:
            return files
        try:
            self.specs = registry.discover()
            self.answer_specs = registry.discover_computed()  # answers and values: planned, computed, cached alike
        except registry.DeclarationError as exc:
            raise BuildStop(f"图的声明有误：{exc}") from exc
        items = runner.plan(self.specs.values())
        answer_items = answers.plan(self.answer_specs.values())
        self.focus = Focus.from_env()
        stale, self.skipped = self.focus.split([item.spec.name for item in items if not item.cached],
                                               lambda name: [self.specs[name].article])
        stale_answers, self.skipped_answers = self.focus.split(
            [item.spec.name for item in answer_items if not item.cached],
            lambda name: [self.answer_specs[name].article])
        self.focus.report(log, "图", self.skipped)
        self.focus.report(log, "练习答案", self.skipped_answers)
        self.failed, self.failed_answers = {}, {}
        if stale or stale_answers:
            message = compute(lambda: _build(self.specs, stale, stale_answers), self.serving, log,
                              "出错的图在页面上显示为错误信息，改好并保存后会重新生成")
            if message is not None:
                self.failed = dict.fromkeys(stale, message)
                self.failed_answers = dict.fromkeys(stale_answers, message)
            items = runner.plan(self.specs.values())
            answer_items = answers.plan(self.answer_specs.values())
        self.answers, self.values = {}, {}
        for item in answer_items:
            if item.cached:
                value = answers.read(item)
                if item.spec.kind == "values":
                    self.values[item.spec.article] = value  # type: ignore[assignment]
                else:
                    self.answers[item.spec.name] = value  # type: ignore[assignment]
        for item in items:
            if not item.cached and (item.spec.name in self.failed or item.spec.name in self.skipped):
                continue
            for theme, path in cache.outputs(item.spec, item.key).items():
                if not path.is_file():
                    raise BuildStop(f"图 {item.spec.name} 的缓存文件不存在：{path}")
                files.append(Generated(f"{TARGET}/{item.spec.name}.{theme}.{cache.FORMAT}", path=path))
            data = cache.data_output(item.spec, item.key)
            if data is not None:
                if not data.is_file():
                    raise BuildStop(f"图 {item.spec.name} 的交互数据不在缓存里：{data}")
                files.append(Generated(data_uri(item.spec), path=data))
        return files

    def problems(self) -> list[Problem]:
        """The figures and exercise answers that failed in this build, for the preview's banner."""
        out = [Problem(rel(self.specs[name].module), self.specs[name].line, f"图 {name} 生成失败：{message}",
                       "改好画图的函数并保存，预览会重新生成这张图")
               for name, message in sorted(self.failed.items())]
        out += [Problem(rel(self.answer_specs[name].module), self.answer_specs[name].line,
                        f"{self.answer_specs[name].label}计算失败：{message}", "改好这个函数并保存，预览会重新计算")
                for name, message in sorted(self.failed_answers.items())]
        return out

    def expand(self, markdown: str, page: Any) -> str:
        if not self.enabled:
            return markdown
        if "figure:" in markdown:
            markdown = self._expand_figures(markdown, page)
        if "{{" in markdown:  # after the figures: their captions and alt texts may state values too
            markdown = self._expand_values(markdown, page)
        return markdown

    def _expand_values(self, markdown: str, page: Any) -> str:
        """Each {{ value:name }} replaced by what the article's @article_values function computed in this build."""
        src = f"docs/{page.file.src_uri}"
        article = posixpath.splitext(posixpath.basename(page.file.src_uri))[0]
        spec_name = registry.values_name(article)
        spec = self.answer_specs.get(spec_name)
        values = self.values.get(article)

        def where(marker: str) -> str:
            source = getattr(page.file, "content_string", "") or ""
            at = source.find(marker)
            return f"{src}:{source.count(chr(10), 0, at) + 1}" if at >= 0 else src

        def replace(match: re.Match[str]) -> str:
            name = match.group("name")
            if spec is None:
                raise BuildStop(
                    f"{where(match.group(0))}: {match.group(0)} 要一个计算出的数，可 code/figures/"
                    f"{article.replace('-', '_')}.py 里没有 @article_values 函数："
                    f"在那里声明它，返回 {{\"{name}\": 文字}}"
                )
            if spec_name in self.skipped_answers:
                return f"〔{name}：本次预览未计算〕"
            if spec_name in self.failed_answers or values is None:
                return f"〔{name}：计算失败〕"
            if name not in values:
                known = "、".join(values) or "（无）"
                raise BuildStop(f"{where(match.group(0))}: {spec.where} 的 {spec.function}() 没有返回 {name}"
                                f"（它返回的有：{known}）：改正名字，或在函数里算出它")
            return values[name]

        return registry.VALUE_MARKER.sub(replace, markdown)

    def _expand_figures(self, markdown: str, page: Any) -> str:

        def replace(match: re.Match[str]) -> str:
            name = match.group("name")
            spec = self.specs.get(name)
            if spec is None:
                known = "、".join(sorted(self.specs)) or "（无）"
                raise BuildStop(
                    f"docs/{page.file.src_uri}: 引用了没有声明的图 {name}（已声明：{known}）。"
                    "在 code/figures/ 中用 @figure 声明它，或改正名字。"
                )
            if name in self.skipped:
                return self.focus.note(f"图 {name}")
            if name in self.failed:
                return (
                    f'<div class="admonition failure llm-figure-error"><p class="admonition-title">图 {name} 生成失败'
                    f"</p><pre>{html.escape(self.failed[name])}</pre></div>"
                )
            return figure_markdown(spec, page.file.src_uri, page.url if spec.data_function else "")

        return MARKER.sub(replace, markdown)


def data_uri(spec: registry.FigureSpec) -> str:
    """Where the site serves a figure's interactive data."""
    return f"{TARGET}/{spec.name}.data.json"


_TEX = [
    (re.compile(r"\\sqrt\{([^{}]*)\}"), r"√\1"),
    (re.compile(r"\\(?:cdot)\b"), "·"),
    (re.compile(r"\\(?:times)\b"), "×"),
    (re.compile(r"\\([A-Za-z]+)"), r"\1"),  # 其余命令只留名字（\alpha → alpha）
    (re.compile(r"([_^])\{([^{}]*)\}"), r"\1\2"),  # 10^{-9} → 10^-9
    (re.compile(r"[{}]"), ""),
]
_MARKDOWN = [
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [文字](链接) → 文字
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"\*(.+?)\*"), r"\1"),
    (re.compile(r"`([^`]*)`"), r"\1"),
]


def plain_text(markdown: str) -> str:
    """A caption as plain text for an alt attribute: no Markdown, TeX written out simply."""

    def math(match: re.Match[str]) -> str:
        tex = match.group(1)
        for pattern, repl in _TEX:
            tex = pattern.sub(repl, tex)
        return tex.strip()

    text = re.sub(r"\$([^$]+)\$", math, markdown)
    for pattern, repl in _MARKDOWN:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def figure_alt(spec: registry.FigureSpec) -> str:
    """The alt text: the title, then the caption in plain text, so the image says what it shows on its own
    (copied, opened alone, or read without the caption)."""
    title = spec.title.strip().rstrip("。")
    alt = f"{title}。{plain_text(spec.caption)}"
    return alt.replace("[", "（").replace("]", "）")


def figure_markdown(spec: registry.FigureSpec, page_uri: str, page_url: str = "") -> str:
    base = posixpath.relpath(TARGET, posixpath.dirname(page_uri) or ".")
    alt = figure_alt(spec)
    images = "\n".join(
        f"![{alt}]({base}/{spec.name}.{theme}.{cache.FORMAT}#only-{theme}){{ loading=lazy }}"
        for theme in cache.THEMES
    )
    view = ""
    if spec.data_function:
        # an attribute, not a Markdown link: relative to the page's URL (MkDocs does not rewrite it); without
        # one, the URL MkDocs gives the page with directory URLs (articles/x.md -> articles/x/)
        if not page_url:
            stem = posixpath.splitext(page_uri)[0]
            folder = posixpath.dirname(stem) if posixpath.basename(stem) in ("index", "README") else stem
            page_url = f"{folder}/" if folder else ""
        data = posixpath.relpath(data_uri(spec), posixpath.dirname(page_url) or ".")
        view = f' data-llm-view="{spec.view}" data-llm-data="{data}"'
    return (
        f'<figure class="llm-figure" id="fig-{spec.name}"{view} markdown>\n\n{images}\n\n'
        f"<figcaption markdown>\n{spec.caption}\n</figcaption>\n</figure>\n"
    )
