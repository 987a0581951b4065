"""axe-core on every built page: light and dark palettes, desktop and a 375 px phone.

The pages are found in the built site (every ``*.html`` file), so a new article or lab
is checked without editing this file. A page view fails the test on any violation
whose impact is ``serious`` or ``critical``; ``moderate`` and ``minor`` ones are counted
by rule in the terminal summary ("artifacts") and listed node by node in ``axe-report.txt``.

The palette is chosen the way a reader's system chooses it: the browser reports
``prefers-color-scheme`` and Material picks the matching palette on the first page
(and keeps it in localStorage for the next ones); each run checks that
``data-md-color-scheme`` really is the expected scheme before running axe.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import LANE, lane_pages

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 375, "height": 812}}
SCHEMES = {"light": "default", "dark": "slate"}
BLOCKING = ("serious", "critical")

# The page has settled when its fonts are in, every formula is rendered and scroll-focus.js has measured every
# region that may scroll (it marks <body> when done). Waited for, not assumed after a fixed time: a five-second
# bound that then went on with the page as it stood failed on a loaded machine (two suites side by side, load 10),
# axe or the box comparison seeing the page half ready. A page that never settles fails and says what is missing.
SETTLED = """() => [...document.querySelectorAll('.arithmatex')].every(m => m.querySelector('.katex'))
  && document.body.dataset.llmScrollFocus === 'ready'"""
UNSETTLED = """() => ({formulas_not_rendered: [...document.querySelectorAll('.arithmatex')]
                        .filter(m => !m.querySelector('.katex')).length,
                      scroll_focus: document.body.dataset.llmScrollFocus || null, fonts: document.fonts.status})"""
SETTLE_TIMEOUT_MS = 60_000


def settle(page, timeout_ms: int = SETTLE_TIMEOUT_MS) -> None:
    """Wait until the page has settled (``SETTLED``), then two frames so that what it changed is laid out."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate("() => document.fonts.ready.then(() => null)")
    try:
        page.wait_for_function(SETTLED, polling=50, timeout=timeout_ms)
    except PlaywrightTimeout:
        pytest.fail(f"{page.url}: not settled after {timeout_ms / 1000:.0f} s: {page.evaluate(UNSETTLED)}")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def discover_pages(site_dir: Path) -> list[str]:
    """URL paths (relative to the site root) of every HTML page in the built site."""
    pages = []
    for path in sorted(site_dir.rglob("*.html")):
        rel = path.relative_to(site_dir).as_posix()
        if rel.startswith("assets/"):
            continue
        pages.append(rel.removesuffix("index.html"))
    return pages


@functools.cache
def _axe_script() -> str:
    from axe_playwright_python.sync_playwright import Axe

    return Axe().axe_script


def axe_run(page, context: dict | None = None, options: dict | None = None, selector: str | None = None) -> list[dict]:
    """axe-core's violations on the current page (the copy bundled with axe-playwright-python).

    axe is injected once per document and reset before every run, so no configuration carries over from an
    earlier run on the same page. ``selector`` narrows the colour-contrast rule to the elements it matches (axe's
    rule option of that name)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_script())
    return page.evaluate(
        """([context, options, selector]) => {
          axe.reset();
          if (selector) axe.configure({rules: [{id: 'color-contrast', selector}]});
          return axe.run(context || document, options).then(r => r.violations);
        }""",
        [context, {"resultTypes": ["violations"], **(options or {})}, selector],
    )


# Colour contrast is most of axe's time (65-85 % on the longest pages), and most of its nodes repeat a look: a code
# block is one node per token in a dozen colours, a formula thousands of spans in one. same_look.js marks every
# element whose text looks exactly like text already seen on the page (its own colours, size and weight, and every
# background behind it), and the colour-contrast rule then checks each look once, on the first element that has it;
# an element that is positioned, or meets a positioned box, is always checked. Every other rule still sees every node.
# test_contrast_by_look_reports_every_failing_look checks that nothing a full check finds is lost.
SAME_LOOK = (Path(__file__).with_name("same_look.js")).read_text(encoding="utf-8")


BY_LOOK = "*:not([data-llm-same-look])"


def page_violations(page, options: dict | None = None) -> list[dict]:
    """axe on the page as it stands (every rule unless ``options`` narrow them), in one run, colour contrast checked
    on one element of each look (same_look.js).

    One run, not two (everything but colour contrast, then colour contrast by look): axe builds its tree of the
    page's nodes once per run, which on a long article is a large part of the run."""
    page.evaluate(SAME_LOOK)
    return axe_run(page, options=options, selector=BY_LOOK)


