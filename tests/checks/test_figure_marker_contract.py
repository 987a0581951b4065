"""One figure-marker pattern: the build, the content checks and the benchmark agree on what a marker is."""

from __future__ import annotations

import importlib.util
import sys

from .conftest import ARTICLE, ROOT, Repo


def _hook_module():
    spec = importlib.util.spec_from_file_location("hook_figures_contract", ROOT / "scripts" / "hook_figures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_build_checks_and_bench_share_one_pattern() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from benchlib import variants

    from sitelib.checks import figures as check
    from sitelib.figures import registry

    assert _hook_module().MARKER is registry.MARKER
    assert check._MARKER is registry.MARKER
    assert variants._MARKER is registry.MARKER


def test_a_marker_over_two_lines_is_reported_and_not_rendered(repo: Repo) -> None:
    from sitelib.figures import registry

    marker = "<!--\nfigure: attention-weights -->"
    line = repo.append(marker)
    result = repo.check()
    assert result.code == 1
    assert any(row.startswith(f"{ARTICLE}:{line}: ") for row in result.out.splitlines()), result.out
    assert registry.MARKER.search(marker) is None  # so the build leaves it alone as well
    assert registry.MARKER.search("<!-- figure: attention-weights -->")
