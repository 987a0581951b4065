"""The built site in headless Chromium, served under the GitHub Pages sub-path.

Every test uses the ``page`` fixture (tests/conftest.py): at teardown it fails the
test if the page requested anything from another host or logged an error.
"""

from __future__ import annotations

import html
import re

import pytest

from tests.conftest import wait_for_path, watched_page

pytestmark = pytest.mark.browser

ATTENTION, PROMPT = "transformer-attention", "prompt-engineering"

# (id, URL under the base, source page under docs/)
PAGES = [
    ("home", "", "index.md"),
    ("article-list", "articles/", "articles/index.md"),
    ("route", "route/", "route.md"),
    ("attention", f"articles/{ATTENTION}/", f"articles/{ATTENTION}.md"),
]

# Runs in the page: one report on the math of the current document.
MATH_REPORT = """() => {
  const problems = [];
  const nodes = [...document.querySelectorAll('article .arithmatex')];
  let display = 0;
  for (const el of nodes) {
    const roots = [...el.querySelectorAll('.katex')].filter(k => !k.parentElement.closest('.katex'));
    const displays = el.querySelectorAll('.katex-display').length;
    const isBlock = el.tagName === 'DIV';
    if (roots.length !== 1) problems.push(`${roots.length} .katex roots in: ${el.textContent.slice(0, 60)}`);
    if (displays !== (isBlock ? 1 : 0)) problems.push(`${displays} .katex-display in: ${el.textContent.slice(0, 60)}`);
    if (el.querySelector('.katex-error')) problems.push(`KaTeX error in: ${el.textContent.slice(0, 60)}`);
    if (isBlock) display += 1;
  }
  const clone = document.querySelector('article').cloneNode(true);
  clone.querySelectorAll('.katex-mathml, annotation, pre, code, script').forEach(e => e.remove());
  const text = clone.textContent;
  const raw = ['$$', '\\\\frac', '\\\\sqrt', '\\\\operatorname', '\\\\(', '\\\\[', '\\\\top']
    .filter(s => text.includes(s));
  return {count: nodes.length, display, katex: document.querySelectorAll('.katex').length, problems, raw};
}"""


def _url(base: str, path: str) -> str:
    return base + path


def _expected_math(built_site) -> tuple[int, int]:
    """(formulas, display formulas) in the built HTML of the attention article."""
    html = (built_site.dir / "articles" / ATTENTION / "index.html").read_text(encoding="utf-8")
    return html.count('class="arithmatex"'), len(re.findall(r'<div class="arithmatex"', html))


def _check_math(page, built_site, content) -> None:
    page.wait_for_selector("article .arithmatex .katex", state="attached")
    report = page.evaluate(MATH_REPORT)
    formulas, displays = _expected_math(built_site)
    source_displays = content.articles[ATTENTION].body.count("$$") // 2
    assert formulas > 0 and displays > 0, "the attention article has no formulas in its HTML"
    assert report["count"] == formulas, f"{report['count']} .arithmatex in the page, {formulas} in the HTML"
    assert report["display"] == displays >= source_displays, report
    assert report["problems"] == [], "formulas not rendered exactly once:\n" + "\n".join(report["problems"])
    assert report["raw"] == [], f"raw TeX visible in the text: {report['raw']}"
    assert report["katex"] >= formulas


def _palette_toggle(page):
    """The visible palette toggle (Material shows the label of the *other* scheme)."""
    return page.locator("form[data-llm-palette] label:visible")


def _scheme(page) -> str:
    return page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")


def _switch_palette(page, to: str) -> None:
    _palette_toggle(page).click()
    page.wait_for_function("s => document.body.getAttribute('data-md-color-scheme') === s", arg=to)


# --------------------------------------------------------------------------- pages


