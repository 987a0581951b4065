"""The site's benchmark harness, driven by ``bench/run.py`` (``python -m llmsite bench``, from the repository root).

One module per benchmark family:

- ``build``:   cold, warm and incremental builds; plain-Material baseline; figure hook cost; labs;
- ``serve``:   ``mkdocs serve`` from saving a file to the rebuilt page being served;
- ``scaling``: build time per article with N synthetic articles, against plain Material and Hugo;
- ``weight``:  page weight and load time in headless Chromium over a gzip HTTP server.

Shared pieces: ``common`` (workspaces, timed runs, machine info), ``synth`` (synthetic
Chinese articles), ``hugo`` (a minimal Hugo site on the same Markdown), ``httpd`` (the
gzip server), ``report`` (table and JSON). Everything runs in temporary copies of the
repository: the working tree is only read.
"""
