"""从零训练一个小 GPT：分词、取批次、损失、学习率计划、训练循环，在唐人五言绝句上训练。

模型不另写：就是 code/tiny_transformer.py 的 TinyTransformer，打开 MLP、用可学习的位置嵌入
（TinyConfig(mlp=True, positions="learned")）。每一层是「LayerNorm → 因果多头注意力 → 加回残差，
LayerNorm → 前馈网络 → 加回残差」，也就是 code/transformer_block.py 的 Pre-LN 块；分词器在
code/tokenizer.py，生成用 code/kv_cache.py 的 generate。

语料是 data/tang_wujue/poems.txt：3707 首五言绝句，每行一首（繁体字，来源与许可见同目录的 README.md）。
文章的图和动手实验用同一个训练好的模型（train_poem_gpt）：构建网站时只训练一次，存进缓存；
pretrained_gpt() 有缓存就读取，没有就现场训练：同一台机器、同一个 PyTorch 版本上，同样的种子、单线程下结果逐位相同。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from kv_cache import generate
from shapes import check_int, check_positive, check_tensor, fmt, shape_error
from tiny_transformer import TinyConfig, TinyTransformer, check_tokens
from tokenizer import CharTokenizer, check_text
from torch import Tensor

# 语料：仓库里的 data/tang_wujue/poems.txt；下载的 Notebook 把它放在代码文件旁边
CORPUS_NAME = "poems.txt"
CORPUS_PLACES = ("../data/tang_wujue", ".")  # 相对本文件所在目录，依次查找
DATA_FILES = ("data/tang_wujue/poems.txt",)  # 网站生成下载的 Notebook 时，把它和代码文件放在一起
# 语料的 SHA-256：文件变了而这里没改，读取时会报错（改这一行，缓存的模型也会跟着重新训练）
CORPUS_SHA256 = "9011adec02dc65ed2650a2c77f4ef49fd768fc90b5cd24926da4c431d6326046"
HELD_OUT_EVERY = 10  # 每 10 首诗留 1 首不参与训练，用来看模型在没见过的诗上表现如何


def corpus_path() -> Path:
    """语料文件的位置：先找仓库的 data/tang_wujue/，再找本文件旁边。"""
    here = Path(__file__).resolve().parent
    for place in CORPUS_PLACES:
        path = here / place / CORPUS_NAME
        if path.is_file():
            return path
    raise FileNotFoundError(f"找不到语料 {CORPUS_NAME}：应在仓库的 data/tang_wujue/ 里，"
                            f"或与 {Path(__file__).name} 放在一起")


def load_poems() -> list[str]:
    """读入语料，返回每首诗（不含换行）的列表，并核对文件的 SHA-256。"""
    data = corpus_path().read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CORPUS_SHA256:
        raise ValueError(f"语料的 SHA-256 是 {digest}，与 CORPUS_SHA256 不符：文件被改过或没有完整下载")
    return data.decode("utf-8").splitlines()


# --8<-- [start:split]
def split_poems(poems: list[str], every: int = HELD_OUT_EVERY) -> tuple[str, str]:
    """按整首诗划分：从 1 数第 every、2*every……首（下标 every-1、2*every-1……）留作验证集，其余是训练集。

    每首诗后面接一个换行，换行就是「一首诗结束」的记号。返回 (训练文本, 验证文本)。
    按诗划分而不是按字划分：不然一首诗的前半在训练集、后半在验证集，验证损失会偏低。
    """
    check_split_args(poems, every)
    train = "".join(p + "\n" for i, p in enumerate(poems) if i % every != every - 1)
    held_out = "".join(p + "\n" for i, p in enumerate(poems) if i % every == every - 1)
    return train, held_out
# --8<-- [end:split]


# --8<-- [start:batch]
def poem_starts(data: Tensor, newline_id: int, context: int) -> Tensor:
    """data (N,) 里每个换行的位置：从这里截，第 0 个词元是换行，第 1 个起是下一首诗。

    生成时也从换行写起，训练和生成的位置就对得上。只留下往后还能截出 context + 1 个词元的起点。
    """
    check_batch_args(data, 1, context)
    check_int("newline_id", newline_id)
    starts = (data == newline_id).nonzero().squeeze(-1)
    return starts[starts + context + 1 <= data.numel()]


def get_batch(data: Tensor, starts: Tensor, batch_size: int, context: int,
              generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """从 starts 里随机挑 batch_size 个起点，在 data (N,) 里各截 context + 1 个词元。

    返回 (x, y)，形状都是 (batch_size, context)：y 是 x 整体往后挪一位，
    所以 y[b, t] 是模型看到 x[b, 0..t] 之后应当预测的下一个词元。
    """
    check_batch_args(data, batch_size, context, starts)
    pick = torch.randint(0, starts.numel(), (batch_size,), generator=generator)
    rows = torch.stack([data[s : s + context + 1] for s in starts[pick].tolist()])  # (B, context + 1)
    return rows[:, :-1], rows[:, 1:]
# --8<-- [end:batch]


# --8<-- [start:loss]
def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """语言模型的交叉熵：每个位置上，正确的下一个词元的负对数概率，再对所有位置取平均。

    logits: (B, T, V)，targets: (B, T)。log_softmax(z) = z - max(z) - log(sum(exp(z - max(z))))：
    直接算它，而不是先算 softmax 再取对数。softmax 也减去了最大值，不会溢出，但比最大分数低一百多的词元
    在 float32 里概率下溢成 0，取对数就是 -inf；log_softmax 不经过概率这一步，不会。
    """
    check_loss_args(logits, targets)
    log_probs = logits.log_softmax(dim=-1)  # (B, T, V)：每个位置上每个词元的对数概率
    correct = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)：正确词元的对数概率
    return -correct.mean()
# --8<-- [end:loss]


# --8<-- [start:schedule]
def lr_at(step: int, total_steps: int, peak_lr: float, warmup: int, min_lr: float) -> float:
    """第 step 步（从 0 数）的学习率：先线性预热，再按余弦曲线降到 min_lr。

    预热：第 0 步是 peak_lr / warmup，第 warmup - 1 步升到 peak_lr。
    之后 (step - warmup) / (total_steps - warmup) 从 0 走向 1，学习率沿半个余弦周期从 peak_lr 降向 min_lr。
    """
    check_schedule_args(step, total_steps, peak_lr, warmup, min_lr)
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    progress = (step - warmup) / (total_steps - warmup)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))
# --8<-- [end:schedule]


@dataclass
class TrainSettings:
    """训练的超参数。默认值就是文章和实验用的参考模型。"""

    steps: int = 300
    batch_size: int = 16
    context: int = 64  # 每段的长度，也是模型的 max_len
    peak_lr: float = 5e-3
    warmup: int = 20
    min_lr: float = 5e-4
    weight_decay: float = 0.1
    clip: float = 1.0  # 梯度范数的上限
    seed: int = 0
    eval_every: int = 25  # 每隔多少步在固定的几段文本上量一次训练集、验证集损失
    eval_windows: int = 48  # 量损失用的段数
    sample_at: tuple[int, ...] = (0, 25, 100, 300)  # 在这些步数（训练了多少步之后）生成一段文字
    sample_prompt: str = "\n"  # 换行：从「一首诗的开头」写起
    sample_tokens: int = 24  # 一首五言绝句：20 个字加 4 个标点
    sample_temperature: float = 0.8
    sample_seed: int = 1


@dataclass
class GPTHistory:
    """训练记录。loss、lr、grad_norm 每步一个；eval_* 每 eval_every 步一个；samples: {步数: 生成的文字}。"""

    loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)  # 裁剪之前的梯度范数
    eval_steps: list[int] = field(default_factory=list)
    eval_train: list[float] = field(default_factory=list)
    eval_held_out: list[float] = field(default_factory=list)
    samples: dict[int, str] = field(default_factory=dict)
    seconds: float | None = None  # 训练用时；从缓存读出的模型没有，为 None


def fixed_windows(data: Tensor, starts: Tensor, n: int, context: int) -> tuple[Tensor, Tensor]:
    """量损失用的固定几段：从 starts 里等间隔挑 n 个起点，每次量的都是同一批文本，曲线才可比。"""
    check_batch_args(data, n, context, starts)
    chosen = starts[torch.linspace(0, starts.numel() - 1, n).long()]
    rows = torch.stack([data[s : s + context + 1] for s in chosen.tolist()])
    return rows[:, :-1], rows[:, 1:]


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: Tensor, y: Tensor) -> float:
    """模型在 (x, y) 上的平均交叉熵（不更新参数）。"""
    model.eval()
    return lm_loss(model(x), y).item()


@torch.no_grad()
def write_sample(model: TinyTransformer, tok: CharTokenizer, s: TrainSettings) -> str:
    """从 s.sample_prompt 接着写 s.sample_tokens 个词元（温度采样，固定种子），返回生成的文字（不含提示）。"""
    prompt = torch.tensor([tok.encode(s.sample_prompt)])
    gen = torch.Generator().manual_seed(s.sample_seed)  # 每个检查点用同一个种子：差别只来自模型
    out = generate(model, prompt, s.sample_tokens, do_sample=True, temperature=s.sample_temperature, generator=gen)
    return tok.decode(out.tokens[0, prompt.size(1):])


# --8<-- [start:train]
def train_gpt(model: torch.nn.Module, tok: CharTokenizer, train_text: str, held_out_text: str,
              s: TrainSettings | None = None, log: bool = False) -> GPTHistory:
    """在 train_text 上训练 model：AdamW，预热 + 余弦学习率，梯度裁剪。返回 GPTHistory。"""
    s = s or TrainSettings()
    check_train_args(model, tok, train_text, held_out_text, s)
    train_ids = torch.tensor(tok.encode(train_text))
    held_ids = torch.tensor(tok.encode(held_out_text))
    newline = tok.encode("\n")[0]
    train_starts = poem_starts(train_ids, newline, s.context)  # 每段都从一个换行截起：后面是一首诗的开头
    held_starts = poem_starts(held_ids, newline, s.context)
    probes = {"train": fixed_windows(train_ids, train_starts, s.eval_windows, s.context),
              "held_out": fixed_windows(held_ids, held_starts, s.eval_windows, s.context)}
    gen = torch.Generator().manual_seed(s.seed)  # 取批次用的随机数，和初始化、生成互不干扰
    # 权重衰减只加在矩阵上：偏置、LayerNorm 的增益和偏置（一维参数）不衰减
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": s.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=s.peak_lr, betas=(0.9, 0.95))
    history = GPTHistory()
    start = time.perf_counter()
    for step in range(s.steps + 1):  # 第 step 轮开始时，模型已经训练了 step 步
        if step % s.eval_every == 0 or step == s.steps:
            history.eval_steps.append(step)
            history.eval_train.append(evaluate(model, *probes["train"]))
            history.eval_held_out.append(evaluate(model, *probes["held_out"]))
            if log:
                print(f"第 {step:>4} 步  训练集损失 {history.eval_train[-1]:.3f}  "
                      f"验证集损失 {history.eval_held_out[-1]:.3f}")
        if step in s.sample_at:
            history.samples[step] = write_sample(model, tok, s)
        if step == s.steps:
            break
        lr = lr_at(step, s.steps, s.peak_lr, s.warmup, s.min_lr)
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        x, y = get_batch(train_ids, train_starts, s.batch_size, s.context, gen)
        loss = lm_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), s.clip)  # 范数超过 clip 就整体缩小
        opt.step()
        history.loss.append(loss.item())
        history.lr.append(lr)
        history.grad_norm.append(norm.item())
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
# --8<-- [end:train]


# --8<-- [start:reference]
MIN_COUNT = 2  # 训练集里至少出现 2 次的字才进词表，其余的字走字节回退


def poem_config(vocab_size: int, context: int = TrainSettings.context) -> TinyConfig:
    """参考模型的形状：4 层、每层 4 个头、d_model = 64，带前馈网络和可学习的位置嵌入。"""
    return TinyConfig(vocab_size=vocab_size, d_model=64, n_heads=4, n_layers=4, max_len=context,
                      mlp=True, positions="learned")


def train_poem_gpt() -> tuple[TinyTransformer, CharTokenizer, GPTHistory]:
    """文章插图和动手实验共用的参考模型：在训练集的诗上建词表，种子 0，按 TrainSettings() 训练。"""
    s = TrainSettings()
    train_text, held_out_text = split_poems(load_poems())
    tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
    torch.manual_seed(s.seed)  # 决定参数的初始值
    model = TinyTransformer(poem_config(tok.vocab_size, s.context))
    history = train_gpt(model, tok, train_text, held_out_text, s)
    return model, tok, history
# --8<-- [end:reference]


# 构建网站时 scripts 训练一次 train_poem_gpt()，用 save_poem_gpt() 存进缓存，环境变量 PRETRAINED_GPT_ENV
# 告诉插图和实验文件在哪里。缓存键只取决于这两个函数真正用到的代码（包括上面的 CORPUS_SHA256）。
BUILD_ARTIFACTS = {"tang-gpt": ("train_poem_gpt", "save_poem_gpt")}
PRETRAINED_GPT_ENV = "LLM_ARTIFACT_TANG_GPT"


def save_poem_gpt(path: str | Path, model: TinyTransformer, tok: CharTokenizer, history: GPTHistory) -> None:
    """把模型（配置和参数）、词表和训练记录存成一个文件。"""
    check_saved(model, tok, history)
    torch.save({**model_record(model, history), "chars": tok.chars}, path)


def model_record(model: TinyTransformer, history: GPTHistory) -> dict:
    """存盘用的字典：模型的配置和参数、训练记录。分词器由调用者另外存（字符表或 BPE 的合并列表）。"""
    record = asdict(history)
    record.pop("seconds")  # 用时每次不同，不存：同样的输入应当得到逐字节相同的文件
    record["samples"] = [[k, v] for k, v in history.samples.items()]
    return {"config": asdict(model.cfg), "state_dict": model.state_dict(), "history": record}


def read_model_record(data: dict) -> tuple[TinyTransformer, GPTHistory]:
    """model_record 的反过程：重建模型（eval 模式）和训练记录。"""
    model = TinyTransformer(TinyConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    model.eval()
    record = dict(data["history"])
    record["samples"] = {int(k): v for k, v in record["samples"]}
    return model, GPTHistory(**record)


def load_poem_gpt(path: str | Path) -> tuple[TinyTransformer, CharTokenizer, GPTHistory]:
    """读回 save_poem_gpt 存的文件，返回 (模型, 分词器, 训练记录)。模型处于 eval 模式。"""
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_poem_gpt 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)
    model, history = read_model_record(data)
    return model, CharTokenizer(data["chars"]), history


def pretrained_gpt(verbose: bool = True) -> tuple[TinyTransformer, CharTokenizer, GPTHistory]:
    """参考模型 train_poem_gpt() 的结果：构建网站时缓存了的就直接读取，没有就现场训练。"""
    path = os.environ.get(PRETRAINED_GPT_ENV)
    if path and Path(path).is_file():
        if verbose:
            print(f"读取构建网站时训练好的模型（train_poem_gpt()：{TrainSettings.steps} 步，"
                  f"种子 {TrainSettings.seed}）")
        return load_poem_gpt(path)
    if verbose:
        print(f"没有现成的模型，现场训练（train_poem_gpt()：{TrainSettings.steps} 步，种子 {TrainSettings.seed}）……")
    model, tok, history = train_poem_gpt()
    if verbose:
        print(f"训练用时 {history.seconds:.1f} s")
    return model, tok, history


# ---------- 参数检查：不在文章和实验里展示，输入不对时给出看得懂的错误 ----------


def check_split_args(poems: list[str], every: int) -> None:
    check_poem_list(poems)
    check_int("every", every, minimum=2)


def check_poem_list(poems: object) -> None:
    """poems 是诗的列表，每项一首非空、不含换行的字符串（code/acrostic.py 的 build_sft_data 也用这个检查）。"""
    if isinstance(poems, str) or not isinstance(poems, list):
        raise ValueError("poems 应是诗的列表（每项一首、不含换行，例如 load_poems() 的结果），"
                         f"收到 {type(poems).__name__}；整段文本请先 splitlines()")
    if not poems:
        raise ValueError("poems 一首诗都没有：至少要有一首")
    for i, poem in enumerate(poems):
        if not isinstance(poem, str):
            raise ValueError(f"poems[{i}] 应是一首诗的字符串，收到 {type(poem).__name__}")
        if not poem:
            raise ValueError(f"poems[{i}] 是空字符串：每项应是一首诗（空行会变成一首空诗）")
        if "\n" in poem:
            raise ValueError(f"poems[{i}] 含有换行：每项应是一首诗，「一首诗结束」的换行由程序另加")


def check_batch_args(data: Tensor, batch_size: int, context: int, starts: Tensor | None = None) -> None:
    """data 是一维整数张量，比 context 至少长 1（要能截出 context + 1 个词元）；starts 是合法的起点。"""
    check_tensor("data", data)
    if data.dim() != 1:
        raise shape_error("data", "(N,)，一长串词元编号", data.shape, "把整个语料编码后拼成一维张量")
    if data.is_floating_point() or data.dtype == torch.bool:
        raise ValueError(f"data 应为整数张量（词元编号），收到 dtype={data.dtype}")
    check_int("batch_size", batch_size, minimum=1)
    check_int("context", context, minimum=1)
    if data.numel() < context + 1:
        raise shape_error("data", f"(N,)，N 至少为 context + 1 = {context + 1}", data.shape)
    if starts is None:
        return
    check_tensor("starts", starts)
    if starts.dim() != 1 or starts.numel() == 0 or starts.is_floating_point() or starts.dtype == torch.bool:
        raise shape_error("starts", "(S,) 的整数张量，S 至少为 1（可用 poem_starts 得到）", starts.shape)
    if starts.min() < 0 or starts.max() + context + 1 > data.numel():
        raise ValueError(f"starts 里的起点应在 0 到 N - context - 1 = {data.numel() - context - 1} 之间，"
                         f"收到最小 {int(starts.min())}、最大 {int(starts.max())}")


def check_loss_args(logits: Tensor, targets: Tensor) -> None:
    """logits: (B, T, V) 浮点；targets: (B, T) 整数，每个编号在 0..V-1。"""
    check_tensor("logits", logits)
    check_tensor("targets", targets)
    if not logits.is_floating_point():
        raise ValueError(f"logits 应为浮点张量，收到 dtype={logits.dtype}")
    if logits.dim() != 3:
        raise shape_error("logits", "(B, T, V)", logits.shape, "模型的输出是每个位置对词表里每个词元的打分")
    if tuple(targets.shape) != tuple(logits.shape[:2]):
        raise shape_error("targets", f"(B, T) = {fmt(logits.shape[:2])}，与 logits 的前两维相同", targets.shape)
    if targets.is_floating_point() or targets.dtype == torch.bool:
        raise ValueError(f"targets 应为整数张量（正确的词元编号），收到 dtype={targets.dtype}")
    if targets.numel() and (targets.min() < 0 or targets.max() >= logits.size(-1)):
        raise ValueError(f"targets 里的编号应在 0 到 V - 1 = {logits.size(-1) - 1} 之间，"
                         f"收到最小 {int(targets.min())}、最大 {int(targets.max())}")


def check_schedule_args(step: int, total_steps: int, peak_lr: float, warmup: int, min_lr: float) -> None:
    check_int("total_steps", total_steps, minimum=1)
    check_int("warmup", warmup, minimum=1)
    check_int("step", step)
    if warmup >= total_steps:
        raise ValueError(f"warmup = {warmup} 应小于 total_steps = {total_steps}：预热之后还要留出衰减的步数")
    if step >= total_steps:
        raise ValueError(f"step 应在 0 到 total_steps - 1 = {total_steps - 1} 之间，收到 {step}")
    check_positive("peak_lr", peak_lr)
    if not 0 <= min_lr <= peak_lr:
        raise ValueError(f"min_lr 应在 0 到 peak_lr = {peak_lr} 之间，收到 {min_lr}")


def check_train_args(model: torch.nn.Module, tok: CharTokenizer, train_text: str, held_out_text: str,
                     s: TrainSettings) -> None:
    # 任何语言模型都能训练：输入 (B, T) 的词元编号，输出 (B, T, V) 的 logits，配置 cfg 里有 vocab_size、max_len
    # （TinyTransformer、code/llama.py 的 MiniLlama）；训练中途写样本要用 kv_cache.generate，它只认 TinyTransformer
    cfg = getattr(model, "cfg", None)
    if not isinstance(model, torch.nn.Module) or not all(hasattr(cfg, n) for n in ("vocab_size", "max_len")):
        raise ValueError("model 应为语言模型（nn.Module，配置 cfg 里有 vocab_size、max_len，例如 "
                         f"code/tiny_transformer.py 的 TinyTransformer），收到 {type(model).__name__}")
    if s.sample_at and not isinstance(model, TinyTransformer):
        raise ValueError(f"写样本（sample_at = {s.sample_at}）只支持 TinyTransformer；"
                         f"训练 {type(model).__name__} 时请设 sample_at=()")
    if not all(hasattr(tok, name) for name in ("encode", "decode", "vocab_size")):
        raise ValueError(f"tok 应为分词器（有 encode、decode 和 vocab_size，例如 code/tokenizer.py 的 CharTokenizer、"
                         f"code/bpe.py 的 BPE），收到 {type(tok).__name__}")
    if not isinstance(s, TrainSettings):
        raise ValueError(f"s 应为 TrainSettings，收到 {type(s).__name__}")
    for name, text in (("train_text", train_text), ("held_out_text", held_out_text)):
        check_text(name, text)
        if "\n" not in text:
            raise ValueError(f"{name} 应是若干首诗、每首后面接一个换行（可用 split_poems 得到），"
                             f"收到 {len(text)} 个字符、没有换行")
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的 vocab_size = {model.cfg.vocab_size} 与分词器的 {tok.vocab_size} 不同")
    if s.context > model.cfg.max_len:
        raise ValueError(f"context = {s.context} 超过了模型的 max_len = {model.cfg.max_len}")
    for name in ("steps", "warmup", "eval_every", "eval_windows", "batch_size", "sample_tokens"):
        check_int(name, getattr(s, name), minimum=1)
    lr_at(0, s.steps, s.peak_lr, s.warmup, s.min_lr)  # 学习率参数不合理就在这里报错
    check_positive("clip", s.clip)
    if s.sample_at:
        check_tokens("sample_prompt", torch.tensor([tok.encode(s.sample_prompt)]), model.cfg)
        if len(tok.encode(s.sample_prompt)) + s.sample_tokens - 1 > model.cfg.max_len:
            raise ValueError(f"提示加上 sample_tokens = {s.sample_tokens} 个词元超过了 max_len = {model.cfg.max_len}")


def check_saved(model: TinyTransformer, tok: CharTokenizer, history: GPTHistory) -> None:
    for name, value, cls in (("model", model, TinyTransformer), ("tok", tok, CharTokenizer),
                             ("history", history, GPTHistory)):
        if not isinstance(value, cls):
            raise ValueError(f"{name} 应为 {cls.__name__}，收到 {type(value).__name__}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 模型很小，单线程就够了，结果也可以逐位复现
    poems = load_poems()
    train_text, held_out_text = split_poems(poems)
    tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
    print(f"{len(poems)} 首诗，训练集 {len(train_text)} 个字符，验证集 {len(held_out_text)} 个字符，"
          f"词表 {tok.vocab_size}（其中 256 个字节词元）")
    model, tok, history = train_poem_gpt()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"参数量 {n_params:,}，训练 {TrainSettings.steps} 步用时 {history.seconds:.1f} s")
    for step, train_loss, held in zip(history.eval_steps, history.eval_train, history.eval_held_out, strict=True):
        print(f"第 {step:>4} 步  训练集 {train_loss:.3f}  验证集 {held:.3f}")
    for step, text in history.samples.items():
        print(f"第 {step:>4} 步的样本: {text!r}")
