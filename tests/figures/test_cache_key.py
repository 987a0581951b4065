"""Each kind of dependency changes a figure's cache key; unrelated edits do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsite.cache import deps
from llmsite.figures import cache, registry

from .conftest import Repo, edit_definition


def keys(repo: Repo) -> dict[str, str]:
    specs = registry.discover(repo.root / "code")
    return {name: cache.key_for(spec, repo.root / "code", repo.root).digest for name, spec in specs.items()}


def edit(path: Path, extra: str = "\n# edited\n") -> None:
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


def users_of(repo: Repo, module: str, name: str) -> set[str]:
    """Figures whose functions use ``name`` of ``module``, from the dependency analysis itself."""
    specs = registry.discover(repo.root / "code")
    target = ((repo.root / "code" / module).resolve(), name)
    return {
        n for n, s in specs.items()
        if target in deps.definition_deps([(s.module, f) for f in cache.functions(s)], repo.root / "code").roots
    }


def test_keys_are_stable_without_changes(repo: Repo) -> None:
    assert keys(repo) == keys(repo)


def test_editing_a_used_definition_changes_only_its_figures(repo: Repo) -> None:
    before = keys(repo)
    edit_definition(repo.root / "code" / "positional_encoding.py", "sinusoidal_position_encoding")
    after = keys(repo)
    assert changed(before, after) == users_of(repo, "positional_encoding.py", "sinusoidal_position_encoding")
    # multi-head-weights: the trained tiny Transformer (code/tiny_transformer.py) uses the sinusoidal encoding
    assert {"sinusoidal-encoding", "multi-head-weights"} <= changed(before, after)
    assert "rope-relative" not in changed(before, after)  # uses RoPE from the same file, not this function


def test_a_comment_or_an_unused_definition_changes_nothing(repo: Repo) -> None:
    before = keys(repo)
    edit(repo.root / "code" / "positional_encoding.py")  # a comment
    edit(repo.root / "code" / "positional_encoding.py", "\n\ndef not_used_by_any_figure():\n    return 1\n")
    assert changed(before, keys(repo)) == set()


def test_a_transitive_import_counts(repo: Repo) -> None:
    # multi_head_attention imports attention: editing attention must reach the multi-head figure
    before = keys(repo)
    edit_definition(repo.root / "code" / "attention.py", "scaled_dot_product_attention")
    assert "multi-head-weights" in changed(before, keys(repo))
    assert "sinusoidal-encoding" not in changed(before, keys(repo))


def test_the_shared_style_invalidates_everything(repo: Repo) -> None:
    before = keys(repo)
    edit(repo.root / "code" / "figkit.py")  # even a comment: the style module counts as a whole
    assert changed(before, keys(repo)) == set(before)


def test_a_figure_function_invalidates_only_its_figure(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    declared_here = {n for n, s in registry.discover(repo.root / "code").items() if s.module == module}
    assert len(declared_here) >= 7
    before = keys(repo)
    edit_definition(module, "dot_product_variance")
    assert changed(before, keys(repo)) == {"dot-product-variance"}  # not the six others of the same file


def test_an_unrelated_module_changes_nothing(repo: Repo) -> None:
    before = keys(repo)
    (repo.root / "code" / "unrelated_helper.py").write_text("X = 1\n", encoding="utf-8")
    edit(repo.root / "code" / "unrelated_helper.py")
    assert changed(before, keys(repo)) == set()


def test_a_declared_data_file_counts(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    text = module.read_text(encoding="utf-8")
    text = text.replace('    "rope-relative",\n', '    "rope-relative",\n    data=("data/route.yml",),\n', 1)
    module.write_text(text, encoding="utf-8")
    before = keys(repo)
    edit(repo.root / "data" / "route.yml")
    assert changed(before, keys(repo)) == {"rope-relative"}


def test_library_versions_count(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    before = keys(repo)
    real = cache.library_versions()
    bumped = tuple((n, v + ".post1") if n == "matplotlib" else (n, v) for n, v in real)
    monkeypatch.setattr(cache, "library_versions", lambda: bumped)
    assert changed(before, keys(repo)) == set(before)
    bumped = tuple((n, "9.9.9") if n == "torch" else (n, v) for n, v in real)
    monkeypatch.setattr(cache, "library_versions", lambda: bumped)
    assert changed(before, keys(repo)) == set(before)


def test_the_key_lists_torch_and_matplotlib_versions() -> None:
    names = dict(cache.library_versions())
    assert {"torch", "matplotlib", "numpy", "python"} <= set(names)
    assert all(v != "missing" for v in names.values())


def test_the_declaration_counts(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    before = keys(repo)
    text = module.read_text(encoding="utf-8")
    module.write_text(text.replace("三条曲线完全重合", "三条曲线重合在一起", 1), encoding="utf-8")
    after = keys(repo)
    # the module's bytes changed too, so every figure of it is redrawn; the
    # declaration is also hashed on its own (see cache.key_for inputs)
    assert "rope-relative" in changed(before, after)
    spec = registry.discover(repo.root / "code")["rope-relative"]
    assert "三条曲线重合在一起" in cache.key_for(spec, repo.root / "code", repo.root).inputs["declaration"]
