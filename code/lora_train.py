"""教第一阶段的唐诗 GPT 写藏头诗：全参数微调和秩为 1、4、8 的 LoRA，在同样的数据和步数下比一比。

基座模型就是《从零训练一个小 GPT》训练好的那个（gpt_from_scratch.pretrained_gpt，字符级，4 层、d_model = 64）。
数据和成功率在 code/acrostic.py：训练集的诗做样本，验证集的诗只用来评估。
四种微调用同一批样本、同样的顺序（同一个种子）、同样的步数和学习率计划；只有峰值学习率分两种：
全参数一种，LoRA 一种（LoRA 的增量 BA 从 0 起步，通常要大一些的学习率）。
比较的结果是一个构建产物（BUILD_ARTIFACTS）：构建网站时训练一次，图、实验和测试读缓存。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from acrostic import (
    POEM_TOKENS,
    SFTData,
    acrostic_ok,
    build_sft_data,
    head_hits,
    playground_task,
    sft_loss,
    trim_batch,
    well_formed,
    write_acrostics,
)
from gpt_from_scratch import load_poems, lr_at, pretrained_gpt, split_poems
from kv_cache import generate
from lora import add_lora, lora_layers, lora_state_dict, merge_lora, trainable_parameters
from shapes import check_int
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer


# --8<-- [start:settings]
@dataclass
class SFTSettings:
    """微调的超参数，四种方法共用（峰值学习率除外）。"""

    steps: int = 80  # 构建网站时要跑完：四种方法加起来只训练 320 步
    batch_size: int = 8
    warmup: int = 10
    full_lr: float = 3e-3  # 全参数微调的峰值学习率
    lora_lr: float = 2e-2  # LoRA 的峰值学习率
    clip: float = 1.0
    seed: int = 0  # 决定 A 的初始值和取样本的顺序
    eval_every: int = 20  # 每隔多少步量一次验证集的损失（曲线用）
    curve_samples: int = 64  # 曲线只量验证集的前 64 条样本（省时间）；最后的成绩在全部样本上量
    free_samples: int = 100  # 遗忘检查：不给藏头，只给一个换行，采样写 100 首，看格式还对不对
    free_temperature: float = 0.8  # 和第一阶段写样本时的温度相同
    free_seed: int = 0  # 采样的种子：每个模型用同一个，差别只来自模型


METHODS = {"full": None, "lora-1": 1, "lora-4": 4, "lora-8": 8}  # 名字 → LoRA 的秩（None：全参数微调）
LORA_TARGETS = ("qkv", "out")  # 每层注意力的 Q/K/V 投影（合在一个矩阵里）和输出投影
LORA_ALPHA = 8.0  # 缩放系数 alpha / r：换秩时少调一个量（Hu 等，2021）；秩大时学得慢些，见文中的 rsLoRA
# --8<-- [end:settings]

METHOD_LABELS = {"base": "基座模型", "full": "全参数微调", "lora-1": "LoRA r=1", "lora-4": "LoRA r=4",
                 "lora-8": "LoRA r=8"}


@dataclass
class SFTHistory:
    """loss、lr 每步一个（训练批次上的 SFT 损失）；eval_steps、eval_held_out 每 eval_every 步一个。"""

    loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_held_out: list[float] = field(default_factory=list)


@cache
def _pretrained() -> tuple[TinyTransformer, CharTokenizer]:
    model, tok, _ = pretrained_gpt(verbose=False)
    return model, tok


def base_model() -> tuple[TinyTransformer, CharTokenizer]:
    """第一阶段训练好的唐诗 GPT 的一份副本和它的分词器。同一个进程里只读取（或训练）一次，每次给一份新的副本。"""
    model, tok = _pretrained()
    return copy.deepcopy(model), tok


def poem_lists() -> tuple[list[str], list[str]]:
    """(训练集的诗, 验证集的诗)，每项一首：和第一阶段同一种划分（split_poems）。"""
    train_text, held_out_text = split_poems(load_poems())
    return train_text.splitlines(), held_out_text.splitlines()


@torch.no_grad()
def held_out_sft_loss(model: torch.nn.Module, data: Any, n: int | None = None) -> float:
    """验证集前 n 条（默认全部）样本上的 SFT 损失（只算回答的词元）。"""
    check_held_out_args(model, data, n)
    model.eval()
    x, y = trim_batch(data.inputs[:n], data.labels[:n])
    return sft_loss(model(x), y).item()


# --8<-- [start:finetune]
def finetune(base: TinyTransformer, train: Any, held: Any, rank: int | None, s: SFTSettings
             ) -> tuple[TinyTransformer, SFTHistory]:
    """复制一份基座模型来微调：rank 为 None 时全部参数都训练，否则只训练加在 qkv、out 上的 LoRA。"""
    check_finetune_args(base, train, held, rank, s)
    torch.manual_seed(s.seed)  # LoRA 的 A 的初始值
    model = copy.deepcopy(base)
    if rank is not None:
        add_lora(model, LORA_TARGETS, r=rank, alpha=LORA_ALPHA)  # 其余参数全部冻住
    peak = s.full_lr if rank is None else s.lora_lr
    params = [p for p in model.parameters() if p.requires_grad]  # 优化器只拿到要训练的参数
    opt = torch.optim.AdamW(params, lr=peak, betas=(0.9, 0.95), weight_decay=0.0)
    gen = torch.Generator().manual_seed(s.seed)  # 四种方法看到同样的样本、同样的顺序
    history = SFTHistory()
    for step in range(s.steps + 1):
        if step % s.eval_every == 0 or step == s.steps:
            history.eval_steps.append(step)
            history.eval_held_out.append(held_out_sft_loss(model, held, s.curve_samples))
        if step == s.steps:
            break
        lr = lr_at(step, s.steps, peak, s.warmup, peak / 10)  # 第一阶段的预热 + 余弦
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        pick = torch.randint(0, train.inputs.size(0), (s.batch_size,), generator=gen)
        x, y = trim_batch(train.inputs[pick], train.labels[pick])  # 去掉这一批共同的补齐
        loss = sft_loss(model(x), y)  # 只在回答的词元上算
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, s.clip)
        opt.step()
        history.loss.append(loss.item())
        history.lr.append(lr)
    model.eval()
    return model, history
# --8<-- [end:finetune]


# --8<-- [start:forgetting]
@torch.no_grad()
def free_poems(model: TinyTransformer, tok: CharTokenizer, s: SFTSettings) -> tuple[str, list[str]]:
    """遗忘检查：不要藏头，像第一阶段那样只给一个换行，看模型还会不会自己写一首五言绝句。

    返回 (贪心解码写的一首, 按温度 s.free_temperature 采样写的 s.free_samples 首)，都截到第一个换行为止。
    """
    check_free_args(model, tok, s)
    prompt = torch.tensor([tok.encode("\n")])
    greedy = generate(model, prompt, POEM_TOKENS).tokens[0, 1:]  # code/kv_cache.py，带 KV 缓存
    gen = torch.Generator().manual_seed(s.free_seed)
    sampled = generate(model, prompt.repeat(s.free_samples, 1), POEM_TOKENS, do_sample=True,
                       temperature=s.free_temperature, generator=gen).tokens[:, 1:]
    return (tok.decode(greedy).split("\n")[0], [tok.decode(row).split("\n")[0] for row in sampled])
# --8<-- [end:forgetting]


@torch.no_grad()
def evaluate_acrostics(model: TinyTransformer, tok: CharTokenizer, held: Any,
                       s: SFTSettings | None = None) -> dict[str, Any]:
    """验证集上的四个数：SFT 损失、成功率（四句句首全对的比例）、句首命中率（逐句算）、格式正确的比例；外加写出的诗。

    还有遗忘检查（free_poems）：只给换行时，采样写出的诗里格式正确的比例（free_well_formed）。s 默认是 SFTSettings()。
    """
    s = SFTSettings() if s is None else s
    check_evaluate_args(held, s)
    poems, head_probs = write_acrostics(model, tok, held.heads)
    ok = [acrostic_ok(h, p) for h, p in zip(held.heads, poems, strict=True)]
    hits = [head_hits(h, p) for h, p in zip(held.heads, poems, strict=True)]
    free_greedy, free = free_poems(model, tok, s)
    return {"held_out": held_out_sft_loss(model, held), "success": sum(ok) / len(ok),
            "line_hits": sum(hits) / (4 * len(hits)), "well_formed": sum(map(well_formed, poems)) / len(poems),
            "poems": poems, "head_probs": head_probs,
            "free_well_formed": sum(map(well_formed, free)) / len(free), "free_greedy": free_greedy,
            "free_poems": free}


# --8<-- [start:compare]
def compare_finetuning(s: SFTSettings | None = None) -> dict[str, Any]:
    """基座模型和四种微调，各在验证集的藏头上评估一次。"""
    s = SFTSettings() if s is None else s
    check_settings(s)  # 在读取（或训练）基座模型之前
    base, tok = base_model()
    train_poems, held_poems = poem_lists()
    train, held = build_sft_data(train_poems, tok), build_sft_data(held_poems, tok)
    runs: dict[str, dict[str, Any]] = {"base": {"rank": None, "trainable": 0,
                                                **evaluate_acrostics(base, tok, held, s)}}
    for name, rank in METHODS.items():
        model, history = finetune(base, train, held, rank, s)
        runs[name] = {"rank": rank, "trainable": trainable_parameters(model), "history": history,
                      "state": model.state_dict() if rank is None else lora_state_dict(model),
                      **evaluate_acrostics(model, tok, held, s)}
    return {"runs": runs, "settings": s, "chars": tok.chars, "heads": held.heads,
            "n_train": train.inputs.size(0), "total_params": sum(p.numel() for p in base.parameters())}
# --8<-- [end:compare]


BUILD_ARTIFACTS = {"lora-finetune": ("compare_finetuning", "save_finetuning"),
                   "acrostic-gpt": ("acrostic_gpt", "save_acrostic_gpt")}
FINETUNE_ENV = "LLM_ARTIFACT_LORA_FINETUNE"
# 放进浏览器演示的是 LoRA r=4：文章的结果表里，它是学会了格式的那个 LoRA（r=1 没学会，r=8 的格式也不稳）；
# tests/figures/test_lora_claims.py 的 playground model 一条核对这件事
PLAYGROUND_METHOD = "lora-4"


def save_finetuning(path: str | Path, result: dict[str, Any]) -> None:
    """存下每种方法学到的参数（LoRA 只存 A、B）、训练记录和评估结果（不存用时：同样的输入得到同样的文件）。"""
    check_result(result)
    runs = {}
    for name, run in result["runs"].items():
        record = dict(run)
        if "history" in record:
            record["history"] = asdict(record["history"])
        runs[name] = record
    torch.save({**result, "runs": runs, "settings": asdict(result["settings"])}, path)


def load_finetuning(path: str | Path) -> dict[str, Any]:
    """读回 save_finetuning 存的文件（模型的参数留在 runs[名字]["state"] 里，用 finetuned_model 重建）。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_finetuning 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)
    for run in data["runs"].values():
        if "history" in run:
            run["history"] = SFTHistory(**run["history"])
    data["settings"] = SFTSettings(**data["settings"])
    return data


