"""「学会了」的藏头诗模型：同样的全参数微调，训练得更久、学习率更高。

《微调：SFT 与 LoRA》一文的全参数微调只训练了 80 步（每步 8 条，峰值学习率 3e-3），验证集上的 SFT 损失降得不错，
可模型只学会了格式和「哪些字常在句首」，几乎不看提示里的藏头。这里用的是同一个 finetune（code/lora_train.py），
同样的数据、同样的预热 + 余弦，只是训练 500 步、每步 16 条、峰值学习率 1e-2，并用两个种子各训练一次：
一个种子只说明「这一次」，两个种子才看得出结果有多稳。

每个种子的结果是一个构建产物（BUILD_ARTIFACTS）：构建网站时各在自己的进程里训练一次（两个核上并排），
评估、DPO、GRPO 几篇文章都读它们（capable_model、capable_runs）。
存下的是参数和训练记录，不存用时：同样的输入得到同样的文件。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from acrostic import build_sft_data
from lora_train import SFTHistory, SFTSettings, base_model, finetune, poem_lists
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer

# --8<-- [start:settings]
# 和第二阶段的 SFTSettings() 只差这四项：步数 80 → 500、每步 8 → 16 条、预热 10 → 25 步、峰值学习率 3e-3 → 1e-2
CAPABLE_SETTINGS = SFTSettings(steps=500, batch_size=16, warmup=25, full_lr=1e-2)
SEEDS = (0, 1)  # 每个种子决定抽到哪些样本、按什么顺序抽；两个种子各训练一次
# --8<-- [end:settings]

# 两个种子互不相干，各是一个产物（第三项是传给 train_capable 的参数）：构建时各在自己的进程里训练，两个核上并排
BUILD_ARTIFACTS = {"capable-sft-0": ("train_capable", "save_capable", (0,)),
                   "capable-sft-1": ("train_capable", "save_capable", (1,))}
SEED_ENVS = {0: "LLM_ARTIFACT_CAPABLE_SFT_0", 1: "LLM_ARTIFACT_CAPABLE_SFT_1"}  # 构建时指向各自缓存的文件


# --8<-- [start:train]
def train_capable_seed(seed: int) -> tuple[TinyTransformer, CharTokenizer, SFTHistory]:
    """从第一阶段的唐诗 GPT 出发，按 CAPABLE_SETTINGS 全参数微调一次（种子 seed）。"""
    check_seed(seed)
    base, tok = base_model()
    train_poems, held_poems = poem_lists()
    train, held = build_sft_data(train_poems, tok), build_sft_data(held_poems, tok)
    model, history = finetune(base, train, held, None, replace(CAPABLE_SETTINGS, seed=seed))
    return model, tok, history


def train_capable(seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """每个种子训练一次：{"settings", "config", "chars", "runs": {种子: {"state", "history"}}}。"""
    if not isinstance(seeds, tuple) or not seeds:
        raise ValueError(f"seeds 应是非空的元组，例如 (0, 1)，收到 {seeds!r}")
    for seed in seeds:
        check_seed(seed)
    runs: dict[int, dict[str, Any]] = {}
    for seed in seeds:
        model, tok, history = train_capable_seed(seed)
        runs[seed] = {"state": model.state_dict(), "history": history}
    return {"settings": CAPABLE_SETTINGS, "config": model.cfg, "chars": tok.chars, "runs": runs}
# --8<-- [end:train]


def save_capable(path: str | Path, result: dict[str, Any]) -> None:
    """存下每个种子的参数和训练记录（不存用时：同样的输入得到同样的文件）。"""
    check_capable_result(result)
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    runs = {seed: {"state": run["state"], "history": asdict(run["history"])} for seed, run in result["runs"].items()}
    torch.save({"settings": asdict(result["settings"]), "config": asdict(result["config"]),
                "chars": list(result["chars"]), "runs": runs}, path)


def load_capable(path: str | Path) -> dict[str, Any]:
    """读回 save_capable 存的文件。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_capable 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)
    runs = {int(seed): {"state": run["state"], "history": SFTHistory(**run["history"])}
            for seed, run in data["runs"].items()}
    result = {"settings": SFTSettings(**data["settings"]), "config": TinyConfig(**data["config"]),
              "chars": data["chars"], "runs": runs}
    check_capable_result(result)
    return result


