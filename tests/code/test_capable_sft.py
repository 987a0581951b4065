"""code/capable_sft.py：「学会了」的藏头诗模型的设置、训练、存取和读取。

- 设置和第二阶段的 SFTSettings() 只差步数、每步条数、预热和峰值学习率四项；
- 训练就是 lora_train.finetune（全参数，种子决定取样本的顺序），不是另一份拷贝；
- save_capable / load_capable 往返不变，capable_model 从缓存的文件里重建出同样的模型；
- 两个种子各是一个产物（train_capable((种子,))），capable_runs 把两份合起来，和一次训练两个种子的结果相同；
- 输入不对时抛出 ValueError。
这里用随机初始化的唐诗 GPT 和几步的训练（不读构建产物）：
训练好的模型上的数由 tests/figures/test_evaluation_claims.py 核对。
"""

from __future__ import annotations

from dataclasses import asdict, fields, replace

import capable_sft
import pytest
import torch
from acrostic import build_sft_data
from capable_sft import (
    CAPABLE_SETTINGS,
    SEED_ENVS,
    SEEDS,
    capable_model,
    capable_runs,
    check_capable_result,
    load_capable,
    save_capable,
    train_capable,
    train_capable_seed,
)
from gpt_from_scratch import poem_config
from lora_train import SFTHistory, SFTSettings, finetune, poem_lists

from tests.code.test_lora_train import random_gpt, tok  # 第一阶段的词表，和这个形状的随机 GPT

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = replace(CAPABLE_SETTINGS, steps=3, batch_size=2, warmup=1, eval_every=2, curve_samples=4)


@pytest.fixture
def tiny_training(monkeypatch):
    """基座换成随机初始化的模型、训练只跑 3 步（其余照旧）。"""
    monkeypatch.setattr(capable_sft, "base_model", lambda: (random_gpt(), tok()))
    monkeypatch.setattr(capable_sft, "CAPABLE_SETTINGS", TINY)
    for name in SEED_ENVS.values():
        monkeypatch.delenv(name, raising=False)


def test_settings_differ_from_stage_two_in_four_fields() -> None:
    stage_two = asdict(SFTSettings())
    changed = {f.name for f in fields(SFTSettings) if getattr(CAPABLE_SETTINGS, f.name) != stage_two[f.name]}
    assert changed == {"steps", "batch_size", "warmup", "full_lr"}
    assert (CAPABLE_SETTINGS.steps, CAPABLE_SETTINGS.batch_size, CAPABLE_SETTINGS.warmup,
            CAPABLE_SETTINGS.full_lr) == (500, 16, 25, 1e-2)
    assert SEEDS == (0, 1)


def test_training_is_lora_train_finetune(tiny_training) -> None:
    model, t, history = train_capable_seed(1)
    train_poems, held_poems = poem_lists()
    expected, expected_history = finetune(random_gpt(), build_sft_data(train_poems, tok()),
                                          build_sft_data(held_poems, tok()), None, replace(TINY, seed=1))
    assert t.chars == tok().chars and history == expected_history
    for key, value in expected.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key


def test_round_trip_and_capable_model_reads_the_file(tiny_training, tmp_path, monkeypatch) -> None:
    result = train_capable()
    assert sorted(result["runs"]) == list(SEEDS)
    path = tmp_path / "capable-sft.pt"
    save_capable(path, result)
    back = load_capable(path)
    assert back["settings"] == TINY and back["config"] == result["config"] and back["chars"] == tok().chars
    assert back["runs"][1]["history"] == result["runs"][1]["history"]
    monkeypatch.setenv(SEED_ENVS[1], str(path))
    model, t = capable_model(1)
    assert not model.training and t.chars == tok().chars
    for key, value in result["runs"][1]["state"].items():
        assert torch.equal(model.state_dict()[key], value), key
    again = tmp_path / "again" / "capable-sft.pt"  # 同名：torch.save 把文件名写进了压缩包
    again.parent.mkdir()
    save_capable(again, back)  # 同样的结果写出同样的字节：文件里没有用时
    assert again.read_bytes() == path.read_bytes()


