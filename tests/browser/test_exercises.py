"""The exercises at the end of an article, in Chromium (docs/assets/javascripts/exercises.js).

- A wrong answer is announced as wrong in the exercise's live region (role=status, aria-live=polite), a right one
  as right; either way the explanation (<details>) opens. Done with the keyboard only.
- The number input accepts decimals, fractions, full-width digits and thousands separators within the tolerance
  the hint states; text it cannot read is said so and is no attempt.
- Every checked attempt dispatches ``llm:exercise`` with {page, id, correct}, once: also after Material's instant
  navigation away and back (no second binding, no second set of radio buttons).
- 「去图里看看」 scrolls to the figure at once and moves the focus there; the explanation stays open and the page
  is not fetched again.
- Without JavaScript the form stays hidden and the answer is readable in the <details>.
- axe-core finds nothing serious in the exercises once answered, light and dark, desktop and phone.

The answers the page is checked against are recomputed in tests/exercises/test_answers.py.
"""

from __future__ import annotations

import pytest

from tests.browser.test_accessibility import BLOCKING, SCHEMES, VIEWPORTS, axe_run, describe
from tests.conftest import follow_instantly

pytestmark = pytest.mark.browser

ATTENTION = "transformer-attention"
NUMBER = "#ex-causal-uniform-row4"  # answer 1/4, tolerance 0.005
COUNT = "#ex-mha-params-96"  # answer 37248, exact
CHOICE = "#ex-rope-same-score"  # option B
PREDICT = "#ex-dk512-typical-max"  # option C
CONCEPT = "#ex-heads-and-params"  # option B

LISTEN = """() => { window.__events = [];
  document.addEventListener('llm:exercise', e => window.__events.push(e.detail)); }"""


def open_article(page, site_server: str) -> None:
    page.goto(site_server + f"articles/{ATTENTION}/")
    page.wait_for_selector(f"{NUMBER}[data-llm-ready] .llm-ex__form:not([hidden])", state="attached")
    page.evaluate(LISTEN)


def events(page) -> list[dict]:
    return page.evaluate("() => window.__events")


def result(page, box: str) -> str:
    return page.locator(f"{box} .llm-ex__result").inner_text().strip()


