"""One figure-marker pattern: the build, the content checks and the benchmark agree on what a marker is."""

from __future__ import annotations

from .conftest import ARTICLE, Repo


def test_build_checks_and_bench_share_one_pattern() -> None:
    from bench import variants
    from llmsite.content.checks import markers as check
    from llmsite.features import figures as adapter
    from llmsite.figures import registry

    assert adapter.MARKER is registry.MARKER
    assert check._MARKER is registry.MARKER
    assert variants._MARKER is registry.MARKER


def test_a_marker_over_two_lines_is_reported_and_not_rendered(repo: Repo) -> None:
    from llmsite.figures import registry

    marker = "<!--\nfigure: attention-weights -->"
    line = repo.append(marker)
    result = repo.check()
    assert result.code == 1
    assert any(row.startswith(f"{ARTICLE}:{line}: ") for row in result.out.splitlines()), result.out
    assert registry.MARKER.search(marker) is None  # so the build leaves it alone as well
    assert registry.MARKER.search("<!-- figure: attention-weights -->")
