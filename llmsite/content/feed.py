"""An Atom feed of the newest articles (``feed.xml``).

Built from the same article model as the list page; written atomically into
the output folder after the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as _escape

from llmsite import atomic
from llmsite.content.articles import Site

FEED = "feed.xml"
ENTRIES = 20


def escape(text: str) -> str:
    """Text for XML element content or a double-quoted attribute."""
    return _escape(text, {'"': "&quot;"})


def _absolute(config: Any, path: str) -> str:
    base = (config.get("site_url") or "/").rstrip("/") + "/"
    return base + path


def render(site: Site, config: Any) -> str:
    articles = site.newest(ENTRIES)
    updated = articles[0].date.isoformat() if articles else "1970-01-01"
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="zh-CN">',
        f"  <title>{escape(config['site_name'])}</title>",
        f"  <subtitle>{escape(config.get('site_description') or '')}</subtitle>",
        f'  <link href="{escape(_absolute(config, ""))}"/>',
        f'  <link rel="self" href="{escape(_absolute(config, FEED))}"/>',
        f"  <id>{escape(_absolute(config, ''))}</id>",
        f"  <updated>{updated}T00:00:00Z</updated>",
    ]
    for a in articles:
        url = _absolute(config, a.url)
        out += [
            "  <entry>",
            f"    <title>{escape(a.title)}</title>",
            f'    <link href="{escape(url)}"/>',
            f"    <id>{escape(url)}</id>",
            f"    <published>{a.date.isoformat()}T00:00:00Z</published>",
            f"    <updated>{a.date.isoformat()}T00:00:00Z</updated>",
            f"    <author><name>{escape(a.author.name)}</name></author>",
            f"    <summary>{escape(a.description)}</summary>",
            *[f'    <category term="{escape(t)}"/>' for t in a.tags],
            "  </entry>",
        ]
    out.append("</feed>")
    return "\n".join(out) + "\n"


def write(site: Site, config: Any) -> None:
    atomic.write_text(Path(config["site_dir"]) / FEED, render(site, config))
