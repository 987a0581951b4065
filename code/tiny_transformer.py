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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from attention import causal_mask
from multi_head_attention import MultiHeadAttention
from positional_encoding import LearnedPositionEmbedding, sinusoidal_position_encoding
from torch import Tensor, nn
from torch.nn import functional as F

BOS = 0  # 起始符占用词表里的 0 号，随机词从 1 开始


@dataclass
class TinyConfig:
    """模型的超参数。用默认值训练 1000 步（CPU 上十几秒）就能学会重复序列任务。"""

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
            self.mlp = nn.Sequential(
                nn.LayerNorm(cfg.d_model),
                nn.Linear(cfg.d_model, 4 * cfg.d_model),
                nn.GELU(),
                nn.Linear(4 * cfg.d_model, cfg.d_model),
            )

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
        T = tokens.size(1)
        if self.cfg.max_len < T:
            raise ValueError(f"序列长度 {T} 超过了 max_len={self.cfg.max_len}")
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
    if half_len > vocab_size - 1:
        raise ValueError(f"half_len={half_len} 超过了可用的词数 {vocab_size - 1}")
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
    return slice(half_len + 1, 2 * half_len)


def repeat_metrics(logits: Tensor, tokens: Tensor, half_len: int) -> tuple[Tensor, Tensor]:
    """重复的那一半上的 (交叉熵, 准确率)。"""
    span = repeat_positions(half_len)
    pred = logits[:, span]  # (B, n, vocab)
    target = tokens[:, span.start + 1 : span.stop + 1]  # 每个位置的下一个词
    loss = F.cross_entropy(pred.reshape(-1, pred.size(-1)), target.reshape(-1))
    acc = (pred.argmax(dim=-1) == target).float().mean()
    return loss, acc


@dataclass
class TrainHistory:
    """训练记录：每一步训练批次上的损失和「重复的那一半」的准确率。"""

    loss: list[float] = field(default_factory=list)
    repeat_acc: list[float] = field(default_factory=list)
    seconds: float = 0.0


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
    if loss_on not in ("repeat", "all"):
        raise ValueError(f"loss_on 只能是 'repeat' 或 'all'，收到 {loss_on!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    low, high = (half_len, half_len) if isinstance(half_len, int) else half_len
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
    # w: (n_heads, 有重复的位置数)
    scores["induction"] = weights[b, :, i, j + 1].mean(dim=0)
    scores["duplicate"] = weights[b, :, i, j].mean(dim=0)
    return scores


def name_head(scores: dict[str, float], threshold: float = 0.3) -> str:
    """按得分最高的那一类给头起名；最高分也不到 threshold 时说明它没有明显的分工。"""
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
