"""A published page links one stylesheet (llmsite/stylesheets.py) and looks exactly as it did with eight.

On the longest article and a lab page, at phone and desktop width, in both palettes: the page's rules as the
browser parsed them (in cascade order, each url() resolved to the address it loads) and every element's box are
recorded with the bundle; then the page's link is swapped for the separate sheets the bundle was made from (the
published site still has them), and both are recorded again. Both must be the same, and the page must have loaded
KaTeX's fonts through the bundle's rewritten addresses (a font that failed to load would be a console error, which
fails any test here)."""

from __future__ import annotations

import pytest

from llmsite.stylesheets import BUNDLE
from tests.browser.test_accessibility import settle
from tests.site.test_stylesheets import separate_sheets

pytestmark = pytest.mark.browser

PAGES = ("articles/transformer-attention/", "labs/attention_lab/")
VIEWS = {"phone-light": ({"width": 375, "height": 812}, "light"),
         "desktop-dark": ({"width": 1280, "height": 900}, "dark")}

# Every rule the page's stylesheets hold, in cascade order, nested rules (@media, @font-face, @supports) flattened,
# each url() written as the absolute address it resolves to from its own sheet: two sets of sheets with the same
# list give every element the same style (same rules, same order, same origin, the same files behind each url).
RULES = """() => {
  const out = [];
  const walk = (rules, base) => {
    for (const rule of rules) {
      const text = rule.cssText.replace(/url\\(\\s*(["']?)([^"')]*)\\1\\s*\\)/g,
                                        (m, q, u) => 'url(' + new URL(u, base).href + ')');
      if (rule.cssRules) {
        out.push(text.slice(0, text.indexOf('{')).trim() + ' {');
        walk(rule.cssRules, base);
        out.push('}');
      } else {
        out.push(text);
      }
    }
  };
  for (const sheet of document.styleSheets) {
    if (sheet.ownerNode && sheet.ownerNode.matches('head link[rel=stylesheet]')) walk(sheet.cssRules, sheet.href);
  }
  return out;
}"""

# Every element's box, one line each.
BOXES = """() => [document.documentElement, ...document.querySelectorAll('body, body *')].map((el) => {
  const r = el.getBoundingClientRect();
  return el.tagName + ' ' + [r.x, r.y, r.width, r.height].map((v) => v.toFixed(1)).join(',');
})"""

SWAP = """async ([bundle, hrefs]) => {
  const link = document.querySelector(`head link[rel=stylesheet][href$="${bundle}"]`);
  if (!link) throw new Error('no bundle link in <head>');
  const base = link.href.slice(0, link.href.length - bundle.length);
  await Promise.all(hrefs.map((href) => new Promise((resolve, reject) => {
    const sheet = document.createElement('link');
    sheet.rel = 'stylesheet';
    sheet.href = base + href;
    sheet.onload = resolve;
    sheet.onerror = () => reject(new Error('could not load ' + href));
    link.before(sheet);  // in order, before the bundle
  })));
  link.remove();
  document.body.offsetHeight;  // style and layout now, so that any font they need starts loading
  await document.fonts.ready;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("path", PAGES)
def test_the_bundle_styles_every_element_as_the_separate_sheets_did(browser, built_site, site_server, path, view):
    from tests.conftest import watched_page

    viewport, scheme = VIEWS[view]
    with watched_page(browser, built_site, viewport=viewport, color_scheme=scheme) as page:
        page.goto(site_server + path)
        settle(page)
        loaded = page.evaluate("() => [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)")
        assert "KaTeX_Main" in loaded, loaded
        sheets = [r for r in page.log.requests if r.endswith(".css")]
        assert [s.rsplit("/", 1)[-1] for s in sheets][:1] == ["site.css"], sheets
        rules, boxes = page.evaluate(RULES), page.evaluate(BOXES)
        count = "() => document.querySelectorAll('head link[rel=stylesheet]').length"
        linked, separate_hrefs = page.evaluate(count), separate_sheets(built_site.dir)
        page.evaluate(SWAP, [BUNDLE, separate_hrefs])
        assert page.evaluate(count) == linked - 1 + len(separate_hrefs) and len(separate_hrefs) >= 8
        separate = page.evaluate(RULES)
        assert len(rules) > 3000 and any("KaTeX_Main-Regular.woff2" in r for r in rules)
        pairs = enumerate(zip(rules, separate, strict=False))
        diff = next((i for i, (a, b) in pairs if a != b), min(len(rules), len(separate)))
        assert rules == separate, (f"the rules differ from rule {diff} on ({len(rules)} with the bundle, "
                                   f"{len(separate)} separate): {rules[diff:diff + 2]} vs {separate[diff:diff + 2]}")
        after = page.evaluate(BOXES)
        moved = [(a, b) for a, b in zip(boxes, after, strict=True) if a != b]
        assert not moved, f"{len(moved)} of {len(boxes)} boxes moved; first: {moved[0]}"