@pytest.mark.parametrize(("url", "src"), [(u, s) for _, u, s in PAGES], ids=[i for i, _, _ in PAGES])
def test_page_opens(page, site_server, content, url, src):
    response = page.goto(_url(site_server, url))
    assert response is not None and response.status == 200, f"/{url}: HTTP {response and response.status}"
    title, heading = content.page_heading(src)
    if src.startswith("articles/") and src != "articles/index.md":
        title = heading = content.articles[src.split("/")[1].removesuffix(".md")].title
    assert page.title() == f"{title} - {content.site_name}"
    assert page.evaluate("() => document.documentElement.lang").startswith("zh")
    h1 = page.locator("article h1")
    assert h1.count() == 1
    assert h1.inner_text().strip().removesuffix("¶").strip() == heading
    box = h1.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 10, f"/{url}: h1 not rendered ({box})"
    # Chinese glyphs take space: the heading is wider than its text would be with zero-width glyphs
    width = page.evaluate(
        "h => { const r = document.createRange(); r.selectNodeContents(h); return r.getBoundingClientRect().width; }",
        h1.element_handle(),
    )
    hanzi = sum(1 for ch in heading if "\u4e00" <= ch <= "\u9fff")
    font_px = page.evaluate("h => parseFloat(getComputedStyle(h).fontSize)", h1.element_handle())
    assert width >= hanzi * font_px * 0.8, f"/{url}: heading is {width}px for {hanzi} 汉字 at {font_px}px"


# --------------------------------------------------------------------------- math


def test_math_rendered_once(page, site_server, built_site, content):
    page.goto(_url(site_server, f"articles/{ATTENTION}/"))
    _check_math(page, built_site, content)


def test_math_after_instant_navigation(page, site_server, built_site, content):
    page.goto(_url(site_server, "articles/"))
    page.evaluate("() => { window.__noReload = true; }")
    page.locator(f"article a.llm-card__title[href*='{ATTENTION}']").click()
    wait_for_path(page, f"/articles/{ATTENTION}/")
    _check_math(page, built_site, content)
    assert page.evaluate("() => window.__noReload === true"), "the click reloaded the page: instant navigation is off"
    # away and back again, still by instant navigation: rendered once, not twice
    page.locator("article a.llm-route").click()
    page.wait_for_url("**/route/")
    page.locator(f"article a[href*='{ATTENTION}']").first.click()
    wait_for_path(page, f"/articles/{ATTENTION}/")
    _check_math(page, built_site, content)
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"


# --------------------------------------------------------------------------- images

IMAGE_REPORT = """async (skipSuffix) => {
  // The navigation drawer repeats the header's logo; Material shows it only on narrow screens.
  // A figure whose interactive view is mounted (figures.js) hides its static fallback images, which
  // then never load: tests/browser/test_interactive_figures.py checks those (no-JS and print).
  const imgs = [...document.querySelectorAll('img')]
    .filter(i => !i.getAttribute('src').endsWith(skipSuffix) && !i.closest('.md-nav .md-logo')
                 && !i.closest('.llm-figure--live'));
  const out = [];
  for (const img of imgs) {
    img.scrollIntoView({block: 'center'});
    if (!img.complete || img.naturalWidth === 0) {
      await new Promise(done => {
        img.addEventListener('load', done, {once: true});
        img.addEventListener('error', done, {once: true});
        setTimeout(done, 5000);
      });
    }
    out.push({src: img.getAttribute('src'), width: img.naturalWidth, shown: img.getClientRects().length > 0});
  }
  window.scrollTo(0, 0);
  return out;
}"""


@pytest.mark.parametrize("url", [u for _, u, _ in PAGES], ids=[i for i, _, _ in PAGES])
def test_images_load_in_both_palettes(page, site_server, url):
    page.goto(_url(site_server, url))
    assert _scheme(page) == "default"
    # Interactive figures first: once mounted they hide their static images, and an image hidden while it loads
    # never finishes. Waiting for them (every one must mount) keeps the report from racing figures.js.
    page.wait_for_function("() => [...document.querySelectorAll('figure.llm-figure[data-llm-view]')]"
                           ".every(f => f.classList.contains('llm-figure--live'))")
    light = page.evaluate(IMAGE_REPORT, "#only-dark")
    _switch_palette(page, "slate")
    dark = page.evaluate(IMAGE_REPORT, "#only-light")
    broken = [
        f"{mode}: {i['src']}" for mode, imgs in (("light", light), ("dark", dark)) for i in imgs if i["width"] <= 0
    ]
    assert not broken, f"/{url}: images that did not load:\n" + "\n".join(broken)
    hidden = [
        f"{mode}: {i['src']}" for mode, imgs in (("light", light), ("dark", dark)) for i in imgs if not i["shown"]
    ]
    assert not hidden, f"/{url}: images not displayed in their own palette:\n" + "\n".join(hidden)
    if url == f"articles/{ATTENTION}/":
        assert any(i["src"].endswith("#only-light") for i in light), "no light figures in the attention article"
        assert any(i["src"].endswith("#only-dark") for i in dark), "no dark figures in the attention article"