def finetuning(verbose: bool = True) -> dict[str, Any]:
    """compare_finetuning() 的结果：构建网站时缓存了的就直接读取，没有就现场训练。"""
    path = os.environ.get(FINETUNE_ENV)
    if path and Path(path).is_file():
        return load_finetuning(path)
    if verbose:
        print("没有现成的结果，现场微调（全参数、LoRA r = 1、4、8；没有缓存的基座模型时先训练它）……")
    return compare_finetuning()


def finetuned_model(result: dict[str, Any], name: str) -> tuple[TinyTransformer, CharTokenizer]:
    """按结果重建一个模型：基座模型（pretrained_gpt）装上这种方法学到的参数。name 取 base、full、lora-1……"""
    check_finetuned_args(result, name)  # 在读取（或训练）基座模型之前
    base, tok = base_model()
    if tok.chars != result["chars"]:
        raise ValueError("基座模型的词表和微调时的不同：微调结果是用另一个基座模型得到的")
    run = result["runs"][name]
    if name == "base":
        return base, tok
    if run["rank"] is not None:
        add_lora(base, LORA_TARGETS, r=run["rank"], alpha=LORA_ALPHA)
        missing = base.load_state_dict(run["state"], strict=False).missing_keys
        if any("lora_" in key for key in missing):
            raise ValueError(f"微调结果里缺少 LoRA 参数：{[k for k in missing if 'lora_' in k][:3]}")
    else:
        base.load_state_dict(run["state"])
    base.eval()
    return base, tok


