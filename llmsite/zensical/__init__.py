"""The Zensical adapter: the same site built by Zensical, with ``llmsite`` around the builder, not inside it.

Zensical (``requirements.txt`` pins 0.0.73, see ARCHITECTURE.md) reads ``mkdocs.yml`` and runs Python-Markdown
extensions, but no MkDocs plugin and no ``hooks:``. So the site's work happens at the three points every
builder has:

- before (``stage``): the articles are read and checked, the figures, answers, labs and playground models are
  computed (the same caches as the MkDocs build), and a staged tree ``.zensical/`` is written: a copy of
  ``docs/`` with the generated pages and files added and each article's template values in its front matter,
  and a ``mkdocs.yml`` for Zensical (the stages in the nav, this extension added, no plugins);
- during (``extension``): a Python-Markdown extension expands the markers (listings, exercises, playground,
  figures) of the page Zensical is rendering, and fills the lab pages;
- after (``finish``): the formulas become KaTeX's HTML, the feed is written, the site moves to ``site-zensical/``.

``python -m llmsite zensical`` (``make build-zensical``) runs the three in one process: Zensical renders
Markdown by calling back into Python, so the extension reads the state ``stage`` computed.
"""
