"""Reading progress (docs/assets/javascripts/progress.js), kept in localStorage only.

- 「读完了」 at the end of an article marks it (mouse or keyboard) and toggles back; after a reload the article, the
  route page (check mark, the stage's bar) and the sidebar show it.
- Reaching the end counts only after the reader scrolled (or, on a page that fits on the screen, after 30 s):
  merely loading does not.
- Instant navigation: the marks follow without a reload and the button is bound once.
- ``llm:exercise`` events are stored per article and restored as ``llm-exercise--solved``.
- Export, reset, import: the same state back, byte for byte; hostile or malformed files are refused.
- Bad data or a storage that throws: a polite note, no error (the ``page`` fixture fails on console errors).
- axe-core on the route page with progress, both palettes, desktop and 375 px; target sizes.
"""

from __future__ import annotations

import gzip
import json
import re
from urllib.parse import urlsplit

import pytest

from tests.browser.test_accessibility import BLOCKING, SCHEMES, VIEWPORTS, axe_run, describe, settle
from tests.conftest import SUBPATH

pytestmark = pytest.mark.browser

KEY = f"/{SUBPATH}/.llm-progress"
ATTENTION, BLOCK, DECODING, PROMPT = "transformer-attention", "transformer-block", "decoding", "prompt-engineering"
BAD_NOTE = "本地保存的进度无法读取，已忽略。"
NOSAVE_NOTE = "浏览器不允许保存进度。"
IMPORT_FAILED = "导入失败：不是本站导出的进度文件。"
MARKED, UNMARKED = "已读 ✓ · 标为未读", "读完了"

STATE = {
    "version": 1,
    "articles": {
        ATTENTION: {"read": True, "readAt": "2026-11-30T08:15:00.000Z",
                    "exercises": {"causal-row3": {"correct": True, "attempts": 2}}},
        DECODING: {"read": False, "exercises": {"top-p": {"attempts": 1, "correct": False}}},
        BLOCK: {"read": True, "readAt": "2026-12-01T21:00:05.250Z"},
        "retired-article": {"read": True, "readAt": "2025-01-01T00:00:00.000Z"},  # no longer on the route: ignored
    },
}


def stored(page):
    raw = page.evaluate("(key) => localStorage.getItem(key)", KEY)
    return None if raw is None else json.loads(raw)


def store(page, value: str) -> None:
    page.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, value])


def article(page, base: str, slug: str) -> None:
    page.goto(base + f"articles/{slug}/")
    page.wait_for_selector(".llm-read:not([hidden])")


def route(page, base: str) -> None:
    page.goto(base + "route/")
    page.wait_for_selector("[data-llm-progress]:not([hidden])")


def at(page, path: str) -> None:
    """Wait for an (instant) navigation to ``path``; Material's tracking may add a #section to the URL."""
    page.wait_for_url(lambda url: urlsplit(url).path == f"/{SUBPATH}/{path}")


def button(page):
    return page.locator(".llm-read button")


def note(page) -> str:
    return page.locator("[role=status]:is(.llm-read__note, .llm-progress__note)").text_content()


def route_marks(page) -> list[str]:
    """Slugs the route page shows as read (a ✓ in the article's title link)."""
    return page.eval_on_selector_all("[data-llm-route-article]", """items => items
      .filter(li => li.querySelector(':scope > p > a > .llm-read-mark'))
      .map(li => li.dataset.llmRouteArticle)""")


def stage_bars(page) -> list[tuple[str, int, int]]:
    """(label, value, max) of every stage's bar on the route page."""
    bars = page.eval_on_selector_all(".llm-stage", """bars => bars.map(b => ({
      label: b.querySelector('label').textContent, value: b.querySelector('progress').value,
      max: b.querySelector('progress').max, shown: !b.hidden && b.offsetParent !== null}))""")
    return [(b["label"], b["value"], b["max"]) for b in bars if b["shown"]]


def sidebar_marks(page) -> list[str]:
    """Hrefs of the sidebar links with a ✓; its hidden text must say 已读."""
    return page.eval_on_selector_all(".md-nav--primary a:has(.llm-read-mark)", """links => links.map(a => {
      const mark = a.querySelector('.llm-read-mark');
      if (mark.querySelector('.llm-sr').textContent !== '已读') return 'bad mark in ' + a.href;
      return new URL(a.href).pathname;
    })""")


def expected_bars(content, read: set[str]) -> list[tuple[str, int, int]]:
    return [(f"本阶段已读 {len(read & set(slugs))} / {len(slugs)}", len(read & set(slugs)), len(slugs))
            for _, slugs in content.stages if slugs]


