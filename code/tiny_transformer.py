"""一个很小的 Transformer，用来观察「注意力头在学什么」。

任务（重复序列）：序列开头是一个起始符 BOS，接着是 n 个互不相同的随机词，
然后把这 n 个词原样再重复一遍：

    BOS  a b c d e  a b c d e

训练目标是预测下一个词。前一半是随机的，猜不出来；后一半却可以「照抄」：
看到第二个 b 时，去前面找到上一次出现 b 的位置，它后面跟的是 c，于是预测 c。
一个两层的注意力模型可以这样做到：
- 第 1 层的某个头看「前一个词」（previous-token head），把「我前面是谁」写进每个位置；
- 第 2 层的某个头用它去找「前面是当前词的那个位置」（induction head，归纳头），
  把那里的词复制出来。

模型由 code/multi_head_attention.py 的 MultiHeadAttention 和 code/attention.py 的
causal_mask 搭成，位置信息用 code/positional_encoding.py 的可学习位置嵌入（或正弦编码）。
每一层每个头的注意力权重都保存下来，供实验画图和打分。

文章里的图和动手实验用的是同一个参考模型（train_reference）：构建网站时只训练一次，权重缓存起来；
pretrained() 有缓存就读取，没有（例如下载的 Notebook）就现场训练，结果相同。
形状不对时函数抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path

import torch
from attention import causal_mask
from feed_forward import FeedForward
from multi_head_attention import MultiHeadAttention
from positional_encoding import LearnedPositionEmbedding, sinusoidal_position_encoding
from shapes import check_int, check_positive, check_tensor, fmt, shape_error
from torch import Tensor, nn
from torch.nn import functional as F

BOS = 0  # 起始符占用词表里的 0 号，随机词从 1 开始


@dataclass
class TinyConfig:
    """模型的超参数。用默认值训练 1000 步就能学会重复序列任务（训练用时见 pretrained() 的输出）。"""

    vocab_size: int = 48  # 含 BOS
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_len: int = 64
    mlp: bool = False  # 只用注意力（归纳头不需要 MLP）；设为 True 则每层加一个小 MLP
    positions: str = "sinusoidal"  # "learned"（可学习位置嵌入）或 "sinusoidal"（正弦编码）


class Block(nn.Module):
    """一层：先 LayerNorm 再做因果多头自注意力，结果加回残差流（可选再接一个 MLP）。"""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(cfg.d_model)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.mlp: nn.Module | None = None
        if cfg.mlp:
            # 前馈子层：LayerNorm 之后接 code/feed_forward.py 的 FeedForward（d -> 4d -> GELU -> d）。
            # 有 MLP 时这一层就是 code/transformer_block.py 的 Pre-LN 块，只是多存了注意力权重
            self.mlp = nn.Sequential(nn.LayerNorm(cfg.d_model), FeedForward(cfg.d_model))

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """x: (B, T, d_model)。返回 (新的残差流, 注意力权重 (B, n_heads, T, T))。"""
        y, weights = self.attn(self.ln(x), mask=mask, need_weights=True)
        x = x + y
        if self.mlp is not None:
            x = x + self.mlp(x)
        return x, weights


class TinyTransformer(nn.Module):
    """词嵌入 + 位置 → 若干层因果注意力 → LayerNorm → 输出每个位置对下一个词的打分。"""

    def __init__(self, cfg: TinyConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or TinyConfig()
        check_config(self.cfg)  # 超参数不合理就报错，见文件末尾
        c = self.cfg
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.pos: LearnedPositionEmbedding | None = None
        if c.positions == "learned":
            self.pos = LearnedPositionEmbedding(c.max_len, c.d_model)
        elif c.positions == "sinusoidal":
            # 正弦编码是固定的表，不参与训练，注册成 buffer
            self.register_buffer("pe", sinusoidal_position_encoding(c.max_len, c.d_model), persistent=False)
        else:
            raise ValueError(f"positions 只能是 'learned' 或 'sinusoidal'，收到 {c.positions!r}")
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.unembed = nn.Linear(c.d_model, c.vocab_size)
        # 每层的注意力权重 (B, n_heads, T, T)，forward 之后可以读取
        self.attention_weights: list[Tensor] = []

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens: (B, T) 的整数张量。返回 logits: (B, T, vocab_size)，第 t 行预测第 t+1 个词。"""
        check_tokens("tokens", tokens, self.cfg)  # 形状、类型、编号范围，见文件末尾
        T = tokens.size(1)
        x = self.embed(tokens)  # (B, T, d_model)
        x = self.pos(x) if self.pos is not None else x + self.pe[:T]  # 加上位置信息
        mask = causal_mask(T, device=tokens.device)  # (T, T)，True 表示未来位置，不许看
        self.attention_weights = []
        for block in self.blocks:
            x, weights = block(x, mask)
            self.attention_weights.append(weights.detach())
        return self.unembed(self.ln_f(x))


