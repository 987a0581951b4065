"""The acrostic model's export (build artifact ``acrostic-gpt``, llmsite/playground/export.py): its header carries the
validated task, a bad task stops the export with the artifact's name, the plain model's header has no task, the
artifact is computed after the fine-tuning it reads (waves), and its cache key follows its code."""

from __future__ import annotations

import json
import shutil
import time
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


class _FakeRun:
    """Stands for one artifact's process: when it ends, the artifact's (empty) file is in the cache (unless it
    fails: exit code 1, nothing cached)."""

    def __init__(self, item, events: list[tuple[str, str]], until=lambda: True, fails: bool = False) -> None:
        self.item, self.events, self.until, self.fails, self.returncode = item, events, until, fails, None

    def poll(self):
        if self.returncode is None and self.until():
            if not self.fails:
                self.item.path().parent.mkdir(parents=True, exist_ok=True)
                self.item.path().write_bytes(b"")
            self.events.append(("end", self.item.artifact.name))
            self.returncode = 1 if self.fails else 0
        return self.returncode


def _fake_processes(monkeypatch, tmp_path, found, events: list[tuple[str, str]], slow: dict | None = None,
                    failing: str = "") -> None:
    """Empty artifact cache; ``_start`` replaced by _FakeRun, recording into ``events`` (``slow``: name -> whether
    its process may end yet)."""
    monkeypatch.setenv("LLM_ARTIFACT_CACHE", str(tmp_path))
    for artifact in found.values():  # ensure() points LLM_ARTIFACT_<NAME> at the empty files: put them back afterwards
        monkeypatch.delenv(artifact.env, raising=False)

    def start(name, stdout, stderr):
        stdout.write_text("", encoding="utf-8")
        stderr.write_text(f"{name}: 训练失败（测试）" if name == failing else "", encoding="utf-8")
        events.append(("start", name))
        (item,) = artifacts.plan([found[name]])
        return _FakeRun(item, events, (slow or {}).get(name, lambda: True), fails=name == failing)

    monkeypatch.setattr(artifacts, "_start", start)


def _check_order(events: list[tuple[str, str]], found) -> None:
    """Every artifact started only once each artifact it reads had ended."""
    for i, (kind, name) in enumerate(events):
        if kind == "start":
            ended = {n for k, n in events[:i] if k == "end"}
            needs = {a.name for a in artifacts.upstream(found[name])}
            assert needs <= ended, f"{name} started before {sorted(needs - ended)} ended: {events}"


def test_it_is_computed_after_the_fine_tuning_it_reads(tmp_path, monkeypatch):
    """Empty artifact cache: ensure() computes tang-gpt, then lora-finetune, then acrostic-gpt (the computing is
    replaced by writing an empty file; the order is what is checked)."""
    found = artifacts.discover()
    assert {a.name for a in artifacts.upstream(found[NAME])} == {"tang-gpt", "lora-finetune"}
    events: list[tuple[str, str]] = []
    _fake_processes(monkeypatch, tmp_path, found, events)
    paths = artifacts.ensure([found[NAME]])
    assert [n for k, n in events if k == "start"] == ["tang-gpt", "lora-finetune", NAME]
    _check_order(events, found)
    assert set(paths) == {"tang-gpt", "lora-finetune", NAME}


def test_a_slow_artifact_holds_back_only_what_reads_it(tmp_path, monkeypatch):
    """The stage-3 chain from an empty cache on two cores: GRPO (which reads the model comparison, not DPO) starts
    while DPO is still training; waves made it wait for DPO (issue 47: about 110 s of a cold build)."""
    found = artifacts.discover()
    assert "preference-dpo" not in {a.name for a in artifacts.upstream(found["grpo-runs"])}
    assert "capable-sft" in {a.name for a in artifacts.upstream(found["preference-dpo"])}
    monkeypatch.setattr(artifacts, "_cores", lambda: 2)
    events: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10  # scheduled in waves, GRPO would wait for DPO: end DPO then, and fail below
    _fake_processes(monkeypatch, tmp_path, found, events,
                    slow={"preference-dpo": lambda: ("start", "grpo-runs") in events or time.monotonic() > deadline})
    paths = artifacts.ensure([found["grpo-runs"], found["preference-dpo"]])
    assert {"grpo-runs", "preference-dpo", "model-comparison", "capable-sft", "tang-gpt"} <= set(paths)
    _check_order(events, found)
    assert events.index(("start", "grpo-runs")) < events.index(("end", "preference-dpo")), events


def test_a_failure_starts_nothing_that_reads_it_and_is_raised(tmp_path, monkeypatch):
    found = artifacts.discover()
    events: list[tuple[str, str]] = []
    _fake_processes(monkeypatch, tmp_path, found, events, failing="capable-sft")
    with pytest.raises(artifacts.ArtifactError, match="capable-sft: 训练失败（测试）"):
        artifacts.ensure([found["grpo-runs"]])
    started = [n for k, n in events if k == "start"]
    assert "capable-sft" in started and not {"model-comparison", "grpo-runs"} & set(started), events


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
