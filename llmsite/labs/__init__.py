"""Hands-on labs: jupytext sources in ``labs/``, executed once per change, cached.

A lab is ``labs/<name>.py`` in jupytext's percent format. On a change it is executed once, in a fresh kernel,
and its entry is committed to ``.cache/labs/<name>/<key>/``; a build with nothing changed only reads entries.
One job a module:

- ``sources.py``: what a lab is (``Lab``), finding them (``discover``), a lab's title, the generated lab pages;
- ``planning.py``: each lab's cache key (``key_for``) and entry, which labs are stale (``plan``). Cheap: no
  jupytext, nbclient or torch;
- ``notebook.py``: a lab as a notebook whose bytes depend only on its content (cell ids, merged streams);
- ``execute.py``: running the stale labs side by side and committing their entries (``run``);
- ``page.py``: the executed notebook as a page body and its table of contents;
- ``images.py``: the page's plots taken out as files of their own;
- ``download.py``: the notebook offered for download, carrying the ``code/`` files the lab imports (``published``);
- ``stored.py``: the page without its plots and the download, stored in the entry so that a warm build only reads.

The names other code uses are importable from here too (``from llmsite import labs``; ``labs.plan``).
"""

from __future__ import annotations

from llmsite.labs.download import (
    BUNDLE_DIR,
    BUNDLE_TAG,
    DATA_DECLARATION,
    bundle_cell_source,
    bundled_files,
    code_files,
    published,
)
from llmsite.labs.execute import CELL_TIMEOUT, run, workers_for
from llmsite.labs.notebook import KERNEL, cell_ids, merge_streams, to_notebook
from llmsite.labs.planning import (
    CACHE_DIR,
    LIBRARIES,
    PIPELINE_VERSION,
    RUNNER_LIBRARIES,
    Planned,
    dependencies,
    entry_dir,
    key_for,
    library_versions,
    notebook_path,
    plan,
    uses_artifacts,
)
from llmsite.labs.sources import CELL_MARKER, LABS_DIR, TITLE, Lab, LabError, discover, generated_page, title
from llmsite.paths import ROOT

__all__ = [
    "BUNDLE_DIR", "BUNDLE_TAG", "CACHE_DIR", "CELL_MARKER", "CELL_TIMEOUT", "DATA_DECLARATION", "KERNEL", "LABS_DIR",
    "LIBRARIES", "PIPELINE_VERSION", "ROOT", "RUNNER_LIBRARIES", "TITLE", "Lab", "LabError", "Planned",
    "bundle_cell_source", "bundled_files", "cell_ids", "code_files", "dependencies", "discover", "entry_dir",
    "generated_page", "key_for", "library_versions", "merge_streams", "notebook_path", "plan", "published", "run",
    "title", "to_notebook", "uses_artifacts", "workers_for",
]