# --8<-- [start:task]
def make_repeat_batch(
    batch_size: int, half_len: int, vocab_size: int, generator: torch.Generator | None = None
) -> Tensor:
    """生成一批重复序列 (batch_size, 1 + 2 * half_len)：BOS，n 个互不相同的随机词，再重复一遍。

    前一半的词互不相同，所以「上一次出现的位置」是唯一的，复制的答案也没有歧义。
    """
    check_batch_args(batch_size, half_len, vocab_size, generator)
    # 每行取 1..vocab_size-1 的一个随机排列的前 half_len 个：互不相同的随机词
    noise = torch.rand(batch_size, vocab_size - 1, generator=generator)
    first = noise.argsort(dim=1)[:, :half_len] + 1  # (B, half_len)
    bos = torch.full((batch_size, 1), BOS, dtype=torch.long)
    return torch.cat([bos, first, first], dim=1)
# --8<-- [end:task]


def repeat_positions(half_len: int) -> slice:
    """logits 中「可以靠照抄猜对」的那些位置：half_len + 1 到 2 * half_len - 1。

    位置 t 的输出预测第 t+1 个词；第二遍占位置 half_len + 1 到 2 * half_len。
    第二遍的第一个词猜不出来（它前面是第一遍的最后一个词，之前没出现过）；从位置 half_len + 1 起，
    当前词在第一遍出现过，照抄它后面的那个词就对了；最后一个位置后面没有词。
    """
    check_int("half_len", half_len, minimum=2)  # half_len = 1 时没有能照抄的位置
    return slice(half_len + 1, 2 * half_len)


def repeat_metrics(logits: Tensor, tokens: Tensor, half_len: int) -> tuple[Tensor, Tensor]:
    """重复的那一半上的 (交叉熵, 准确率)。

    logits: (B, T, vocab_size)，tokens: (B, T)，T = 1 + 2 * half_len（make_repeat_batch 生成的序列）。
    """
    check_metric_shapes(logits, tokens, half_len)
    span = repeat_positions(half_len)
    pred = logits[:, span]  # (B, n, vocab)
    target = tokens[:, span.start + 1 : span.stop + 1]  # 每个位置的下一个词
    loss = F.cross_entropy(pred.reshape(-1, pred.size(-1)), target.reshape(-1))
    acc = (pred.argmax(dim=-1) == target).float().mean()
    return loss, acc


@dataclass
class TrainHistory:
    """训练记录：每一步训练批次上的损失和「重复的那一半」的准确率。

    seconds 是这次训练的用时；从缓存文件读出的模型不是现场训练的，没有用时，为 None。
    """

    loss: list[float] = field(default_factory=list)
    repeat_acc: list[float] = field(default_factory=list)
    seconds: float | None = None


# --8<-- [start:train]
def train(
    model: TinyTransformer,
    steps: int = 1000,
    batch_size: int = 64,
    half_len: int | tuple[int, int] = (4, 16),
    lr: float = 3e-3,
    seed: int = 0,
    loss_on: str = "repeat",
    log_every: int = 0,
) -> TrainHistory:
    """用 AdamW 在重复序列任务上训练，返回 TrainHistory（损失曲线等）。

    half_len 可以是一个范围 (最短, 最长)：每一步随机取一个长度。长度固定时，模型会偷懒，
    只记住「往回数 half_len - 1 个位置」（纯靠位置），而不是学会按内容去找；长度一变这招就失效。
    loss_on="repeat" 只在能靠复制猜对的位置上算交叉熵（默认）；"all" 在整条序列上算，
    和训练普通语言模型一样，但前一半是随机词，它的损失只是噪声，学得会慢很多。
    """
    low, high = check_train_args(model, steps, batch_size, half_len, lr, loss_on, log_every)  # 见文件末尾
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    history = TrainHistory()
    start = time.perf_counter()
    model.train()
    for step in range(steps):
        n = int(torch.randint(low, high + 1, (1,), generator=gen))  # 这一步的 half_len
        tokens = make_repeat_batch(batch_size, n, model.cfg.vocab_size, gen)
        logits = model(tokens)
        loss, acc = repeat_metrics(logits, tokens, n)
        if loss_on == "all":
            # 位置 t 的输出预测第 t+1 个词：logits 去掉最后一个位置，目标去掉第一个词
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.loss.append(loss.item())
        history.repeat_acc.append(acc.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"第 {step:>4} 步  损失 {loss.item():.3f}  重复部分的准确率 {acc.item():.1%}")
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
# --8<-- [end:train]


