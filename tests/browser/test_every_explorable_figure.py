"""Every explorable figure of every article comes alive in Chromium and answers each of its controls.

The articles' own browser tests (test_interactive_figures.py, test_bpe_interactive.py ...) check what a figure
shows in depth. This file checks the breadth, so that a new article's figure is covered in its lane with no test
written for it: the page loads its data from the site, replaces the static SVG with the live widget (the figure gets
``llm-figure--live``), and moving each control to its last option changes what the widget says; no script error.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from llmsite.figures import registry
from llmsite.lane.graph import load
from tests.conftest import ROOT

pytestmark = pytest.mark.browser

_EXPLORABLE = {name for name, spec in registry.discover(ROOT / "code").items() if spec.data_function}
WITH_EXPLORABLE = sorted(f"articles/{a.slug}/" for a in load(ROOT).articles.values()
                         if set(a.figures) & _EXPLORABLE)


def test_the_site_has_articles_with_explorable_figures() -> None:
    assert len(WITH_EXPLORABLE) >= 4, WITH_EXPLORABLE


CONTROLS = """fig => [...fig.querySelectorAll('.llm-ix__controls > .llm-ix__group')].map(g =>
  g.querySelector('input[type=range]') ? 'slider' : g.querySelectorAll('button').length)"""

MOVE = """([fig, k]) => {
  const group = fig.querySelectorAll('.llm-ix__controls > .llm-ix__group')[k];
  const range = group.querySelector('input[type=range]');
  if (range) {
    range.value = range.value === range.max ? range.min : range.max;
    range.dispatchEvent(new Event('input', { bubbles: true }));
  } else {
    const buttons = [...group.querySelectorAll('button')];
    const pressed = buttons.findIndex(b => b.getAttribute('aria-pressed') === 'true');
    buttons[pressed === buttons.length - 1 ? 0 : buttons.length - 1].click();
  }
}"""


@pytest.mark.parametrize("path", WITH_EXPLORABLE, ids=lambda p: p.split("/")[1])
def test_each_explorable_figure_comes_alive_and_answers_its_controls(page, site_server, built_site, path) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site_server + path)
    slug = path.split("/")[1]
    names = sorted(set(load(ROOT).articles[slug].figures) & _EXPLORABLE)
    problems = []
    for name in names:
        figure = page.locator(f"#fig-{name}")
        if figure.count() != 1:
            problems.append(f"{name}: {figure.count()} elements #fig-{name} on the page")
            continue
        figure.scroll_into_view_if_needed()
        try:
            page.wait_for_selector(f"#fig-{name}.llm-figure--live .llm-ix", timeout=15_000)
        except PlaywrightTimeout:
            problems.append(f"{name}: the live widget never appeared (data {figure.get_attribute('data-llm-data')})")
            continue
        handle = figure.element_handle()
        controls = page.evaluate(CONTROLS, handle)
        if not controls:
            problems.append(f"{name}: the widget has no control")
        for k, kind in enumerate(controls):
            if kind != "slider" and kind < 2:
                continue  # one option: nothing to move
            before = page.evaluate("fig => fig.querySelector('.llm-ix').innerText", handle)
            page.evaluate(MOVE, [handle, k])
            after = page.evaluate("fig => fig.querySelector('.llm-ix').innerText", handle)
            if after == before:
                problems.append(f"{name}: moving control {k + 1} ({kind}) changed nothing the widget says")
    assert not problems, f"{path}:\n" + "\n".join(problems)
    assert not errors, errors
