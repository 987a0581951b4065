"""The Zensical build (``python -m llmsite zensical``) in Chromium: the reader-facing checks of the MkDocs build, run on
a sample of its pages.

The MkDocs build is checked page by page (every exercise, every explorable figure, axe on every page in four
views); repeating all of it for the second builder would double the cost of each added article. The sample covers
every kind of page and widget: the home page, the route, an article with exercises of each kind, an explorable
figure and the side-by-side playground (GRPO), the article with the most formulas and figures (attention), and a lab.
The checks are the MkDocs build's own functions, called with the Zensical site (``watched_page``: no request to
another host, no console error).
"""

from __future__ import annotations

import pytest

import tests.browser.test_accessibility as accessibility
import tests.browser.test_every_exercise as every_exercise
import tests.browser.test_every_explorable_figure as every_explorable
from tests.conftest import watched_page

pytestmark = pytest.mark.browser

SAMPLE = ["", "route/", "articles/grpo/", "articles/transformer-attention/", "labs/grpo_lab/"]


@pytest.fixture
def zensical_page(browser, zensical_site):
    with watched_page(browser, zensical_site, viewport={"width": 1280, "height": 900}, color_scheme="light") as pg:
        yield pg


@pytest.mark.parametrize("path", [p for p in SAMPLE if p in every_exercise.WITH_EXERCISES])
def test_zensical_exercises_accept_their_answers(zensical_page, zensical_site, path):
    every_exercise.test_each_exercise_accepts_its_answer_and_rejects_a_wrong_one(
        zensical_page, zensical_site.base_url, zensical_site, path)


@pytest.mark.parametrize("path", [p for p in SAMPLE if p in every_explorable.WITH_EXPLORABLE])
def test_zensical_explorable_figures_answer_their_controls(zensical_page, zensical_site, path):
    every_explorable.test_each_explorable_figure_comes_alive_and_answers_its_controls(
        zensical_page, zensical_site.base_url, zensical_site, path)


def test_the_sample_covers_exercises_and_explorable_figures():
    assert [p for p in SAMPLE if p in every_exercise.WITH_EXERCISES]
    assert [p for p in SAMPLE if p in every_explorable.WITH_EXPLORABLE]


@pytest.mark.parametrize("scheme", list(accessibility.SCHEMES), ids=list(accessibility.SCHEMES))
@pytest.mark.parametrize("viewport", list(accessibility.VIEWPORTS), ids=list(accessibility.VIEWPORTS))
def test_zensical_sample_has_no_serious_accessibility_violations(zensical_page, zensical_site, viewport, scheme):
    zensical_page.set_viewport_size(accessibility.VIEWPORTS[viewport])
    zensical_page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    blocking = []
    for path in SAMPLE:
        for violation in accessibility.check_page(zensical_page, zensical_site.base_url + path,
                                                  accessibility.SCHEMES[scheme]):
            if violation["impact"] in accessibility.BLOCKING:
                blocking.append(f"{path or '/'}: {accessibility.describe(violation)}")
    assert not blocking, f"{viewport}/{scheme}: serious or critical axe-core violations:\n" + "\n".join(blocking)


def test_zensical_playground_writes_side_by_side(zensical_page, zensical_site):
    """The three aligned models load from the Zensical site's copy of the weights and each writes a poem."""
    pg = zensical_page
    pg.goto(zensical_site.base_url + "articles/grpo/")
    box = pg.locator(".llm-pg--compare")
    box.scroll_into_view_if_needed()
    box.locator(".llm-pg__load").click()
    pg.wait_for_selector(".llm-pg--compare .llm-pg__app", timeout=60_000)
    pg.fill(".llm-pg--compare input.llm-pg__heads", "春夏秋冬")
    pg.click(".llm-pg--compare .llm-pg__buttons button")
    pg.wait_for_function(
        "() => document.querySelector('.llm-pg--compare').getAttribute('data-llm-pg-state') === 'idle'",
        timeout=60_000)
    text = box.inner_text()
    assert text.count("句首") >= 3, text
