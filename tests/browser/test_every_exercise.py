"""Every exercise of every article works in Chromium: the answer as the page itself displays it is judged right, a
clearly wrong one wrong, and the explanation opens either way.

tests/browser/test_exercises.py checks the widget's behaviour in depth on one article (keyboard, parsing, instant
navigation, axe). This file checks the breadth: each article's own exercises, with the answers the build computed
into them (``data-llm-check``), so an article whose answer the page cannot accept (a display the parser does not
read, a choice index out of range, a script error on that page) fails in the article's lane.
"""

from __future__ import annotations

import json

import pytest

from llmsite.lane.graph import load
from tests.conftest import ROOT

pytestmark = pytest.mark.browser

WITH_EXERCISES = sorted(f"articles/{a.slug}/" for a in load(ROOT).articles.values() if a.exercises)


def test_the_site_has_articles_with_exercises() -> None:
    assert len(WITH_EXERCISES) >= 4, WITH_EXERCISES


def _wrong_number(answer: float, tolerance: float) -> float:
    """A number well outside the tolerance on either side of the answer."""
    return answer + 2 * tolerance + max(1.0, abs(answer))


def _submit(page, box: str, check: dict, right: bool) -> str:
    if check["kind"] == "number":
        value = check["display"] if right else repr(_wrong_number(check["answer"], check["tolerance"]))
        page.fill(f"{box} input[type=text]", value)
    else:
        radios = page.locator(f"{box} input[type=radio]")
        count = radios.count()
        assert count >= 2 and 0 <= check["answer"] < count, (box, check, count)
        radios.nth(check["answer"] if right else (check["answer"] + 1) % count).check()
    page.click(f"{box} .llm-ex__form button[type=submit]")
    result = page.locator(f"{box} .llm-ex__result")
    return result.get_attribute("class") or ""


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.split("/")[1])
def test_each_exercise_accepts_its_answer_and_rejects_a_wrong_one(page, site_server, built_site, path) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site_server + path)
    ids = page.eval_on_selector_all("[data-llm-exercise]", "els => els.map(e => e.id)")
    expected = load(ROOT).articles[path.split("/")[1]].exercises
    assert len(ids) == len(expected) > 0, (path, ids, expected)
    page.wait_for_function("n => document.querySelectorAll('[data-llm-exercise][data-llm-ready]').length === n",
                          arg=len(ids))
    failures = []
    for ex_id in ids:
        box = f"#{ex_id}"
        check = json.loads(page.get_attribute(box, "data-llm-check"))
        wrong = _submit(page, box, check, right=False)
        right = _submit(page, box, check, right=True)
        opened = page.eval_on_selector(f"{box} details.llm-ex__answer", "d => d.open")
        text = page.inner_text(f"{box} .llm-ex__result")
        if "is-wrong" not in wrong or "is-right" not in right or not opened or check["display"] not in text:
            failures.append(f"{ex_id}: {check} → wrong answer {wrong!r}, right answer {right!r}, "
                            f"explanation open {opened}, said {text!r}")
    assert not failures, f"{path}:\n" + "\n".join(failures)
    assert not errors, errors