def seed_result(seed: int, verbose: bool = True) -> dict[str, Any]:
    """种子 seed 的 train_capable((seed,))：构建网站时缓存了的就直接读取，没有就现场训练这一个种子。"""
    check_seed(seed)
    path = os.environ.get(SEED_ENVS[seed])
    if path and Path(path).is_file():
        return load_capable(path)
    if verbose:
        print(f"没有现成的模型，现场微调种子 {seed}（{CAPABLE_SETTINGS.steps} 步）……")
    return train_capable((seed,))


def capable_runs(verbose: bool = True) -> dict[str, Any]:
    """train_capable() 的结果（两个种子合在一起）：每个种子缓存了的就直接读取，没有的现场训练。"""
    parts = [seed_result(seed, verbose) for seed in SEEDS]
    return {**parts[0], "runs": {seed: part["runs"][seed] for seed, part in zip(SEEDS, parts, strict=True)}}


# --8<-- [start:capable-model]
def capable_model(seed: int = 0) -> tuple[TinyTransformer, CharTokenizer]:
    """种子 seed 的那个「学会了」的模型（eval 模式）和它的分词器。

    有构建网站时缓存的结果就读取；没有（例如下载的 Notebook）就只训练这一个种子（单线程约 40 CPU 秒，
    没有缓存的第一阶段模型时还要先训练它）。"""
    result = seed_result(seed)  # 只读取（或训练）要用的这一个种子
    model = TinyTransformer(result["config"])
    model.load_state_dict(result["runs"][seed]["state"])
    model.eval()
    return model, CharTokenizer(result["chars"])
# --8<-- [end:capable-model]


# ---------- 参数检查：不在文章里展示 ----------


def check_seed(seed: object) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed not in SEEDS:
        raise ValueError(f"seed 应是 {'、'.join(map(str, SEEDS))} 之一（训练过的种子），收到 {seed!r}")


def check_capable_result(result: object) -> None:
    source = "train_capable() 或 load_capable(path) 的返回值"
    if not isinstance(result, dict):
        raise ValueError(f"result 应是 {source}（一个字典），收到 {type(result).__name__}")
    missing = [key for key in ("settings", "config", "chars", "runs") if key not in result]
    if missing:
        raise ValueError(f"result 应是 {source}，缺少 {missing}")
    if not isinstance(result["settings"], SFTSettings) or not isinstance(result["config"], TinyConfig):
        raise ValueError("result['settings'] 应为 SFTSettings，result['config'] 应为 TinyConfig")
    runs = result["runs"]
    if not isinstance(runs, dict) or not runs or not set(runs) <= set(SEEDS):
        raise ValueError(f"result['runs'] 应是「种子 → 结果」的非空字典，种子取自 {SEEDS}，收到 "
                         f"{sorted(runs) if isinstance(runs, dict) else type(runs).__name__}")
    for seed, run in runs.items():
        if not isinstance(run, dict) or "state" not in run or not isinstance(run.get("history"), SFTHistory):
            raise ValueError(f"result['runs'][{seed}] 应有 state（参数）和 history（SFTHistory）")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 和构建网站时一样单线程：结果逐位可复现
    start = time.process_time()
    result = train_capable()
    print(f"两个种子共用 CPU {time.process_time() - start:.1f} s")
    for seed, run in result["runs"].items():
        h = run["history"]
        print(f"  种子 {seed}：最后 20 步的平均训练损失 {sum(h.loss[-20:]) / 20:.3f}，"
              f"验证集前 {CAPABLE_SETTINGS.curve_samples} 条的 SFT 损失 {h.eval_held_out[-1]:.3f}")