# --------------------------------------------------------------------------- the button, route page, sidebar


def test_button_marks_the_article_everywhere(page, site_server, content):
    article(page, site_server, PROMPT)
    assert button(page).text_content() == UNMARKED and stored(page) is None
    button(page).click()
    assert button(page).text_content() == MARKED and note(page) == "已记为读完。"
    entry = stored(page)["articles"][PROMPT]
    assert entry["read"] is True and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["readAt"])

    page.reload()
    page.wait_for_selector(".llm-read:not([hidden])")
    assert button(page).text_content() == MARKED
    assert sidebar_marks(page) == [f"/{SUBPATH}/articles/{PROMPT}/"]  # not the table of contents' #links
    assert page.locator(".md-nav--secondary .llm-read-mark").count() == 0

    route(page, site_server)
    assert route_marks(page) == [PROMPT]
    assert sidebar_marks(page) == []  # a collapsed stage links to its first article: not a mark of that article
    assert stage_bars(page) == expected_bars(content, {PROMPT})
    assert page.get_by_text("只记在你这台设备的浏览器里").is_visible()  # the privacy sentence

    # keyboard only: focus the button and press Enter to mark it unread
    article(page, site_server, PROMPT)
    button(page).focus()
    page.keyboard.press("Enter")
    assert button(page).text_content() == UNMARKED and note(page) == "已标为未读。"
    assert stored(page) is None and sidebar_marks(page) == []
    page.keyboard.press("Space")
    assert button(page).text_content() == MARKED


# --------------------------------------------------------------------------- reaching the end


def short_page(route_):
    """The article with its body cut out: its end is on the first screen."""
    response = route_.fetch()
    body = re.sub(r'(<header class="llm-article-header".*?</header>).*?(<div class="llm-read")',
                  r"\1<p>一段很短的正文。</p>\2", response.text(), count=1, flags=re.S)
    assert body != response.text()
    route_.fulfill(response=response, body=body)


def test_reaching_the_end_counts_only_after_scrolling(page, site_server):
    article(page, site_server, PROMPT)
    page.wait_for_timeout(800)  # longer than the 500 ms in which a scroll is taken for the browser's own
    assert stored(page) is None, "loading the article marked it"
    page.locator("article h1").click()  # the reader's focus in the page, then the End key
    page.keyboard.press("End")
    page.wait_for_function("() => document.querySelector('.llm-read button').textContent.startsWith('已读')",
                           timeout=8000)
    assert stored(page)["articles"][PROMPT]["read"] is True and note(page) == "已记为读完。"


def test_a_page_that_fits_counts_after_thirty_seconds(page, site_server):
    page.clock.install()
    page.route(f"**/articles/{PROMPT}/", short_page)
    article(page, site_server, PROMPT)
    assert page.locator(".llm-read").evaluate("b => b.getBoundingClientRect().bottom <= innerHeight")
    page.clock.run_for(5000)
    assert stored(page) is None and button(page).text_content() == UNMARKED, "marked without a reason"
    page.clock.run_for(26_000)
    page.wait_for_function("(key) => localStorage.getItem(key) !== null", arg=KEY)
    assert stored(page)["articles"][PROMPT]["read"] is True


# --------------------------------------------------------------------------- instant navigation


def test_progress_follows_instant_navigation(page, site_server, content):
    article(page, site_server, ATTENTION)
    button(page).click()
    page.evaluate("() => { window.__noReload = true; }")
    page.locator("article a.llm-route").click()
    at(page, "route/")
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    assert route_marks(page) == [ATTENTION] and stage_bars(page) == expected_bars(content, {ATTENTION})

    page.locator(f"[data-llm-route-article={DECODING}] > p > a").click()
    at(page, f"articles/{DECODING}/")
    page.wait_for_selector(".llm-read:not([hidden])")
    assert page.locator(".llm-read").count() == 1
    assert f"/{SUBPATH}/articles/{ATTENTION}/" in sidebar_marks(page)
    button(page).click()  # bound twice, it would toggle back
    assert button(page).text_content() == MARKED
    assert sorted(sidebar_marks(page)) == sorted(f"/{SUBPATH}/articles/{s}/" for s in (ATTENTION, DECODING))

    page.locator("article a.llm-route").click()
    at(page, "route/")
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    assert route_marks(page) == [ATTENTION, DECODING]
    assert stage_bars(page) == expected_bars(content, {ATTENTION, DECODING})
    assert page.locator("[data-llm-progress]").count() == 1
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"


