"""对齐之后的三个模型，放进浏览器并排比较：SFT、DPO、GRPO 各写一首藏头诗。

三个都是同一个词表的 TinyTransformer，训练都在别的文件里做过，这里只是把训练好的参数取出来：

- SFT：《评测》一文里「学会了」的那个模型，capable_sft.py 种子 0（500 步全参数微调）；
- DPO：从它出发、用偏好对训练的策略，dpo_train.py 种子 0（dpo_model）；
- GRPO：从它出发、按验证器的奖励训练的策略，grpo_train.py 的 GRPO_RUN 那一次（policy_model）。

每个模型是一个构建产物（BUILD_ARTIFACTS），存法和 lora_train.py 的 save_acrostic_gpt 完全一样（config、
state_dict、chars 和藏头诗的 task），直接调用它，不另写一份。llmsite/playground 再把它们导出成 int8
（PLAYGROUND_INT8），文章里一个标记 <!-- playground: aligned-sft aligned-dpo aligned-grpo --> 就把三个并排放进页面。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

from pathlib import Path

import torch
from capable_sft import capable_model
from dpo_train import dpo_model, dpo_results
from grpo_train import grpo_results, policy_model
from lora_train import save_acrostic_gpt
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer

BUILD_ARTIFACTS = {"aligned-sft": ("aligned_sft", "save_aligned"),
                   "aligned-dpo": ("aligned_dpo", "save_aligned"),
                   "aligned-grpo": ("aligned_grpo", "save_aligned")}
SFT_SEED = 0  # DPO 和 GRPO 都从种子 0 的 SFT 模型出发：三个模型的差别只来自对齐的那一步
GRPO_RUN = "capable-0"  # grpo_train.RUNS 里从同一个 SFT 模型出发、种子 0 的那一次
# 三个模型一起下载：放进浏览器时每个矩阵存成 int8、每行一个比例（和 quantize.py 的 quantize(w, 8) 同一种做法），
# 下载量约为 float16 的一半；偏置和 LayerNorm 仍是 float16。见 llmsite/playground/export.py
PLAYGROUND_INT8 = ("aligned-sft", "aligned-dpo", "aligned-grpo")


def aligned_sft() -> tuple[TinyTransformer, CharTokenizer]:
    """SFT 模型（eval 模式）和分词器：DPO 和 GRPO 的出发点。"""
    return capable_model(SFT_SEED)


def aligned_dpo() -> tuple[TinyTransformer, CharTokenizer]:
    """DPO 训练后的策略（种子 0）。"""
    return dpo_model(dpo_results(verbose=False))


def aligned_grpo() -> tuple[TinyTransformer, CharTokenizer]:
    """GRPO 训练后的策略（GRPO_RUN 那一次）。"""
    return policy_model(grpo_results(verbose=False), GRPO_RUN)


def save_aligned(path: str | Path, model: TinyTransformer, tok: CharTokenizer) -> None:
    """和藏头诗演示同样的格式存下一个模型（save_acrostic_gpt：config、state_dict、chars、task）。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    check_model_tok(model, tok)
    save_acrostic_gpt(path, model, tok)


def load_aligned(path: str | Path) -> tuple[TinyTransformer, CharTokenizer]:
    """读回 save_aligned 存的文件：(模型（eval 模式）, 分词器)。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_aligned 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)
    if not isinstance(data, dict) or any(k not in data for k in ("config", "state_dict", "chars", "task")):
        raise ValueError(f"{path} 不是 save_aligned 存下的文件：应有 config、state_dict、chars 和 task 四项")
    model = TinyTransformer(TinyConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    model.eval()
    return model, CharTokenizer(data["chars"])


# ---------- 参数检查：不在文章里展示 ----------


def check_model_tok(model: object, tok: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如 aligned_sft() 的模型），收到 {type(model).__name__}")
    if not isinstance(tok, CharTokenizer):
        raise ValueError(f"tok 应为 CharTokenizer，收到 {type(tok).__name__}")
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的词表大小 {model.cfg.vocab_size} 和分词器的 {tok.vocab_size} 不同：不是配套的一对")