# --------------------------------------------------------------------------- search

SEARCH = "input[data-md-component=search-query]"
RESULT_LINKS = ".md-search-result__item a"


@pytest.mark.parametrize(
    ("query", "slug"),
    [("注意力", ATTENTION), ("多头", ATTENTION), ("位置编码", ATTENTION), ("提示", PROMPT),
     # the rest of stage 1, by the terms a learner would type (issue #14)
     ("残差", "transformer-block"), ("层归一化", "transformer-block"), ("交叉熵", "gpt-from-scratch"),
     ("梯度裁剪", "gpt-from-scratch"), ("温度", "decoding"), ("缓存", "decoding"),
     # stage 2, by its key terms (issue #27)
     ("BPE", "bpe-tokenizer"), ("分词", "bpe-tokenizer"), ("SwiGLU", "llama-block"), ("GQA", "llama-block"),
     ("LoRA", "lora-finetune"), ("藏头诗", "lora-finetune"), ("量化", "efficient-inference"),
     ("在线 softmax", "efficient-inference"),
     # stage 3, by the terms issue #47 names
     ("评测", "evaluation"), ("偏好", "preference-dpo"), ("DPO", "preference-dpo"), ("GRPO", "grpo"),
     ("奖励", "grpo"), ("可验证", "grpo")],
)
def test_search_finds_chinese_terms(page, site_server, query, slug):
    page.goto(site_server)
    page.click(SEARCH)
    page.fill(SEARCH, query)
    page.press(SEARCH, "End")  # Material searches on keyup
    page.wait_for_function(
        """([sel, path]) => [...document.querySelectorAll(sel)]
             .some(a => new URL(a.href).pathname.endsWith(path))""",
        arg=[RESULT_LINKS, f"/articles/{slug}/"],
        timeout=15_000,
    )
    hrefs = page.eval_on_selector_all(RESULT_LINKS, "els => els.map(a => new URL(a.href).pathname)")
    assert all(h.startswith("/llm-study-platform/") for h in hrefs), hrefs


def test_search_results_follow_the_query(page, site_server):
    """Results are replaced when the query changes (no stale hits from the previous query)."""
    page.goto(site_server)
    page.click(SEARCH)
    # whole terms whose first hit is one article (with the BPE lab on the site, "多头" alone ranks the lab's
    # sections first: they hold many single-character tokens)
    for query, slug in (("多头注意力", ATTENTION), ("提示", PROMPT)):
        page.fill(SEARCH, query)
        page.press(SEARCH, "End")
        page.wait_for_function(
            """([sel, path]) => { const items = [...document.querySelectorAll(sel)];
                 return items.length > 0 && new URL(items[0].href).pathname.endsWith(path); }""",
            arg=[RESULT_LINKS, f"/articles/{slug}/"],
            timeout=15_000,
        )


# --------------------------------------------------------------------------- palette


def test_palette_toggle(page, site_server):
    page.goto(site_server)
    background = "() => getComputedStyle(document.body).backgroundColor"
    assert _scheme(page) == "default"
    light_bg = page.evaluate(background)
    _switch_palette(page, "slate")
    dark_bg = page.evaluate(background)
    assert dark_bg != light_bg, "the page looks the same in both palettes"
    _switch_palette(page, "default")
    assert page.evaluate(background) == light_bg
    # the choice is remembered across pages
    _switch_palette(page, "slate")
    page.goto(site_server + "articles/")
    assert _scheme(page) == "slate"


# Every change to <body>'s palette attributes (data-md-color-*) from the moment the page starts parsing (issue 29).
WATCH_BODY = """(() => {
  window.__bodyChanges = [];
  new MutationObserver(records => {
    for (const r of records) {
      const name = r.attributeName;
      if (r.target === document.body && name.startsWith('data-md-color')) window.__bodyChanges.push(name);
    }
  }).observe(document, { attributes: true, subtree: true });
})();"""
METAS = """() => Object.fromEntries(['color-scheme', 'theme-color'].map(
  n => [n, [...document.head.querySelectorAll(`meta[name="${n}"]`)].map(m => m.content)]))"""