# --------------------------------------------------------------------------- exercises


def with_exercises(route_):
    """The article with two exercise containers, as exercises.js would find them."""
    response = route_.fetch()
    boxes = '<div data-llm-exercise="probe-one">一</div><div data-llm-exercise="probe-two">二</div>'
    end = '<div class="llm-read"'
    route_.fulfill(response=response, body=response.text().replace(end, boxes + end, 1))


EVENT = "(detail) => document.dispatchEvent(new CustomEvent('llm:exercise', {detail}))"


def test_exercise_results_are_stored_and_restored(page, site_server):
    page.route(f"**/articles/{PROMPT}/", with_exercises)
    article(page, site_server, PROMPT)
    path = f"/{SUBPATH}/articles/{PROMPT}/"
    for detail in ({"page": path, "id": "probe-one", "correct": False},
                   {"page": path, "id": "probe-one", "correct": True},
                   {"page": path, "id": "probe-two", "correct": False},
                   # ignored: not an article, wrong types, an id that is not a slug
                   {"page": f"/{SUBPATH}/route/", "id": "probe-one", "correct": True},
                   {"page": path, "id": "probe-two", "correct": "yes"},
                   {"page": path, "id": "<img src=x onerror=alert(1)>", "correct": True},
                   {"page": path, "id": "__proto__", "correct": True},
                   None, "probe-one"):
        page.evaluate(EVENT, detail)
    assert stored(page) == {"version": 1, "articles": {PROMPT: {"read": False, "exercises": {
        "probe-one": {"attempts": 2, "correct": True}, "probe-two": {"attempts": 1, "correct": False}}}}}
    solved = "() => [...document.querySelectorAll('.llm-exercise--solved')].map(n => n.dataset.llmExercise)"
    assert page.evaluate(solved) == ["probe-one"]
    page.reload()
    page.wait_for_selector(".llm-read:not([hidden])")
    assert page.evaluate(solved) == ["probe-one"] and button(page).text_content() == UNMARKED


# --------------------------------------------------------------------------- export, reset, import


def test_export_reset_import_gives_the_same_state(page, site_server, content, tmp_path):
    original = json.dumps(STATE, ensure_ascii=False, separators=(",", ":"))
    route(page, site_server)
    store(page, original)
    page.reload()
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    assert route_marks(page) == [ATTENTION, BLOCK] and note(page) == ""  # the retired article is ignored
    assert stage_bars(page) == expected_bars(content, {ATTENTION, BLOCK})

    with page.expect_download() as info:
        page.get_by_role("button", name="导出进度").click()
    download = info.value
    exported = tmp_path / download.suggested_filename
    download.save_as(exported)
    assert exported.name.endswith(".json")
    assert json.loads(exported.read_text(encoding="utf-8")) == STATE

    dialogs: list[str] = []
    page.once("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.get_by_role("button", name="清除进度").click()
    assert dialogs and stored(page) == STATE, "a dismissed confirmation cleared the progress"
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="清除进度").click()
    assert stored(page) is None and route_marks(page) == [] and note(page) == "已清除。"
    assert stage_bars(page) == expected_bars(content, set())

    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="导入进度…").click()
    chooser.value.set_files(exported)
    page.wait_for_function("() => document.querySelector('.llm-progress__note').textContent === '已导入。'")
    assert page.evaluate("(key) => localStorage.getItem(key)", KEY) == original
    assert route_marks(page) == [ATTENTION, BLOCK]

    # importing over existing progress replaces it, so the page asks first; declining keeps what is there
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"version": 1, "articles": {BLOCK: {"read": True}}}), encoding="utf-8")
    for answer, marks in (("dismiss", [ATTENTION, BLOCK]), ("accept", [BLOCK])):
        dialogs.clear()
        page.once("dialog", lambda d, answer=answer: (dialogs.append(d.message), getattr(d, answer)()))
        with page.expect_file_chooser() as chooser:
            page.get_by_role("button", name="导入进度…").click()
        chooser.value.set_files(other)
        expected = "没有导入，本机的进度不变。" if answer == "dismiss" else "已导入。"
        page.wait_for_function("(t) => document.querySelector('.llm-progress__note').textContent === t", arg=expected)
        assert dialogs and "替换" in dialogs[0], dialogs
        assert route_marks(page) == marks
    assert stored(page) == {"version": 1, "articles": {BLOCK: {"read": True}}}


