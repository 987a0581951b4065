"""Build-time figures: discovery, dependency tracking, cache and execution.

Figures are declared in ``code/figures/*.py`` with ``@figure(...)`` from
``code/figkit.py``. Everything needed to decide whether a figure is up to date
is read statically (AST, file hashes, package metadata): a build with nothing
changed imports neither torch nor matplotlib.
"""