def acrostic_gpt() -> tuple[TinyTransformer, CharTokenizer]:
    """浏览器演示用的模型：读缓存的微调结果（finetuning），重建 LoRA r=4 的模型，把 LoRA 合并进权重。

    合并之后是一个普通的 TinyTransformer，输出和合并前相同（merge_lora），浏览器里的前向计算不用认识 LoRA。
    """
    model, tok = finetuned_model(finetuning(verbose=False), PLAYGROUND_METHOD)
    merge_lora(model)
    model.eval()
    return model, tok


def save_acrostic_gpt(path: str | Path, model: TinyTransformer, tok: CharTokenizer) -> None:
    """和 save_poem_gpt 同样的格式（config、state_dict、chars），再加 task：浏览器据此把提示框换成「藏头」。"""
    if not isinstance(model, TinyTransformer) or lora_layers(model):
        raise ValueError("model 应为合并了 LoRA 的普通 TinyTransformer（见 acrostic_gpt）：浏览器里不实现 LoRA 层")
    if not isinstance(tok, CharTokenizer) or tok.vocab_size != model.cfg.vocab_size:
        raise ValueError("tok 应为和模型配套的 CharTokenizer（词表大小相同）")
    task = playground_task()
    missing = [c for c in task["example"] + task["line_ends"] if c not in tok.char_to_id]
    if missing:
        raise ValueError(f"演示用到的 {'、'.join(missing)} 不在词表里：换一个示例")
    torch.save({"config": asdict(model.cfg), "state_dict": model.state_dict(), "chars": tok.chars, "task": task},
               path)