def contrast_by_look(page) -> list[dict]:
    """axe's colour-contrast violations alone, one element of each look checked."""
    return page_violations(page, {"runOnly": ["color-contrast"]})


def check_page(page, url: str, scheme: str) -> list[dict]:
    response = page.goto(url)
    assert response is not None and response.status in (200, 404), f"{url}: HTTP {response and response.status}"
    settle(page)
    actual = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    assert actual == scheme, f"{url}: palette is {actual!r}, expected {scheme!r}"
    return page_violations(page)


def describe(violation: dict, limit: int = 4) -> str:
    nodes = violation["nodes"]
    lines = [f"{violation['id']} ({violation['impact']}, {len(nodes)} nodes): {violation['help']}"]
    for node in nodes[:limit]:
        target = " ".join(str(t) for t in node["target"])
        summary = (node.get("failureSummary") or "").replace("\n", " ")
        lines.append(f"    {target}: {summary[:200]}")
    if len(nodes) > limit:
        lines.append(f"    … and {len(nodes) - limit} more")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def findings(built_site, record_artifact):
    """Non-blocking findings of every run: counted in the terminal summary, listed in axe-report.txt.

    The shards of one view may run in different workers: each worker writes its own report."""
    rows: list[tuple[str, str, dict]] = []
    yield rows
    if not rows:
        return
    counts = Counter((v["id"], v["impact"]) for *_, v in rows for _ in v["nodes"])
    lines = [f"{rule} ({impact}): {n} nodes" for (rule, impact), n in sorted(counts.items())]
    details = [f"{view} {path or '/'}\n  {describe(v)}" for view, path, v in rows]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    report = built_site.tmp / f"axe-report-{worker}.txt"
    report.write_text("\n".join([*lines, "", *details]) + "\n", encoding="utf-8")
    views = sorted({view for view, *_ in rows})
    record_artifact(f"axe-core moderate/minor findings in {', '.join(views)}, not failures "
                    f"({'; '.join(lines)})", report)


# Every page view is checked once. The pages of a view are dealt round-robin into SHARDS tests, so the 80-odd page
# views (about 340 s in one process) spread over the workers (tests/conftest.py schedules this file test by test).
SHARDS = 3


@pytest.mark.parametrize("shard", range(SHARDS), ids=[f"pages{i + 1}of{SHARDS}" for i in range(SHARDS)])
@pytest.mark.parametrize("scheme", list(SCHEMES), ids=list(SCHEMES))
@pytest.mark.parametrize("viewport", list(VIEWPORTS), ids=list(VIEWPORTS))
def test_no_serious_accessibility_violations(page, site_server, built_site, findings, viewport, scheme, shard):
    every = discover_pages(built_site.dir)
    assert "" in every and any(p.startswith("articles/") for p in every), f"pages found: {every}"
    pages = lane_pages(every, slice(shard, None, SHARDS))
    assert len(every) >= SHARDS and pages, f"{len(every)} pages for {SHARDS} shards"
    page.set_viewport_size(VIEWPORTS[viewport])
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    view = f"{viewport}/{scheme} ({shard + 1}/{SHARDS})"
    blocking: list[str] = []
    start = time.perf_counter()
    for path in pages:
        for violation in check_page(page, site_server + path, SCHEMES[scheme]):
            if violation["impact"] in BLOCKING:
                blocking.append(f"{path or '/'}: {describe(violation)}")
            else:
                findings.append((view, path, violation))
    print(f"{view}: {len(pages)} pages in {time.perf_counter() - start:.1f} s")
    assert not blocking, f"{view}: {len(blocking)} serious or critical axe-core violations:\n" + "\n".join(blocking)