# --8<-- [start:scores]
SCORE_NAMES = {
    "previous": "前一个词",  # 看第 i-1 个位置
    "induction": "归纳",  # 看「当前词上一次出现的位置」的下一个位置
    "duplicate": "同词",  # 看「当前词上一次出现的位置」本身
    "self": "自身",  # 看自己
    "first": "起始符",  # 看第 0 个位置（BOS），常被当作「什么都不做」的停靠点
}


def head_scores(weights: Tensor, tokens: Tensor) -> dict[str, Tensor]:
    """给每个头打分：平均有多少注意力落在某一类位置上。

    weights: (B, n_heads, T, T) 一层的注意力权重；tokens: (B, T)。
    返回 {分数名: (n_heads,) 张量}，每个分数在 0 到 1 之间。
    「归纳」和「同词」只在当前词前面出现过的位置上平均，其余分数在位置 1..T-1 上平均。
    """
    check_score_shapes(weights, tokens)
    B, _, T, _ = weights.shape
    rows = torch.arange(1, T)
    scores = {
        "previous": weights[:, :, rows, rows - 1].mean(dim=(0, 2)),
        "self": weights[:, :, rows, rows].mean(dim=(0, 2)),
        "first": weights[:, :, rows, 0].mean(dim=(0, 2)),
    }
    # 对每个位置 i，找当前词上一次出现的位置 j（j < i 中最靠后的那个），没有则为 -1
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, T, T)：第 i 个词是否等于第 j 个词
    earlier = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)  # j < i
    idx = torch.arange(T).expand(B, T, T)
    prev = torch.where(same & earlier, idx, torch.full_like(idx, -1)).amax(dim=-1)  # (B, T)
    has = prev >= 0  # 这些位置的词在前面出现过
    b, i = has.nonzero(as_tuple=True)
    j = prev[b, i]
    # weights[b, :, i, j + 1] 的形状是 (有重复的位置数, n_heads)：被切片隔开的整数索引维排到最前，
    # 所以 mean(dim=0) 是对这些位置求平均，每个头得到一个分数
    scores["induction"] = weights[b, :, i, j + 1].mean(dim=0)
    scores["duplicate"] = weights[b, :, i, j].mean(dim=0)
    return scores


def name_head(scores: dict[str, float], threshold: float = 0.3) -> str:
    """按得分最高的那一类给头起名；最高分也不到 threshold 时说明它没有明显的分工。

    scores: {分数名: 分数}，分数名取自 SCORE_NAMES（head_scores 返回的那些）。
    """
    check_score_dict(scores)
    best = max(scores, key=lambda k: scores[k])
    if scores[best] < threshold:
        return "没有明显分工"
    return {
        "previous": "前一个词头",
        "induction": "归纳头",
        "duplicate": "同词头",
        "self": "看自己",
        "first": "停在起始符",
    }[best]
# --8<-- [end:scores]


def format_score(value: float, threshold: float = 0.3, digits: int = 2, percent: bool = False) -> str:
    """把分数写成 digits 位小数；要是四舍五入后和 threshold 比出的结论变了，就多写几位。

    例如门槛是 0.3 时，0.2996 写成 0.2996 而不是 0.30：读者拿印出来的数和门槛比，结论和程序的一致。
    percent=True 时写成百分数（0.8996 → 89.96%），threshold 仍是 0 到 1 之间的小数。
    """
    check_format_args(value, threshold, digits)
    scale, unit = (100, "%") if percent else (1, "")
    for d in range(digits, 12):
        text = f"{value * scale:.{d}f}"
        # 用十进制比较印出来的数和门槛，和人读数时一样（二进制浮点会有 92.1 / 100 < 0.921 这种误差）
        if (Decimal(text) >= Decimal(repr(float(threshold))) * scale) == (value >= threshold):
            return text + unit
    return repr(value)