def summary(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """每种方法一行：可训练参数、验证集 SFT 损失、成功率、句首命中率、格式正确的比例、遗忘检查里格式正确的比例。"""
    check_result(result)
    return {name: {key: run[key] for key in RUN_KEYS[1:]} for name, run in result["runs"].items()}


# ---------- 参数检查：不在文章里展示 ----------


def check_sft_data(name: str, data: object) -> None:
    if not isinstance(data, SFTData):
        raise ValueError(f"{name} 应为 SFTData（build_sft_data 的结果），收到 {type(data).__name__}")
    if data.inputs.size(0) == 0:
        raise ValueError(f"{name} 一条样本都没有：build_sft_data 至少要有一首可用的诗")


def check_finetune_args(base: object, train: object, held: object, rank: int | None, s: object) -> None:
    if not isinstance(base, TinyTransformer):
        raise ValueError(f"base 应为 TinyTransformer（例如 pretrained_gpt() 的模型），收到 {type(base).__name__}")
    check_sft_data("train", train)
    check_sft_data("held", held)
    if rank is not None:
        check_int("rank", rank, minimum=1)
    check_settings(s)


def check_settings(s: object) -> None:
    if not isinstance(s, SFTSettings):
        raise ValueError(f"s 应为 SFTSettings，收到 {type(s).__name__}")
    for name in ("steps", "batch_size", "warmup", "eval_every", "curve_samples", "free_samples"):
        check_int(name, getattr(s, name), minimum=1)
    check_int("seed", s.seed)
    check_int("free_seed", s.free_seed)
    for name in ("full_lr", "lora_lr", "free_temperature", "clip"):
        value = getattr(s, name)
        finite = name != "clip"  # clip = inf 就是不裁剪
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0
                or (finite and math.isinf(value))):
            raise ValueError(f"{name} 应为{'有限的' if finite else ''}正数，收到 {value!r}")
    if s.warmup >= s.steps:
        raise ValueError(f"warmup = {s.warmup} 应小于 steps = {s.steps}")