def test_each_seed_is_its_own_artifact_and_capable_runs_joins_them(tiny_training, tmp_path, monkeypatch) -> None:
    """The build trains each seed in its own process (capable-sft-0, capable-sft-1: train_capable((seed,)));
    capable_runs reads both files and gives what one call training both seeds gives."""
    from llmsite import artifacts

    whole = train_capable()
    found = artifacts.discover()
    for seed in SEEDS:
        artifact = found[f"capable-sft-{seed}"]
        assert (artifact.compute, artifact.args, artifact.env) == ("train_capable", ((seed,),), SEED_ENVS[seed])
        path = tmp_path / str(seed) / "capable-sft.pt"
        path.parent.mkdir()
        save_capable(path, getattr(capable_sft, artifact.compute)(*artifact.args))
        monkeypatch.setenv(SEED_ENVS[seed], str(path))
    trained = []
    monkeypatch.setattr(capable_sft, "train_capable_seed", lambda seed: trained.append(seed))
    joined = capable_runs()
    assert trained == []  # both read from their files
    assert [joined[k] for k in ("settings", "config", "chars")] == [whole[k] for k in ("settings", "config", "chars")]
    assert list(joined["runs"]) == list(SEEDS)
    for seed in SEEDS:
        assert joined["runs"][seed]["history"] == whole["runs"][seed]["history"]
        for key, value in whole["runs"][seed]["state"].items():
            assert torch.equal(joined["runs"][seed]["state"][key], value), (seed, key)


def test_without_a_cache_only_the_asked_seed_is_trained(tiny_training, monkeypatch) -> None:
    trained = []
    real = capable_sft.train_capable_seed
    monkeypatch.setattr(capable_sft, "train_capable_seed", lambda seed: trained.append(seed) or real(seed))
    model, _ = capable_model(0)
    assert trained == [0] and not model.training


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: capable_model(2), "训练过的种子"),
    (lambda: capable_model("0"), "训练过的种子"),
    (lambda: capable_model(True), "训练过的种子"),
    (lambda: train_capable_seed(-1), "训练过的种子"),
    (lambda: train_capable(()), "非空的元组"),
    (lambda: train_capable([0]), "非空的元组"),
    (lambda: train_capable((0, 7)), "训练过的种子"),
    (lambda: load_capable("/nonexistent/capable.pt"), "找不到"),
    (lambda: load_capable(3), "文件路径"),
    (lambda: save_capable("x.pt", {"runs": {}}), "缺少"),
    (lambda: check_capable_result([]), "字典"),
    (lambda: check_capable_result({"settings": SFTSettings(), "config": poem_config(300), "chars": [],
                                   "runs": {}}), "种子 → 结果"),
    (lambda: check_capable_result({"settings": SFTSettings(), "config": poem_config(300), "chars": [],
                                   "runs": {0: {"state": {}, "history": SFTHistory()}, 7: {}}}), "种子取自"),
    (lambda: check_capable_result({"settings": SFTSettings(), "config": poem_config(300), "chars": [],
                                   "runs": {0: {"state": {}}, 1: {"state": {}}}}), "SFTHistory"),
    (lambda: check_capable_result({"settings": {}, "config": poem_config(300), "chars": [], "runs": {}}),
     "SFTSettings"),
])
def test_wrong_input_raises_value_error(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call()


def test_its_consumers_wait_for_the_cached_artifact() -> None:
    """An artifact that reads the 500-step model through capable_model must find both seeds' artifacts upstream, so a
    cold build trains each seed once, before it, instead of inside its process (capable_model once reached only
    train_capable_seed, and the build did not see the dependency)."""
    from llmsite import artifacts

    found = artifacts.discover()
    consumers = [n for n in ("model-comparison", "preference-dpo", "dpo-seed-1", "grpo-capable-0") if n in found]
    assert "model-comparison" in consumers
    for name in consumers:
        assert {"capable-sft-0", "capable-sft-1"} <= {a.name for a in artifacts.upstream(found[name])}, name
    assert not {a.name for a in artifacts.upstream(found["capable-sft-0"])} & {"capable-sft-1"}  # siblings