HOSTILE = {
    "not JSON": b"{\"version\": 1, \"articles\": ",
    "a list": b"[]",
    "version 2": json.dumps({"version": 2, "articles": {}}).encode(),
    "no version": json.dumps({"articles": {}}).encode(),
    "extra key": json.dumps({"version": 1, "articles": {}, "theme": "x"}).encode(),
    "markup slug": json.dumps({"version": 1, "articles": {"<img src=x onerror=alert(1)>": {"read": True}}}).encode(),
    "prototype slug": b'{"version": 1, "articles": {"__proto__": {"read": true}}}',
    "read is a string": json.dumps({"version": 1, "articles": {DECODING: {"read": "true"}}}).encode(),
    "huge attempts": json.dumps({"version": 1, "articles": {DECODING: {"read": False, "exercises": {
        "top-p": {"correct": True, "attempts": 1e308}}}}}).encode(),
    "fractional attempts": json.dumps({"version": 1, "articles": {DECODING: {"read": False, "exercises": {
        "top-p": {"correct": True, "attempts": 1.5}}}}}).encode(),
    "exercises a list": json.dumps({"version": 1, "articles": {DECODING: {"read": True, "exercises": []}}}).encode(),
    "bad date": json.dumps({"version": 1, "articles": {DECODING: {"read": True, "readAt": "yesterday"}}}).encode(),
    "date in a list": json.dumps({"version": 1, "articles": {DECODING: {
        "read": True, "readAt": ["2026-11-30T08:15:00.000Z"]}}}).encode(),
    "too large": b" " * 1_100_000 + json.dumps({"version": 1, "articles": {}}).encode(),
}


def test_malformed_or_hostile_imports_are_refused(page, site_server):
    before = json.dumps(STATE, separators=(",", ":"))
    route(page, site_server)
    store(page, before)
    page.reload()
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for name, payload in HOSTILE.items():
        page.evaluate("() => { document.querySelector('.llm-progress__note').textContent = ''; }")
        with page.expect_file_chooser() as chooser:
            page.get_by_role("button", name="导入进度…").click()
        chooser.value.set_files({"name": "progress.json", "mimeType": "application/json", "buffer": payload})
        page.wait_for_function("() => document.querySelector('.llm-progress__note').textContent !== ''")
        assert note(page) == IMPORT_FAILED, name
        assert page.evaluate("(key) => localStorage.getItem(key)", KEY) == before, name
    assert not dialogs and page.locator("img[src=x]").count() == 0
    assert page.evaluate("() => Object.prototype.read === undefined")


# --------------------------------------------------------------------------- bad data and broken storage


BAD_STORED = ["{not json", "[]", "null",
              json.dumps({"version": 2, "articles": {}}),
              json.dumps({"version": 1, "articles": {DECODING: {"read": "yes"}}}),
              json.dumps({"version": 1, "articles": {"<img src=x onerror=alert(1)>": {"read": True}}})]


def test_bad_stored_data_is_ignored_with_a_note(page, site_server, content):
    route(page, site_server)
    for value in BAD_STORED:
        store(page, value)
        page.reload()
        page.wait_for_selector("[data-llm-progress]:not([hidden])")
        assert note(page) == BAD_NOTE, value
        assert route_marks(page) == [] and stage_bars(page) == expected_bars(content, set()), value
    assert page.locator("img[src=x]").count() == 0
    # on an article too; marking it replaces the unreadable data
    article(page, site_server, PROMPT)
    assert note(page) == BAD_NOTE and button(page).text_content() == UNMARKED
    button(page).click()
    assert note(page) == "已记为读完。" and stored(page)["articles"][PROMPT]["read"] is True


THROWING_SET = """Storage.prototype.setItem = function () {
  throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
};"""
# Storage switched off, for our key only: Material reads its own keys without a try (a localStorage that throws on
# every key breaks its palette script, which is not ours to test).
THROWING_ALL = """(() => {
  for (const name of ['getItem', 'setItem', 'removeItem']) {
    const real = Storage.prototype[name];
    Storage.prototype[name] = function (key, ...rest) {
      if (String(key).endsWith('.llm-progress')) throw new DOMException('The operation is insecure.', 'SecurityError');
      return real.call(this, key, ...rest);
    };
  }
})();"""


