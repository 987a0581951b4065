"""Exercise answers (``@exercise_answer`` in ``code/figures/*.py``) and the numbers an article states
(``@article_values``, one function per module returning ``{name: text}``): keyed, computed and cached like figures.

An answer is one value (an int, a float or a string) that an exercise on the article's page is checked
against. It is computed by the figures step (``python -m llmsite figures``, after the figures, in the same
subprocess: the MkDocs process never imports the code) and cached under ``.cache/answers/<name>/<key>/``
as ``answer.json`` (``{"name": ..., "value": ...}``, keys sorted, compact) beside ``inputs.json``. Never
inside ``.cache/figures/``: the figure cache holds figure entries only.

Key = hash of: this pipeline's version, the declaration (name, function, data files), the definitions of
``code/`` the function uses (``llmsite.cache.deps``, as for figures), the declared data files, the build
artifacts it reaches and the versions of Python, torch and numpy. The shared style module ``figkit.py``
is not an input: colours and fonts do not change a number. Entries are directories committed in one
rename (``llmsite.cache.commit_dir``).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache as memoize
from pathlib import Path
from typing import Any

from llmsite import cache as build_cache
from llmsite.cache import Key, commit_dir
from llmsite.cache.deps import definition_deps
from llmsite.figures import cache as figure_cache
from llmsite.figures.registry import ANSWER_NAME, AnswerSpec
from llmsite.paths import CACHE, CODE, ROOT, rel

PIPELINE_VERSION = "1"
CACHE_DIR = CACHE / "answers"
FILE = "answer.json"
LIBRARIES = ("torch", "numpy")
TIMEOUT = 120.0  # seconds one answer may take
MAX_TEXT = 200  # characters of a string answer (it is an option's text)
MAX_STATED = 40  # characters of one value an article states (@article_values): a number, maybe with a word
# What a stated value may hold: digits, letters, CJK and the punctuation of a number. No Markdown, HTML or TeX:
# it goes into the page's Markdown as it is.
STATED_TEXT = re.compile(r"^[0-9A-Za-z\u4e00-\u9fff .,%+\-−–~≈×/:()（）、，]+$")

Value = int | float | str
Stated = dict[str, str]


class AnswerError(RuntimeError):
    """An answer could not be computed, or its value is not an int, a float or a string."""


@dataclass
class Planned:
    spec: AnswerSpec
    key: Key
    cached: bool


@memoize
def library_versions() -> tuple[tuple[str, str], ...]:
    return build_cache.versions(LIBRARIES)


def key_for(spec: AnswerSpec, code_dir: Path = CODE, root: Path = ROOT) -> Key:
    inputs: dict[str, str] = {"pipeline": PIPELINE_VERSION,
                               "kind": "article-values" if spec.kind == "values" else "exercise-answer"}
    inputs["declaration"] = json.dumps([spec.name, spec.function, list(spec.data)], ensure_ascii=False)
    inputs.update(figure_cache.definition_inputs(spec.module, [spec.function], code_dir, root))
    inputs.update(figure_cache.data_inputs(spec.data, root))
    for name, version in library_versions():
        inputs[f"lib:{name}"] = version
    inputs.update(figure_cache.used_artifact_inputs(spec.module, [spec.function], code_dir, root))
    return build_cache.key(inputs)


def entry_dir(spec: AnswerSpec, key: Key, cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / spec.name / key.digest


def output(spec: AnswerSpec, key: Key, cache_dir: Path = CACHE_DIR) -> Path:
    return entry_dir(spec, key, cache_dir) / FILE


def plan(specs: Iterable[AnswerSpec], force: bool = False, cache_dir: Path = CACHE_DIR) -> list[Planned]:
    out = []
    for spec in specs:
        key = key_for(spec)
        out.append(Planned(spec, key, (not force) and output(spec, key, cache_dir).is_file()))
    return out


def read(item: Planned, cache_dir: Path = CACHE_DIR) -> Value | Stated:
    """The cached value of a computed answer (no code is imported)."""
    data = json.loads(output(item.spec, item.key, cache_dir).read_text(encoding="utf-8"))
    return data["value"]


def plain(value: Any) -> Value:
    """The value as stored: an int, a finite float or a non-empty one-line string (0-d tensors and numpy scalars
    are unwrapped); anything else raises AnswerError saying what came back."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes, int, float)):
        try:
            value = value.item()  # a 0-d tensor, a numpy scalar
        except (ValueError, RuntimeError) as exc:
            raise AnswerError(f"返回了不止一个数（{type(value).__name__}）：答案应是一个整数、小数或字符串") from exc
    if isinstance(value, bool):
        raise AnswerError(f"返回了 {value}：答案应是一个整数、小数或字符串，不是 True / False")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AnswerError(f"返回了 {value}：答案应是有限的数")
        return 0.0 if value == 0 else value  # no -0.0
    if isinstance(value, str):
        if not value.strip() or "\n" in value.strip():
            raise AnswerError("返回的字符串是空的或有换行：选择题的答案是一个选项的文字（一行）")
        if len(value) > MAX_TEXT:
            raise AnswerError(f"返回的字符串有 {len(value)} 个字符，最多 {MAX_TEXT} 个（它应是一个选项的文字）")
        return value.strip()
    raise AnswerError(f"返回的类型是 {type(value).__name__}：答案应是一个整数、小数或字符串")


