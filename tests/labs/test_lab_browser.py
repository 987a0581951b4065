"""Lab pages in headless Chromium (``page`` fixture: no request to another host, no console error)."""

from __future__ import annotations

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.browser

LABS = sorted(p.stem for p in (ROOT / "labs").glob("*.py") if not p.name.startswith("_"))

REPORT = """() => {
  const lab = document.querySelector('.llm-lab');
  const md = [...lab.querySelectorAll('.jp-RenderedMarkdown')];
  const nested = [...lab.querySelectorAll('.katex .katex')].length;
  const clone = lab.cloneNode(true);
  clone.querySelectorAll('.katex-mathml, annotation, pre, code, script').forEach(e => e.remove());
  const text = [...clone.querySelectorAll('.jp-RenderedMarkdown')].map(e => e.textContent).join(' ');
  const raw = (text.match(/\\$[^$\\s][^$]*\\$/g) || []).slice(0, 5);
  const imgs = [...lab.querySelectorAll('.jp-RenderedImage img')];
  const width = lab.getBoundingClientRect().width;
  const code = lab.querySelector('.jp-CodeCell .highlight pre > code');
  return {
    markdown: md.length,
    katex: lab.querySelectorAll('.katex').length,
    nested, raw,
    copy: lab.querySelectorAll('.jp-CodeCell .highlight :is(.md-code__button, .md-clipboard)').length,
    images: imgs.map(i => ({
      loaded: i.complete && i.naturalWidth > 0,
      fits: i.getBoundingClientRect().width <= width + 1,
      bg: getComputedStyle(i).backgroundColor,
    })),
    codeBg: getComputedStyle(code).backgroundColor,
    prompts: [...lab.querySelectorAll('.jp-InputPrompt, .jp-OutputPrompt')]
      .filter(e => e.getClientRects().length).length,
  };
}"""


# The plots load lazily (llmsite/labs/images.py): bring each into view, as a reader scrolling down does, and wait.
SHOW_IMAGES = """async () => {
  for (const img of document.querySelectorAll('.llm-lab .jp-RenderedImage img')) {
    img.scrollIntoView();
    await new Promise(resolve => {
      if (img.complete) resolve(); else { img.addEventListener('load', resolve, {once: true});
                                          img.addEventListener('error', resolve, {once: true}); }
    });
  }
  window.scrollTo(0, 0);
}"""


def _switch_to_slate(page) -> None:
    page.locator("form[data-llm-palette] label:visible").click()
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")


@pytest.mark.parametrize("name", LABS)
def test_lab_page_renders_in_both_palettes(page, site_server, name: str) -> None:
    # a lab whose Markdown cells write formulas shows them rendered (bpe_lab has none)
    has_math = any(line.startswith("# ") and "$" in line
                   for line in (ROOT / "labs" / f"{name}.py").read_text(encoding="utf-8").splitlines())
    page.goto(site_server + f"labs/{name}/")
    if has_math:
        page.wait_for_selector(".llm-lab .katex", state="attached")
    page.evaluate(SHOW_IMAGES)
    light = page.evaluate(REPORT)
    assert (light["katex"] > 0) == has_math and light["nested"] == 0, light
    assert not light["raw"], f"unrendered math: {light['raw']}"
    assert light["copy"] >= 5, "Material's copy buttons on the code cells"
    assert light["prompts"] == 0
    assert light["images"] and all(i["loaded"] and i["fits"] for i in light["images"]), light["images"]
    assert all(i["bg"] == "rgb(255, 255, 255)" for i in light["images"]), "lab.css: plots sit on white"
    _switch_to_slate(page)
    dark = page.evaluate(REPORT)
    assert dark["codeBg"] != light["codeBg"], "code cells follow the palette"
    assert dark["katex"] == light["katex"], "math is not rendered a second time"


def test_lab_stylesheet_after_instant_navigation(page, site_server) -> None:
    page.goto(site_server + "route/")
    page.evaluate("() => { window.__noReload = true; }")
    page.locator("article a[href*='labs/attention_lab']").first.click()
    page.wait_for_url("**/labs/attention_lab/")
    page.wait_for_selector(".llm-lab .jp-RenderedImage img")
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('.llm-lab .jp-RenderedImage img')).backgroundColor"
        " === 'rgb(255, 255, 255)'"
    )
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"
    assert page.locator(".llm-lab .katex").count() > 0
