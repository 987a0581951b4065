"""Lanes: one article's checks and nothing else (``python -m llmsite lane <slug>``, ``make test-article``).

One job a module:

- ``graph.py``: what each article is made of (its file, includes, figures, answers, labs, models, the ``code/``
  files they import, the data they read), read from the build's own declarations;
- ``select.py``: which test files an article's lane runs, and within them which tests (``keeps``, used by
  ``tests/conftest.py`` under ``--article``);
- ``changes.py``: which articles a set of changed files touches (``articles_for_changes``), or that every article
  is (the build, the templates, the route ...), for the first CI job;
- ``run.py``: running a lane (content checks, then one pytest run) and saying where each failure is;
- ``report.py``: the pytest plugin that records the failures for ``run.py``.
"""