def stated(value: Any) -> Stated:
    """What an @article_values function returns, as stored: {name: text}, every name as an answer's (lowercase
    letters, digits, hyphens) and every text one short line of plain characters (``STATED_TEXT``); anything else
    raises AnswerError naming the entry."""
    if not isinstance(value, dict) or not value:
        raise AnswerError(f"返回了 {type(value).__name__}：@article_values 应返回一个非空字典 {{名字: 文字}}")
    out: Stated = {}
    for name, text in value.items():
        if not isinstance(name, str) or not ANSWER_NAME.match(name):
            raise AnswerError(f"名字 {name!r} 不合法：只用小写字母、数字和连字符，例如 \"sft-loss\"")
        if not isinstance(text, str):
            raise AnswerError(f"{name} 的值是 {type(text).__name__}：要写成文中显示的文字，例如 f\"{{x:.1f}}\"")
        if not text or len(text) > MAX_STATED or not STATED_TEXT.fullmatch(text):
            raise AnswerError(f"{name} 的值 {text!r} 不能放进文中：要求一行、至多 {MAX_STATED} 个字符，"
                              "只有数字、字母、汉字和数的标点（不能有 Markdown、HTML 或公式）")
        out[name] = text
    return dict(sorted(out.items()))


def compute_value(spec: AnswerSpec) -> Value | Stated:
    """Import the module and call the function, seeded and time-limited as a figure is (in this process)."""
    from llmsite.figures import runner

    module = runner.load_module(spec.module)
    fn = getattr(module, spec.function)
    runner.seed()
    try:
        with runner.Deadline(TIMEOUT):
            value = fn()
    except runner.Timeout:
        raise AnswerError(f"超过时间上限 {TIMEOUT:g} 秒，已停止：答案应该很快就能算出来") from None
    return stated(value) if spec.kind == "values" else plain(value)


def value_of(spec: AnswerSpec, cache_dir: Path = CACHE_DIR) -> Value | Stated:
    """The value as the build has it: read from the cache when its key is there (no code imported), else computed in
    this process (``compute_value``). Tests use it so a value the session's build made is not computed again."""
    (item,) = plan([spec], cache_dir=cache_dir)
    return read(item, cache_dir) if item.cached else compute_value(spec)


def _describe(spec: AnswerSpec) -> str:
    return (f"{spec.label}计算失败：函数 {spec.function}（{spec.where}），"
            f"用于文章 docs/articles/{spec.article}.md")


def compute(item: Planned, cache_dir: Path = CACHE_DIR) -> Path:
    """Compute one answer into a staging directory and commit it (nothing is left behind on failure)."""
    spec = item.spec
    staging = build_cache.staging_dir(cache_dir, spec.name)
    try:
        try:
            value = compute_value(spec)
        except AnswerError as exc:
            raise AnswerError(f"{_describe(spec)}\n    {exc}") from None
        except Exception as exc:
            raise AnswerError(f"{_describe(spec)}\n{traceback.format_exc()}") from exc
        blob = json.dumps({"name": spec.name, "value": value}, ensure_ascii=False, sort_keys=True,
                          separators=(",", ":"), allow_nan=False)
        (staging / FILE).write_text(blob + "\n", encoding="utf-8")
        (staging / "inputs.json").write_text(json.dumps(item.key.inputs, indent=1, sort_keys=True, ensure_ascii=False))
        return commit_dir(staging, entry_dir(spec, item.key, cache_dir))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def run(items: list[Planned], cache_dir: Path = CACHE_DIR, out: Any = None) -> tuple[int, int]:
    """Compute every stale answer, one line each and a total (nothing printed when there are none).
    Returns (computed, cached)."""
    if not items:
        return 0, 0
    out = out or sys.stdout
    build_cache.clean_stale_staging(cache_dir)
    start = time.perf_counter()
    stale = [item for item in items if not item.cached]
    if stale:  # the trained models the stale answers use, computed first in a fresh process
        from llmsite import artifacts

        needed: list[artifacts.Artifact] = []
        for item in stale:
            reached = definition_deps([(item.spec.module, item.spec.function)]).roots
            needed += [a for a in artifacts.used_by(reached) if a not in needed]
        try:
            artifacts.ensure(needed, out)
        except artifacts.ArtifactError as exc:
            names = "、".join(i.spec.name for i in stale)
            raise AnswerError(f"练习答案 {names} 用到的构建产物计算失败：\n{exc}") from exc
    for item in items:
        if item.cached:
            print(f"  [答案] {item.spec.name:<24} 来自缓存", file=out, flush=True)
    for item in stale:
        t0 = time.perf_counter()
        compute(item, cache_dir)
        print(f"  [答案] {item.spec.name:<24} {time.perf_counter() - t0:6.2f} s  ({rel(item.spec.module)})",
              file=out, flush=True)
    total = time.perf_counter() - start
    print(f"共 {len(items)} 个练习答案：{len(stale)} 个重新计算，{len(items) - len(stale)} 个来自缓存，"
          f"用时 {total:.2f} s", file=out, flush=True)
    return len(stale), len(items) - len(stale)