def test_palette_script_leaves_the_page_alone_on_load_and_switches_like_material(browser, site_server, built_site):
    """Our palette.js replaces Material's palette component: on a load whose palette is already the page's it
    changes no attribute of <body> (Material's re-set them and turned transitions off, so a long page's styles
    were computed three times over); switching still sets the scheme, the metas, the stored choice and the
    visible toggle, by mouse and by keyboard, and after an instant navigation."""
    article = _url(site_server, f"articles/{ATTENTION}/")
    for preference, scheme, colour in (("light", "default", "light"), ("dark", "slate", "dark")):
        with watched_page(browser, built_site, color_scheme=preference) as page:
            _palette_round_trip(page, article, preference, scheme, colour)


def _palette_round_trip(page, article: str, preference: str, scheme: str, colour: str) -> None:
    page.add_init_script(WATCH_BODY)
    page.goto(article)
    page.wait_for_function("() => document.querySelector('meta[name=\"theme-color\"]')")
    assert _scheme(page) == scheme, f"a first visit with a {preference} system preference"
    changes = page.evaluate("() => window.__bodyChanges")
    if scheme == "default":  # the page is rendered with the first (light) palette: nothing to change
        assert changes == [], f"palette.js changed <body> on load: {changes}"
    else:
        assert "data-md-color-scheme" in changes and "data-md-color-switching" not in changes, changes
    metas = page.evaluate(METAS)
    assert metas["color-scheme"] == [colour], metas
    header_bg = page.evaluate(
        "() => getComputedStyle(document.querySelector('[data-md-component=header]')).backgroundColor")
    rgb = [int(v) for v in re.findall(r"\d+", header_bg)[:3]]
    assert metas["theme-color"] == ["#" + "".join(f"{v:02x}" for v in rgb)], (metas, header_bg)
    assert _palette_toggle(page).count() == 1, "exactly one toggle shows"
    # keyboard: focus the checked option (visually hidden, its label shows the ring) and press Enter
    other = "slate" if scheme == "default" else "default"
    page.locator("form[data-llm-palette] input:checked").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("s => document.body.getAttribute('data-md-color-scheme') === s", arg=other)
    page.wait_for_function("() => !document.body.hasAttribute('data-md-color-switching')")
    assert page.evaluate("() => document.activeElement.name") == "__palette", "focus stays on the toggle"
    assert page.evaluate(METAS)["color-scheme"] == ["light" if colour == "dark" else "dark"]
    stored = page.evaluate("() => __md_get('__palette')")
    assert stored["color"]["scheme"] == other and stored["index"] == (0 if other == "default" else 1), stored
    # instant navigation keeps the header: the toggle still works on the next page, and the choice holds
    page.locator(".md-tabs a, .md-nav a").filter(has_text="学习路线").first.click()
    page.wait_for_url("**/route/")
    assert _scheme(page) == other
    _switch_palette(page, scheme)
    page.reload()
    assert _scheme(page) == scheme and _palette_toggle(page).count() == 1


# From the moment the page starts parsing: every change, made once <body> exists, that makes Chromium recompute the
# style of the whole page or of a code block (llmsite/presettle.py, issue 29). A record counts only when the value
# really changed (Material sets some attributes to the value they already have: that costs nothing).
WATCH_PAGE_WIDE = """(() => {
  window.__pageWide = [];
  const note = what => window.__pageWide.push(what);
  let parsed = false;  // the parser has inserted the whole document (readyState 'interactive')
  const handle = records => {
    if (!document.body) return;  // made while only <head> existed: cheap, and what llmsite/presettle.py does
    for (const r of records) {
      const t = r.target;
      if (r.type === 'attributes') {
        const name = r.attributeName, now = t.getAttribute(name), change = `${name}: ${r.oldValue} -> ${now}`;
        if (now === r.oldValue) continue;
        if (t === document.documentElement && name === 'class') note(`<html> ${change}`);
        else if (t.matches('link[rel~=stylesheet]') && name === 'href') note(`stylesheet ${change}`);
        else if (t.matches('meta[name=color-scheme]')) note(`color-scheme meta ${change}`);
        else if (t.matches('pre > code') && name === 'class') note(`code block ${change}`);
      } else {
        for (const n of r.addedNodes) {
          if (n.nodeType !== 1) continue;
          if (n.matches('meta[name=color-scheme], link[rel~=stylesheet]')) note(`added ${n.outerHTML}`);
          // our feedback links and Material's table wrappers go into slots the build wrote: inserted into
          // <article>, they restyle all of it
          if (parsed && t.matches('article') && n.matches('.llm-ask, .llm-fix, .md-typeset__scrollwrap')) {
            note(`inserted into <article>: ${n.outerHTML.slice(0, 80)}`);
          }
        }
      }
    }
  };
  const observer = new MutationObserver(handle);
  observer.observe(document, {attributes: true, attributeOldValue: true, childList: true, subtree: true});
  document.addEventListener('readystatechange', () => {
    if (document.readyState !== 'interactive') return;
    handle(observer.takeRecords());  // the parser's last insertions, before scripts run on DOMContentLoaded
    parsed = true;
  });
})();"""
SETTLED_STATE = """() => ({
  root: [...document.documentElement.classList].sort(),
  schemes: [...document.head.querySelectorAll('meta[name=color-scheme]')].map(m => m.content),
  relative: [...document.head.querySelectorAll('[href], [src]')]
    .map(e => e.getAttribute('href') ?? e.getAttribute('src')).filter(v => !/^(?:[a-z]+:)?\\/\\//i.test(v)),
  lineBlocks: document.querySelectorAll('pre > code:has(> span[id])').length,
  settledBlocks: document.querySelectorAll('pre > code.md-code__content:has(> span[id])').length,
  copyButtons: document.querySelectorAll('pre:has(> code > span[id]) > .md-code__nav > .md-code__button').length,
})"""


