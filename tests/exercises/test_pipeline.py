"""The answers pipeline (``@exercise_answer`` -> ``python -m llmsite figures`` -> ``.cache/answers``): computed in the
figure step's subprocess, cached by content key, recomputed only when what it uses changes, written atomically, and
its failures named by function and file:line. Runs in throwaway copies of code/, llmsite/ and data/."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmsite.figures import registry

from .conftest import Copy

MODULE = "code/figures/sample_answers.py"
SAMPLE = '''"""练习答案的测试模块。"""

import time

from attention import causal_mask
from figkit import exercise_answer


@exercise_answer("sample-int")
def sample_int():
    return int(causal_mask(4).sum())


@exercise_answer("sample-float")
def sample_float():
    return 1 / 3


@exercise_answer("sample-text")
def sample_text():
    return "甲"


def not_an_answer():
    return 0
'''
NAMES = ("sample-int", "sample-float", "sample-text")


def only(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--only", name)]


def states(output: str) -> dict[str, str]:
    """{answer name: "计算" | "缓存"} from the per-answer lines."""
    out = {}
    for line in output.splitlines():
        m = re.match(r"^\s*\[答案\] (\S+)\s+(来自缓存|\d+\.\d\d s)", line)
        if m:
            out[m.group(1)] = "缓存" if m.group(2) == "来自缓存" else "计算"
    return out


def entries(copy: Copy) -> dict[str, dict[str, object]]:
    """{name: {"files": [...], "value": ...}} of every committed entry (staging folders left out)."""
    out: dict[str, dict[str, object]] = {}
    for entry in sorted(copy.answers.glob("*/*")):
        if entry.name.startswith((".tmp-", ".old-")) or entry.parent.name.startswith(".tmp-"):
            continue
        files = sorted(p.name for p in entry.iterdir())
        value = json.loads((entry / "answer.json").read_text(encoding="utf-8")) if "answer.json" in files else None
        out[entry.parent.name] = {"files": files, "answer": value, "key": entry.name}
    return out


@pytest.fixture
def sample(code_copy: Copy) -> Copy:
    code_copy.write(MODULE, SAMPLE)
    return code_copy


def test_answers_are_computed_once_and_cached_in_their_own_folder(sample: Copy) -> None:
    first = sample.llmsite("figures", *only(*NAMES))
    assert states(first.stdout) == dict.fromkeys(NAMES, "计算"), first.stdout
    assert "共 3 个练习答案：3 个重新计算，0 个来自缓存" in first.stdout
    found = entries(sample)
    assert set(found) == set(NAMES)
    for name in NAMES:
        assert found[name]["files"] == ["answer.json", "inputs.json"], found[name]
    assert found["sample-int"]["answer"] == {"name": "sample-int", "value": 6}  # 4 x 4 upper triangle: 6
    assert found["sample-float"]["answer"] == {"name": "sample-float", "value": 1 / 3}
    assert found["sample-text"]["answer"] == {"name": "sample-text", "value": "甲"}
    raw = (sample.answers / "sample-float" / str(found["sample-float"]["key"]) / "answer.json").read_bytes()
    assert raw == b'{"name":"sample-float","value":0.3333333333333333}\n'  # keys sorted, compact, repr of the float
    assert not (sample.root / ".cache" / "figures").exists() or not any(
        (sample.root / ".cache" / "figures").glob("sample-*")), "answers must not go into the figure cache"
    again = sample.llmsite("figures", *only(*NAMES))
    assert states(again.stdout) == dict.fromkeys(NAMES, "缓存"), again.stdout


def edit_function(copy: Copy, name: str, statement: str = "_ = 0") -> None:
    text = copy.read(MODULE)
    head = f"def {name}():\n"
    assert head in text
    copy.write(MODULE, text.replace(head, f"{head}    {statement}\n", 1))


def test_editing_an_answer_function_recomputes_only_that_answer(sample: Copy) -> None:
    sample.llmsite("figures", *only(*NAMES))
    keys = {n: e["key"] for n, e in entries(sample).items()}
    edit_function(sample, "sample_float")
    assert states(sample.llmsite("figures", *only(*NAMES)).stdout) == {
        "sample-int": "缓存", "sample-float": "计算", "sample-text": "缓存"}
    # a definition in code/ that one answer uses (attention.causal_mask): only that answer
    attention = sample.read("code/attention.py")
    head = "def causal_mask(seq_len: int, device: torch.device | str | None = None) -> Tensor:\n"
    assert head in attention
    sample.write("code/attention.py", attention.replace(head, head + "    _ = 0\n", 1))
    assert states(sample.llmsite("figures", *only(*NAMES)).stdout) == {
        "sample-int": "计算", "sample-float": "缓存", "sample-text": "缓存"}
    # a comment, a docstring and a function no answer uses change nothing
    sample.write(MODULE, sample.read(MODULE).replace("def not_an_answer():\n    return 0",
                                                     'def not_an_answer():\n    """说明。"""\n    return 1  # 注释'))
    assert set(states(sample.llmsite("figures", *only(*NAMES)).stdout).values()) == {"缓存"}
    after = {n: e["key"] for n, e in entries(sample).items()}
    assert after["sample-text"] == keys["sample-text"] and after["sample-int"] != keys["sample-int"]
    assert len(list((sample.answers / "sample-int").iterdir())) == 1, "the older entry is pruned"


def test_a_declared_data_file_is_part_of_the_key(sample: Copy) -> None:
    from llmsite.figures import answers

    sample.write("data/sample.txt", "1\n")
    sample.write(MODULE, sample.read(MODULE) + '''

@exercise_answer("sample-data", data=("data/sample.txt",))
def sample_data():
    return 1
''')
    code = sample.root / "code"

    def key() -> str:
        spec = registry.discover_answers(code)["sample-data"]
        return answers.key_for(spec, code, sample.root).digest

    before = key()
    assert key() == before
    sample.write("data/sample.txt", "2\n")
    assert key() != before


def test_a_failing_answer_names_its_function_and_leaves_nothing(sample: Copy) -> None:
    sample.write(MODULE, sample.read(MODULE) + '''

@exercise_answer("sample-broken")
def sample_broken():
    return 1 / 0
''')
    line = sample.read(MODULE).splitlines().index("def sample_broken():") + 1
    proc = sample.llmsite("figures", *only("sample-broken"), check=False)
    assert proc.returncode == 1
    assert f"练习答案 sample-broken 计算失败：函数 sample_broken（{MODULE}:{line}）" in proc.stderr, proc.stderr
    assert "ZeroDivisionError" in proc.stderr
    assert not (sample.answers / "sample-broken").exists() or not any((sample.answers / "sample-broken").iterdir())
    assert not list(sample.answers.glob(".tmp-*"))


@pytest.mark.parametrize(("body", "message"), [
    ("return [1, 2]", "返回的类型是 list"),
    ("return True", "不是 True / False"),
    ("return float('nan')", "答案应是有限的数"),
    ("return '第一行\\n第二行'", "空的或有换行"),
    ("import torch\n    return torch.ones(3)", "返回了不止一个数"),
])
def test_an_answer_of_the_wrong_type_is_refused(sample: Copy, body: str, message: str) -> None:
    sample.write(MODULE, sample.read(MODULE) + f'''

@exercise_answer("sample-odd")
def sample_odd():
    {body}
''')
    proc = sample.llmsite("figures", *only("sample-odd"), check=False)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert "练习答案 sample-odd 计算失败" in proc.stderr


def test_a_tensor_scalar_is_stored_as_a_number(sample: Copy) -> None:
    sample.write(MODULE, sample.read(MODULE) + '''

@exercise_answer("sample-tensor")
def sample_tensor():
    import torch
    return torch.tensor(0.25)
''')
    sample.llmsite("figures", *only("sample-tensor"))
    assert entries(sample)["sample-tensor"]["answer"] == {"name": "sample-tensor", "value": 0.25}


def test_killing_the_step_midway_leaves_only_complete_entries(sample: Copy) -> None:
    sample.write(MODULE, sample.read(MODULE) + '''

@exercise_answer("sample-slow")
def sample_slow():
    time.sleep(60)
    return 1
''')
    proc = subprocess.Popen([sys.executable, "-u", "-m", "llmsite", "figures", *only("sample-int", "sample-slow")],
                            cwd=sample.root, stdout=subprocess.PIPE, text=True, env=sample.env(),
                            start_new_session=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    line = ""
    while "[答案] sample-int" not in line and time.monotonic() < deadline:
        line = proc.stdout.readline()
    assert "[答案] sample-int" in line, line
    time.sleep(0.3)  # inside sample_slow now
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    found = entries(sample)
    assert set(found) == {"sample-int"} and found["sample-int"]["files"] == ["answer.json", "inputs.json"]
    # the next run (the slow answer made quick) cleans the dead run's staging folder and computes what is missing
    sample.write(MODULE, sample.read(MODULE).replace("    time.sleep(60)\n", ""))
    again = sample.llmsite("figures", *only("sample-int", "sample-slow"))
    assert states(again.stdout) == {"sample-int": "缓存", "sample-slow": "计算"}
    assert not list(sample.answers.glob(".tmp-*")) and set(entries(sample)) == {"sample-int", "sample-slow"}


def test_list_shows_the_answers_and_their_dependencies(sample: Copy) -> None:
    out = sample.llmsite("figures", "--list", *only("sample-int")).stdout
    assert "练习答案（1 个）\n" in out
    assert f"\n  sample-int  [需计算]  文章 sample-answers  {MODULE}:" in out
    assert "\n    用到 code/attention.py：causal_mask" in out
    sample.llmsite("figures", *only("sample-int"))
    assert "  sample-int  [已缓存]" in sample.llmsite("figures", "--list", *only("sample-int")).stdout


def test_an_unknown_name_is_refused(sample: Copy) -> None:
    proc = sample.llmsite("figures", *only("no-such-answer"), check=False)
    assert proc.returncode == 2 and "没有这个图或练习答案：no-such-answer" in proc.stderr


# --------------------------------------------------------------------------- declarations (read without importing)


@pytest.mark.parametrize(("source", "message"), [
    ('@exercise_answer("Bad Name")\ndef f():\n    return 1\n', "答案的名字 'Bad Name' 不合法"),
    ('@exercise_answer("ok", unit="s")\ndef f():\n    return 1\n', "@exercise_answer 不认识参数 unit"),
    ('@exercise_answer()\ndef f():\n    return 1\n', "@exercise_answer 需要恰好一个位置参数"),
    ('@exercise_answer("ok")\ndef f(x):\n    return x\n', "答案函数 f 不能带参数"),
    ('NAME = "ok"\n@exercise_answer(NAME)\ndef f():\n    return 1\n', "必须是字面量"),
    ('@exercise_answer("ok", data=3)\ndef f():\n    return 1\n', "data 应是字符串元组"),
])
def test_a_bad_declaration_names_its_line(tmp_path: Path, source: str, message: str) -> None:
    path = tmp_path / "figures" / "x.py"
    path.parent.mkdir()
    path.write_text("from figkit import exercise_answer\n\n" + source, encoding="utf-8")
    line = (path.read_text(encoding="utf-8").splitlines().index(next(
        x for x in source.splitlines() if x.startswith("def "))) + 1)
    with pytest.raises(registry.DeclarationError) as err:
        registry.discover_answers(tmp_path)
    assert f"x.py:{line}: " in str(err.value) and message in str(err.value), str(err.value)


def test_duplicate_names_across_modules(tmp_path: Path) -> None:
    (tmp_path / "figures").mkdir()
    for stem in ("a", "b"):
        (tmp_path / "figures" / f"{stem}.py").write_text(
            '@exercise_answer("same")\ndef f():\n    return 1\n', encoding="utf-8")
    with pytest.raises(registry.DeclarationError, match=r"b\.py:2: 答案 same 已在 .*a\.py:2 声明过"):
        registry.discover_answers(tmp_path)


def test_the_article_is_the_module_name() -> None:
    (spec,) = [s for s in registry.discover_answers().values() if s.name == "mha-params-96"]
    assert spec.article == "transformer-attention" and spec.function == "mha_params_96"
