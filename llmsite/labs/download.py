"""The notebook offered for download: the executed one with a first code cell that carries the ``code/`` files.

That cell writes the ``code/`` files the lab imports (and the data files they declare in ``DATA_FILES``), byte for
byte as they are in the repository now, next to the notebook, so it runs outside the repository. Plain JSON: no
jupytext or nbformat import in the MkDocs process (``labs/stored.py`` keeps the result in the cache entry).
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from pathlib import Path

from llmsite.cache.deps import closure
from llmsite.labs.notebook import cell_ids
from llmsite.labs.sources import Lab, LabError
from llmsite.paths import CODE, ROOT, rel


def code_files(lab: Lab, code_dir: Path = CODE) -> list[Path]:
    """The files of ``code/`` a lab imports, transitively, whole: what a downloaded notebook needs."""
    source = lab.source.resolve()
    return [p for p in closure(lab.source, code_dir) if p != source]


DATA_DECLARATION = "DATA_FILES"  # in a code/ module: the data files it reads (repository paths), bundled too


@lru_cache(maxsize=256)
def _declared_data(path: Path, mtime_ns: int) -> tuple[str, ...]:
    text = path.read_text(encoding="utf-8")
    if DATA_DECLARATION not in text:  # most modules: no syntax tree needed
        return ()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == DATA_DECLARATION
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
                raise LabError(f"{rel(path)}:{node.lineno}: {DATA_DECLARATION} 应是由字符串组成的元组，"
                               "写仓库里的路径，例如 (\"data/x/y.txt\",)")
            return value
    return ()


def bundled_files(lab: Lab, code_dir: Path = CODE, repo: Path = ROOT) -> dict[str, Path]:
    """{file name: path} of what a downloaded notebook writes next to itself: the ``code/`` files the lab
    imports and the data files those modules declare in ``DATA_FILES``."""
    out: dict[str, Path] = {}
    for module in code_files(lab, code_dir):
        out[module.name] = module
    for module in code_files(lab, code_dir):
        for item in _declared_data(module, module.stat().st_mtime_ns):
            path = repo / item
            if not path.is_file():
                raise LabError(f"{rel(module)}: {DATA_DECLARATION} 里的 {item} 不存在")
            if path.name in out and out[path.name] != path:
                raise LabError(f"{rel(module)}: 数据文件 {item} 与 {rel(out[path.name])} 同名，下载时会互相覆盖")
            out[path.name] = path
    return out


BUNDLE_DIR = "llm_code"  # next to the downloaded notebook; the labs' first code cell looks there too
BUNDLE_TAG = "llm-code-files"


def bundle_cell_source(files: dict[str, str]) -> str:
    """A code cell that writes ``files`` ({file name: text}) into ``llm_code/`` next to the notebook."""
    entries = "\n".join(f"        {name!r}: {text!r}," for name, text in files.items())
    return f"""# 这一格是网站生成下载文件时加上的：把这个实验要用到的 {len(files)} 个文件
# （仓库 code/ 目录里的代码和它们读取的数据，原样内容）写到 Notebook 旁边的 {BUNDLE_DIR}/ 目录里，下一格从那里导入。
# 已经存在而内容不同的文件不会被覆盖：那是你改过的版本，想恢复原样就删掉它，再运行这一格。
def write_code_files():
    from pathlib import Path

    code_files = {{
{entries}
    }}
    folder = Path("{BUNDLE_DIR}")
    folder.mkdir(exist_ok=True)
    for name, text in code_files.items():
        path = folder / name
        if not path.exists():
            path.write_text(text, encoding="utf-8")
        elif path.read_text(encoding="utf-8") != text:
            print(f"保留你改过的 {{path}}（与下载时的版本不同）")
    print(f"文件写在 {{folder.resolve()}}：" + "、".join(code_files))


write_code_files()"""


def published(executed: Path, lab: Lab, code_dir: Path = CODE) -> bytes:
    """The notebook readers download: the executed one with a first code cell carrying the ``code/`` files.

    The files are read now, so they match the repository even when only a comment changed since the
    lab was executed (a change that, by design, does not execute it again). Plain JSON: no jupytext or
    nbformat import in the MkDocs process.
    """
    nb = json.loads(executed.read_text(encoding="utf-8"))
    files = {name: path.read_text(encoding="utf-8") for name, path in sorted(bundled_files(lab, code_dir).items())}
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"jupyter": {"source_hidden": True}, "tags": [BUNDLE_TAG]},
        "outputs": [],
        "source": bundle_cell_source(files).splitlines(keepends=True),
    }
    first_code = next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"), len(nb["cells"]))
    nb["cells"].insert(first_code, cell)
    cell_ids(nb["cells"])
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
