"""Exercises: each ```` ```exercise ```` block of a page replaced by its HTML (``llmsite.extension``).

The blocks are parsed from the page's source file (so problems name its lines), checked against the
declarations the figure step found and against the computed answers it cached (``Figures.answers``),
and rendered by ``llmsite.exercises.render``; the Markdown inside them then goes through Python-Markdown
with the rest of the page. A problem stops the build with ``docs/...md:LINE`` (the content checks
of ``on_files`` have already stopped it for most); under serve the exercise shows the problem instead.
"""

from __future__ import annotations

import html
import logging
import posixpath

from llmsite import exercises
from llmsite.content import frontmatter
from llmsite.content.checks.exercises import module_of
from llmsite.content.checks.text import mask_code
from llmsite.features.figures import Figures
from llmsite.figures.registry import MARKER
from llmsite.problems import BuildStop, ContentError

log = logging.getLogger("mkdocs.plugins.llmsite.exercises")


def _error_box(messages: list[str]) -> str:
    text = html.escape("\n".join(messages))
    return (f'\n\n<div class="admonition failure llm-ex-error"><p class="admonition-title">这个练习有错误</p>'
            f"<pre>{text}</pre></div>\n\n")


class Exercises:
    def __init__(self, figures: Figures, serving: bool) -> None:
        self.figures = figures  # the figure step of this build: declarations and computed answers
        self.serving = serving

    def expand(self, markdown: str, src_uri: str, source: str, quiet: bool = False) -> str:
        """``markdown`` (the page's Markdown, or its whole source) with every exercise block rendered;
        ``quiet``: under serve, do not log the problems (the preview asks for page inputs on every save)."""
        if not self.figures.enabled or "```exercise" not in markdown:
            return markdown
        path = f"docs/{src_uri}"
        fm = frontmatter.split(source)
        body, first = (fm.body, fm.body_line) if not fm.error else (source, 1)
        parsed = exercises.parse(body, first, path)
        figures = self.figures
        problems = list(parsed.problems) + exercises.check_references(
            parsed.exercises, path, module=module_of(posixpath.splitext(posixpath.basename(src_uri))[0]),
            answers={name: spec.module.name for name, spec in figures.answer_specs.items()},
            markers={m.group("name") for m in MARKER.finditer(mask_code(body))},
            interactive={name for name, spec in figures.specs.items() if spec.data_function},
        )
        broken = {p.line for p in problems}
        rendered = []
        for number, exercise in enumerate(parsed.by_block, 1):
            if exercise is None or any(line in broken for line in exercise.lines.values()) or exercise.line in broken:
                rendered.append(_error_box([str(p) for p in problems]))
                continue
            if exercise.answer in figures.skipped_answers:
                rendered.append(f"\n\n{figures.focus.note(f'练习 {number} 的答案 {exercise.answer}')}\n\n")
                continue
            if exercise.answer in figures.failed_answers:
                message = figures.failed_answers[exercise.answer]
                rendered.append(_error_box([f"练习答案 {exercise.answer} 计算失败", message]))
                continue
            value = figures.answers.get(exercise.answer) if exercise.answer else None
            wrong = exercises.check_value(exercise, value, path)
            if wrong:
                problems += wrong
                rendered.append(_error_box([str(p) for p in wrong]))
                continue
            rendered.append(exercises.render(exercise, number, value))
        if problems:
            if not self.serving:
                raise BuildStop(str(ContentError(problems)))
            for problem in sorted(set(problems)) if not quiet else ():
                log.error("%s", problem)
        try:
            return exercises.replace_blocks(markdown, rendered)
        except ValueError as exc:  # the Markdown was changed before this step (should not happen)
            raise BuildStop(f"{path}: 练习块替换失败：{exc}") from exc

