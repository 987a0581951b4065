"""The acrostic model's export (build artifact ``acrostic-gpt``, llmsite/playground/export.py): its header carries the
validated task, a bad task stops the export with the artifact's name, the plain model's header has no task, and its
cache key follows its code. The order in which artifacts are computed: tests/site/test_artifact_schedule.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from llmsite import artifacts
from llmsite.playground import export, pages

from . import reference

ROOT = Path(__file__).resolve().parents[2]
NAME = "acrostic-gpt"
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def saved(trained_artifacts):
    return torch.load(trained_artifacts[NAME], weights_only=True)


def test_the_export_carries_the_task_and_the_weights(tmp_path, trained_artifacts, saved):
    from acrostic import acrostic_prompt, playground_task

    (item,) = export.plan([NAME], force=True, cache_dir=tmp_path)
    entry = export.export(item, trained_artifacts[NAME], tmp_path)
    header = json.loads((entry / export.HEADER).read_text(encoding="utf-8"))
    assert header["format"] == export.FORMAT == "llm-playground/1"
    assert header["task"] == playground_task() == saved["task"]
    task = header["task"]
    assert task["template"].replace("{heads}", task["example"]) == acrostic_prompt(task["example"])
    assert all(c in header["vocab"]["chars"] for c in task["example"] + task["line_ends"])
    model = reference.dequantized(header, (entry / export.WEIGHTS).read_bytes())
    for name, tensor in saved["state_dict"].items():
        assert torch.equal(model.state_dict()[name], tensor.to(torch.float16).to(torch.float32)), name


def test_the_plain_model_has_no_task(trained_artifacts):
    header, _ = export.encode("tang-gpt", torch.load(trained_artifacts["tang-gpt"], weights_only=True))
    assert "task" not in header


def test_the_article_marks_the_acrostic_model():
    assert [u.where.split(":")[0] for u in pages.marked()[NAME]] == ["docs/articles/lora-finetune.md"]


BAD_TASKS = [
    (lambda t: "acrostic", "应是字典"),
    (lambda t: {**t, "kind": "chat"}, "kind 应是 acrostic 之一"),
    (lambda t: {k: v for k, v in t.items() if k != "tokens"}, r"缺了 \['tokens'\]"),
    (lambda t: {**t, "color": "red"}, r"多了 \['color'\]"),
    (lambda t: {**t, "template": "藏头：\n"}, "恰好有一个 {heads}"),
    (lambda t: {**t, "template": "{heads}{heads}"}, "恰好有一个 {heads}"),
    (lambda t: {**t, "template": "藏{头}：{heads}\n"}, "不能再有花括号"),
    (lambda t: {**t, "template": "<img src=x onerror=alert(1)>{heads}"}, "HTML 标签"),
    (lambda t: {**t, "template": "藏头\u202e：{heads}"}, "不可见字符"),
    (lambda t: {**t, "template": "藏头\x00{heads}"}, "控制字符"),
    (lambda t: {**t, "template": "藏" * 80 + "{heads}"}, "1 到 64 个字符"),
    (lambda t: {**t, "example": 1234}, "example 应是字符串"),
    (lambda t: {**t, "example": "春夏秋"}, "example 应是 4 个字"),
    (lambda t: {**t, "example": "春，秋冬"}, "不是标点"),
    (lambda t: {**t, "example": "春夏秋头"}, "都应在词表里"),
    (lambda t: {**t, "line_ends": "，，"}, "line_ends 应是词表里互不相同的标点"),
    (lambda t: {**t, "heads": True}, "heads 应是 1 到 9 之间的整数"),
    (lambda t: {**t, "heads": 4.0}, "heads 应是 1 到 9 之间的整数"),
    (lambda t: {**t, "tokens": 0}, "tokens 应是 1 到 64 之间的整数"),
    (lambda t: {**t, "tokens": 60}, "超过了上下文"),
    (lambda t: {**t, "line_chars": 10}, "line_chars 应是 1 到 9 之间的整数"),
]


@pytest.mark.parametrize("change, fragment", BAD_TASKS, ids=[str(i) for i in range(len(BAD_TASKS))])
def test_a_bad_task_stops_the_export_naming_the_artifact(saved, change, fragment):
    bad = {**saved, "task": change(dict(saved["task"]))}
    with pytest.raises(export.ExportError, match=rf"^产物 {NAME} 的 task 不对：.*{fragment}"):
        export.encode(NAME, bad)


def test_the_cache_key_follows_the_code_it_uses(tmp_path):
    code = tmp_path / "code"
    shutil.copytree(ROOT / "code", code, ignore=shutil.ignore_patterns("__pycache__", "figures"))

    def key() -> str:
        return artifacts.key_for(artifacts.discover(code)[NAME], code, tmp_path).digest

    before = key()
    assert before == artifacts.key_for(artifacts.discover()[NAME]).digest  # the same code, the same key
    edits = [
        ("lora_train.py", 'PLAYGROUND_METHOD = "lora-4"', 'PLAYGROUND_METHOD = "lora-8"'),  # another model
        ("acrostic.py", 'example: str = "春夏秋冬"', 'example: str = "江山風月"'),
        ("lora_train.py", "steps: int = 80", "steps: int = 81"),  # the fine-tuning it reads
        ("lora.py", "merged.weight.copy_(base.weight + child.delta_weight())", "merged.weight.copy_(base.weight)"),
    ]
    for file, old, new in edits:
        text = (code / file).read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        (code / file).write_text(text.replace(old, new), encoding="utf-8")
        assert key() != before, f"{file}: {new}"
        (code / file).write_text(text, encoding="utf-8")
    text = (code / "lora_train.py").read_text(encoding="utf-8")
    (code / "lora_train.py").write_text(text.replace("# 放进浏览器演示的是 LoRA r=4", "# 改过的注释"), encoding="utf-8")
    assert key() == before, "a comment does not change the key"
