"""One build's features, whatever the builder: the figures, exercises, labs, listings and playground models.

Each object is created once per build by an adapter (``llmsite.mkdocs.plugin``, ``llmsite.zensical.state``):

- ``plan()`` computes what is stale (in subprocesses) and returns the files the site gets from the cache or from
  memory (``files.Generated``); the adapter hands them to its builder (MkDocs: generated ``File`` objects;
  Zensical: files written into the staged tree);
- ``expand()`` and friends turn a page's markers into Markdown and HTML; ``llmsite.extension`` calls them while
  the builder renders the page.

A problem stops the build with ``problems.BuildStop`` (its message names the file); under a preview the failing
figure, lab or model shows its error in the page instead. Nothing here imports a builder.
"""
