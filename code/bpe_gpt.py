"""用 BPE 词元重训第一阶段的唐诗小 GPT，再和字符级模型按「每个字符多少比特」比较。

除了分词器，一切照搬 code/gpt_from_scratch.py 的参考模型 train_poem_gpt()：
同样的训练集（3337 首诗）、同样的模型形状（poem_config）、同样的 TrainSettings()（300 步、每步 16 段、每段 64 个词元、
同样的学习率计划和种子）。BPE 在训练集上训练，词表大小取字符级分词器的词表大小（在训练集上建出的 3009），
所以两个模型的参数一样多；不一样的是一个词元装多少字，因而每一步读到的文字量不同。

比较用 poem_bits()：验证集的每首诗前面放一个换行（训练时每段也从换行截起），让模型预测这首诗的每个词元和结尾的换行，
把总损失换算成每个字符多少比特。两个模型预测的是同一段文字，按字符平均的数才能互相比较。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
from bpe import BPE, bits_per_char, train_bpe
from gpt_from_scratch import (
    MIN_COUNT,
    GPTHistory,
    TrainSettings,
    load_poems,
    model_record,
    poem_config,
    read_model_record,
    split_poems,
    train_gpt,
)
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer, check_text

MARKS = "，。\n"  # 标点和换行：诗的格式；其余的字符都是汉字


# --8<-- [start:train]
def bpe_vocab_size(train_text: str) -> int:
    """BPE 的词表大小：和字符级分词器在同一份训练文本上建出的词表一样大，两个模型的参数量就相同。"""
    return CharTokenizer.train(train_text, min_count=MIN_COUNT).vocab_size


def train_bpe_gpt() -> tuple[TinyTransformer, BPE, GPTHistory]:
    """BPE 版的参考模型：只把分词器换成在训练集上训练的 BPE，其余与 train_poem_gpt() 完全相同。"""
    s = TrainSettings()
    train_text, held_out_text = split_poems(load_poems())
    bpe = train_bpe(train_text, bpe_vocab_size(train_text))
    torch.manual_seed(s.seed)  # 与字符级模型相同的种子；词表一样大，初始参数的形状也一样
    model = TinyTransformer(poem_config(bpe.vocab_size, s.context))
    history = train_gpt(model, bpe, train_text, held_out_text, s)
    return model, bpe, history
# --8<-- [end:train]


# --8<-- [start:bits]
@torch.no_grad()
def poem_bits(model: TinyTransformer, tok, poems: list[str]) -> dict[str, float]:
    """模型在 poems 上每个字符多少比特。每首诗编码成「换行 + 诗 + 换行」，预测换行之后的每个词元。

    每首诗的字符数是 len(诗) + 1（结尾的换行也算）。词元落在标点或换行上（MARKS）的损失记为「格式」，
    其余记为「汉字」；两部分加起来就是总数（分词器要把每个标点和换行编成单独一个词元，否则分不开，抛出 ValueError）。
    返回每字比特（总的、汉字部分、格式部分，都除以全部字符数）、每词元的平均损失（奈特）、词元数和字符数。
    """
    check_eval_args(model, tok, poems)
    model.eval()
    rows = [tok.encode("\n" + poem + "\n") for poem in poems]
    width = max(len(r) for r in rows) - 1
    # 一批算完：短的行在末尾补 0。因果掩码下，补在后面的词元影响不到前面的位置，补位的损失不计入
    x = torch.tensor([r[:-1] + [0] * (width + 1 - len(r)) for r in rows])
    y = torch.tensor([r[1:] + [0] * (width + 1 - len(r)) for r in rows])
    real = torch.tensor([[t < len(r) - 1 for t in range(width)] for r in rows])
    loss = torch.nn.functional.cross_entropy(model(x).transpose(1, 2), y, reduction="none")  # (诗数, width)
    marks = torch.tensor([tok.encode(c)[0] for c in MARKS])  # 每个标点、换行都是一个词元（check_eval_args 检查过）
    is_mark = torch.isin(y, marks) & real
    n_tokens, n_chars = int(real.sum()), sum(len(poem) + 1 for poem in poems)
    nats_marks, nats_chars = loss[is_mark].sum().item(), loss[real & ~is_mark].sum().item()
    total = nats_marks + nats_chars
    return {"bits_per_char": bits_per_char(total / n_tokens, n_tokens, n_chars),
            "char_bits": nats_chars / (n_chars * math.log(2)), "mark_bits": nats_marks / (n_chars * math.log(2)),
            "nats_per_token": total / n_tokens, "n_tokens": n_tokens, "n_chars": n_chars}
# --8<-- [end:bits]


# 构建网站时训练一次，存进缓存；环境变量 BPE_GPT_ENV 告诉插图在哪里
BUILD_ARTIFACTS = {"bpe-gpt": ("train_bpe_gpt", "save_bpe_gpt")}
BPE_GPT_ENV = "LLM_ARTIFACT_BPE_GPT"


def save_bpe_gpt(path: str | Path, model: TinyTransformer, bpe: BPE, history: GPTHistory) -> None:
    """把模型（配置和参数）、BPE 的合并列表和训练记录存成一个文件。"""
    check_saved(path, model, bpe, history)
    torch.save({**model_record(model, history), "merges": [list(m) for m in bpe.merges]}, path)


def load_bpe_gpt(path: str | Path) -> tuple[TinyTransformer, BPE, GPTHistory]:
    """读回 save_bpe_gpt 存的文件，返回 (模型, BPE, 训练记录)。模型处于 eval 模式。"""
    check_path(path)
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_bpe_gpt 存下的文件，但找不到 {path}")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:  # 不是 torch.save 存的文件：读不出来的原因五花八门，统一说明
        raise ValueError(f"path = {path} 不是 save_bpe_gpt 存下的文件（torch.load 读不出来：{e}）") from None
    if not isinstance(data, dict) or not {"config", "merges"} <= data.keys():
        raise ValueError(f"path = {path} 不是 save_bpe_gpt 存下的文件：里面没有模型配置和 BPE 的合并列表"
                         "（字符级模型请用 gpt_from_scratch.load_poem_gpt 读）")
    model, history = read_model_record(data)
    return model, BPE([tuple(m) for m in data["merges"]]), history


def pretrained_bpe_gpt(verbose: bool = True) -> tuple[TinyTransformer, BPE, GPTHistory]:
    """train_bpe_gpt() 的结果：构建网站时缓存了的就直接读取，没有就现场训练（单线程约一分钟）。"""
    path = os.environ.get(BPE_GPT_ENV)
    if path and Path(path).is_file():
        return load_bpe_gpt(path)
    if verbose:
        print(f"没有现成的模型，现场训练（train_bpe_gpt()：{TrainSettings.steps} 步，种子 {TrainSettings.seed}）……")
    return train_bpe_gpt()


# ---------- 参数检查：不在文章和实验里展示 ----------


def check_eval_args(model: object, tok: object, poems: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（code/tiny_transformer.py），收到 {type(model).__name__}")
    if not all(hasattr(tok, name) for name in ("encode", "decode", "vocab_size")):
        raise ValueError(f"tok 应为分词器（CharTokenizer 或 BPE），收到 {type(tok).__name__}")
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的 vocab_size = {model.cfg.vocab_size} 与分词器的 {tok.vocab_size} 不同")
    if isinstance(poems, str) or not isinstance(poems, list) or not poems:
        raise ValueError("poems 应为非空的诗的列表（每项一首诗的文字，不含换行），例如 load_poems()[9::10]")
    for i, poem in enumerate(poems):
        check_text(f"poems[{i}]", poem)
        if "\n" in poem or not poem:
            raise ValueError(f"poems[{i}] 应是一首非空的诗，不含换行（换行由 poem_bits 自己加）")
        if len(tok.encode("\n" + poem + "\n")) - 1 > model.cfg.max_len:
            raise ValueError(f"poems[{i}] 编码后超过了模型的 max_len = {model.cfg.max_len} 个词元")
    for c in MARKS:
        ids = tok.encode(c)
        if len(ids) != 1:
            raise ValueError(f"分词器应把 {c!r} 编成单独一个词元，才能把落在它上面的损失记为「格式」；这个分词器把它"
                             f"编成了 {len(ids)} 个词元 {ids}（词表太小，还没有这个标点自己的词元）")


def check_path(path: object) -> None:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path 应为文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")


def check_saved(path: object, model: object, bpe: object, history: object) -> None:
    check_path(path)
    if not Path(path).parent.is_dir():
        raise ValueError(f"path = {path} 所在的文件夹不存在，请先建好它")
    for name, value, cls in (("model", model, TinyTransformer), ("bpe", bpe, BPE), ("history", history, GPTHistory)):
        if not isinstance(value, cls):
            raise ValueError(f"{name} 应为 {cls.__name__}，收到 {type(value).__name__}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 与构建时相同：单线程，结果可以逐位复现
    poems = load_poems()
    train_text, held_out_text = split_poems(poems)
    held = poems[9::10]
    print(f"BPE 的词表大小取字符级词表的大小：{bpe_vocab_size(train_text)}")
    model, bpe, history = pretrained_bpe_gpt()
    result = poem_bits(model, bpe, held)
    print(f"验证集 {len(held)} 首诗：每个字符 {result['n_tokens'] / result['n_chars']:.3f} 个词元，"
          f"每词元 {result['nats_per_token']:.3f} 奈特，每个字符 {result['bits_per_char']:.3f} 比特")
    print("第 300 步的样本:", repr(history.samples[300]))
