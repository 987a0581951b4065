"""The interactive figures (docs/assets/javascripts/figures.js) in headless Chromium.

Every number read from the page is compared with a recomputation here, by the teaching modules in
``code/`` (attention.py, tiny_transformer.py) plus plain PyTorch, never by reading the page's JSON.
Every page used here fails its test at teardown on a console error or a request to another host.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import re
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest
import torch

from ..conftest import follow_instantly, wait_for_path, watched_page
from .test_site import ATTENTION, _switch_palette

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "code") not in sys.path:
    sys.path.insert(0, str(ROOT / "code"))

from attention import causal_mask, scaled_dot_product_attention  # noqa: E402

MASK_FIG, HEADS_FIG, DK_FIG = "#fig-attention-weights", "#fig-multi-head-weights", "#fig-dk-explorer"
WEIGHT = re.compile(r"权重 (\d+\.\d{3})")
BUDGET = 40_000  # bytes gzip: the shared script, its stylesheet and the article's figure data together


# --------------------------------------------------------------------------- recomputations


@cache
def mask_demo() -> tuple[torch.Tensor, torch.Tensor]:
    """Seven 16-dimensional standard normal vectors (generator seeded with 7), Q = K = V = x: no mask, causal."""
    x = torch.randn(7, 16, generator=torch.Generator().manual_seed(7))
    _, plain = scaled_dot_product_attention(x, x, x)
    _, masked = scaled_dot_product_attention(x, x, x, mask=causal_mask(7))
    return plain, masked


@cache
def trained_heads() -> tuple[list[int], list[torch.Tensor]]:
    """The reference model (as the build caches it) on the example sequence: tokens, per-layer (heads, T, T)."""
    from tiny_transformer import load_trained, make_repeat_batch

    from llmsite import artifacts

    path = artifacts.ensure([artifacts.discover()["tiny-transformer"]])["tiny-transformer"]
    model, _ = load_trained(path)
    tokens = make_repeat_batch(1, 8, model.cfg.vocab_size, torch.Generator().manual_seed(1))
    with torch.no_grad():
        model(tokens)
    return tokens[0].tolist(), [w[0] for w in model.attention_weights]


@cache
def dk_stats(d_k: int, scaled: bool) -> dict[str, float]:
    """256 queries and 64 keys, standard normal, float64, generator seeded with d_k; the query whose unscaled
    Jacobian norm is the (lower) median; its max weight, and the article's statistics over all queries."""
    gen = torch.Generator().manual_seed(d_k)
    q = torch.randn(256, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(64, d_k, generator=gen, dtype=torch.float64)
    v = torch.zeros(64, 1, dtype=torch.float64)

    def norms(scores: torch.Tensor) -> torch.Tensor:  # Frobenius norm of d softmax / d z, by autograd
        jac = torch.func.vmap(torch.func.jacrev(lambda z: torch.softmax(z, dim=-1)))(scores)
        return jac.flatten(1).norm(dim=-1)

    unscaled = norms(q @ k.T)
    row = int(unscaled.sort().indices[(len(unscaled) - 1) // 2])
    _, w = scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)
    n = norms(q @ k.T / math.sqrt(d_k)) if scaled else unscaled
    return {"row": row, "max": w[row].max().item(), "mean_max": w.max(dim=-1).values.mean().item(),
            "median": n.median().item(), "near_zero": int((n < 0.01).sum())}


# --------------------------------------------------------------------------- pages and helpers


@pytest.fixture
def open_page(browser, site_server, built_site) -> Iterator[Callable[..., object]]:
    """``open_page(**context options)``: a page like the ``page`` fixture's (``watched_page``: third-party requests
    blocked and reported, console errors fail the test), in a context of its own (phone, touch, no JavaScript, ...)."""
    with contextlib.ExitStack() as stack:

        def open_(**options):
            options = {"viewport": {"width": 1280, "height": 900}, "color_scheme": "light", **options}
            return stack.enter_context(watched_page(browser, built_site, **options))

        yield open_


def article(page, site_server: str) -> None:
    page.goto(f"{site_server}articles/{ATTENTION}/")
    page.wait_for_function("() => document.querySelectorAll('.llm-ix').length === 3")


def cell(fig: str, i: int, j: int) -> str:
    return f'{fig} rect.llm-ix__cell[data-i="{i}"][data-j="{j}"]'


def readout(page, fig: str) -> str:
    return page.locator(f"{fig} .llm-ix__readout").inner_text()


def weight(page, fig: str) -> float:
    text = readout(page, fig)
    m = WEIGHT.search(text)
    assert m, f"no weight in the readout: {text!r}"
    return float(m.group(1))


def stats(page) -> dict[str, str]:
    return page.evaluate("""() => {
      const out = {};
      for (const dt of document.querySelectorAll('#fig-dk-explorer .llm-ix__stats dt'))
        out[dt.textContent] = dt.nextElementSibling.textContent;
      return out;
    }""")


def stat(values: dict[str, str], prefix: str) -> str:
    found = [v for k, v in values.items() if k.startswith(prefix)]
    assert len(found) == 1, (prefix, values)
    return found[0]


# --------------------------------------------------------------------------- heatmaps


def test_hover_reads_the_weight_and_highlights_row_and_column(page, site_server):
    article(page, site_server)
    plain, masked = mask_demo()
    for i, j in ((4, 2), (0, 6), (6, 6)):
        page.hover(cell(MASK_FIG, i, j))
        text = readout(page, MASK_FIG)
        assert f"查询 x{'₁₂₃₄₅₆₇'[i]} → 键 x{'₁₂₃₄₅₆₇'[j]}" in text, text
        assert weight(page, MASK_FIG) == pytest.approx(plain[i, j].item(), abs=1e-3)
        on = page.evaluate(f"""() => [...document.querySelectorAll('{MASK_FIG} text.is-on')].map(t => t.textContent)""")
        assert on == [f"x{'₁₂₃₄₅₆₇'[j]}", f"x{'₁₂₃₄₅₆₇'[i]}"] if i != j else len(on) == 2, on
        band = page.evaluate(f"""() => [...document.querySelectorAll('{MASK_FIG} .llm-ix__band')]
            .map(b => [b.getAttribute('y'), b.getAttribute('x')])""")
        box = page.evaluate(f"""() => {{ const c = document.querySelector('{cell(MASK_FIG, i, j)}');
            return [c.getAttribute('y'), c.getAttribute('x')]; }}""")
        assert band[0][0] == box[0] and band[1][1] == box[1], (band, box)
    assert masked[0, 6] == 0  # the mask switch below is about this


def test_the_mask_switch_zeroes_the_upper_triangle(page, site_server):
    article(page, site_server)
    plain, masked = mask_demo()
    assert bool((masked.triu(diagonal=1) == 0).all()) and not bool((plain.triu(diagonal=1) == 0).all())
    opacity = f"""() => [...document.querySelectorAll('{MASK_FIG} rect.llm-ix__cell')]
        .filter(c => +c.dataset.j > +c.dataset.i).map(c => +c.getAttribute('fill-opacity'))"""
    assert max(page.evaluate(opacity)) > 0  # 不加掩码: the upper triangle has weight
    page.locator(f"{MASK_FIG} button", has_text="因果掩码").click()
    assert page.locator(f"{MASK_FIG} button", has_text="因果掩码").get_attribute("aria-pressed") == "true"
    assert "因果掩码" in page.locator(f"{MASK_FIG} .llm-ix__title").inner_text()
    upper = page.evaluate(opacity)
    assert len(upper) == 21 and set(upper) == {0}, upper
    page.hover(cell(MASK_FIG, 1, 5))
    assert weight(page, MASK_FIG) == 0 and "屏蔽" in readout(page, MASK_FIG)
    page.hover(cell(MASK_FIG, 5, 1))
    assert weight(page, MASK_FIG) == pytest.approx(masked[5, 1].item(), abs=1e-3)
    page.locator(f"{MASK_FIG} button", has_text="不加掩码").click()  # the readout follows the switch
    assert weight(page, MASK_FIG) == pytest.approx(plain[5, 1].item(), abs=1e-3)


def test_keyboard_moves_the_focused_cell_with_a_visible_ring(page, site_server):
    article(page, site_server)
    _, masked = mask_demo()
    page.locator(f"{MASK_FIG} button", has_text="因果掩码").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # from the last button to the heatmap
    plot = page.locator(f"{MASK_FIG} .llm-ix__plot")
    assert plot.evaluate("el => el === document.activeElement && el.matches(':focus-visible')")
    assert plot.evaluate("el => getComputedStyle(el).outlineStyle") == "solid"
    assert page.locator(f"{MASK_FIG} .llm-ix__cursor").evaluate("c => getComputedStyle(c).strokeWidth") == "3.5px"
    assert weight(page, MASK_FIG) == pytest.approx(masked[0, 0].item(), abs=1e-3)  # focus selects the first cell
    for key in ("ArrowDown", "ArrowDown", "ArrowDown", "ArrowRight"):
        page.keyboard.press(key)
    assert "查询 x₄ → 键 x₂" in readout(page, MASK_FIG)
    assert weight(page, MASK_FIG) == pytest.approx(masked[3, 1].item(), abs=1e-3)
    page.keyboard.press("End")
    assert "查询 x₄ → 键 x₇" in readout(page, MASK_FIG) and "屏蔽" in readout(page, MASK_FIG)
    scroll = page.evaluate("() => window.scrollY")
    for _ in range(9):  # stops at the edge
        page.keyboard.press("ArrowUp")
    assert "查询 x₁ → 键 x₇" in readout(page, MASK_FIG)
    assert page.evaluate("() => window.scrollY") == scroll  # the arrows move the cell, not the page
    assert plot.get_attribute("aria-describedby") == page.locator(f"{MASK_FIG} .llm-ix__readout").get_attribute("id")
    assert page.locator(f"{MASK_FIG} .llm-ix__readout").get_attribute("aria-live") == "polite"


def test_heads_picker_shows_the_trained_models_weights(page, site_server):
    article(page, site_server)
    tokens, weights = trained_heads()
    fig = page.locator(HEADS_FIG)
    fig.scroll_into_view_if_needed()
    for layer, head, (i, j) in ((1, 2, (10, 3)), (0, 1, (5, 4)), (1, 0, (13, 6))):
        fig.locator("button", has_text=f"第 {layer} 层").click()
        fig.locator("button", has_text=f"头 {head}").click()
        assert fig.locator(".llm-ix__title").inner_text().startswith(f"第 {layer} 层 头 {head}：")
        page.hover(cell(HEADS_FIG, i, j))
        text = readout(page, HEADS_FIG)
        assert f"位置 {i}（词 {tokens[i]}）" in text and f"位置 {j}（词 {tokens[j]}）" in text, text
        assert weight(page, HEADS_FIG) == pytest.approx(weights[layer][head, i, j].item(), abs=1e-3)
    # the trained model is causal too: every cell right of the diagonal is empty and marked
    upper = page.evaluate(f"""() => [...document.querySelectorAll('{HEADS_FIG} rect.llm-ix__cell')]
        .filter(c => +c.dataset.j > +c.dataset.i)
        .map(c => [+c.getAttribute('fill-opacity'), c.classList.contains('llm-ix__cell--masked')])""")
    assert upper and all(o == 0 and m for o, m in upper)


# --------------------------------------------------------------------------- the d_k explorer


def test_dk_slider_shows_saturation_at_512(page, site_server):
    page.emulate_media(reduced_motion="reduce")  # bars at their final height at once
    article(page, site_server)
    fig = page.locator(DK_FIG)
    slider = fig.locator("input[type=range]")
    slider.focus()
    page.keyboard.press("End")
    assert slider.get_attribute("aria-valuetext") == "dₖ = 512"
    assert fig.locator("button", has_text="不缩放").get_attribute("aria-pressed") == "true"
    expected = dk_stats(512, scaled=False)
    title = fig.locator(".llm-ix__title").inner_text()
    assert title.startswith("dₖ = 512，不缩放") and f"第 {expected['row'] + 1} 个查询" in title, title
    shown = stats(page)
    assert float(stat(shown, "这个查询的最大权重")) == pytest.approx(expected["max"], abs=1e-3)
    assert float(stat(shown, "256 个查询的最大权重平均值")) == pytest.approx(expected["mean_max"], abs=1e-3)
    assert float(stat(shown, "雅可比范数的中位数")) == pytest.approx(expected["median"], abs=1e-4)
    assert stat(shown, "范数 < 0.01 的行") == f"{expected['near_zero']} / 256"
    assert expected["max"] > 0.99  # saturated: one key takes (almost) everything
    tallest = fig.locator("rect.llm-ix__bar").first.evaluate("b => b.getBoundingClientRect().height")
    plot = fig.locator(".llm-ix svg").evaluate("s => s.getBoundingClientRect().height")
    assert tallest > 0.6 * plot
    fig.locator("button", has_text="除以").click()
    scaled = dk_stats(512, scaled=True)
    assert float(stat(stats(page), "这个查询的最大权重")) == pytest.approx(scaled["max"], abs=1e-3)
    assert stat(stats(page), "范数 < 0.01 的行") == "0 / 256"
    page.keyboard.press("Shift+Tab")  # back to the slider; the arrows walk the stops
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowLeft")
    assert slider.get_attribute("aria-valuetext") == "dₖ = 256"
    assert float(stat(stats(page), "这个查询的最大权重")) == pytest.approx(dk_stats(256, True)["max"], abs=1e-3)


def test_reduced_motion_turns_the_transitions_off(page, site_server):
    article(page, site_server)
    bar = page.locator(f"{DK_FIG} rect.llm-ix__bar").first
    assert bar.evaluate("b => getComputedStyle(b).transitionDuration") != "0s"
    page.emulate_media(reduced_motion="reduce")
    assert bar.evaluate("b => getComputedStyle(b).transitionDuration") == "0s"
    assert page.locator(cell(MASK_FIG, 0, 0)).evaluate("c => getComputedStyle(c).transitionDuration") == "0s"


# --------------------------------------------------------------------------- palettes, navigation, phones, no JS


PALETTE = f"""() => {{
  const probe = document.createElement('span');
  probe.style.color = 'var(--md-typeset-a-color)';
  document.body.append(probe);
  const expected = getComputedStyle(probe).color;
  probe.remove();
  const fill = getComputedStyle(document.querySelector('{cell(MASK_FIG, 0, 0)}')).fill;
  const bar = getComputedStyle(document.querySelector('{DK_FIG} rect.llm-ix__bar')).fill;
  return {{expected, fill, bar, text: getComputedStyle(document.querySelector('{MASK_FIG} text')).fill}};
}}"""


def test_colours_follow_the_palette_live(page, site_server, record_artifact, tmp_path):
    article(page, site_server)
    light = page.evaluate(PALETTE)
    _switch_palette(page, "slate")  # no reload: the same widgets, new colours
    dark = page.evaluate(PALETTE)
    for colours in (light, dark):
        assert colours["fill"] == colours["bar"] == colours["expected"], colours
    assert light["fill"] != dark["fill"] and light["text"] != dark["text"], (light, dark)
    for scheme in ("slate",):
        target = page.locator(HEADS_FIG)
        target.scroll_into_view_if_needed()
        path = tmp_path / f"interactive-heads-{scheme}.png"
        target.screenshot(path=str(path))
        record_artifact(f"multi-head-weights, interactive ({scheme})", path)


# Each figure fetches its own data and mounts when it arrives: wait until every one has, then count the widgets
ALL_MOUNTED = """() => { const figs = [...document.querySelectorAll('figure.llm-figure[data-llm-view]')];
  return figs.length === 3 && figs.every(f => f.querySelector('.llm-ix')); }"""


def test_widgets_mount_once_across_instant_navigation(page, site_server):
    page.goto(f"{site_server}articles/")
    page.evaluate("() => { window.__noReload = true; }")
    follow_instantly(page, page.locator(f"article a.llm-card__title[href*='{ATTENTION}']"))
    wait_for_path(page, f"/articles/{ATTENTION}/")
    page.wait_for_function(ALL_MOUNTED)
    assert page.locator(".llm-ix").count() == 3
    follow_instantly(page, page.locator("article a.llm-route"))
    page.wait_for_url("**/route/")
    follow_instantly(page, page.locator(f"article a[href*='/{ATTENTION}/']").first)  # not an edit link (….md)
    wait_for_path(page, f"/articles/{ATTENTION}/")
    page.wait_for_function(ALL_MOUNTED)
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"
    assert page.locator(".llm-ix").count() == 3
    page.hover(cell(MASK_FIG, 2, 1))
    assert weight(page, MASK_FIG) == pytest.approx(mask_demo()[0][2, 1].item(), abs=1e-3)


def test_phone_width_with_tap(open_page, site_server):
    phone = open_page(viewport={"width": 375, "height": 740}, has_touch=True, is_mobile=True, device_scale_factor=2)
    article(phone, site_server)
    _, masked = mask_demo()
    phone.locator(f"{MASK_FIG} button", has_text="因果掩码").tap()
    phone.locator(cell(MASK_FIG, 5, 2)).tap()
    assert weight(phone, MASK_FIG) == pytest.approx(masked[5, 2].item(), abs=1e-3)
    phone.locator(f"{DK_FIG} button", has_text="除以").tap()
    assert phone.locator(f"{DK_FIG} button", has_text="除以").get_attribute("aria-pressed") == "true"
    _, weights = trained_heads()
    phone.locator(f"{HEADS_FIG} button", has_text="第 1 层").tap()
    phone.locator(f"{HEADS_FIG} button", has_text="头 3").tap()
    phone.locator(cell(HEADS_FIG, 12, 4)).tap()
    assert weight(phone, HEADS_FIG) == pytest.approx(weights[1][3, 12, 4].item(), abs=1e-3)
    widths = phone.evaluate("""() => ({page: document.documentElement.scrollWidth,
        widgets: [...document.querySelectorAll('.llm-ix svg, .llm-ix__controls')]
          .map(e => e.getBoundingClientRect().right)})""")
    assert widths["page"] <= 375 and max(widths["widgets"]) <= 375, widths
    buttons = phone.evaluate("() => [...document.querySelectorAll('.llm-ix button')].map(b => b.offsetHeight)")
    assert min(buttons) >= 24, buttons


FIGURES_NO_JS = """() => [...document.querySelectorAll('figure.llm-figure')].map(fig => ({
  id: fig.id,
  light: fig.querySelector("img[src$='#only-light']").getClientRects().length > 0,
  dark: fig.querySelector("img[src$='#only-dark']").getClientRects().length > 0,
  caption: (fig.querySelector('figcaption') || {}).innerText || '',
  widget: !!fig.querySelector('.llm-ix'),
  data: fig.getAttribute('data-llm-data'),
}))"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_without_javascript_the_static_figure_and_caption_show(open_page, site_server, built_site, content, scheme):
    page = open_page(java_script_enabled=False, color_scheme=scheme)
    page.goto(f"{site_server}articles/{ATTENTION}/")
    declared = re.findall(r"^<!--\s*figure:\s*([\w-]+)\s*-->", content.articles[ATTENTION].body, re.M)
    figures = page.evaluate(FIGURES_NO_JS)
    assert [f["id"] for f in figures] == [f"fig-{n}" for n in declared]
    # Without JavaScript Material keeps the page's own scheme (the first palette, light) whatever the system
    # prefers, so the light SVG is the one that matches the page.
    assert page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "default"
    for fig in figures:
        assert fig["light"] and not fig["dark"], fig
        assert len(fig["caption"].strip()) > 10, fig
        assert not fig["widget"], fig
    assert {f["id"]: f["data"] for f in figures if f["data"]} == {
        f"fig-{n}": f"../../figures/{n}.data.json" for n in ("attention-weights", "dk-explorer", "multi-head-weights")}
    assert not [url for url in page.log.requests if url.endswith(".data.json")]  # nothing fetched it
    caption = next(f["caption"] for f in figures if f["id"] == "fig-attention-weights")
    assert "右图对角线右上方的权重全部为 0" in caption


def test_print_shows_the_static_figure(page, site_server):
    article(page, site_server)
    page.emulate_media(media="print")
    state = page.evaluate(f"""() => ({{
      img: document.querySelector("{MASK_FIG} img[src$='#only-light']").getClientRects().length > 0,
      widget: document.querySelector('{MASK_FIG} .llm-ix').getClientRects().length > 0}})""")
    assert state == {"img": True, "widget": False}


# --------------------------------------------------------------------------- weight


def test_script_style_and_data_stay_within_the_budget(built_site, record_artifact, tmp_path):
    html = (built_site.dir / "articles" / ATTENTION / "index.html").read_text(encoding="utf-8")
    urls = re.findall(r'data-llm-data="\.\./\.\./(figures/[\w-]+\.data\.json)"', html)
    assert len(urls) == 3

    def gz(path: str) -> int:  # each file is a response of its own, gzipped on its own
        return len(gzip.compress((built_site.dir / path).read_bytes(), 9, mtime=0))

    sizes = {"figures.js": gz("assets/javascripts/figures.js"), "figures.css": gz("assets/stylesheets/figures.css"),
             **{url.split("/")[-1]: gz(url) for url in urls}}
    assert sum(sizes.values()) <= BUDGET, sizes
    path = tmp_path / "interactive-weight.txt"
    path.write_text(f"{sizes} total {sum(sizes.values())} B gzip\n", encoding="utf-8")
    record_artifact(f"interactive figures, gzip bytes: {sizes}", path)
