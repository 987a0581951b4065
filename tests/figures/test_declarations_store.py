"""The declarations of figures, exercise answers and build artifacts are read from a file's syntax tree once and
kept in the build cache (``llmsite.cache.remembered``), keyed by the file's path and text and by the reader's own
source: a warm build in a new process parses nothing, an edit is seen, and a declaration error is never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsite import artifacts
from llmsite import cache as build_cache
from llmsite.figures import registry

FIGURES = '''from figkit import figure, exercise_answer


@figure("store-demo", article="transformer-attention", title="图", caption="说明")
def store_demo():
    return None


@exercise_answer("store-answer")
def store_answer():
    return 1
'''

MODEL = '''BUILD_ARTIFACTS = {"store-model": ("train", "save")}


def train():
    return 1


def save(path, value):
    pass
'''


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "code"
    (folder / registry.FIGURES_DIR).mkdir(parents=True)
    (folder / registry.FIGURES_DIR / "demo.py").write_text(FIGURES, encoding="utf-8")
    (folder / "model.py").write_text(MODEL, encoding="utf-8")
    monkeypatch.setattr(build_cache, "CACHE", tmp_path / "cache")
    _new_process()
    return folder


def _new_process() -> None:
    """Forget what this process remembers: only the build cache is left, as for the next build."""
    registry._parse_text.cache_clear()
    registry._parse_answers_text.cache_clear()
    artifacts._declared.cache_clear()


def _forbid_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again although the file did not change")

    monkeypatch.setattr(registry, "_parse", fail)
    monkeypatch.setattr(registry, "_parse_answers", fail)
    monkeypatch.setattr(artifacts, "_parse_declared", fail)


def _read(code: Path) -> tuple[object, object, object]:
    return registry.discover(code), registry.discover_answers(code), artifacts.discover(code)


def test_a_new_process_reads_the_declarations_without_parsing(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _read(code)
    assert list(first[0]) == ["store-demo"] and list(first[1]) == ["store-answer"] and list(first[2]) == ["store-model"]
    _new_process()
    with monkeypatch.context() as m:
        _forbid_parsing(m)
        assert _read(code) == first

    # An edit is seen: the entry is keyed by the file's text.
    demo = code / registry.FIGURES_DIR / "demo.py"
    demo.write_text(FIGURES.replace('title="图"', 'title="新标题"'), encoding="utf-8")
    (code / "model.py").write_text(MODEL.replace("store-model", "renamed-model"), encoding="utf-8")
    _new_process()
    figures, _, models = _read(code)
    assert figures["store-demo"].title == "新标题" and list(models) == ["renamed-model"]


def test_a_declaration_error_is_raised_every_time_and_never_stored(code: Path) -> None:
    demo = code / registry.FIGURES_DIR / "demo.py"
    demo.write_text(FIGURES.replace('caption="说明"', ""), encoding="utf-8")
    for _ in range(2):
        _new_process()
        with pytest.raises(registry.DeclarationError, match="缺少参数 caption"):
            registry.discover(code)
    assert not list((code.parent / "cache" / "registry").glob("*.pickle")), "the error was not stored"
