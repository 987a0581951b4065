"""Which ready artifact starts first from an empty cache (llmsite/artifact_order.py): the one the longest remaining
chain of trainings waits on, by the committed seconds hints (llmsite/artifact_seconds.json).

The scheduling itself is run with the stand-in processes of test_artifact_schedule.py: nothing is trained."""

from __future__ import annotations

import json

import pytest

from llmsite import artifact_order, artifacts
from tests.site.test_artifact_schedule import _check_order, _fake_processes


def test_every_hint_names_a_declared_artifact_and_is_a_positive_number():
    """A renamed artifact leaves its hint behind, and the new name would count DEFAULT_SECONDS: rename both."""
    found = artifacts.discover()
    hinted = artifact_order.hints()
    assert hinted, f"{artifact_order.HINTS} is empty or missing"
    unknown = sorted(set(hinted) - set(found))
    assert not unknown, f"{artifact_order.HINTS.name} 里的 {unknown} 不是任何 code/*.py 声明的产物：改成新名字或删掉"
    assert all(seconds > 0 for seconds in hinted.values())


def test_the_remaining_path_adds_an_artifacts_seconds_to_its_longest_reader_chain():
    # a -> b -> d and a -> c: the path from a goes through b (10 + 5 + 1), not c (10 + 2)
    needs = {"a": set(), "b": {"a"}, "c": {"a"}, "d": {"b"}, "e": set()}
    rank = artifact_order.remaining(needs, {"a": 10, "b": 5, "c": 2, "d": 1})
    assert rank == {"a": 16.0, "b": 6.0, "c": 2.0, "d": 1.0, "e": artifact_order.DEFAULT_SECONDS}
    # the longest first; equal ones keep the order they came in
    assert artifact_order.first_to_start(["c", "e", "b", "a"], rank) == ["e", "a", "b", "c"]
    assert artifact_order.first_to_start(["c", "d"], {"c": 1.0, "d": 1.0}) == ["c", "d"]


def test_a_cycle_does_not_hang_the_walk():
    rank = artifact_order.remaining({"a": {"b"}, "b": {"a"}}, {"a": 1, "b": 2})
    assert set(rank) == {"a", "b"}


def test_the_grpo_chain_starts_before_the_dpo_parts(tmp_path, monkeypatch):
    """The GRPO article from an empty cache, on two cores: once the two SFT seeds are trained, lora-finetune (the
    start of lora-finetune -> model-comparison -> grpo-runs, the longest chain) starts before the three DPO parts,
    which are declared earlier (dpo_train.py < lora_train.py) and started first before issue 46's change."""
    found = artifacts.discover()
    hinted = artifact_order.hints()
    chain = sum(hinted[n] for n in ("lora-finetune", "model-comparison", "grpo-runs"))
    assert chain > max(hinted[p] for p in ("dpo-seed-0", "dpo-betas", "dpo-seed-1")), "the premise of this test"
    monkeypatch.setattr(artifacts, "_cores", lambda: 2)
    events: list[tuple[str, str]] = []
    _fake_processes(monkeypatch, tmp_path, found, events)
    # the playground's three models, in the order the GRPO page names them: the DPO parts come before lora-finetune
    # in what is asked for, as in the lane
    artifacts.ensure([found["aligned-sft"], found["aligned-dpo"], found["aligned-grpo"]])
    _check_order(events, found)
    started = [n for k, n in events if k == "start"]
    assert started.index("lora-finetune") < min(started.index(p) for p in ("dpo-seed-0", "dpo-betas", "dpo-seed-1"))
    assert started.index("grpo-runs") < started.index("preference-dpo"), started


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tang-gpt": 47,\n "grpo-runs": -1}\n', r"artifact_seconds\.json:2: 产物 grpo-runs 的秒数 -1 应是正数"),
        ('{"tang-gpt": "fast"}\n', r"artifact_seconds\.json:1: 产物 tang-gpt 的秒数 'fast' 应是正数"),
        ('{"tang-gpt": true}\n', r"artifact_seconds\.json:1: 产物 tang-gpt 的秒数 True 应是正数"),
        ("[47]\n", r"artifact_seconds\.json:1: 应是一个对象"),
        ('{"tang-gpt": 47,\n}\n', r"artifact_seconds\.json:2: 不是合法的 JSON"),
    ],
)
def test_a_bad_hints_file_is_an_error_naming_its_line(tmp_path, monkeypatch, text, message):
    path = tmp_path / "artifact_seconds.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(artifact_order.HintError, match=message):
        artifact_order.hints(path)
    # the scheduler reports it as an artifact error, before anything starts
    found = artifacts.discover()
    read = artifact_order.hints.__wrapped__  # the file itself, not the cached committed one
    monkeypatch.setattr(artifact_order, "hints", lambda: read(path))
    events: list[tuple[str, str]] = []
    _fake_processes(monkeypatch, tmp_path / "cache", found, events)
    with pytest.raises(artifacts.ArtifactError, match=message):
        artifacts.ensure([found["tang-gpt"]])
    assert events == []


def test_the_committed_file_is_sorted_json_of_numbers():
    """One line per artifact, so a diff that updates a hint shows one line."""
    text = artifact_order.HINTS.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
