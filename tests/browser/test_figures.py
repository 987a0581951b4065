"""The generated figures in a real browser: one variant per palette, loaded, captioned."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_site import ATTENTION, _switch_palette

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]

FIGURE_STATE = """() => [...document.querySelectorAll('figure.llm-figure')].map(fig => {
  const state = sel => {
    const img = fig.querySelector(sel);
    return img ? {shown: img.getClientRects().length > 0, width: img.naturalWidth} : null;
  };
  const widget = fig.querySelector('.llm-ix');  // an interactive view (figures.js) replaces the images
  return {id: fig.id, light: state("img[src$='#only-light']"), dark: state("img[src$='#only-dark']"),
          live: !!widget && widget.getClientRects().length > 0,
          caption: (fig.querySelector('figcaption') || {}).textContent || ''};
})"""


def _load_all(page) -> None:
    page.evaluate("""async () => {
      for (const img of document.querySelectorAll('figure.llm-figure img')) {
        img.loading = 'eager';
        if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 5000); });
      }
    }""")


def test_every_figure_shows_exactly_the_variant_of_the_palette(page, site_server, record_artifact, tmp_path):
    source = (ROOT / "docs" / "articles" / f"{ATTENTION}.md").read_text(encoding="utf-8")
    declared = re.findall(r"^<!--\s*figure:\s*([\w-]+)\s*-->", source, re.M)
    page.goto(f"{site_server}articles/{ATTENTION}/")
    for scheme, shown, hidden in (("default", "light", "dark"), ("slate", "dark", "light")):
        if scheme == "slate":
            _switch_palette(page, "slate")
        _load_all(page)
        figures = page.evaluate(FIGURE_STATE)
        assert [f["id"] for f in figures] == [f"fig-{name}" for name in declared]
        for fig in figures:
            if fig["live"]:  # tests/browser/test_interactive_figures.py checks it, and the images without JS
                assert not fig[shown]["shown"] and not fig[hidden]["shown"], (scheme, fig)
            else:
                assert fig[shown]["shown"] and fig[shown]["width"] > 0, (scheme, fig)
                assert not fig[hidden]["shown"], (scheme, fig)
            assert len(fig["caption"].strip()) > 10, fig
        # a picture of one figure per palette, to look at for missing-glyph boxes
        target = page.locator("#fig-attention-weights")
        target.scroll_into_view_if_needed()
        path = tmp_path / f"figure-{scheme}.png"
        target.screenshot(path=str(path))
        record_artifact(f"attention-weights figure ({scheme})", path)
