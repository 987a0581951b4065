"""The site model of the current build, shared between hooks.

hook_content loads it in ``on_files``; the other hooks read it afterwards.
"""

from __future__ import annotations

from .articles import Site

_current: Site | None = None


def set_site(site: Site) -> None:
    global _current
    _current = site


def site() -> Site:
    if _current is None:
        raise RuntimeError("site model not loaded yet (hook_content must run first)")
    return _current