def check_free_args(model: object, tok: object, s: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如 finetuned_model 重建的模型），收到 {type(model).__name__}")
    if not isinstance(tok, CharTokenizer):
        raise ValueError(f"tok 应为 CharTokenizer（code/tokenizer.py），收到 {type(tok).__name__}")
    if "\n" not in tok.char_to_id or model.cfg.vocab_size != tok.vocab_size:
        raise ValueError("model 和 tok 应是唐诗 GPT 配套的一对：词表大小相同，换行在词表里")
    check_settings(s)  # 上下文够不够长，generate 会检查


def check_evaluate_args(held: object, s: object) -> None:
    check_sft_data("held", held)
    check_settings(s)


def check_held_out_args(model: object, data: object, n: int | None) -> None:
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model 应为 torch.nn.Module（例如微调后的 TinyTransformer），收到 {type(model).__name__}")
    check_sft_data("data", data)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n 应为 None（全部样本）或正整数（前 n 条），收到 {n!r}")


RESULT_KEYS = ("runs", "settings", "chars", "heads", "n_train", "total_params")  # compare_finetuning 返回的各项
RUN_KEYS = ("rank", "trainable", "held_out", "success", "line_hits", "well_formed",
            "free_well_formed")  # 每种方法都有；微调过的还有 state


def check_result(result: object) -> None:
    """result 是 compare_finetuning() 或 load_finetuning(path) 返回的字典：各项齐全，runs 里每种方法一条结果。"""
    source = "compare_finetuning() 或 load_finetuning(path) 的返回值"
    if not isinstance(result, dict):
        hint = "；存下的文件请先用 load_finetuning(path) 读回" if isinstance(result, (str, Path)) else ""
        raise ValueError(f"result 应是 {source}（一个字典），收到 {type(result).__name__}{hint}")
    missing = [key for key in RESULT_KEYS if key not in result]
    if missing:
        raise ValueError(f"result 应是 {source}，要有 {'、'.join(map(repr, RESULT_KEYS))}，缺少 {missing}")
    if not isinstance(result["settings"], SFTSettings):
        raise ValueError(f"result['settings'] 应为 SFTSettings，收到 {type(result['settings']).__name__}")
    runs = result["runs"]
    if not isinstance(runs, dict) or not runs:
        got = "空的字典" if isinstance(runs, dict) else type(runs).__name__
        raise ValueError("result['runs'] 应是「方法名 → 结果」的非空字典，例如 {'base': {...}, 'lora-4': {...}}，"
                         f"收到 {got}")
    for name, run in runs.items():
        if not isinstance(run, dict):
            raise ValueError(f"result['runs'][{name!r}] 应是一种方法的结果（字典），收到 {type(run).__name__}")
        missing = [key for key in (RUN_KEYS if name == "base" else (*RUN_KEYS, "state")) if key not in run]
        if missing:
            raise ValueError(f"result['runs'][{name!r}] 缺少 {missing}：应是 compare_finetuning 记下的一种方法的结果")


def check_finetuned_args(result: object, name: str) -> None:
    check_result(result)
    if name not in result["runs"]:
        raise ValueError(f"name 应是 {'、'.join(result['runs'])} 之一，收到 {name!r}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 和构建网站时一样单线程：结果逐位可复现
    start = time.perf_counter()
    result = compare_finetuning()
    seconds = time.perf_counter() - start
    print(f"训练样本 {result['n_train']} 条，验证集藏头 {len(result['heads'])} 组；用时 {seconds:.1f} s")
    for name, row in summary(result).items():
        print(f"  {METHOD_LABELS[name]:<8} 可训练参数 {row['trainable']:>7,}  验证集损失 {row['held_out']:.3f}  "
              f"格式正确 {row['well_formed']:.1%}  藏头成功 {row['success']:.1%}  句首命中 {row['line_hits']:.1%}  "
              f"只给换行时格式正确 {row['free_well_formed']:.0%}")