@pytest.mark.parametrize("path", ["", f"articles/{ATTENTION}/", "labs/attention_lab/"],
                         ids=["home", "attention", "lab"])
def test_nothing_page_wide_changes_once_the_body_is_parsed(browser, site_server, built_site, path):
    """Material's bundle used to recompute the whole page's style three times on load (stylesheet URLs rewritten,
    classes on <html>, the colour-scheme meta) and each code block's once (bench/README.md, round twelve). The last
    script in <head> now makes those changes before <body> exists, and the build writes the code blocks' class: the
    page ends in the state Material would have made, and nothing page-wide changes after the body is parsed. For a
    light and a dark system preference, and for a stored choice that differs from the system's. feedback.js fills
    slots the build wrote instead of inserting into <article> (which restyled the whole article)."""
    url = _url(site_server, path)
    for preference, stored, colour in (("light", None, "light"), ("dark", None, "dark"), ("light", "slate", "dark")):
        with watched_page(browser, built_site, color_scheme=preference) as page:
            if stored:  # the reader chose the other palette on an earlier visit
                page.goto(url)
                _switch_palette(page, stored)
            page.add_init_script(WATCH_PAGE_WIDE)
            page.goto(url)
            page.wait_for_function("() => document.querySelector('meta[name=\"theme-color\"]')")  # palette.js ran
            page.wait_for_timeout(300)  # Material mounts code blocks as their size is first observed
            case = f"/{path} ({preference} system, stored {stored})"
            assert page.evaluate("() => window.__pageWide") == [], case
            state = page.evaluate(SETTLED_STATE)
            assert state["root"] == ["js", "js-focus-visible"], (case, state)
            assert state["schemes"] == [colour], (case, state)
            assert state["relative"] == [], (case, state)
            assert state["settledBlocks"] == state["lineBlocks"], (case, state)
            assert state["copyButtons"] == state["lineBlocks"], f"{case}: Material's copy buttons: {state}"
            filled = page.locator("article .llm-ask a").count()
            wrapped = page.locator("article .llm-table > .md-typeset__scrollwrap > .md-typeset__table > table").count()
    if path == f"articles/{ATTENTION}/":
        assert state["lineBlocks"] > 0, "the article's code blocks have no line anchors: the check saw none"
        assert filled > 3, "feedback.js filled no slot: the check saw none"
        assert wrapped >= 1, "Material wrapped no table inside its slot: the check saw none"


# Every element of the article: its tag and box (page coordinates), formulas' and figures' insides left out.
BOXES = """() => [...document.querySelectorAll('article *')]
  .filter(e => !e.matches('.llm-table') && !e.closest('.katex, svg, .llm-ix'))
  .map(e => { const r = e.getBoundingClientRect();
    return [e.tagName, r.top + scrollY, r.left, r.width, r.height].map(v => v.toFixed ? Math.round(v) : v).join(); })"""