def test_axe_finds_a_known_violation(page, site_server):
    """The check can fail: the same run flags a page that lacks what this site relies on."""
    page.goto(site_server)
    # built with the DOM API (a Content-Security-Policy may refuse inline style attributes and data: images)
    page.evaluate("""() => {
      const title = document.querySelector('.md-header__title');
      const span = document.createElement('span');
      span.textContent = '低对比度';
      span.style.color = '#8a8fd6';
      const img = document.createElement('img');
      img.style.width = img.style.height = '16px';
      title.append(span, img);
    }""")
    ids = {v["id"] for v in axe_run(page) if v["impact"] in BLOCKING}
    assert {"image-alt", "color-contrast"} <= ids, json.dumps(sorted(ids))
    # the page views' single run (every rule, colour contrast by look) finds both too
    ids = {v["id"] for v in page_violations(page) if v["impact"] in BLOCKING}
    assert {"image-alt", "color-contrast"} <= ids, json.dumps(sorted(ids))


# Three looks fail, each in its own way: grey text repeated 40 times (one look), dark text that passes on white 40
# times but fails once on a dark box (a different background behind it), and passing-looking text over a positioned
# dark box that is not its ancestor, after the passing text it looks like (no look can describe what lies behind it:
# same_look.js must leave it to axe).
LOOKS_PAGE = """<!doctype html><html lang="zh"><head><meta charset="utf-8"><title>对比度</title><style>
body { background: #fff; color: #222; font: 16px sans-serif; margin: 0; }
.grey { color: #aaa; }
.dark { background: #111; }
#under { position: absolute; z-index: -1; left: 0; width: 100%; height: 3em; background: #333; }
</style></head><body><main>
<p>GREY</p><p>OK</p><div class="dark"><p><span id="dark-ok">深色底上的深色字</span></p></div>
<div id="under"></div><p><span id="over">压在深色方块上的字</span></p>
</main></body></html>"""


def test_contrast_by_look_reports_every_failing_look(page):
    """Checking each look once finds every look that the full colour-contrast check finds failing."""
    page.set_content(LOOKS_PAGE.replace(
        "<p>GREY</p>", "<p>" + "".join(f'<span class="grey" id="grey-{i}">灰字</span>' for i in range(40)) + "</p>"
    ).replace("<p>OK</p>", "<p>" + "".join(f'<span id="ok-{i}">黑字</span>' for i in range(40)) + "</p>"))
    full = {t for v in axe_run(page, options={"runOnly": ["color-contrast"]}) for n in v["nodes"] for t in n["target"]}
    assert {"#over", "#dark-ok", "#grey-0", "#grey-39"} <= full and not any(t.startswith("#ok-") for t in full), full
    by_look = {t for v in contrast_by_look(page) for n in v["nodes"] for t in n["target"]}
    assert by_look == {"#over", "#dark-ok", "#grey-0"}, sorted(by_look)
    marked = page.evaluate("() => document.querySelectorAll('[data-llm-same-look]').length")
    assert marked >= 39 + 39, marked  # the repeats of the grey and of the passing black text were not checked again
    # axe stays on the page between runs: a later run without the selector checks every element again
    again = {t for v in axe_run(page, options={"runOnly": ["color-contrast"]}) for n in v["nodes"] for t in n["target"]}
    assert again == full, sorted(again ^ full)


# --------------------------------------------------------------------------- figures

# matplotlib draws each piece of text as paths in a group "translate(x y) [rotate(a)] scale(s -s)",
# where s is the font size in points divided by 100 (matplotlib's text-to-path FONT_SCALE).
_TEXT_GROUP = re.compile(r'transform="translate\([^)]*\)(?: rotate\([^)]*\))? scale\(([0-9.]+) -\1\)"')
_VIEWBOX = re.compile(r'<svg[^>]*\bviewBox="0 0 ([0-9.]+) ([0-9.]+)"')

