"""The built site serves the site's own scripts and stylesheets minified (llmsite/minify.py); the sources keep
their comments. Every browser test runs the minified scripts, so a minifier that broke one would fail them."""

from __future__ import annotations

import gzip

import rcssmin
import rjsmin

from tests.conftest import DOCS, BuiltSite


def test_own_assets_are_minified_and_vendored_ones_untouched(built_site: BuiltSite) -> None:
    ours = sorted([*DOCS.glob("assets/javascripts/*.js"), *DOCS.glob("assets/stylesheets/*.css")])
    assert len(ours) >= 8
    before = after = 0
    for source in ours:
        text = source.read_text(encoding="utf-8")
        built = (built_site.dir / source.relative_to(DOCS)).read_text(encoding="utf-8")
        expected = rjsmin.jsmin(text) if source.suffix == ".js" else rcssmin.cssmin(text)
        assert built == expected, source.name
        assert not any(line.lstrip().startswith("//") for line in built.splitlines()) and "/*" not in built, source.name
        before += len(gzip.compress(text.encode(), 9, mtime=0))
        after += len(gzip.compress(built.encode(), 9, mtime=0))
    assert after < 0.85 * before, (before, after)
    vendored = DOCS / "assets/vendor/katex/katex.min.css"
    assert (built_site.dir / "assets/vendor/katex/katex.min.css").read_bytes() == vendored.read_bytes()