UNWRAP_TABLES = """() => document.querySelectorAll('article .llm-table')
  .forEach(slot => slot.replaceWith(...slot.childNodes))"""


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_table_slots_change_no_box(browser, site_server, built_site, javascript):
    """The build puts each table in a div.llm-table (display: contents), so that the wrapper Material adds on load
    goes in there and not into <article> (which would restyle the whole article, issue 29). Taking the slots out
    again moves no element of the article by a pixel, at a phone's width and a desktop's, with and without
    JavaScript (without it, Material's space after a bare table is kept)."""
    for width in (375, 1280):
        with watched_page(browser, built_site, viewport={"width": width, "height": 900},
                          java_script_enabled=javascript) as page:
            page.goto(_url(site_server, "articles/llama-block/"))
            if javascript:
                page.wait_for_selector("article .llm-table > .md-typeset__scrollwrap", state="attached")
            page.evaluate("() => document.fonts.ready")
            slots = page.locator("article .llm-table").count()
            assert slots >= 1 and page.evaluate("() => [...document.querySelectorAll('article .llm-table')]"
                                                ".every(s => s.getClientRects().length === 0)"), "a slot has a box"
            with_slots = page.evaluate(BOXES)
            page.evaluate(UNWRAP_TABLES)
            without = page.evaluate(BOXES)
        moved = [(a, b) for a, b in zip(with_slots, without, strict=True) if a != b]
        assert not moved, f"{width} px, JavaScript {javascript}: {len(moved)} boxes moved, e.g. {moved[:3]}"


# --------------------------------------------------------------------------- fonts


def _stack(page, variable: str) -> list[str]:
    value = page.evaluate("v => getComputedStyle(document.body).getPropertyValue(v)", variable)
    return [f.strip().strip('"') for f in value.split(",") if f.strip()]


def test_text_and_code_are_set_in_the_fonts_our_stacks_name(page, site_server):
    """extra.css names the fonts for Chinese text and code. Material defines the same variables on <body>, so a
    stack on :root never applied: text fell to Arial/Helvetica, and every Chinese character went to the system's
    fallback search (slow layout on a long page, issue 29). Here every glyph of the article's paragraphs, list
    items, headings and code (formulas aside: KaTeX names its own fonts) must come from a font one of our stacks
    names. Which of them a machine has varies (Liberation Mono or not): the check is membership, not one name."""
    page.goto(_url(site_server, f"articles/{ATTENTION}/"))
    text, code = _stack(page, "--md-text-font-family"), _stack(page, "--md-code-font-family")
    assert text[0] == "PingFang SC" and code[0] == "SFMono-Regular", (text, code)
    p_font = page.evaluate("() => getComputedStyle(document.querySelector('article p')).fontFamily")
    assert p_font.replace('"', "").startswith("PingFang SC"), p_font
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    selector = ", ".join(f"article {tag}:not(.katex *)" for tag in ("p", "li", "h2", "h3", "td", "pre code"))
    nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector})["nodeIds"]
    assert len(nodes) > 100, len(nodes)
    named = {f.lower() for f in text + code}
    used: dict[str, int] = {}
    checked = 0
    for node in nodes:
        outer = cdp.send("DOM.getOuterHTML", {"nodeId": node})["outerHTML"]
        if not all(map(_common, html.unescape(re.sub(r"<[^>]*>", "", outer)))):
            continue  # a rarer symbol (e.g. the subscript ₖ) may rightly come from whichever font has it
        checked += 1
        for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]:
            used[font["familyName"]] = used.get(font["familyName"], 0) + font["glyphCount"]
    assert checked > 100, checked
    strays = {name: n for name, n in used.items() if name.lower() not in named}
    assert not strays, f"glyphs from fonts no stack names (system fallback): {strays}; used: {used}"


def _common(char: str) -> bool:
    """ASCII, CJK ideographs and punctuation, full-width forms, dashes and quotes: what a Chinese font covers."""
    code = ord(char)
    return (code < 0x80 or 0x4E00 <= code <= 0x9FFF or 0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFFEF
            or 0x2010 <= code <= 0x2027)


# --------------------------------------------------------------------------- screenshot


def test_screenshot_attention_article(page, site_server, built_site, content, record_artifact):
    page.goto(_url(site_server, f"articles/{ATTENTION}/"))
    _check_math(page, built_site, content)
    page.evaluate(IMAGE_REPORT, "#only-dark")  # lazy images in view once, so they are in the picture
    page.evaluate("() => document.fonts.ready")
    path = built_site.tmp / "article.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.is_file() and path.stat().st_size > 10_000
    record_artifact("screenshot of the attention article", path)
    print(f"screenshot: {path}")