def test_storage_that_throws_gives_a_message_and_keeps_the_page_working(page, site_server):
    page.add_init_script(THROWING_SET)
    article(page, site_server, PROMPT)
    assert note(page) == ""
    button(page).click()
    assert note(page) == NOSAVE_NOTE and button(page).text_content() == MARKED  # kept for this visit
    page.locator("article a.llm-route").click()  # instant navigation: the memory copy is shown, with the note
    at(page, "route/")
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    assert route_marks(page) == [PROMPT] and note(page) == NOSAVE_NOTE


def test_storage_that_cannot_be_read(page, site_server):
    page.add_init_script(THROWING_ALL)
    route(page, site_server)
    assert note(page) == NOSAVE_NOTE and route_marks(page) == []
    article(page, site_server, PROMPT)
    button(page).click()
    assert note(page) == NOSAVE_NOTE and button(page).text_content() == MARKED


# --------------------------------------------------------------------------- accessibility, phone, palettes


@pytest.mark.parametrize("scheme", list(SCHEMES), ids=list(SCHEMES))
def test_route_and_article_with_progress_pass_axe(page, site_server, built_site, record_artifact, scheme):
    """Both palettes, desktop and phone: no serious axe finding, targets of 24 px or more, nothing wider than the
    screen. Screenshots of the article's end and of the route page are listed in the terminal summary."""
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    problems: list[str] = []
    route(page, site_server)
    store(page, json.dumps(STATE))
    for view, size in VIEWPORTS.items():
        page.set_viewport_size(size)
        article(page, site_server, PROMPT)
        if button(page).text_content() != MARKED:
            button(page).click()  # marked: the filled button
        settle(page)
        assert page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
        box = button(page).bounding_box()
        assert box and box["height"] >= 24 and box["width"] >= 24, box
        # in the phone's drawer the current page is a <label> (it opens the table of contents): marked too
        assert page.locator(".md-nav--primary label.md-nav__link--active .llm-read-mark").count() == 1
        for v in axe_run(page, context={"include": [[".llm-read"], [".md-sidebar--primary"]]}):
            if v["impact"] in BLOCKING:
                problems.append(f"{view} article: {describe(v)}")
        shot = built_site.tmp / f"progress-article-{view}-{scheme}.png"
        page.locator(".llm-article-end").scroll_into_view_if_needed()
        page.screenshot(path=shot)
        record_artifact(f"progress: article end, {view}, {scheme}", shot)

        route(page, site_server)
        settle(page)
        assert route_marks(page) == [ATTENTION, BLOCK, PROMPT]
        for b in page.locator(".llm-progress .llm-btn").all():
            box = b.bounding_box()
            assert box and box["height"] >= 24 and box["width"] >= 24, box
            assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], box
        assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]
        for v in axe_run(page):
            if v["impact"] in BLOCKING:
                problems.append(f"{view} route: {describe(v)}")
        shot = built_site.tmp / f"progress-route-{view}-{scheme}.png"
        page.screenshot(path=shot, full_page=True)
        record_artifact(f"progress: route page, {view}, {scheme}", shot)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- weight


def test_weight_within_budget(built_site):
    """Each file is its own response, gzipped on its own (as in test_interactive_figures.py)."""
    sizes = {path: len(gzip.compress((built_site.dir / path).read_bytes(), 9, mtime=0))
             for path in ("assets/javascripts/progress.js", "assets/stylesheets/progress.css")}
    assert sizes["assets/javascripts/progress.js"] <= 3000, sizes
    assert sizes["assets/stylesheets/progress.css"] <= 1000, sizes


def test_the_route_page_does_not_move_when_its_progress_appears(page, site_server) -> None:
    """The stage bars and the tools take their room before progress.js shows them (visibility, not display), so the
    route below them does not jump: Lighthouse measured a cumulative layout shift of 0.056 when they were display:
    none until the script ran (the budget is 0.05). Read from Chromium's own layout-shift entries."""
    page.set_viewport_size({"width": 412, "height": 823})  # Lighthouse's phone
    url = site_server + "route/"
    page.goto(url)
    store(page, json.dumps({"version": 1, "articles": {"transformer-attention": {"read": True}}}))
    page.goto(url)
    page.wait_for_selector("[data-llm-progress]:not([hidden])")
    page.wait_for_selector(".llm-stage:not([hidden])")
    shifts = page.evaluate("""() => new Promise(resolve => {
      const seen = [];
      new PerformanceObserver(list => seen.push(...list.getEntries())).observe({type: 'layout-shift', buffered: true});
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(
        seen.filter(e => !e.hadRecentInput).map(e => e.value))));
    })""")
    assert sum(shifts) < 0.01, f"layout shifts on the route page: {shifts}"
