"""Every code article (one that includes code from code/) ends with a 「练习」 section of at least four exercises:
two or more whose answers the build computes, one "predict, then look" on an explorable figure of the page (when
the article has one), and one conceptual question with a reason for every option."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmsite.exercises import model
from llmsite.figures import registry
from tests.conftest import DOCS, ROOT, split_front_matter

ARTICLES = sorted(p for p in (DOCS / "articles").glob("*.md") if p.name != "index.md")
CODE_ARTICLES = [p for p in ARTICLES if re.search(r"--8<--\s*\"code/", p.read_text(encoding="utf-8"))]


def test_there_are_code_articles() -> None:
    assert len(CODE_ARTICLES) >= 4, [p.name for p in CODE_ARTICLES]


@pytest.mark.parametrize("path", CODE_ARTICLES, ids=lambda p: p.stem)
def test_ends_with_exercises_of_every_kind(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    _, body = split_front_matter(text)
    h2 = re.findall(r"^## (.+?)\s*$", body, re.M)
    assert h2 and h2[-1] == "练习", f"{path.name}: the last section is {h2[-1] if h2 else None!r}, not 练习"
    section = body[body.rindex("\n## 练习"):]
    parsed = model.parse(section, 1, str(path.relative_to(ROOT)))
    assert not parsed.problems, parsed.problems
    kinds = [e.kind for e in parsed.exercises]
    assert len(kinds) >= 4, (path.name, kinds)
    computed = [e for e in parsed.exercises if e.answer]
    assert len(computed) >= 2, f"{path.name}: {len(computed)} exercises with a computed answer"
    assert "concept" in kinds, f"{path.name}: no conceptual question"
    concept = [e for e in parsed.exercises if e.kind == "concept"]
    assert all(o.why for e in concept for o in e.options)
    explorable = {name for name, spec in registry.discover(ROOT / "code").items()
                  if spec.data_function and spec.article == path.stem}
    on_page = set(registry.MARKER.findall(body)) & explorable
    if on_page:
        predicts = [e for e in parsed.exercises if e.kind == "predict"]
        assert predicts and all(e.figure in on_page for e in predicts), (path.name, on_page)
