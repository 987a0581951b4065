"""An artifact declared with an argument (llmsite/artifacts.py): ``"name": ("compute", "save", argument)``.

One compute function then declares independent parts of one experiment (code/capable_sft.py: a seed each,
code/dpo_train.py: three parts), each its own artifact, computed in its own process, side by side. Checked on a
throwaway ``code/`` folder: the declaration is read, a bad one names its file and line, the argument reaches the
compute function and the key, the parts are siblings (none waits for another) and whatever reads the function
waits for all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsite import artifacts

PARTS = '''BUILD_ARTIFACTS = {"part-a": ("compute", "save", "a"),
                   "part-b": ("compute", "save", ("b", 2)),
                   "whole": ("gather", "save")}


def compute(part):
    return f"computed {part!r}"


def gather():
    return compute("a") + " + " + compute(("b", 2))


def save(path, value):
    open(path, "w", encoding="utf-8").write(value)
'''


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    monkeypatch.setenv("LLM_ARTIFACT_CACHE", str(tmp_path / "artifacts"))
    monkeypatch.setenv("LLM_SITE_CACHE", str(tmp_path / "cache"))
    return folder


def test_the_argument_is_read_and_reaches_the_compute_function(code: Path) -> None:
    (code / "parts_demo.py").write_text(PARTS, encoding="utf-8")
    found = artifacts.discover(code)
    assert found["part-a"].args == ("a",) and found["part-b"].args == (("b", 2),) and found["whole"].args == ()
    assert found["part-b"].call == "compute(('b', 2))" and found["whole"].call == "gather()"
    for name, text in (("part-a", "computed 'a'"), ("part-b", "computed ('b', 2)")):
        (item,) = artifacts.plan([found[name]], code_dir=code)
        assert artifacts.build(item, code).joinpath(f"{name}.pt").read_text(encoding="utf-8") == text


def test_parts_are_siblings_and_what_reads_them_waits_for_all(code: Path) -> None:
    (code / "parts_demo.py").write_text(PARTS, encoding="utf-8")
    found = artifacts.discover(code)
    assert artifacts.upstream(found["part-a"], code) == [] and artifacts.upstream(found["part-b"], code) == []
    assert {a.name for a in artifacts.upstream(found["whole"], code)} == {"part-a", "part-b"}


def test_the_argument_is_part_of_the_key_and_leaves_other_keys_alone(code: Path) -> None:
    (code / "parts_demo.py").write_text(PARTS, encoding="utf-8")
    found = artifacts.discover(code)
    keys = {name: artifacts.key_for(a, code, code.parent).inputs["declaration"] for name, a in found.items()}
    assert keys["part-a"] != keys["part-b"]
    assert keys["whole"] == '["whole", "gather", "save"]'  # no argument: written as before arguments existed
    (code / "parts_demo.py").write_text(PARTS.replace('"save", "a")', '"save", "c")'), encoding="utf-8")
    again = artifacts.discover(code)
    assert artifacts.key_for(again["part-a"], code, code.parent).digest != artifacts.key_for(
        found["part-a"], code, code.parent).digest


@pytest.mark.parametrize(("declaration", "message"), [
    ('{"x": ("compute", "save", ["a"])}', "产物 x 的参数 ['a'] 应是字符串、数，或由它们组成的元组"),
    ('{"x": ("compute", "save", True)}', "产物 x 的参数 True 应是字符串、数"),
    ('{"x": ("compute", "save", "a", "b")}', "或再加一个传给计算函数的参数"),
    ('{"x": ("compute",)}', "每一项写成"),
    ('{"x": ("missing", "save", 1)}', "产物 x 的函数 missing 没有在"),
])
def test_a_bad_declaration_names_its_file_and_line(code: Path, declaration: str, message: str) -> None:
    text = PARTS.replace(PARTS[:PARTS.index("\n\n\n")], f"\n\nBUILD_ARTIFACTS = {declaration}")
    (code / "parts_demo.py").write_text(text, encoding="utf-8")
    with pytest.raises(artifacts.ArtifactError) as error:
        artifacts.discover(code)
    assert "parts_demo.py:3: " in str(error.value)
    assert message in str(error.value)