def all_head_scores(model: TinyTransformer, tokens: Tensor) -> list[list[dict[str, float]]]:
    """在 tokens 上跑一遍模型，返回 [层][头] -> {分数名: 分数}。"""
    model.eval()
    with torch.no_grad():
        model(tokens)
    out = []
    for weights in model.attention_weights:
        s = head_scores(weights, tokens)
        out.append([{k: float(v[h]) for k, v in s.items()} for h in range(weights.size(1))])
    return out


# --8<-- [start:reference]
REFERENCE_STEPS = 1000  # 参考模型训练的步数
REFERENCE_SEED = 0


def train_reference() -> tuple[TinyTransformer, TrainHistory]:
    """文章插图和动手实验共用的参考模型：默认配置，种子 0，在重复序列任务上训练 1000 步。"""
    torch.manual_seed(REFERENCE_SEED)  # 决定参数的初始值
    model = TinyTransformer(TinyConfig())
    history = train(model, steps=REFERENCE_STEPS, seed=REFERENCE_SEED)
    return model, history
# --8<-- [end:reference]


# 构建网站时，python -m llmsite artifacts 调用 train_reference() 训练一次，用 save_trained() 存进缓存，
# 再通过环境变量 PRETRAINED_ENV 把文件位置告诉插图和实验。缓存键只取决于这两个函数真正用到的代码：
# 改注释、改无关的函数都不会重新训练。
BUILD_ARTIFACTS = {"tiny-transformer": ("train_reference", "save_trained")}
PRETRAINED_ENV = "LLM_ARTIFACT_TINY_TRANSFORMER"


def save_trained(path: str | Path, model: TinyTransformer, history: TrainHistory) -> None:
    """把模型（配置和参数）连同训练记录存成一个文件。"""
    check_saved_args(model, history)
    data = {
        "config": asdict(model.cfg),
        "state_dict": model.state_dict(),
        "loss": list(history.loss),
        "repeat_acc": list(history.repeat_acc),
    }
    torch.save(data, path)


def load_trained(path: str | Path) -> tuple[TinyTransformer, TrainHistory]:
    """读回 save_trained 存的文件，返回 (模型, 训练记录)。模型处于 eval 模式。"""
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_trained 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)  # 只读张量和普通数据，不执行文件里的代码
    model = TinyTransformer(TinyConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    model.eval()
    return model, TrainHistory(loss=list(data["loss"]), repeat_acc=list(data["repeat_acc"]))


def pretrained(verbose: bool = True) -> tuple[TinyTransformer, TrainHistory]:
    """参考模型 train_reference() 的结果：构建网站时训练好、缓存了的就直接读取，没有就现场训练。

    缓存文件的位置由环境变量 LLM_ARTIFACT_TINY_TRANSFORMER 给出（构建脚本设置）。下载的 Notebook
    里没有它，就现场训练：同样的种子、单线程（torch.set_num_threads(1)）时，得到的参数和缓存的一样。
    """
    path = os.environ.get(PRETRAINED_ENV)
    if path and Path(path).is_file():
        if verbose:
            print(f"读取构建网站时训练好的参考模型（train_reference()：{REFERENCE_STEPS} 步，种子 {REFERENCE_SEED}）")
        return load_trained(path)
    if verbose:
        print(f"没有现成的参考模型，现场训练（train_reference()：{REFERENCE_STEPS} 步，种子 {REFERENCE_SEED}）……")
    model, history = train_reference()
    if verbose:
        print(f"训练用时 {history.seconds:.1f} s")
    return model, history


# ---------- 形状检查：不在文章和实验里展示，输入不对时给出看得懂的错误 ----------


def check_config(cfg: TinyConfig) -> None:
    """TinyConfig 的各项是合理的正整数（d_model 能否被 n_heads 整除由 MultiHeadAttention 检查）。"""
    if not isinstance(cfg, TinyConfig):
        raise ValueError(f"cfg 应为 TinyConfig，收到 {type(cfg).__name__}")
    check_int("vocab_size", cfg.vocab_size, minimum=2)  # 至少要有 BOS 和一个词
    check_int("d_model", cfg.d_model, minimum=1)
    check_int("n_heads", cfg.n_heads, minimum=1)
    check_int("n_layers", cfg.n_layers, minimum=1)
    check_int("max_len", cfg.max_len, minimum=1)


def check_tokens(name: str, tokens: Tensor, cfg: TinyConfig) -> None:
    """tokens 是 (B, T) 的整数张量，1 <= T <= max_len，每个编号在 0 到 vocab_size - 1 之间。"""
    check_tensor(name, tokens)
    expected = f"(B, T)，其中 T 不超过 max_len = {cfg.max_len}"
    if tokens.dim() != 2:
        hint = f"只有一条序列时请先加上批次维：{name}[None]" if tokens.dim() == 1 else ""
        raise shape_error(name, expected, tokens.shape, hint)
    if tokens.dtype == torch.bool or tokens.is_floating_point() or tokens.is_complex():
        raise ValueError(f"{name} 应为整数张量（词的编号），收到 dtype={tokens.dtype}；可以先用 {name}.long() 转换")
    if tokens.size(1) == 0 or tokens.size(1) > cfg.max_len:
        raise shape_error(name, expected, tokens.shape, f"序列长度 {tokens.size(1)} 不在 1 到 {cfg.max_len} 之间")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= cfg.vocab_size):
        raise ValueError(
            f"{name} 里的词编号应在 0 到 vocab_size - 1 = {cfg.vocab_size - 1} 之间，"
            f"收到最小 {int(tokens.min())}、最大 {int(tokens.max())}"
        )


