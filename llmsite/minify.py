"""The site's own scripts and stylesheets, minified in the built site (not under a preview).

``docs/assets/javascripts/*.js`` and ``docs/assets/stylesheets/*.css`` keep their Chinese comments for the people
who read and change them; readers' browsers need none of that. After a build the copies in the site are rewritten
(atomically) by rjsmin and rcssmin, which only drop comments and whitespace, never rename: the 11 files an article
loads go from 23.1 kB to 15.3 kB gzip. Vendored files (KaTeX) are left as they are: they come minified.
"""

from __future__ import annotations

from pathlib import Path

from llmsite import atomic

OURS = ("assets/javascripts/*.js", "assets/stylesheets/*.css")  # in docs/: written here, not vendored


def minify_site(site: Path, docs: Path) -> int:
    """Minify the built copy of each of the site's own scripts and stylesheets; returns how many were rewritten."""
    import rcssmin
    import rjsmin

    done = 0
    for pattern in OURS:
        for source in sorted(docs.glob(pattern)):
            path = site / source.relative_to(docs)
            if not path.is_file():  # excluded from the site
                continue
            text = path.read_text(encoding="utf-8")
            small = rjsmin.jsmin(text) if path.suffix == ".js" else rcssmin.cssmin(text)
            if small != text:
                atomic.write_text(path, small)
                done += 1
    return done
