"""The order in which ``artifacts.ensure`` (llmsite/artifacts.py) computes the declared artifacts from an empty cache.

Each artifact's process is replaced by a stand-in that writes an empty file, so these tests train nothing: they check
only which artifact starts when. An artifact starts once every artifact it reads has ended, and not later (a slow one
holds back only what reads it); a failure starts nothing that reads it and is raised with the artifact's name."""

from __future__ import annotations

import time

import pytest

from llmsite import artifacts

NAME = "acrostic-gpt"  # the playground's model: it reads the fine-tuning, which reads the pretrained GPT


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
    assert {"capable-sft-0", "capable-sft-1"} <= {a.name for a in artifacts.upstream(found["preference-dpo"])}
    monkeypatch.setattr(artifacts, "_cores", lambda: 2)
    events: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10  # scheduled in waves, GRPO would wait for DPO: end DPO then, and fail below
    _fake_processes(monkeypatch, tmp_path, found, events,
                    slow={"preference-dpo": lambda: ("start", "grpo-runs") in events or time.monotonic() > deadline})
    paths = artifacts.ensure([found["grpo-runs"], found["preference-dpo"]])
    assert {"grpo-runs", "preference-dpo", "model-comparison", "capable-sft-0", "capable-sft-1",
            "tang-gpt"} <= set(paths)
    _check_order(events, found)
    assert events.index(("start", "grpo-runs")) < events.index(("end", "preference-dpo")), events


def test_a_failure_starts_nothing_that_reads_it_and_is_raised(tmp_path, monkeypatch):
    found = artifacts.discover()
    events: list[tuple[str, str]] = []
    _fake_processes(monkeypatch, tmp_path, found, events, failing="capable-sft-1")
    with pytest.raises(artifacts.ArtifactError, match="capable-sft-1: 训练失败（测试）"):
        artifacts.ensure([found["grpo-runs"]])
    started = [n for k, n in events if k == "start"]
    assert "capable-sft-1" in started and not {"model-comparison", "grpo-runs"} & set(started), events


def test_the_parts_of_one_experiment_train_side_by_side(tmp_path, monkeypatch):
    """The two seeds of the 500-step SFT, then the three parts of the DPO experiment (one compute function, an
    argument each): on two cores each part starts while its sibling is still training, and preference-dpo, which
    gathers them, starts after all three (issue 46: the DPO lane's chain of trainings left one core idle)."""
    found = artifacts.discover()
    monkeypatch.setattr(artifacts, "_cores", lambda: 2)
    events: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10  # one at a time, the sibling never starts: end at the deadline, fail below

    def after(name):
        return lambda: ("start", name) in events or time.monotonic() > deadline

    _fake_processes(monkeypatch, tmp_path, found, events,
                    slow={"capable-sft-0": after("capable-sft-1"), "dpo-seed-0": after("dpo-betas")})
    artifacts.ensure([found["preference-dpo"]])
    _check_order(events, found)
    assert events.index(("start", "capable-sft-1")) < events.index(("end", "capable-sft-0")), events
    assert events.index(("start", "dpo-betas")) < events.index(("end", "dpo-seed-0")), events
    gather = events.index(("start", "preference-dpo"))
    assert all(events.index(("end", part)) < gather for part in ("dpo-seed-0", "dpo-betas", "dpo-seed-1")), events
