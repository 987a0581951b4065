"""The labs pipeline on a throwaway repository: cache keys, re-execution, errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .conftest import BROKEN, IGNORE, PREAMBLE, ROOT, LabRepo, add_artifact_lab, computed, make_lab_repo, status_lines


def _outputs(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_cold_run_then_nothing_to_do(lab_repo: LabRepo) -> None:
    first = lab_repo.run()
    assert status_lines(first.stdout) == {"lab_a": "执行", "lab_b": "执行"}, first.stdout
    assert "2 个重新执行，0 个来自缓存" in first.stdout
    notebooks = lab_repo.notebooks()
    assert set(notebooks) == {"lab_a", "lab_b"}
    assert "甲 21" in _outputs(notebooks["lab_a"])
    assert "乙 42" in _outputs(notebooks["lab_b"])
    nb = nbformat.read(notebooks["lab_a"], as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")

    second = lab_repo.run()
    assert status_lines(second.stdout) == {"lab_a": "缓存", "lab_b": "缓存"}, second.stdout
    assert "0 个重新执行，2 个来自缓存" in second.stdout
    assert lab_repo.notebooks() == notebooks, "the same cache entries are reused"
    entry = notebooks["lab_b"].parent.parent
    inputs = json.loads((entry / "inputs.json").read_text(encoding="utf-8"))
    assert {"lab:labs/lab_b.py", "defs:code/lab_only_b.py", "defs:code/lab_shared.py"} <= set(inputs)
    assert inputs["kernel"] == "python3" and "lib:torch" in inputs and "lib:nbclient" in inputs
    assert not list(lab_repo.cache.glob(".tmp-*")), "no staging directory left behind"


def test_only_dependents_are_executed_again(lab_repo: LabRepo) -> None:
    lab_repo.run()
    before = lab_repo.notebooks()

    # Only lab_b imports lab_only_b; a new definition there that lab_b uses re-executes it.
    lab_repo.append("code/lab_only_b.py", "\nTRIPLE = 3 * VALUE\n")
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "缓存", "lab_b": "缓存"}, "lab_b does not use TRIPLE: " + out
    lab_repo.append("labs/lab_b.py", '\n# %%\nprint("三倍", lab_only_b.TRIPLE)\n')
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "缓存", "lab_b": "执行"}, out
    after = lab_repo.notebooks()
    assert after["lab_a"] == before["lab_a"] and after["lab_b"] != before["lab_b"]
    assert not before["lab_b"].exists(), "the superseded entry is pruned"

    # Both use lab_shared.VALUE (lab_b through lab_only_b): changing its value re-executes both.
    shared = lab_repo.root / "code" / "lab_shared.py"
    shared.write_text(shared.read_text(encoding="utf-8").replace("VALUE = 21", "VALUE = 22"), encoding="utf-8")
    assert status_lines(lab_repo.run().stdout) == {"lab_a": "执行", "lab_b": "执行"}
    assert "甲 22" in _outputs(lab_repo.notebooks()["lab_a"])

    # A comment, a docstring or a function nobody uses: nothing to do.
    lab_repo.append("code/lab_shared.py", "\n# 改一行注释不算改动\n\n\ndef unused():\n    return 0\n")
    shared.write_text('"""测试用：换了一句说明。"""\n' + shared.read_text(encoding="utf-8").split("\n", 1)[1],
                      encoding="utf-8")
    assert set(status_lines(lab_repo.run().stdout).values()) == {"缓存"}

    # A lab's own source.
    lab_repo.append("labs/lab_a.py", '\n# %%\nprint("再来一个单元")\n')
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "执行", "lab_b": "缓存"}, out
    assert "再来一个单元" in _outputs(lab_repo.notebooks()["lab_a"])

    # A module nobody imports, and a new mtime without new content: nothing to do.
    lab_repo.append("code/positional_encoding.py", "\nX = 1\n")
    os.utime(lab_repo.root / "code" / "lab_shared.py")
    assert set(status_lines(lab_repo.run().stdout).values()) == {"缓存"}

    # --force executes everything, and the fresh notebooks replace the cached ones.
    before = {name: path.stat().st_mtime_ns for name, path in lab_repo.notebooks().items()}
    assert set(status_lines(lab_repo.run("--force").stdout).values()) == {"执行"}
    after = lab_repo.notebooks()
    assert set(after) == set(before) and all(after[n].stat().st_mtime_ns > before[n] for n in after)
    assert not [p for p in lab_repo.cache.glob("*/.*")], "no set-aside entry left behind"


def test_an_artifact_is_computed_once_and_read_by_the_lab(lab_repo: LabRepo) -> None:
    add_artifact_lab(lab_repo)
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "执行", "lab_b": "执行", "lab_model_user": "执行"}, out
    assert "[产物] lab-model" in out, "the build log reports the artifact and its time"
    assert computed(lab_repo) == 1
    assert "产物 缓存 2107" in _outputs(lab_repo.notebooks()["lab_model_user"]), "the kernel read the cached file"
    entry = lab_repo.notebooks()["lab_model_user"].parent.parent
    inputs = json.loads((entry / "inputs.json").read_text(encoding="utf-8"))
    assert "artifact:lab-model" in inputs

    # Edits that do not change what compute() runs: neither the artifact nor its lab is redone.
    model = lab_repo.root / "code" / "lab_model.py"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace("def unrelated():\n    return 1", "def unrelated():\n    return 2  # 无关")
                     + "\n# 注释\n", encoding="utf-8")
    lab_repo.append("code/lab_shared.py", "\n# 也只是注释\n")
    assert set(status_lines(lab_repo.run().stdout).values()) == {"缓存"}
    assert computed(lab_repo) == 1

    # A change to what it computes: computed again, and only its user re-executed.
    model.write_text(model.read_text(encoding="utf-8").replace("* 100 + 7", "* 100 + 8"), encoding="utf-8")
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "缓存", "lab_b": "缓存", "lab_model_user": "执行"}, out
    assert computed(lab_repo) == 2
    assert "产物 缓存 2108" in _outputs(lab_repo.notebooks()["lab_model_user"])
    assert len(list((lab_repo.root / ".cache" / "artifacts" / "lab-model").iterdir())) == 1, "old entry pruned"

    listing = lab_repo.run("--list", step="artifacts").stdout
    assert "lab-model  [已缓存]" in listing and "实验 lab_model_user" in listing, listing


def test_real_heads_lab_and_model_ignore_comments_and_unrelated_functions(tmp_path: Path) -> None:
    """Editing a comment or an unrelated function in code/positional_encoding.py neither retrains the
    reference model nor re-executes the heads lab; editing what the model uses does both."""
    repo = make_lab_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "labs", repo.root / "labs", dirs_exist_ok=True, ignore=IGNORE)
    script = (
        "import json, sys\n"
        "from llmsite import artifacts, labs\n"
        "a = artifacts.discover()['tiny-transformer']\n"
        "lab = labs.discover()\n"
        "print(json.dumps({'model': artifacts.key_for(a).digest,\n"
        "                  **{n: labs.key_for(l).digest for n, l in lab.items()}}))\n"
    )

    def keys() -> dict[str, str]:
        proc = subprocess.run([sys.executable, "-c", script], cwd=repo.root, capture_output=True, text=True,
                              encoding="utf-8", timeout=120, env={**os.environ, "LLM_SITE_CACHE": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    module = repo.root / "code" / "positional_encoding.py"
    original = module.read_text(encoding="utf-8")
    before = keys()
    assert set(before) >= {"model", "attention_heads_lab", "attention_lab"}
    # a comment, a docstring line, and a change inside a function the model does not use (apply_rope)
    edited = original.replace('"""三种位置编码', '"""3 种位置编码', 1) + "\n# 一处无关的注释\n"
    start = edited.index("def apply_rope(")
    body = edited.index('"""', edited.index('"""', start) + 3) + 3
    edited = edited[:body] + "\n    _unused = 0  # 无关的改动" + edited[body:]
    assert edited != original
    module.write_text(edited, encoding="utf-8")
    edited_keys = keys()
    # llama_lab calls apply_rope itself: its key follows the edit, every other key stays
    assert edited_keys["llama_lab"] != before["llama_lab"]
    assert {k: v for k, v in edited_keys.items() if k != "llama_lab"} == {
        k: v for k, v in before.items() if k != "llama_lab"}

    # what the model uses: the sinusoidal table
    module.write_text(original.replace("pe[:, 0::2] = torch.sin(angles)", "pe[:, 0::2] = torch.sin(angles) * 1.0", 1),
                      encoding="utf-8")
    after = keys()
    assert after["model"] != before["model"], "the reference model is trained again"
    assert after["attention_heads_lab"] != before["attention_heads_lab"]
    assert after["attention_lab"] == before["attention_lab"], "the attention lab does not use positional encoding"


def test_a_failing_lab_stops_the_script_with_its_name_and_cell(lab_repo: LabRepo) -> None:
    path = lab_repo.write("labs/broken.py", BROKEN)
    lines = path.read_text(encoding="utf-8").splitlines()
    marker = max(i for i, line in enumerate(lines, 1) if line.startswith("# %%"))  # the last cell raises
    failing = marker + 2  # on its second line
    proc = lab_repo.run("--only", "broken", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert "动手实验 labs/broken.py 的第 3 个代码单元出错" in err, err
    assert f"labs/broken.py:{failing}）" in err and lines[failing - 1] == "y = x / 0", err
    assert "ZeroDivisionError" in err and "y = x / 0" in err, err
    if lab_repo.cache.exists():
        assert not (lab_repo.cache / "broken").exists(), "nothing is cached for a failing lab"
        assert not list(lab_repo.cache.glob(".tmp-*")), "no staging directory left behind"
    # The good labs are unaffected.
    assert status_lines(lab_repo.run("--only", "lab_a").stdout) == {"lab_a": "执行"}


def test_list_and_unknown_names(lab_repo: LabRepo) -> None:
    out = lab_repo.run("--list").stdout
    assert "lab_b  [需执行]  labs/lab_b.py" in out
    assert "依赖：code/lab_only_b.py, code/lab_shared.py" in out
    proc = lab_repo.run("--only", "nope", check=False)
    assert proc.returncode == 2 and "没有这个动手实验：nope" in proc.stderr


def test_real_labs_have_different_dependency_sets() -> None:
    """Only the heads lab uses code/tiny_transformer.py, positional_encoding.py and the trained model."""
    from llmsite import labs
    from llmsite.paths import rel

    found = labs.discover()
    deps = {name: {rel(p) for p in labs.dependencies(lab)} for name, lab in found.items()}
    assert {"code/attention.py", "code/figkit.py", "code/multi_head_attention.py"} <= deps["attention_lab"]
    assert not {"code/tiny_transformer.py", "code/positional_encoding.py"} & deps["attention_lab"]
    assert {"code/tiny_transformer.py", "code/positional_encoding.py", "code/multi_head_attention.py",
            "code/attention.py", "code/figkit.py"} <= deps["attention_heads_lab"]
    assert [a.name for a in labs.uses_artifacts(found["attention_heads_lab"])] == ["tiny-transformer"]
    assert labs.uses_artifacts(found["attention_lab"]) == []
    heads = labs.dependencies(found["attention_heads_lab"])
    used = dict((rel(p), names) for p, names in heads.items())["code/positional_encoding.py"]
    assert "sinusoidal_position_encoding" in used and "apply_rope" not in used


@pytest.mark.slow
def test_a_failing_lab_stops_the_mkdocs_build(tmp_path: Path, repo_cache: Path) -> None:
    repo = make_lab_repo(tmp_path / "repo")
    for part in ("docs", "data", "overrides"):
        shutil.copytree(ROOT / part, repo.root / part, ignore=IGNORE, dirs_exist_ok=True)
    shutil.copy2(ROOT / "mkdocs.yml", repo.root / "mkdocs.yml")
    (repo.root / "node_modules").symlink_to(ROOT / "node_modules")
    # the real labs too (the article links to them), with their cache entries when there are some
    shutil.copytree(ROOT / "labs", repo.root / "labs", dirs_exist_ok=True, ignore=IGNORE)
    for kind in ("labs", "figures", "answers", "artifacts"):
        if (repo_cache / kind).is_dir():
            shutil.copytree(repo_cache / kind, repo.root / ".cache" / kind, dirs_exist_ok=True)
    repo.write("labs/broken.py", BROKEN)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(repo.root / ".cache"),
           "LLM_ARTIFACT_CACHE": str(repo.root / ".cache" / "artifacts")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-d", str(repo.root / "site")],
        cwd=repo.root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "执行动手实验失败" in output and "labs/broken.py" in output and "ZeroDivisionError" in output, output



# Each lab waits until the other has started: they finish only if their kernels run at the same time.
RENDEZVOUS = '''# %% [markdown]
# # 动手实验：{me}

# %%
import time
from pathlib import Path

Path("{me}.started").touch()
deadline = time.monotonic() + 120
while not Path("{other}.started").exists():
    assert time.monotonic() < deadline, "the other lab never started"
    time.sleep(0.05)
print("{me} 和 {other} 同时在运行")
'''


def test_two_stale_labs_run_side_by_side_to_the_same_bytes(lab_repo: LabRepo, tmp_path: Path, monkeypatch) -> None:
    lab_repo.write("labs/meet_x.py", RENDEZVOUS.format(me="meet_x", other="meet_y"))
    lab_repo.write("labs/meet_y.py", RENDEZVOUS.format(me="meet_y", other="meet_x"))
    monkeypatch.setenv("LLM_LAB_WORKERS", "2")
    out = lab_repo.run("--only", "meet_x", "--only", "meet_y").stdout
    assert status_lines(out) == {"meet_x": "执行", "meet_y": "执行"}, out
    assert "meet_x 和 meet_y 同时在运行" in _outputs(lab_repo.notebooks()["meet_x"])
    # one kernel at a time and two side by side commit the same notebooks and pages, byte for byte
    serial = make_lab_repo(tmp_path / "serial")
    monkeypatch.setenv("LLM_LAB_WORKERS", "1")
    serial.run("--only", "lab_a", "--only", "lab_b")
    monkeypatch.setenv("LLM_LAB_WORKERS", "2")
    lab_repo.run("--only", "lab_a", "--only", "lab_b")
    for name in ("lab_a", "lab_b"):
        ours, theirs = lab_repo.notebooks()[name].parent.parent, serial.notebooks()[name].parent.parent
        assert ours.name == theirs.name  # the same key
        assert {p.relative_to(ours): p.read_bytes() for p in sorted(ours.rglob("*")) if p.is_file()} == {
            p.relative_to(theirs): p.read_bytes() for p in sorted(theirs.rglob("*")) if p.is_file()}


# An artifact whose compute function starts from another artifact (as fine-tuning starts from the pretrained model).
TUNED_MODULE = '''"""测试用：从构建产物 lab-model 出发再算一个产物。"""

import os
from pathlib import Path

import lab_model

BUILD_ARTIFACTS = {"lab-tuned": ("compute_tuned", "save")}


def compute_tuned():
    how, value = lab_model.load_or_compute()
    return f"{how} {value + 1}"


def save(path, value):
    Path(path).write_text(value)


def load_or_compute_tuned():
    path = os.environ.get("LLM_ARTIFACT_LAB_TUNED")
    return Path(path).read_text() if path and Path(path).is_file() else "现算 " + compute_tuned()
'''

TUNED_LAB = '''# %% [markdown]
# # 动手实验：用微调过的产物

''' + PREAMBLE + '''
# %%
import lab_tuned

print("微调", lab_tuned.load_or_compute_tuned())
'''


def test_an_artifact_built_on_another_starts_after_it_and_reads_it(lab_repo: LabRepo) -> None:
    """From empty caches, the artifact the other one starts from is computed first (once), and the second one's
    process finds it in its environment instead of computing it again."""
    add_artifact_lab(lab_repo)
    lab_repo.write("code/lab_tuned.py", TUNED_MODULE)
    lab_repo.write("labs/lab_tuned_user.py", TUNED_LAB)
    out = lab_repo.run("--only", "lab_tuned_user").stdout
    assert status_lines(out) == {"lab_tuned_user": "执行"}, out
    assert computed(lab_repo) == 1, "lab-model computed once, not again inside lab-tuned's process"
    assert "微调 缓存 2108" in _outputs(lab_repo.notebooks()["lab_tuned_user"])
    assert out.index("[产物] lab-model") < out.index("[产物] lab-tuned"), out


def test_the_artifacts_command_computes_each_stale_one_once_in_dependency_order(lab_repo: LabRepo) -> None:
    """``python -m llmsite artifacts`` with several stale artifacts runs each in its own process once the ones it
    reads are cached (as the build does): lab-tuned's process reads lab-model instead of computing it again inside
    (it did, when the command computed them one after another in its own process)."""
    add_artifact_lab(lab_repo)
    lab_repo.write("code/lab_tuned.py", TUNED_MODULE)
    out = lab_repo.run("--only", "lab-tuned", "--only", "lab-model", step="artifacts").stdout
    assert computed(lab_repo) == 1, out
    assert out.index("[产物] lab-model") < out.index("[产物] lab-tuned"), out
    (tuned,) = (lab_repo.root / ".cache" / "artifacts" / "lab-tuned").glob("*/lab-tuned.pt")
    assert tuned.read_text() == "缓存 2108"  # lab-tuned read lab-model from the cache