def check_batch_args(batch_size: int, half_len: int, vocab_size: int, generator: torch.Generator | None) -> None:
    """make_repeat_batch 的参数：正整数，且前一半的 half_len 个词能互不相同。"""
    check_int("batch_size", batch_size, minimum=1)
    check_int("half_len", half_len, minimum=1)
    check_int("vocab_size", vocab_size, minimum=2)
    if half_len > vocab_size - 1:
        raise ValueError(
            f"half_len = {half_len} 超过了可用的词数 vocab_size - 1 = {vocab_size - 1}：前一半的词要互不相同"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator 应为 torch.Generator 或 None，收到 {type(generator).__name__}")


def check_metric_shapes(logits: Tensor, tokens: Tensor, half_len: int) -> None:
    """repeat_metrics 的输入：logits (B, T, vocab_size)，tokens (B, T)，T = 1 + 2 * half_len。"""
    check_int("half_len", half_len, minimum=2)
    check_tensor("tokens", tokens)
    check_tensor("logits", logits)
    T = 1 + 2 * half_len
    if tokens.dim() != 2 or tokens.size(1) != T:
        raise shape_error("tokens", f"(B, 1 + 2 * half_len) = (B, {T})", tokens.shape,
                          "half_len 要和生成这批序列时用的相同")
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"tokens 应为整数张量（词的编号），收到 dtype={tokens.dtype}")
    if not logits.is_floating_point():
        raise ValueError(f"logits 应为浮点张量（模型的输出），收到 dtype={logits.dtype}")
    if logits.dim() != 3 or tuple(logits.shape[:2]) != tuple(tokens.shape):
        raise shape_error("logits", f"(B, T, vocab_size)，其中 (B, T) = {fmt(tokens.shape)} 与 tokens 相同",
                          logits.shape)


def check_train_args(
    model: TinyTransformer, steps: int, batch_size: int, half_len: int | tuple[int, int], lr: float,
    loss_on: str, log_every: int,
) -> tuple[int, int]:
    """train 的参数；返回 half_len 的范围 (最短, 最长)。"""
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer，收到 {type(model).__name__}")
    check_int("steps", steps)
    check_int("batch_size", batch_size, minimum=1)
    check_int("log_every", log_every)
    check_positive("lr", lr)
    if loss_on not in ("repeat", "all"):
        raise ValueError(f"loss_on 只能是 'repeat' 或 'all'，收到 {loss_on!r}")
    if isinstance(half_len, tuple) and len(half_len) == 2:
        low, high = (check_int("half_len[0]", half_len[0], minimum=2), check_int("half_len[1]", half_len[1], minimum=2))
        if low > high:
            raise ValueError(f"half_len 写成范围时应为 (最短, 最长)，收到 {half_len}")
    else:
        low = high = check_int("half_len", half_len, minimum=2)  # 至少要有一个能照抄的位置
    cfg = model.cfg
    if high > cfg.vocab_size - 1:
        raise ValueError(f"half_len 最长 {high}，超过了可用的词数 vocab_size - 1 = {cfg.vocab_size - 1}")
    if 1 + 2 * high > cfg.max_len:
        raise ValueError(f"half_len 最长 {high} 时序列长 {1 + 2 * high}，超过了 max_len = {cfg.max_len}")
    return low, high


