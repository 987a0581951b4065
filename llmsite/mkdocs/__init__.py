"""MkDocs adapters: translate MkDocs events into calls on the build package, and nothing more.

``plugin.SitePlugin`` (registered as the ``llmsite`` plugin through an entry point in pyproject.toml)
wires every event in one place; each part is a small object created once per build (``parts.py``).
Templates receive plain values (strings, numbers, lists, dicts), never our Python objects.
"""
