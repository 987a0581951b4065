"""Two clean executions of a lab give byte-identical notebooks, downloads and rendered pages.

A tiny synthetic lab stands in for the real ones (which take a minute): it prints in bursts separated
by pauses (the kernel batches such prints differently from run to run), draws a plot, and has two
identical cells (whose content-derived ids must still differ). The whole-site comparison of two clean
builds is a separate, slower test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from .conftest import ROOT, LabRepo, make_lab_repo

JITTERY = '''# %% [markdown]
# # 动手实验：输出时快时慢

# %%
import random
import sys
import time

import matplotlib
import matplotlib.pyplot as plt

# %matplotlib inline
rng = random.Random()  # not seeded on purpose: the pauses differ from run to run, the text does not
for i in range(12):
    print("第", i, "行")
    if rng.random() < 0.5:
        time.sleep(rng.uniform(0.0, 0.25))
print("写到 stderr 的一行", file=sys.stderr)
print("最后一行")

# %%
fig, ax = plt.subplots(figsize=(2, 1.5))
ax.plot([0, 1, 2], [1, 0, 2])
plt.show()
print("图的后面")

# %%
x = 1

# %%
x = 1
'''


def _execute(tmp_path: Path, name: str) -> tuple[LabRepo, dict[str, bytes]]:
    repo = make_lab_repo(tmp_path / name)
    for lab in ("lab_a", "lab_b"):
        (repo.root / "labs" / f"{lab}.py").unlink()
    repo.write("labs/jittery.py", JITTERY)
    repo.run()
    [executed] = repo.notebooks().values()
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from llmsite import labs\n"
        f"sys.stdout.buffer.write(labs.published(Path({str(executed)!r}), labs.discover()['jittery']))\n"
    )
    env = {**os.environ, "LLM_SITE_CACHE": str(repo.root / ".cache")}
    download = subprocess.run([sys.executable, "-c", script], cwd=repo.root, capture_output=True, env=env,
                              timeout=120, check=True).stdout
    entry = executed.parent.parent  # the cache entry: the page the lab worker rendered next to the notebook
    page = (entry / "page.html").read_bytes() + (entry / "toc.json").read_bytes()
    return repo, {"executed": executed.read_bytes(), "download": download, "page": page}


def test_two_clean_executions_are_byte_identical(tmp_path: Path) -> None:
    first_repo, first = _execute(tmp_path, "one")
    _, second = _execute(tmp_path, "two")
    for kind in first:
        assert first[kind] == second[kind], f"the {kind} differs between two clean runs"

    nb = nbformat.read(next(iter(first_repo.notebooks().values())), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    streams = [(o.name, o.text) for o in code[0].outputs]
    assert [name for name, _ in streams] == ["stdout", "stderr"], "consecutive prints are one output per stream"
    assert streams[0][1] == "".join(f"第 {i} 行\n" for i in range(12)) + "最后一行\n"
    kinds = [o.output_type for o in code[1].outputs]
    assert kinds == ["display_data", "stream"], "the print after the plot stays after it"
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids) and code[2].id != code[3].id
    assert all("execution" not in c.metadata for c in code)

    # The ids come from the content: the same cells in another notebook get the same ids.
    download = json.loads(first["download"])
    assert [c["id"] for c in download["cells"] if c["cell_type"] == "markdown"] == [nb.cells[0].id]
    assert not (ROOT / ".cache" / "labs" / "jittery").exists()