def tab_to(page, selector: str, limit: int = 12) -> None:
    """Press Tab until ``selector`` has the focus (starting from the element before the exercise)."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}; focus is on "
                         + page.evaluate("() => document.activeElement.outerHTML.slice(0, 120)"))


def test_wrong_then_right_with_the_keyboard_only(page, site_server, built_site):
    open_article(page, site_server)
    page.locator("h2#练习 a.headerlink").focus()  # the section's own link: Tab from there, as a reader would
    tab_to(page, f"{NUMBER} input")
    live = page.locator(f"{NUMBER} .llm-ex__result")
    assert live.get_attribute("aria-live") == "polite" and live.get_attribute("role") == "status"
    details = page.locator(f"{NUMBER} details")
    assert details.get_attribute("open") is None
    page.keyboard.type("0.3")
    page.keyboard.press("Enter")
    assert result(page, NUMBER) == "没有答对。答案是 0.250，解析已在下方展开。"
    assert details.get_attribute("open") is not None
    assert page.locator(f"{NUMBER} details").get_by_text("能看到多少本身就透露了位置", exact=False).is_visible()
    page.keyboard.press("Control+A")
    page.keyboard.type("1/4")
    page.keyboard.press("Enter")
    assert result(page, NUMBER) == "答对了。答案是 0.250。解析已在下方展开。"
    assert "is-right" in page.locator(f"{NUMBER} .llm-ex__result").get_attribute("class")
    page_path = page.evaluate("() => location.pathname")
    assert events(page) == [{"page": page_path, "id": "causal-uniform-row4", "correct": False},
                            {"page": page_path, "id": "causal-uniform-row4", "correct": True}]

    # a choice: Tab into the radio group, arrows to pick, Tab to the button, Space to check
    page.locator(f"{COUNT} details summary").focus()
    tab_to(page, f"{CHOICE} input[type=radio]")
    page.keyboard.press("ArrowDown")  # A -> B (arrows move and select within the group)
    assert page.locator(f"{CHOICE} input[value='1']").is_checked()
    tab_to(page, f"{CHOICE} button")
    page.keyboard.press("Space")
    assert result(page, CHOICE) == "答对了。答案是 B。解析已在下方展开。"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowUp")  # back to A: wrong
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert result(page, CHOICE) == "没有答对。答案是 B，解析已在下方展开。"
    assert events(page)[2:] == [{"page": page_path, "id": "rope-same-score", "correct": True},
                                {"page": page_path, "id": "rope-same-score", "correct": False}]


def test_a_prediction_is_told_the_answer_and_pointed_to_the_figure(page, site_server):
    open_article(page, site_server)
    page.locator(f"{PREDICT} label").nth(1).click()  # B: a wrong guess
    page.locator(f"{PREDICT} button").click()
    assert result(page, PREDICT) == "没有猜中。答案是 C，解析已在下方展开。"
    link = page.locator(f"{PREDICT} details a.llm-ex__figure")
    assert link.is_visible() and link.inner_text() == "去图里看看"
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    link.focus()
    page.keyboard.press("Enter")
    # at once, to the figure, with the focus on it; the page is not fetched again (Material's instant navigation
    # would do that on the first in-page jump and swap the article, closing the explanation just opened)
    assert page.evaluate("() => document.activeElement.id") == "fig-dk-explorer"
    top = page.evaluate("() => document.getElementById('fig-dk-explorer').getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 2
    assert page.locator(f"{PREDICT} details").evaluate("d => d.open")
    assert not [url for url in requests if f"/{ATTENTION}/" in url]
    assert events(page) == [{"page": page.evaluate("() => location.pathname"), "id": "dk512-typical-max",
                             "correct": False}]


def test_a_concept_question_shows_every_reason(page, site_server):
    open_article(page, site_server)
    page.locator(f"{CONCEPT} label").nth(1).click()
    page.locator(f"{CONCEPT} button").click()
    assert result(page, CONCEPT) == "答对了。答案是 B。解析已在下方展开。"
    reasons = page.locator(f"{CONCEPT} .llm-ex__why")
    assert reasons.count() == 4 and all(reasons.nth(i).is_visible() for i in range(4))
    # the option with math keeps its rendered formula inside the label
    assert page.locator(f"{CONCEPT} label").nth(1).locator(".katex").count() == 1


# (typed, expected: True right, False wrong, None not read)
NUMBERS = [
    ("0.25", True), (".25", True), ("1/4", True), ("2/8", True), ("0.251", True), ("2.5e-1", True), (" 0.25 ", True),
    ("０．２５", True), ("１／４", True), ("0.254", True), ("+0.25", True),
    ("0.26", False), ("1/3", False), ("-0.25", False), ("0", False),
    ("abc", None), ("1/0", None), ("", None), ("0.2.5", None), ("1/4/2", None), ("25%", None),
]
COUNTS = [("37248", True), ("37,248", True), ("３７２４８", True), ("37247", False), ("3,7248", None), ("37 248", True)]


@pytest.mark.parametrize(("box", "cases"), [(NUMBER, NUMBERS), (COUNT, COUNTS)], ids=["tolerance", "exact"])
def test_what_the_number_input_accepts(page, site_server, box, cases):
    open_article(page, site_server)
    hint = page.locator(f"{box} .llm-ex__hint").inner_text()
    assert ("0.6 或 3/5" in hint and "0.005" in hint) if box == NUMBER else "1,024" in hint
    assert page.locator(f"{box} input").get_attribute("aria-describedby") == page.locator(
        f"{box} .llm-ex__hint").get_attribute("id")
    attempts = 0
    for typed, expected in cases:
        page.fill(f"{box} input", typed)
        page.press(f"{box} input", "Enter")
        text = result(page, box)
        if expected is None:
            assert text.startswith("没看懂这个数"), (typed, text)
        else:
            attempts += 1
            assert text.startswith("答对了" if expected else "没有答对"), (typed, text)
    assert len(events(page)) == attempts, "text that is not a number is no attempt"


def test_once_after_instant_navigation(page, site_server):
    open_article(page, site_server)
    page.evaluate("() => { window.__noReload = true; }")
    follow_instantly(page, page.locator("article a[rel=next]").first)
    follow_instantly(page, page.locator(f"article a[href*='/{ATTENTION}/']").first)  # not the edit link (….md)
    page.wait_for_url(f"**/articles/{ATTENTION}/**")
    page.wait_for_selector(f"{CHOICE}[data-llm-ready]", state="attached")
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"
    assert page.locator(f"{CHOICE} input[type=radio]").count() == 4, "the radio buttons were added twice"
    page.evaluate("() => { window.__events = []; }")  # the listener from the first visit is still on document
    page.locator(f"{CHOICE} label").nth(1).click()
    page.locator(f"{CHOICE} button").click()
    assert result(page, CHOICE).startswith("答对了")
    assert events(page) == [{"page": page.evaluate("() => location.pathname"), "id": "rope-same-score",
                             "correct": True}], "one attempt, one event"


def test_without_javascript_the_answer_is_in_the_details(browser, site_server, built_site):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 375, "height": 812}, locale="zh-CN")
    try:
        page = context.new_page()
        page.goto(site_server + f"articles/{ATTENTION}/")
        for box in (NUMBER, COUNT, CHOICE, PREDICT, CONCEPT):
            assert not page.locator(f"{box} form").is_visible(), "a form that cannot check anything stays hidden"
            assert page.locator(f"{box} .llm-ex__question").is_visible()
            summary = page.locator(f"{box} details summary")
            assert summary.inner_text().strip() == "答案与解析"
            summary.click()  # <details> opens without any script
            assert page.locator(f"{box} details strong").first.inner_text().startswith("答案：")
        assert page.locator(f"{COUNT} details strong").first.inner_text() == "答案：37,248"
        assert page.locator(f"{CHOICE} .llm-ex__options li").count() == 4  # the options are readable as a list
    finally:
        context.close()


@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_answered_exercises_pass_axe(page, site_server, scheme, viewport):
    page.set_viewport_size(VIEWPORTS[viewport])
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    open_article(page, site_server)
    assert page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
    page.fill(f"{NUMBER} input", "0.3")
    page.press(f"{NUMBER} input", "Enter")
    page.locator(f"{CONCEPT} label").nth(0).click()
    page.locator(f"{CONCEPT} button").click()
    violations = axe_run(page, context={"include": [[".llm-ex"]]})
    blocking = [describe(v) for v in violations if v["impact"] in BLOCKING]
    assert not blocking, "\n".join(blocking)
    sizes = page.evaluate("""() => [...document.querySelectorAll(
      '.llm-ex button, .llm-ex input, .llm-ex__options label, .llm-ex summary, .llm-ex__figure')]
      .filter(e => e.offsetParent).map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })""")
    assert sizes and all(w >= 24 and h >= 24 for w, h in sizes), sizes
    overflow = page.evaluate("() => [...document.querySelectorAll('.llm-ex')].some(e => e.scrollWidth > e.clientWidth)")
    assert not overflow, "an exercise is wider than the column"