FIGURES_ON_PAGE = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('figure.llm-figure img')) {
    img.loading = 'eager';
    if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 5000); });
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (const img of document.querySelectorAll('figure.llm-figure img')) {
    if (img.getClientRects().length === 0) continue;  // the other palette's variant
    const box = img.parentElement;
    out.push({src: img.src, alt: img.alt, width: img.getBoundingClientRect().width,
              overflows: box.scrollWidth > box.clientWidth + 1, tabindex: box.getAttribute('tabindex'),
              figure: img.closest('figure').id});
  }
  return out;
}"""

# True once the element has scrolled sideways, false if it has not within `ms` milliseconds.
SCROLLS_WITHIN = """(el, ms) => new Promise(resolve => {
  const until = performance.now() + ms;
  (function poll() {
    if (el.scrollLeft > 0) resolve(true);
    else if (performance.now() > until) resolve(false);
    else requestAnimationFrame(poll);
  })();
})"""

# Material's small type (tables, admonitions): the size a table cell in the article gets.
SMALL_TEXT_PX = """() => {
  const host = document.querySelector('article.md-typeset') || document.querySelector('.md-typeset');
  host.insertAdjacentHTML('beforeend', '<table id="llm-probe"><tbody><tr><td>字</td></tr></tbody></table>');
  const probe = document.getElementById('llm-probe');
  const size = parseFloat(getComputedStyle(probe.querySelector('td')).fontSize);
  probe.remove();
  return {small: size, body: parseFloat(getComputedStyle(host).fontSize)};
}"""


def svg_text_sizes(svg: str) -> tuple[float, float]:
    """(smallest font size in the SVG's own units, width of its viewBox)."""
    sizes = [float(s) * 100 for s in _TEXT_GROUP.findall(svg)]
    match = _VIEWBOX.search(svg)
    assert sizes and match, "no text or no viewBox in the SVG"
    return min(sizes), float(match.group(1))


def page_file(site_dir: Path, path: str) -> Path:
    return site_dir / path / "index.html" if path == "" or path.endswith("/") else site_dir / path


def pages_with_figures(site_dir: Path) -> list[str]:
    return [p for p in discover_pages(site_dir) if 'class="llm-figure"' in page_file(site_dir, p).read_text("utf-8")]


def test_svg_text_parser_reads_matplotlib_font_sizes(tmp_path):
    """The regex above reads what matplotlib writes: a 7 pt and an 11 pt label, rotated or not."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("title", fontsize=11)
    ax.set_ylabel("y label", fontsize=7)  # rotated by 90 degrees
    path = tmp_path / "probe.svg"
    with matplotlib.rc_context({"svg.fonttype": "path"}):
        fig.savefig(path, format="svg")
    plt.close(fig)
    smallest, width = svg_text_sizes(path.read_text(encoding="utf-8"))
    assert width == pytest.approx(4 * 72)
    assert smallest == pytest.approx(7)


ALL_EXPLORABLE_LIVE = ("() => [...document.querySelectorAll('figure[data-llm-data]')]"
                       ".every(f => f.classList.contains('llm-figure--live'))")


@pytest.mark.parametrize("scheme", list(SCHEMES), ids=list(SCHEMES))
def test_figure_text_is_legible_on_a_phone(page, site_server, built_site, scheme):
    """At 375 px the smallest text of every figure is at least Material's small type, and a figure
    wider than the screen scrolls and can be reached (and scrolled) with the keyboard."""
    # under --article its pages (skipped when it has no figure: a lane's build from an empty cache draws no other's)
    pages = lane_pages(pages_with_figures(built_site.dir))
    assert pages, "no page with figures in the built site"
    page.set_viewport_size(VIEWPORTS["phone"])
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    problems, seen = [], 0
    for path in pages:
        page.goto(site_server + path)
        # An explorable figure hides its static image once its data arrives (figures.js). Measure after that, not
        # during it: the image found wide here could be hidden before the arrow keys reach it (the scaffolded
        # article's lane failed so under load).
        page.wait_for_function(ALL_EXPLORABLE_LIVE, timeout=30_000)
        sizes = page.evaluate(SMALL_TEXT_PX)
        assert sizes["small"] < sizes["body"], sizes
        for fig in page.evaluate(FIGURES_ON_PAGE):
            seen += 1
            rel = fig["src"].split("#")[0].removeprefix(site_server)
            smallest, view_width = svg_text_sizes((built_site.dir / rel).read_text(encoding="utf-8"))
            px = smallest * fig["width"] / view_width
            if px < sizes["small"] - 0.05:
                problems.append(f"{path}#{fig['figure']}: smallest text {px:.1f} px < {sizes['small']:.1f} px "
                                f"({smallest:g} pt in a {view_width:g} pt wide SVG shown {fig['width']:.0f} px wide)")
            if fig["overflows"]:
                if fig["tabindex"] != "0":
                    problems.append(f"{path}#{fig['figure']}: scrolls sideways but cannot be focused")
                    continue
                box = page.locator(f"#{fig['figure']} > p")
                box.focus()
                page.keyboard.press("ArrowRight")
                page.keyboard.press("ArrowRight")
                # Chromium animates keyboard scrolling: the offset moves over the next frames, not at once
                # (reading it straight after the key press was the flaky failure). Wait for it, bounded.
                if not box.evaluate(SCROLLS_WITHIN, 2000):
                    problems.append(f"{path}#{fig['figure']}: focused, but the arrow keys do not scroll it")
    if not seen and LANE:  # an article whose figures all show their interactive view: no static image to measure
        pytest.skip(f"--article {' '.join(LANE)}：页面上没有显示静态图")
    assert seen > 0, "no figure displayed"
    assert not problems, "\n".join(problems)


def test_figure_alt_text_carries_the_caption(built_site):
    """Each figure's images say what the figure shows without the caption: every run of four or more
    汉字 in the caption's text (formulas left out) is also in the alt text, and so is the title."""
    from bs4 import BeautifulSoup

    checked = 0
    for path in lane_pages(pages_with_figures(built_site.dir)):
        html = page_file(built_site.dir, path).read_text(encoding="utf-8")
        for figure in BeautifulSoup(html, "html.parser").select("figure.llm-figure"):
            caption = figure.find("figcaption")
            for math in caption.select(".arithmatex"):
                math.replace_with(" ")
            runs = re.findall(r"[\u4e00-\u9fff]{4,}", caption.get_text())
            assert runs, f"{path}#{figure['id']}: caption without Chinese text"
            for img in figure.find_all("img"):
                alt = img.get("alt", "")
                missing = [r for r in runs if r not in alt]
                assert not missing, f"{path}#{figure['id']}: alt text lacks {missing[:3]}: {alt!r}"
                checked += 1
    assert checked > 0


# --------------------------------------------------------------------------- search results

def test_search_results_have_no_zero_width_spaces(page, site_server, built_site):
    """The index keeps jieba's zero-width spaces (search splits words on them); the shown results do not."""
    index = (built_site.dir / "search" / "search_index.json").read_text(encoding="utf-8")
    assert "\u200b" in index or "\\u200b" in index, "the index has no zero-width spaces: nothing to clean"
    page.goto(site_server)
    search = "input[data-md-component=search-query]"
    page.click(search)
    page.fill(search, "注意力")
    page.press(search, "End")  # Material searches on keyup
    page.wait_for_function("() => document.querySelectorAll('.md-search-result__item').length > 0", timeout=15_000)
    page.wait_for_timeout(200)  # the observer runs after Material's render
    shown = page.eval_on_selector_all(
        ".md-search-result__item", "items => items.map(i => i.textContent)"
    )
    titles = page.eval_on_selector_all(".md-search-result__article :is(h1, h2)", "hs => hs.map(h => h.textContent)")
    assert titles and all(t.strip() for t in titles), titles
    assert any("注意力" in t for t in shown), shown
    dirty = [t for t in shown if "\u200b" in t]
    assert not dirty, f"{len(dirty)} results still carry U+200B: {dirty[:2]!r}"
