"""在唐诗上比一比：Llama 式的小模型（code/llama.py）和第一阶段的小 GPT（code/gpt_from_scratch.py）。

两边用同样的语料划分、同样的取批次方法、同样的损失、学习率计划和优化器（全部取自 gpt_from_scratch），
参数量对齐到只差 1 个，每个模型各训练 3 个种子。预算比第一阶段小得多：75 步、每步 8 段（第一阶段是 300 步、
每步 16 段），6 次训练加起来的词元数只有第一阶段一次训练的四分之三。结论只对这个预算成立。

两个模型都用 gpt_from_scratch.train_gpt 训练（sample_at=()：训练中途不写样本，写样本的 generate 只认 TinyTransformer）。
比较的结果是一个构建产物（BUILD_ARTIFACTS）：构建网站时训练一次，图和测试读缓存。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from gpt_from_scratch import (
    MIN_COUNT,
    GPTHistory,
    TrainSettings,
    evaluate,
    load_poems,
    poem_config,
    poem_starts,
    split_poems,
    train_gpt,
)
from llama import MiniLlama, MiniLlamaConfig
from shapes import check_int
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import nn

# --8<-- [start:budget]
# 两个模型共用的预算：只改了步数、批大小、预热和量损失的间隔，其余（学习率、权重衰减、裁剪……）同第一阶段
COMPARE_SETTINGS = replace(TrainSettings(), steps=75, batch_size=8, warmup=10, eval_every=25, sample_at=())
SEEDS = (0, 1, 2)
LLAMA_D_FF = 205  # SwiGLU 的隐藏维度：默认的 171（约 8/3 × 64）再加宽一些，让参数量和 GPT 对齐


def llama_poem_config(vocab_size: int, context: int = TrainSettings.context) -> MiniLlamaConfig:
    """和 gpt_from_scratch.poem_config 同样的 4 层、4 个头、d_model = 64，换成 Llama 式的块；2 个键值头。"""
    return MiniLlamaConfig(vocab_size=vocab_size, d_model=64, n_layers=4, n_heads=4, n_kv_heads=2,
                           d_ff=LLAMA_D_FF, max_len=context)
# --8<-- [end:budget]


# --8<-- [start:held-out]
@torch.no_grad()
def held_out_loss(model: nn.Module, tok: CharTokenizer, held_out_text: str, context: int = TrainSettings.context
                  ) -> float:
    """最后的成绩：从验证集第 1、4、7……首诗末尾的换行起各截一段 context 个词元，全部段的平均交叉熵。

    验证集的开头没有换行，所以各段从第 2、5、8……首诗读起，第 0 个词元是它前面的换行（和训练时的段一样）。
    三首诗至少 75 个词元（每首连同换行至少 25 个），比一段长，所以段与段不重叠，验证集的大部分词元都量到了。
    训练中途只量 48 段（曲线用）；比较两个模型时用这些段，噪声小一些。
    """
    check_model_and_text(model, tok, "held_out_text", held_out_text, context)
    held_ids = torch.tensor(tok.encode(held_out_text))
    starts = poem_starts(held_ids, tok.encode("\n")[0], context)[::3]
    check_windows("held_out_text", starts, context)  # 至少截得出一段，见文件末尾
    rows = torch.stack([held_ids[i : i + context + 1] for i in starts.tolist()])  # (段数, context + 1)
    return evaluate(model, rows[:, :-1], rows[:, 1:])
# --8<-- [end:held-out]


def make_model(kind: str, vocab_size: int) -> nn.Module:
    """kind 为 "gpt"（第一阶段的 TinyTransformer）或 "llama"（MiniLlama）。调用前先设好种子。"""
    if kind == "gpt":
        return TinyTransformer(poem_config(vocab_size))
    if kind == "llama":
        return MiniLlama(llama_poem_config(vocab_size))
    raise ValueError(f"kind 只能是 'gpt' 或 'llama'，收到 {kind!r}")


# --8<-- [start:compare]
def compare_on_poems(seeds: tuple[int, ...] = SEEDS, s: TrainSettings = COMPARE_SETTINGS) -> dict[str, Any]:
    """两个模型 × 每个种子各训练一次。种子同时决定初始参数和批次的顺序；同一个种子下两个模型看到同样的批次。"""
    check_compare_args(seeds, s)
    train_text, held_out_text = split_poems(load_poems())
    tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
    runs: dict[str, list[dict[str, Any]]] = {"gpt": [], "llama": []}
    for kind in runs:
        for seed in seeds:
            torch.manual_seed(seed)  # 决定初始参数
            model = make_model(kind, tok.vocab_size)
            history = train_gpt(model, tok, train_text, held_out_text, replace(s, seed=seed))
            runs[kind].append({"seed": seed, "history": history, "model": model,
                               "held_out": held_out_loss(model, tok, held_out_text, s.context)})
    return {"runs": runs, "chars": tok.chars, "settings": s}
# --8<-- [end:compare]


BUILD_ARTIFACTS = {"llama-vs-gpt": ("compare_on_poems", "save_comparison")}
COMPARISON_ENV = "LLM_ARTIFACT_LLAMA_VS_GPT"


def save_comparison(path: str | Path, result: dict[str, Any]) -> None:
    """存下每次训练的参数、训练记录和最后的验证集损失（不存用时：同样的输入应得到同样的文件）。"""
    check_result(result)
    check_save_path(path)
    runs = {}
    for kind, items in result["runs"].items():
        runs[kind] = []
        for run in items:
            record = asdict(run["history"])
            record.pop("seconds")
            record.pop("samples")
            runs[kind].append({"seed": run["seed"], "history": record, "held_out": run["held_out"],
                               "state_dict": run["model"].state_dict()})
    settings = asdict(result["settings"])
    settings["sample_at"] = list(settings["sample_at"])
    torch.save({"runs": runs, "chars": result["chars"], "settings": settings}, path)


def load_comparison(path: str | Path) -> dict[str, Any]:
    """读回 save_comparison 存的文件：模型重新建好、装入参数，处于 eval 模式。"""
    check_load_path(path)
    try:
        data = torch.load(path, weights_only=True)
    except Exception as error:  # 文本文件、别的格式、写了一半的文件：torch.load 报的错五花八门
        raise ValueError(f"{path} 读不出来（{type(error).__name__}）：它不是 save_comparison 存下的文件") from error
    check_saved(path, data)
    vocab_size = CharTokenizer(data["chars"]).vocab_size
    settings = dict(data["settings"])
    settings["sample_at"] = tuple(settings["sample_at"])
    runs: dict[str, list[dict[str, Any]]] = {}
    for kind, items in data["runs"].items():
        runs[kind] = []
        for run in items:
            model = make_model(kind, vocab_size)
            model.load_state_dict(run["state_dict"])
            model.eval()
            runs[kind].append({"seed": run["seed"], "history": GPTHistory(**run["history"], samples={}),
                               "model": model, "held_out": run["held_out"]})
    return {"runs": runs, "chars": data["chars"], "settings": TrainSettings(**settings)}


def comparison(verbose: bool = True) -> dict[str, Any]:
    """compare_on_poems() 的结果：构建网站时缓存了的就直接读取，没有就现场训练 6 次。"""
    path = os.environ.get(COMPARISON_ENV)
    if path and Path(path).is_file():
        return load_comparison(path)
    if verbose:
        print("没有现成的结果，现场训练 2 个模型 × 3 个种子……")
    return compare_on_poems()


def summary(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """每个模型：参数量、各种子最后的验证集损失、它们的平均。"""
    check_result(result)
    out = {}
    for kind, items in result["runs"].items():
        losses = [run["held_out"] for run in items]
        out[kind] = {"params": sum(p.numel() for p in items[0]["model"].parameters()),
                     "held_out": losses, "mean": sum(losses) / len(losses)}
    return out


# ---------- 参数检查：不在文章里展示 ----------


def check_model_and_text(model: nn.Module, tok: CharTokenizer, name: str, text: str, context: int) -> None:
    """model 是两种模型之一、词表和 tok 一样大；text 是若干首诗，每首后面一个换行；context 不超过模型的 max_len。"""
    if not isinstance(model, (TinyTransformer, MiniLlama)):
        raise ValueError(f"model 应为 TinyTransformer 或 MiniLlama，收到 {type(model).__name__}")
    if not isinstance(tok, CharTokenizer):
        raise ValueError(f"tok 应为 CharTokenizer（code/tokenizer.py），收到 {type(tok).__name__}")
    if not isinstance(text, str) or "\n" not in text:
        raise ValueError(f"{name} 应是若干首诗、每首后面接一个换行的字符串（可用 split_poems 得到）")
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的 vocab_size = {model.cfg.vocab_size} 与分词器的 {tok.vocab_size} 不同")
    dtype = next(model.parameters()).dtype
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"模型的参数是 {dtype}：半精度下交叉熵本身就只有两三位有效数字（bfloat16 在 8 附近的间隔是 "
                         "0.0625），量出的损失比不出小数点后第三位。请先用 model.float() 转成 float32")
    check_int("context", context, minimum=1)
    if context > model.cfg.max_len:
        raise ValueError(f"context = {context} 超过了模型的 max_len = {model.cfg.max_len}：一段放不进模型")


def check_windows(name: str, starts: torch.Tensor, context: int) -> None:
    """从诗的末尾截段，至少截得出一段 context + 1 个词元。"""
    if starts.numel() == 0:
        raise ValueError(f"{name} 太短：要从某首诗末尾的换行起截出 context + 1 = {context + 1} 个词元，"
                         "一段也截不出来。多放几首诗进去（验证集可以用 split_poems 得到）")


def check_seeds(seeds: tuple[int, ...]) -> None:
    if not isinstance(seeds, tuple) or not seeds:
        raise ValueError(f"seeds 应是非空的整数元组，例如 (0, 1, 2)，收到 {seeds!r}")
    for seed in seeds:
        check_int("seed", seed)


def check_compare_args(seeds: tuple[int, ...], s: TrainSettings) -> None:
    check_seeds(seeds)
    if not isinstance(s, TrainSettings):
        raise ValueError(f"s 应为 TrainSettings（code/gpt_from_scratch.py），收到 {type(s).__name__}；"
                         "改几项可以用 replace(COMPARE_SETTINGS, steps=...)")


def check_save_path(path: object) -> None:
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应为文件路径（str 或 Path），收到 {type(path).__name__}")
    if not Path(path).parent.is_dir():
        raise ValueError(f"存不了 {path}：目录 {Path(path).parent} 不存在，请先建好它")


def check_load_path(path: object) -> None:
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应为文件路径（str 或 Path），收到 {type(path).__name__}")
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_comparison 存下的文件，但找不到 {path}")


def check_saved(path: str | Path, data: object) -> None:
    """读回来的是 save_comparison 写的字典：runs（每个模型一个列表）、chars、settings。"""
    ok = isinstance(data, dict) and all(key in data for key in RESULT_KEYS) and isinstance(data["runs"], dict)
    if ok:
        ok = all(isinstance(items, list) and all(isinstance(run, dict) and "state_dict" in run for run in items)
                 for items in data["runs"].values())
    if not ok:
        raise ValueError(f"{path} 不是 save_comparison 存下的文件：里面没有 'runs'、'chars'、'settings' 这几项")


RESULT_KEYS = ("runs", "chars", "settings")
RUN_KEYS = ("seed", "history", "model", "held_out")


def check_result(result: object) -> None:
    """result 是 compare_on_poems() 或 load_comparison(path) 返回的字典：每个模型至少训练过一次。"""
    source = "compare_on_poems() 或 load_comparison(path) 的返回值"
    if not isinstance(result, dict):
        raise ValueError(f"result 应是 {source}（一个字典），收到 {type(result).__name__}")
    missing = [key for key in RESULT_KEYS if key not in result]
    if missing:
        raise ValueError(f"result 应是 {source}，要有 'runs'、'chars'、'settings' 三项，缺少 {missing}")
    runs = result["runs"]
    if not isinstance(runs, dict) or not runs:
        got = "空的字典" if isinstance(runs, dict) else type(runs).__name__
        raise ValueError(f"result['runs'] 应是「模型 → 各次训练」的非空字典，例如 {{'gpt': [...], 'llama': [...]}}，"
                         f"收到 {got}")
    for kind, items in runs.items():
        if not isinstance(items, list) or not items:
            got = "空的列表" if isinstance(items, list) else type(items).__name__
            raise ValueError(f"result['runs'][{kind!r}] 应是非空的列表，每个种子一项，收到 {got}")
        for run in items:
            if not isinstance(run, dict):
                raise ValueError(f"result['runs'][{kind!r}] 的每一项应是一次训练的字典，收到 {type(run).__name__}")
            missing = [key for key in RUN_KEYS if key not in run]
            if missing:
                raise ValueError(f"result['runs'][{kind!r}] 的每一项应有 'seed'、'history'、'model'、'held_out'，"
                                 f"收到的一项缺少 {missing}")
            check_run(kind, run)


def check_run(kind: str, run: dict[str, Any]) -> None:
    """一次训练：model 是模型，history 是 train_gpt 返回的 GPTHistory，held_out 是一个数。"""
    where = f"result['runs'][{kind!r}] 里种子 {run['seed']!r} 的那一项"
    if not isinstance(run["model"], nn.Module):
        raise ValueError(f"{where}：'model' 应是训练好的模型（nn.Module），收到 {type(run['model']).__name__}")
    if not isinstance(run["history"], GPTHistory):
        raise ValueError(f"{where}：'history' 应是 train_gpt 返回的 GPTHistory，收到 {type(run['history']).__name__}")
    held_out = run["held_out"]
    if isinstance(held_out, bool) or not isinstance(held_out, (int, float)):
        raise ValueError(f"{where}：'held_out' 应是验证集损失（一个数），收到 {held_out!r}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 和构建网站时一样单线程：结果逐位可复现
    start = time.perf_counter()
    result = compare_on_poems()
    seconds = time.perf_counter() - start
    s = result["settings"]
    print(f"预算：每个模型 {s.steps} 步，每步 {s.batch_size} 段 × {s.context} 个词元，种子 {SEEDS}；"
          f"6 次训练共用时 {seconds:.1f} s")
    for kind, row in summary(result).items():
        losses = "、".join(f"{v:.3f}" for v in row["held_out"])
        print(f"  {kind:<5} 参数 {row['params']:,}：验证集损失 {losses}，平均 {row['mean']:.3f}")
