"""The definition-level dependencies are stored on disk for the next process (a warm build parses nothing),
keyed by the content of every Python file of code/: an edit anywhere there, or a new module, is seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsite.cache import deps


def _write(folder: Path) -> None:
    (folder / "helpers.py").write_text("def scale(x):\n    return 2 * x\n\n\ndef unused():\n    return 0\n")
    (folder / "plot.py").write_text("from helpers import scale\n\n\ndef figure():\n    return scale(3)\n")


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    _write(folder)
    monkeypatch.setattr(deps, "CACHE", tmp_path / "cache")
    return folder.resolve()


def _roots(code: Path) -> tuple[tuple[Path, str | None], ...]:
    return ((code / "plot.py", "figure"),)


def test_a_second_process_reads_the_stored_result(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = deps._stored(_roots(code), code)
    assert sorted(first.names[code / "helpers.py"]) == ["scale"]
    assert len(list((code.parent / "cache" / "deps").glob("*.pickle"))) == 1

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again although nothing changed")

    monkeypatch.setattr(deps, "_definition_deps", must_not_run)
    again = deps._stored(_roots(code), code)
    assert again.digests == first.digests and again.names == first.names


def test_an_edit_or_a_new_module_is_seen(code: Path) -> None:
    before = deps._stored(_roots(code), code)
    (code / "plot.py").write_text(
        "from helpers import scale, unused\n\n\ndef figure():\n    return scale(3) + unused()\n"
    )
    after = deps._stored(_roots(code), code)
    assert sorted(after.names[code / "helpers.py"]) == ["scale", "unused"]
    assert after.digests != before.digests
    (code / "extra.py").write_text("X = 1\n")  # not used, but part of the key: a new module may shadow an import
    deps._stored(_roots(code), code)
    assert len(list((code.parent / "cache" / "deps").glob("*.pickle"))) == 3


def test_a_damaged_entry_is_computed_again(code: Path) -> None:
    first = deps._stored(_roots(code), code)
    for entry in (code.parent / "cache" / "deps").glob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    again = deps._stored(_roots(code), code)
    assert again.names == first.names


def test_the_import_closure_is_stored_and_follows_edits(code: Path) -> None:
    assert deps.closure(code / "plot.py", code) == [code / "helpers.py", code / "plot.py"]
    assert len(list((code.parent / "cache" / "deps").glob("*.pickle"))) == 1
    (code / "plot.py").write_text("def figure():\n    return 3\n")
    assert deps.closure(code / "plot.py", code) == [code / "plot.py"]
