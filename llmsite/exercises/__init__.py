"""Exercises (练习) at the end of an article: a fenced ```` ```exercise ```` block of YAML in the Markdown.

- ``model``: finds the blocks, parses and checks them (every problem with ``docs/articles/x.md:LINE``);
- ``render``: checks the computed answer against the exercise and writes the block's HTML / Markdown.

The answers come from ``@exercise_answer`` functions in ``code/figures/<article>.py``, computed and cached by
the figure pipeline (``llmsite.figures.answers``). No MkDocs here: the content checks
(``llmsite.content.checks.exercises``) and the build (``llmsite.features.exercises``) both call it.
"""

from llmsite.exercises.model import KINDS, Exercise, Option, Parsed, blocks, check_references, parse
from llmsite.exercises.render import check_value, format_value, render, replace_blocks

__all__ = [
    "KINDS", "Exercise", "Option", "Parsed", "blocks", "check_references", "check_value", "format_value", "parse",
    "render", "replace_blocks",
]
