"""Fixtures for the labs pipeline.

- ``lab_repo``: a throwaway copy of ``code/`` and ``llmsite/`` with two tiny labs
  whose dependency sets differ (``lab_a`` imports ``lab_shared``; ``lab_b``
  imports ``lab_only_b``, which imports ``lab_shared``). They execute in about a
  second each, so cache behaviour is tested without training anything.
  ``add_artifact_lab`` adds a cheap build artifact (``lab_model.py``: it counts
  how often it is computed) and a lab that uses it.
- ``executed_labs``: the real labs, executed once per session through
  ``python -m llmsite labs`` (the repository's own cache: instant when warm).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import LANE, lane_graph

ROOT = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")

# The first cell of every lab: find code/ by walking up from the working directory.
PREAMBLE = '''# %%
import sys
from pathlib import Path

root = Path.cwd().resolve()
while not (root / "code" / "attention.py").is_file():
    root = root.parent
sys.path.insert(0, str(root / "code"))
'''

LAB_A = '''# %% [markdown]
# # 动手实验：甲

''' + PREAMBLE + '''
# %%
import lab_shared

print("甲", lab_shared.VALUE)
'''

LAB_B = '''# %% [markdown]
# # 动手实验：乙

''' + PREAMBLE + '''
# %%
import lab_only_b

print("乙", lab_only_b.DOUBLE)
'''

BROKEN = '''# %% [markdown]
# # 动手实验：会出错

''' + PREAMBLE + '''
# %%
x = 1

# %%
print("快出错了")
y = x / 0
'''


@dataclass
class LabRepo:
    root: Path

    @property
    def cache(self) -> Path:
        return self.root / ".cache" / "labs"

    def run(self, *args: str, check: bool = True, step: str = "labs") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LLM_SITE_CACHE": str(self.root / ".cache"),
               "LLM_ARTIFACT_CACHE": str(self.root / ".cache" / "artifacts")}
        proc = subprocess.run(
            [sys.executable, "-m", "llmsite", step, *args],
            cwd=self.root, capture_output=True, text=True, encoding="utf-8", env=env, timeout=600,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"python -m llmsite {step} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def append(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")

    def notebooks(self) -> dict[str, Path]:
        """Cached executed notebooks by lab name."""
        return {p.stem: p for p in sorted(self.cache.glob("*/*/labs/*.ipynb"))}


# A build artifact that is cheap to compute and counts how often it is computed (lab_model.computed).
ARTIFACT_MODULE = '''"""测试用：一个构建产物。"""

import os
from pathlib import Path

from lab_shared import VALUE

BUILD_ARTIFACTS = {"lab-model": ("compute", "save")}
ENV = "LLM_ARTIFACT_LAB_MODEL"
COUNTER = Path(__file__).resolve().parent / "computed.txt"


def compute():
    COUNTER.write_text(COUNTER.read_text() + "x" if COUNTER.exists() else "x")
    return VALUE * 100 + 7


def save(path, value):
    Path(path).write_text(str(value))


def load_or_compute():
    path = os.environ.get(ENV)
    if path and Path(path).is_file():
        return "缓存", int(Path(path).read_text())
    return "现算", compute()


def unrelated():
    return 1
'''

LAB_MODEL = '''# %% [markdown]
# # 动手实验：用构建产物

''' + PREAMBLE + '''
# %%
import lab_model

print("产物", *lab_model.load_or_compute())
'''


def status_lines(output: str) -> dict[str, str]:
    """{lab name: '执行' | '缓存'} from the script's per-lab lines."""
    out = {}
    for line in output.splitlines():
        line = line.strip()
        if line.startswith(("[执行]", "[缓存]")):
            tag, name = line.split()[:2]
            out[name] = tag.strip("[]")
    return out


KATEX = Path("docs") / "assets" / "vendor" / "katex"  # a lab page's formulas are checked with the vendored KaTeX


def make_lab_repo(dest: Path) -> LabRepo:
    for part in ("code", "llmsite"):
        shutil.copytree(ROOT / part, dest / part, ignore=IGNORE)
    shutil.copytree(ROOT / KATEX, dest / KATEX)
    repo = LabRepo(dest)
    repo.write("code/lab_shared.py", '"""测试用：两个实验都用到的模块。"""\n\nVALUE = 21\n')
    only_b = '"""测试用：只有实验乙用到。"""\n\nfrom lab_shared import VALUE\n\nDOUBLE = 2 * VALUE\n'
    repo.write("code/lab_only_b.py", only_b)
    repo.write("labs/lab_a.py", LAB_A)
    repo.write("labs/lab_b.py", LAB_B)
    return repo


def add_artifact_lab(repo: LabRepo) -> None:
    repo.write("code/lab_model.py", ARTIFACT_MODULE)
    repo.write("labs/lab_model_user.py", LAB_MODEL)


def computed(repo: LabRepo) -> int:
    """How many times the artifact lab-model was computed in this repository copy."""
    counter = repo.root / "code" / "computed.txt"
    return len(counter.read_text()) if counter.exists() else 0


@pytest.fixture
def lab_repo(tmp_path: Path) -> LabRepo:
    return make_lab_repo(tmp_path / "repo")


@pytest.fixture(scope="session")
def executed_labs(repo_cache: Path) -> dict[str, Path]:
    """The real labs, executed (or taken from the cache) once per session: {name: executed .ipynb}. Asked after the
    run's build (``repo_cache``), which has executed them into the repository's cache: read, not executed twice."""
    from llmsite import labs

    found = labs.discover()
    if LANE:  # the lane's build executed only its articles' labs (features/stale.py)
        own = {lab for slug in LANE for lab in lane_graph().articles[slug].labs}
        found = {name: lab for name, lab in found.items() if name in own}
    only = [arg for name in found for arg in ("--only", name)] if LANE else []
    proc = subprocess.run(
        [sys.executable, "-m", "llmsite", "labs", *only],
        cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=1200,
    )
    if proc.returncode != 0:
        pytest.fail(f"python -m llmsite labs failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    return {item.lab.name: item.notebook() for item in labs.plan(list(found.values()))}
