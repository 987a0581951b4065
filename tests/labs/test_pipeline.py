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

from .conftest import BROKEN, IGNORE, ROOT, LabRepo, make_lab_repo, status_lines


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
    assert {"lab:labs/lab_b.py", "module:code/lab_only_b.py", "module:code/lab_shared.py"} <= set(inputs)
    assert inputs["kernel"] == "python3" and "lib:torch" in inputs and "lib:nbclient" in inputs
    assert not list(lab_repo.cache.glob(".tmp-*")), "no staging directory left behind"


def test_only_dependents_are_executed_again(lab_repo: LabRepo) -> None:
    lab_repo.run()
    before = lab_repo.notebooks()

    # Only lab_b imports lab_only_b.
    lab_repo.append("code/lab_only_b.py", "\nTRIPLE = 3 * VALUE\n")
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "缓存", "lab_b": "执行"}, out
    after = lab_repo.notebooks()
    assert after["lab_a"] == before["lab_a"] and after["lab_b"] != before["lab_b"]
    assert not before["lab_b"].exists(), "the superseded entry is pruned"

    # Both import lab_shared (lab_b through lab_only_b).
    lab_repo.append("code/lab_shared.py", "\n# 改一行注释也算改动\n")
    assert status_lines(lab_repo.run().stdout) == {"lab_a": "执行", "lab_b": "执行"}

    # A lab's own source.
    lab_repo.append("labs/lab_a.py", '\n# %%\nprint("再来一个单元")\n')
    out = lab_repo.run().stdout
    assert status_lines(out) == {"lab_a": "执行", "lab_b": "缓存"}, out
    assert "再来一个单元" in _outputs(lab_repo.notebooks()["lab_a"])

    # A module nobody imports, and a new mtime without new content: nothing to do.
    lab_repo.append("code/positional_encoding.py", "\n")
    os.utime(lab_repo.root / "code" / "lab_shared.py")
    assert set(status_lines(lab_repo.run().stdout).values()) == {"缓存"}

    # --force executes everything, and the fresh notebooks replace the cached ones.
    before = {name: path.stat().st_mtime_ns for name, path in lab_repo.notebooks().items()}
    assert set(status_lines(lab_repo.run("--force").stdout).values()) == {"执行"}
    after = lab_repo.notebooks()
    assert set(after) == set(before) and all(after[n].stat().st_mtime_ns > before[n] for n in after)
    assert not [p for p in lab_repo.cache.glob("*/.*")], "no set-aside entry left behind"


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
    """Editing code/tiny_transformer.py or positional_encoding.py re-executes only the heads lab."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    from sitelib import labs
    from sitelib.paths import rel

    found = labs.discover()
    deps = {name: {rel(p) for p in labs.dependencies(lab)} for name, lab in found.items()}
    assert deps["attention_lab"] == {"code/attention.py", "code/figkit.py", "code/multi_head_attention.py"}
    assert {"code/tiny_transformer.py", "code/positional_encoding.py", "code/multi_head_attention.py",
            "code/attention.py", "code/figkit.py"} == deps["attention_heads_lab"]


@pytest.mark.slow
def test_a_failing_lab_stops_the_mkdocs_build(tmp_path: Path) -> None:
    repo = make_lab_repo(tmp_path / "repo")
    for part in ("docs", "data", "overrides"):
        shutil.copytree(ROOT / part, repo.root / part, ignore=IGNORE)
    shutil.copy2(ROOT / "mkdocs.yml", repo.root / "mkdocs.yml")
    (repo.root / "node_modules").symlink_to(ROOT / "node_modules")
    # the real labs too (the article links to them), with their cache entries when there are some
    shutil.copytree(ROOT / "labs", repo.root / "labs", dirs_exist_ok=True, ignore=IGNORE)
    for kind in ("labs", "figures"):
        if (ROOT / ".cache" / kind).is_dir():
            shutil.copytree(ROOT / ".cache" / kind, repo.root / ".cache" / kind, dirs_exist_ok=True)
    repo.write("labs/broken.py", BROKEN)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(repo.root / ".cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-d", str(repo.root / "site")],
        cwd=repo.root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "执行动手实验失败" in output and "labs/broken.py" in output and "ZeroDivisionError" in output, output