def check_score_shapes(weights: Tensor, tokens: Tensor) -> None:
    """head_scores 的输入：weights (B, n_heads, T, T)，tokens (B, T)。"""
    check_tensor("weights", weights)
    check_tensor("tokens", tokens)
    if not weights.is_floating_point():
        raise ValueError(f"weights 应为浮点张量（注意力权重），收到 dtype={weights.dtype}")
    expected = "(B, n_heads, T, T)，一层的注意力权重"
    if weights.dim() != 4:
        hint = "一个样本的权重请先加上批次维：weights[None]" if weights.dim() == 3 else ""
        raise shape_error("weights", expected, weights.shape, hint)
    if weights.size(-1) != weights.size(-2):
        raise shape_error("weights", expected, weights.shape, "最后两维应相等（查询数 = 键数 = T）")
    B, T = weights.size(0), weights.size(-1)
    if tuple(tokens.shape) != (B, T):
        hint = "只有一条序列时请写成 tokens[None]" if tokens.dim() == 1 else ""
        raise shape_error("tokens", f"(B, T) = {fmt((B, T))}，与 weights 的批次和长度相同", tokens.shape, hint)
    if T < 2:
        raise shape_error("weights", expected + "，T 至少为 2", weights.shape)


def check_score_dict(scores: dict[str, float]) -> None:
    """name_head 的输入：非空的 {分数名: 分数}，分数名都在 SCORE_NAMES 里。"""
    if not isinstance(scores, dict) or not scores:
        raise ValueError(f"scores 应为非空的字典 {{分数名: 分数}}，收到 {scores!r}")
    unknown = [k for k in scores if k not in SCORE_NAMES]
    if unknown:
        raise ValueError(f"scores 的键应取自 SCORE_NAMES（{'、'.join(SCORE_NAMES)}），收到 {unknown}")


def check_format_args(value: float, threshold: float, digits: int) -> None:
    """format_score 的参数：有限的实数，digits 是非负整数。"""
    for name, number in (("value", value), ("threshold", threshold)):
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            raise ValueError(f"{name} 应为有限的实数（可用 float(t) 把单个元素的张量转换过来），收到 {number!r}")
    check_int("digits", digits)


def check_saved_args(model: TinyTransformer, history: TrainHistory) -> None:
    """save_trained 的参数类型。"""
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer，收到 {type(model).__name__}")
    if not isinstance(history, TrainHistory):
        raise ValueError(f"history 应为 TrainHistory（train 的返回值），收到 {type(history).__name__}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # 模型很小，单线程就够了；机器忙时也不会因为线程互相等待而变慢
    torch.manual_seed(0)
    cfg = TinyConfig()
    model = TinyTransformer(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"模型：{cfg.n_layers} 层 × {cfg.n_heads} 个头，d_model={cfg.d_model}，参数量 {n_params}")
    tokens = make_repeat_batch(2, 6, cfg.vocab_size, torch.Generator().manual_seed(0))
    print("一条重复序列:", tokens[0].tolist())
    logits = model(tokens)
    print("logits 形状:", tuple(logits.shape))
    print("每层注意力权重形状:", [tuple(w.shape) for w in model.attention_weights])

    history = train(model, steps=300, log_every=50)
    print(f"训练 300 步用时 {history.seconds:.1f} s")
    test = make_repeat_batch(256, 10, cfg.vocab_size, torch.Generator().manual_seed(1))
    with torch.no_grad():
        test_loss, test_acc = repeat_metrics(model(test), test, 10)
    print(f"新的一批序列（half_len=10）上：重复部分的损失 {test_loss.item():.3f}，准确率 {test_acc.item():.1%}")
    for layer, heads in enumerate(all_head_scores(model, test)):
        for h, scores in enumerate(heads):
            shown = "  ".join(f"{SCORE_NAMES[k]} {v:.2f}" for k, v in scores.items())
            print(f"第 {layer} 层第 {h} 个头：{shown}  → {name_head(scores)}")
    print("（完整的训练和每个头的分析见 labs/attention_heads_lab.py）")
