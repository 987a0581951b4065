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


# --------------------------------------------------------------------------- one snapshot of code/ per build

def _counting_rglob(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    original = Path.rglob

    def rglob(self: Path, pattern: str):  # type: ignore[no-untyped-def]
        calls.append(self)
        return original(self, pattern)

    monkeypatch.setattr(Path, "rglob", rglob)
    return calls


def test_a_build_lists_code_once_and_the_next_build_sees_an_edit(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (code / "other.py").write_text("from helpers import unused\n\n\ndef figure():\n    return unused()\n")
    roots = [[(code / "plot.py", "figure")], [(code / "other.py", "figure")], [(code / "helpers.py", "scale")]]
    for r in roots:  # stored on disk, as after an earlier build
        deps.definition_deps(r, code)
    deps._remembered.cache_clear()  # a new process: only the disk store is left
    calls = _counting_rglob(monkeypatch)
    with deps.build_snapshot(code):
        first = [deps.definition_deps(r, code).digests for r in roots for _ in range(3)]
        assert len(calls) == 1, "code/ is listed once for the whole build"
        (code / "helpers.py").write_text("def scale(x):\n    return 3 * x\n\n\ndef unused():\n    return 0\n")
        assert deps.definition_deps(roots[0], code).digests == first[0], "within one build: its snapshot"
    with deps.build_snapshot(code):  # the next build of the same process (a save under mkdocs serve)
        after = deps.definition_deps(roots[0], code).digests
        assert after[code / "helpers.py"] != first[0][code / "helpers.py"], "the edit is seen by the next build"
        assert deps.definition_deps(roots[1], code).digests == first[3], "unused() did not change"
    assert deps.definition_deps(roots[0], code).digests == after, "and without a snapshot, as before"


def test_a_miss_inside_a_build_stores_what_the_files_say_now(code: Path) -> None:
    with deps.build_snapshot(code):
        (code / "helpers.py").write_text("def scale(x):\n    return 3 * x\n\n\ndef unused():\n    return 0\n")
        deps.definition_deps([(code / "plot.py", "figure")], code)  # nothing stored yet: parsed now
    deps._remembered.cache_clear()
    stored = deps._stored(((code / "plot.py", "figure"),), code)
    fresh = deps._definition_deps([(code / "plot.py", "figure")], code)
    assert stored.digests == fresh.digests, "the stored result matches the contents it is stored under"


ARTIFACT = '''from helpers import scale

BUILD_ARTIFACTS = {"model": ("train", "save")}


def train():
    return scale(1)


def save(path, value):
    open(path, "w").write(str(value))
'''


def test_an_artifact_key_is_computed_once_per_build(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmsite import artifacts

    (code / "model.py").write_text(ARTIFACT)
    computed: list[str] = []
    original = artifacts._key_for

    def counting(artifact, code_dir, root):  # type: ignore[no-untyped-def]
        computed.append(artifact.name)
        return original(artifact, code_dir, root)

    monkeypatch.setattr(artifacts, "_key_for", counting)
    with deps.build_snapshot(code):
        model = artifacts.discover(code)["model"]
        keys = {artifacts.key_for(model, code, code.parent).digest for _ in range(5)}
        assert len(keys) == 1 and computed == ["model"]
    (code / "helpers.py").write_text("def scale(x):\n    return 3 * x\n\n\ndef unused():\n    return 0\n")
    with deps.build_snapshot(code):
        model = artifacts.discover(code)["model"]
        assert artifacts.key_for(model, code, code.parent).digest not in keys, "a new build: a new key"
        assert computed == ["model", "model"]
    artifacts.key_for(model, code, code.parent)
    artifacts.key_for(model, code, code.parent)
    assert len(computed) == 4, "without a build snapshot nothing is remembered"


def _bundles(code: Path) -> list[Path]:
    return sorted((code.parent / "cache" / "deps" / "bundles").glob("*.pickle"))


def test_the_next_build_of_the_same_code_reads_one_file(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (code / "other.py").write_text("from helpers import unused\n\n\ndef figure():\n    return unused()\n")
    roots = [[(code / "plot.py", "figure")], [(code / "other.py", "figure")], [(code / "helpers.py", "scale")]]
    with deps.build_snapshot(code):
        first = [deps.definition_deps(r, code) for r in roots] + [deps.closure(code / "plot.py", code)]
    [bundle] = _bundles(code)
    deps._remembered.cache_clear()  # a new process
    loaded: list[Path] = []
    real_load = deps._load
    monkeypatch.setattr(deps, "_load", lambda path: loaded.append(path) or real_load(path))
    with deps.build_snapshot(code):
        again = [deps.definition_deps(r, code) for r in roots] + [deps.closure(code / "plot.py", code)]
    assert loaded == [bundle], "one file for the four entries"
    for a, b in zip(first[:3], again[:3], strict=True):
        assert (a.digests, a.names, a.roots) == (b.digests, b.names, b.roots)
    assert first[3] == again[3] == [code / "helpers.py", code / "plot.py"]
    assert _bundles(code) == [bundle], "nothing new to write: the bundle is not rewritten under another name"


def test_an_edit_gives_another_bundle_and_a_damaged_one_falls_back(code: Path) -> None:
    roots = [(code / "plot.py", "figure")]
    with deps.build_snapshot(code):
        before = deps.definition_deps(roots, code)
    (code / "helpers.py").write_text("def scale(x):\n    return 3 * x\n\n\ndef unused():\n    return 0\n")
    deps._remembered.cache_clear()
    with deps.build_snapshot(code):
        after = deps.definition_deps(roots, code)
    assert after.digests[code / "helpers.py"] != before.digests[code / "helpers.py"]
    assert len(_bundles(code)) == 2, "one bundle per state of code/"
    for bundle in _bundles(code):
        bundle.write_bytes(b"not a pickle")
    deps._remembered.cache_clear()
    with deps.build_snapshot(code):
        assert deps.definition_deps(roots, code).digests == after.digests


def test_an_entry_computed_after_an_edit_inside_a_build_stays_out_of_its_bundle(code: Path) -> None:
    with deps.build_snapshot(code):
        (code / "helpers.py").write_text("def scale(x):\n    return 3 * x\n\n\ndef unused():\n    return 0\n")
        deps.definition_deps([(code / "plot.py", "figure")], code)  # parsed now, from the edited files
    assert _bundles(code) == [], "the bundle is of the snapshot, which did not see the edit"
