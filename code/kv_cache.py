"""KV 缓存：逐个生成词元时，把每层已经算过的键 K 和值 V 存起来，下一步只算新词元的那一行。

模型就是 code/tiny_transformer.py 的 TinyTransformer（因果解码器），不另写一个：这里只给它加一条
「带缓存」的前向路径。注意力的投影用的是 MultiHeadAttention 自己的参数，打分和加权求和调用
code/attention.py 的 scaled_dot_product_attention；拆头、合头与 MultiHeadAttention.forward 相同。
tests/code/test_kv_cache.py 检查这条路径和完整重算给出同样的 logits 与同样的词元。

本文件还数清楚几笔账：每一步要做多少次乘加（forward_macs；常规写法的重算见 recompute_step_macs），
缓存要占多少字节（kv_cache_bytes），解码一步至少要从显存读多少字节（decode_step_bytes）。
另有束搜索（beam_search）：每一步保留几条最好的候选，缓存的行跟着候选重新排列。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from attention import causal_mask, scaled_dot_product_attention
from multi_head_attention import MultiHeadAttention
from sampling import apply_repetition_penalty, check_generator, greedy, sample
from shapes import check_btd, check_int, check_tensor, fmt, shape_error
from tiny_transformer import TinyConfig, TinyTransformer, check_tokens
from torch import Tensor


# --8<-- [start:cache]
class KVCache:
    """每层一对 K、V，形状 (B, n_heads, max_len, d_head)，一次分配好；length 是已经存入的位置数。"""

    def __init__(self, n_layers: int, batch_size: int, n_heads: int, d_head: int, max_len: int,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        check_cache_args(n_layers, batch_size, n_heads, d_head, max_len)
        shape = (batch_size, n_heads, max_len, d_head)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.max_len = max_len
        self.length = 0

    @classmethod
    def for_model(cls, model: TinyTransformer, batch_size: int) -> KVCache:
        """按模型的层数、头数、每头维数和 max_len 建一个空缓存。"""
        c = model.cfg
        p = model.embed.weight
        return cls(c.n_layers, batch_size, c.n_heads, c.d_model // c.n_heads, c.max_len, p.dtype, p.device)

    def store(self, layer: int, k_new: Tensor, v_new: Tensor) -> tuple[Tensor, Tensor]:
        """把新位置的 k、v (B, n_heads, T_new, d_head) 写在第 layer 层已有内容的后面，
        返回这一层到目前为止的全部 K、V (B, n_heads, length + T_new, d_head)。
        本方法不改 self.length：所有层都存好之后由调用者加上 T_new（见 forward_with_cache）。"""
        check_store_args(self, layer, k_new, v_new)
        start, end = self.length, self.length + k_new.size(2)
        self.k[layer][:, :, start:end] = k_new
        self.v[layer][:, :, start:end] = v_new
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    @property
    def nbytes(self) -> int:
        """缓存张量实际占用的字节数（按 max_len 分配，不管用了多少）。"""
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))
# --8<-- [end:cache]


# --8<-- [start:attend]
def attend_with_cache(mha: MultiHeadAttention, x: Tensor, cache: KVCache, layer: int) -> Tensor:
    """多头注意力的带缓存版本。x: (B, T_new, d_model) 是新词元的输入，接在缓存里的 cache.length 个位置之后。

    只为新词元算 q、k、v；k、v 存进缓存，q 和缓存里的全部 K、V 做注意力：每个新词元算出注意力矩阵的一行。
    返回 (B, T_new, d_model)，与 mha(完整序列, 因果掩码) 在这些位置上的输出相同。
    本函数不改 cache.length，所有层都存好之后由调用者加上 T_new（见 forward_with_cache）。
    """
    check_attend_args(mha, x, cache, layer)
    B, T_new, d_model = x.shape
    start = cache.length
    q, k, v = mha.qkv(x).chunk(3, dim=-1)  # 只有新词元：各 (B, T_new, d_model)
    q, k, v = (t.view(B, T_new, mha.n_heads, mha.d_head).transpose(1, 2) for t in (q, k, v))
    k_all, v_all = cache.store(layer, k, v)  # (B, n_heads, start + T_new, d_head)
    # 第 start + i 个位置只能看到 0..start + i：取完整因果掩码的最后 T_new 行
    mask = causal_mask(start + T_new, device=x.device)[start:]  # (T_new, start + T_new)
    y, _ = scaled_dot_product_attention(q, k_all, v_all, mask=mask)  # (B, n_heads, T_new, d_head)
    y = y.transpose(1, 2).contiguous().view(B, T_new, d_model)
    return mha.out(y)
# --8<-- [end:attend]


# --8<-- [start:forward]
def forward_with_cache(model: TinyTransformer, tokens: Tensor, cache: KVCache) -> Tensor:
    """TinyTransformer 的带缓存前向：tokens (B, T_new) 是新词元，返回它们的 logits (B, T_new, vocab_size)。

    第一次调用时缓存为空，送进整段提示（预填充，prefill）；之后每次只送一个刚生成的词元。
    每一步和 model.forward 的计算相同，只是每层的注意力换成 attend_with_cache。
    """
    check_forward_args(model, tokens, cache)
    start, T_new = cache.length, tokens.size(1)
    x = model.embed(tokens)  # (B, T_new, d_model)
    positions = torch.arange(start, start + T_new, device=tokens.device)  # 新词元的位置接着缓存往后数
    x = x + (model.pos.embedding(positions) if model.pos is not None else model.pe[positions])
    for layer, block in enumerate(model.blocks):  # 与 tiny_transformer.Block.forward 相同
        x = x + attend_with_cache(block.attn, block.ln(x), cache, layer)
        if block.mlp is not None:
            x = x + block.mlp(x)
    cache.length = start + T_new  # 所有层都存好了，缓存往后挪
    return model.unembed(model.ln_f(x))
# --8<-- [end:forward]


@dataclass
class Generation:
    """generate 的结果。tokens: (B, T_prompt + n) 提示加生成的词元；logits: (B, n, vocab_size)，
    每一步模型给出的原始分数（重复惩罚、温度之前）。"""

    tokens: Tensor
    logits: Tensor


# --8<-- [start:generate]
@torch.no_grad()
def generate(model: TinyTransformer, prompt: Tensor, max_new_tokens: int, *, use_cache: bool = True,
             do_sample: bool = False, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None, repetition_penalty: float = 1.0,
             generator: torch.Generator | None = None) -> Generation:
    """接着 prompt (B, T_prompt) 生成 max_new_tokens 个词元。

    do_sample=False 为贪心解码，True 则按温度、top-k、top-p 采样（见 code/sampling.py）。
    use_cache=False 时每一步把整个序列重新送进模型，用来和带缓存的结果对照。
    """
    check_generate_args(model, prompt, max_new_tokens, use_cache, do_sample, generator)
    model.eval()
    tokens, step_logits = prompt, []
    cache = KVCache.for_model(model, prompt.size(0)) if use_cache else None
    new = prompt  # 这一步要送进模型的词元：有缓存时第一步是整段提示，之后只有上一步生成的那一个
    for _ in range(max_new_tokens):
        # 有缓存：只送新词元；没有缓存：每一步都把整个序列从头算一遍。只要最后一个位置 (B, vocab_size)
        logits = (forward_with_cache(model, new, cache) if cache is not None else model(tokens))[:, -1]
        step_logits.append(logits)
        scores = apply_repetition_penalty(logits, tokens, repetition_penalty) if repetition_penalty != 1 else logits
        chosen = sample(scores, generator, temperature, top_k, top_p) if do_sample else greedy(scores)  # (B,)
        new = chosen[:, None]
        tokens = torch.cat([tokens, new], dim=1)
    return Generation(tokens, torch.stack(step_logits, dim=1))
# --8<-- [end:generate]


@dataclass
class Beam:
    """beam_search 的一条结果。tokens: 生成的词元（不含提示）；log_prob: 这些词元的对数概率之和；
    score: 排序用的分数（长度惩罚之后）；finished: 是否以 eos_id 结束（否则是写满了 max_new_tokens）。"""

    tokens: list[int]
    log_prob: float
    score: float
    finished: bool


# --8<-- [start:beam]
def length_normalized(log_prob: float, length: int, length_penalty: float) -> float:
    """束搜索排序用的分数：对数概率之和除以 长度 ** length_penalty。

    length_penalty = 0 不做归一化：对数概率是负的，越长越小，所以偏爱短的序列；= 1 就是每个词元的平均。
    """
    check_score_args(log_prob, length, length_penalty)
    return log_prob / length**length_penalty


def reorder_cache(cache: KVCache, rows: Tensor) -> None:
    """让缓存的第 i 行换成原来的第 rows[i] 行：候选换了「祖先」，它的 K、V 也要跟着换。"""
    check_reorder_args(cache, rows)
    cache.k = [k.index_select(0, rows) for k in cache.k]
    cache.v = [v.index_select(0, rows) for v in cache.v]


@torch.no_grad()
def beam_search(model: TinyTransformer, prompt: Tensor, beam_width: int, max_new_tokens: int, *,
                length_penalty: float = 1.0, eos_id: int | None = None) -> list[Beam]:
    """束搜索：每一步只保留对数概率之和最高的 beam_width 条候选，接着 prompt (1, T_prompt) 往下写。

    生成了 eos_id 的候选就此结束，放进结果里；其余的写到 max_new_tokens 个词元为止。
    返回至多 beam_width 条结果，按 score（见 length_normalized）从高到低排好。
    beam_width = 1 且没有 eos_id（或 length_penalty = 0）时就是贪心解码。
    """
    check_beam_args(model, prompt, beam_width, max_new_tokens, length_penalty, eos_id)
    model.eval()
    cache = KVCache.for_model(model, 1)
    logits = forward_with_cache(model, prompt, cache)[:, -1]  # 预填充：(1, V)，此时只有一条候选
    alive, alive_lp = [[]], torch.zeros(1, dtype=torch.float64)  # 活着的候选（已生成的词元）和它们的对数概率之和
    results: list[Beam] = []
    for step in range(max_new_tokens):
        V = logits.size(-1)
        total = alive_lp[:, None] + torch.log_softmax(logits.double(), dim=-1)  # (候选数, V)：每条候选接上每个词元
        top = total.flatten().topk(min(2 * beam_width, total.numel()))  # 多取一倍：其中一些可能以 eos 结束
        keep, rows = [], []
        for rank, (value, index) in enumerate(zip(top.values.tolist(), top.indices.tolist(), strict=True)):
            row, token = divmod(index, V)
            seq = alive[row] + [token]
            if token == eos_id:
                if rank < beam_width:  # 排进前 beam_width 名的结束候选才算数
                    results.append(Beam(seq, value, length_normalized(value, len(seq), length_penalty), True))
            else:
                keep.append((seq, value))
                rows.append(row)
                if len(keep) == beam_width:
                    break
        if not keep:
            break
        if step == max_new_tokens - 1:  # 写满了：活着的候选也作为结果
            results += [Beam(s, v, length_normalized(v, len(s), length_penalty), False) for s, v in keep]
            break
        reorder_cache(cache, torch.tensor(rows, device=prompt.device))
        alive = [s for s, _ in keep]
        alive_lp = torch.tensor([v for _, v in keep], dtype=torch.float64)
        new = torch.tensor([[s[-1]] for s in alive], device=prompt.device)  # 每条候选只送最后一个词元
        logits = forward_with_cache(model, new, cache)[:, -1]
    results.sort(key=lambda b: b.score, reverse=True)
    return results[:beam_width]
# --8<-- [end:beam]


@torch.no_grad()
def sequence_log_prob(model: TinyTransformer, prompt: Tensor, tokens: list[int]) -> float:
    """接在 prompt (1, T_prompt) 之后写出 tokens 的对数概率之和（完整前向，不用缓存），用来核对各种解码的结果。"""
    check_log_prob_args(model, prompt, tokens)
    full = torch.cat([prompt, torch.tensor([tokens], device=prompt.device)], dim=1)
    logp = torch.log_softmax(model(full[:, :-1]).double(), dim=-1)[0, prompt.size(1) - 1:]
    return logp.gather(-1, torch.tensor(tokens, device=prompt.device)[:, None]).sum().item()


# --8<-- [start:macs]
def forward_macs(cfg: TinyConfig, n_new: int, n_cached: int = 0) -> int:
    """一条序列的一次前向要做多少次乘加（只数矩阵乘法，1 次乘加 = 2 次浮点运算）。

    n_new 个新词元送进模型，前面还有 n_cached 个位置的 K、V 已在缓存里。
    不用缓存时每一步都是 forward_macs(cfg, t)：t 个词元从头算；用缓存时是 forward_macs(cfg, 1, t - 1)。
    注意力打分按代码实际算的来数：新词元的每个查询和全部 n_cached + n_new 个键都做点积（再用掩码屏蔽）。
    """
    check_macs_args(cfg, n_new, n_cached)
    d, L, V = cfg.d_model, cfg.n_layers, cfg.vocab_size
    n_keys = n_cached + n_new
    per_layer = (
        3 * d * d * n_new  # 算新词元的 q、k、v
        + 2 * n_new * n_keys * d  # q 与所有 k 的点积、权重乘所有 v（各头加起来）
        + d * d * n_new  # 输出投影
        + (8 * d * d * n_new if cfg.mlp else 0)  # MLP：d -> 4d -> d
    )
    return L * per_layer + n_new * d * V  # 最后乘输出矩阵，得到每个新词元的 logits
# --8<-- [end:macs]


def generation_macs(cfg: TinyConfig, prompt_len: int, max_new_tokens: int, use_cache: bool) -> list[int]:
    """generate 每一步前向的乘加次数（共 max_new_tokens 步），与 generate 的做法一一对应。"""
    check_int("prompt_len", prompt_len, minimum=1)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    steps = []
    for i in range(max_new_tokens):
        length = prompt_len + i  # 这一步开始时序列的长度
        if not use_cache:
            steps.append(forward_macs(cfg, length))
        elif i == 0:
            steps.append(forward_macs(cfg, prompt_len))  # 预填充：整段提示
        else:
            steps.append(forward_macs(cfg, 1, length - 1))  # 只送上一步生成的那个词元
    return steps


# --8<-- [start:recompute]
def recompute_step_macs(cfg: TinyConfig, t: int) -> int:
    """不用缓存、按常规写法从头算时，序列已有 t 个词元、要算下一个词元的乘加次数。

    和 forward_macs(cfg, t) 的区别有两处：因果注意力只算打分矩阵的下三角（从 1 数，第 i 个位置只和前 i 个键做点积，
    每层（各头加起来，打分与加权求和两项）合计 t (t + 1) d），logits 也只算最后一个位置。
    forward_macs(cfg, t) 数的是本文代码的实际做法：完整的 t × t 打分矩阵，每个位置都算 logits。
    """
    check_macs_args(cfg, t, 0)
    d, L, V = cfg.d_model, cfg.n_layers, cfg.vocab_size
    per_layer = (4 + (8 if cfg.mlp else 0)) * d * d * t + t * (t + 1) * d  # 投影与 MLP；下三角的打分和加权求和
    return L * per_layer + d * V  # 只有最后一个位置的 logits
# --8<-- [end:recompute]


# --8<-- [start:bytes]
def weight_bytes(cfg: TinyConfig, bytes_per_value: int = 2) -> int:
    """参与矩阵乘法的权重占多少字节：每层 q、k、v 和输出投影 4 d²，前馈网络 8 d²，再加输出矩阵 d V。

    和 forward_macs 数的是同一批矩阵。偏置、LayerNorm 和嵌入表不算：它们很小，生成一个词元也只从嵌入表取一行。
    """
    check_macs_args(cfg, 1, 0)
    check_int("bytes_per_value", bytes_per_value, minimum=1)
    d = cfg.d_model
    per_layer = (4 + (8 if cfg.mlp else 0)) * d * d
    return (cfg.n_layers * per_layer + d * cfg.vocab_size) * bytes_per_value


def decode_step_bytes(cfg: TinyConfig, t: int, batch_size: int = 1, bytes_per_value: int = 2) -> int:
    """带缓存生成一个词元的这一步，至少要从显存读多少字节（序列算上新词元共 t 个位置）。

    每个权重矩阵都要读一遍（批里的序列共用这一遍），每条序列还要读缓存里全部 t 个位置的 K、V。
    """
    check_int("t", t, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    c = cfg
    cache = kv_cache_bytes(c.n_layers, c.n_heads, c.d_model // c.n_heads, t, batch_size, bytes_per_value)
    return weight_bytes(cfg, bytes_per_value) + cache


def roofline_seconds(macs: int, nbytes: int, peak_flops: float, bandwidth: float) -> float:
    """耗时的下限：2·macs 次浮点运算至少要 2·macs / peak_flops 秒，读 nbytes 字节至少要 nbytes / bandwidth 秒。

    两件事都得做完，所以取较大的那个。实际的程序达不到峰值，只会更慢。peak_flops: 次/秒；bandwidth: 字节/秒。
    """
    check_int("macs", macs)
    check_int("nbytes", nbytes)
    for name, value in (("peak_flops", peak_flops), ("bandwidth", bandwidth)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
            raise ValueError(f"{name} 应为有限的正数，收到 {value!r}")
    return max(2 * macs / peak_flops, nbytes / bandwidth)


# NVIDIA A100 80GB SXM 的数据手册：bf16 稠密矩阵乘法峰值 312 TFLOPS，显存带宽 2039 GB/s
A100_PEAK_FLOPS = 312e12
A100_BANDWIDTH = 2039e9
# --8<-- [end:bytes]


# --8<-- [start:memory]
def kv_cache_bytes(n_layers: int, n_heads: int, d_head: int, seq_len: int, batch_size: int = 1,
                   bytes_per_value: int = 2) -> int:
    """KV 缓存的大小：K、V 两份 × 层数 × 头数 × 每头维数 × 序列长度 × 批大小 × 每个数的字节数。

    bytes_per_value：float16 / bfloat16 为 2，float32 为 4。
    """
    for name, value in (("n_layers", n_layers), ("n_heads", n_heads), ("d_head", d_head),
                        ("bytes_per_value", bytes_per_value)):
        check_int(name, value, minimum=1)
    check_int("seq_len", seq_len)
    check_int("batch_size", batch_size)
    return 2 * n_layers * n_heads * d_head * seq_len * batch_size * bytes_per_value
# --8<-- [end:memory]


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def check_cache_args(n_layers: int, batch_size: int, n_heads: int, d_head: int, max_len: int) -> None:
    for name, value in (("n_layers", n_layers), ("batch_size", batch_size), ("n_heads", n_heads),
                        ("d_head", d_head), ("max_len", max_len)):
        check_int(name, value, minimum=1)


def check_model(model: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（code/tiny_transformer.py），收到 {type(model).__name__}")


def check_cache(cache: object) -> None:
    if not isinstance(cache, KVCache):
        raise ValueError(f"cache 应为 KVCache，收到 {type(cache).__name__}；可以用 KVCache.for_model(model, B) 新建")


def check_attend_args(mha: MultiHeadAttention, x: Tensor, cache: KVCache, layer: int) -> None:
    """x: (B, T_new, d_model)；cache 的批大小、头数、每头维数与之相符（放不放得下 T_new 个新位置，由 store 查）。"""
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"mha 应为 MultiHeadAttention，收到 {type(mha).__name__}")
    check_cache(cache)
    check_btd("x", x, mha.d_model)
    check_layer(cache, layer)
    B, H, _, d_head = cache.k[layer].shape
    if (H, d_head) != (mha.n_heads, mha.d_head):
        raise ValueError(f"cache 每层的形状是 (B, n_heads, max_len, d_head) = {fmt(cache.k[layer].shape)}，"
                         f"与注意力的 n_heads = {mha.n_heads}、d_head = {mha.d_head} 不符")
    if x.size(0) != B:
        raise shape_error("x", f"(B, T_new, d_model)，B = {B} 与建缓存时的 batch_size 相同", x.shape)
    if x.dtype != cache.k[layer].dtype:
        raise ValueError(f"x 的 dtype 应与缓存相同（{cache.k[layer].dtype}），收到 {x.dtype}")


def check_layer(cache: KVCache, layer: int) -> None:
    check_int("layer", layer)
    if layer >= len(cache.k):
        raise ValueError(f"layer = {layer} 超出了缓存的层数 {len(cache.k)}（层从 0 数起）")


def check_room(cache: KVCache, n_new: int) -> None:
    if n_new == 0:
        raise ValueError("这一步没有新词元（T_new = 0）：至少要送进一个词元")
    if cache.length + n_new > cache.max_len:
        raise ValueError(f"缓存里已有 {cache.length} 个位置，再放 {n_new} 个就超过了 max_len = {cache.max_len}："
                         "模型没有为更靠后的位置准备位置编码")


def check_forward_args(model: TinyTransformer, tokens: Tensor, cache: KVCache) -> None:
    check_model(model)
    check_cache(cache)
    check_tokens("tokens", tokens, model.cfg)
    c = model.cfg
    expected = (tokens.size(0), c.n_heads, c.max_len, c.d_model // c.n_heads)
    if len(cache.k) != c.n_layers or tuple(cache.k[0].shape) != expected:
        raise ValueError(f"cache 与模型不符：应有 {c.n_layers} 层、每层 (B, n_heads, max_len, d_head) = "
                         f"{fmt(expected)}，收到 {len(cache.k)} 层、每层 {fmt(cache.k[0].shape)}；"
                         "请用 KVCache.for_model(model, B) 新建")
    check_room(cache, tokens.size(1))


def check_generate_args(model: TinyTransformer, prompt: Tensor, max_new_tokens: int, use_cache: bool,
                        do_sample: bool, generator: torch.Generator | None) -> None:
    check_model(model)
    check_tensor("prompt", prompt)
    check_tokens("prompt", prompt, model.cfg)
    n = check_int("max_new_tokens", max_new_tokens, minimum=1)  # 0 个新词元没有 logits 可返回
    # 最后生成的那个词元不用再送进模型，所以序列最长到 T_prompt + n - 1 时还要算一次
    if prompt.size(1) + n - 1 > model.cfg.max_len:
        raise ValueError(f"提示长 {prompt.size(1)}，再生成 {n} 个词元，模型要处理 {prompt.size(1) + n - 1} 个位置，"
                         f"超过了 max_len = {model.cfg.max_len}")
    for name, flag in (("use_cache", use_cache), ("do_sample", do_sample)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} 应为 True 或 False，收到 {flag!r}")
    check_generator(generator)


def check_macs_args(cfg: TinyConfig, n_new: int, n_cached: int) -> None:
    if not isinstance(cfg, TinyConfig):
        raise ValueError(f"cfg 应为 TinyConfig，收到 {type(cfg).__name__}")
    check_int("n_new", n_new, minimum=1)
    check_int("n_cached", n_cached)


def check_beam_args(model: TinyTransformer, prompt: Tensor, beam_width: int, max_new_tokens: int,
                    length_penalty: float, eos_id: int | None) -> None:
    check_model(model)
    check_tokens("prompt", prompt, model.cfg)
    if prompt.size(0) != 1:
        raise shape_error("prompt", "(1, T_prompt)：束搜索一次只处理一条提示", prompt.shape)
    check_int("beam_width", beam_width, minimum=1)
    n = check_int("max_new_tokens", max_new_tokens, minimum=1)
    if prompt.size(1) + n - 1 > model.cfg.max_len:
        raise ValueError(f"提示长 {prompt.size(1)}，再生成 {n} 个词元，模型要处理 {prompt.size(1) + n - 1} 个位置，"
                         f"超过了 max_len = {model.cfg.max_len}")
    check_length_penalty(length_penalty)
    if eos_id is not None:
        check_int("eos_id", eos_id)
        if eos_id >= model.cfg.vocab_size:
            raise ValueError(f"eos_id 应在 0 到 vocab_size - 1 = {model.cfg.vocab_size - 1} 之间，收到 {eos_id}")


def check_length_penalty(length_penalty: float) -> None:
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) or not (
            math.isfinite(length_penalty)):
        raise ValueError(f"length_penalty 应为有限的实数（0 不归一化，1 按平均每个词元），收到 {length_penalty!r}")


def check_score_args(log_prob: float, length: int, length_penalty: float) -> None:
    """length_normalized 的参数：对数概率之和不大于 0（可以是 -inf），长度至少为 1。"""
    if isinstance(log_prob, bool) or not isinstance(log_prob, (int, float)) or not log_prob <= 0:
        raise ValueError(f"log_prob 应为不大于 0 的实数（对数概率之和，不是概率），收到 {log_prob!r}")
    check_int("length", length, minimum=1)
    check_length_penalty(length_penalty)


def check_store_args(cache: KVCache, layer: int, k_new: Tensor, v_new: Tensor) -> None:
    """k_new、v_new: (B, n_heads, T_new, d_head)，B、n_heads、d_head 与缓存相同；缓存还放得下 T_new 个位置。

    只比较形状、dtype 和设备，不读张量里的数：生成时每层每步都要调用一次。"""
    check_layer(cache, layer)
    B, H, _, d_head = cache.k[layer].shape
    expected = f"(B, n_heads, T_new, d_head)，其中 B = {B}、n_heads = {H}、d_head = {d_head} 与缓存相同"
    for name, t in (("k_new", k_new), ("v_new", v_new)):
        check_tensor(name, t)
        if t.dim() != 4 or (t.size(0), t.size(1), t.size(3)) != (B, H, d_head):
            raise shape_error(name, expected, t.shape)
        if t.dtype != cache.k[layer].dtype or t.device != cache.k[layer].device:
            raise ValueError(f"{name} 的 dtype 和设备应与缓存相同（{cache.k[layer].dtype}，{cache.k[layer].device}），"
                             f"收到 {t.dtype}，{t.device}")
    if v_new.size(2) != k_new.size(2):
        raise shape_error("v_new", f"与 k_new 相同的 {fmt(k_new.shape)}", v_new.shape)
    check_room(cache, k_new.size(2))


def check_reorder_args(cache: KVCache, rows: Tensor) -> None:
    """rows: (n,) 的整数张量，每个行号在 0 到缓存的批大小 - 1 之间。"""
    check_cache(cache)
    check_tensor("rows", rows)
    if rows.dim() != 1 or rows.numel() == 0:
        raise shape_error("rows", "(n,)，n 至少为 1：新的第 i 行取原来的第 rows[i] 行", rows.shape)
    if rows.dtype == torch.bool or rows.is_floating_point() or rows.is_complex():
        raise ValueError(f"rows 应为整数张量（行号），收到 dtype={rows.dtype}；可以先用 rows.long() 转换")
    B = cache.k[0].size(0)
    if rows.min() < 0 or rows.max() >= B:
        raise ValueError(f"rows 里的行号应在 0 到 {B - 1} 之间（缓存有 {B} 行），"
                         f"收到最小 {int(rows.min())}、最大 {int(rows.max())}")


def check_log_prob_args(model: TinyTransformer, prompt: Tensor, tokens: list[int]) -> None:
    """prompt: (1, T_prompt)；tokens: 非空的词元编号列表，每个都在 0 到 vocab_size - 1 之间；
    完整前向要处理 T_prompt + len(tokens) - 1 个位置，不超过 max_len。"""
    check_model(model)
    check_tokens("prompt", prompt, model.cfg)
    if prompt.size(0) != 1:
        raise shape_error("prompt", "(1, T_prompt)：一次只算一条序列", prompt.shape)
    if not isinstance(tokens, (list, tuple)) or not tokens:
        raise ValueError(f"tokens 应是词元编号的列表，至少一个词元，例如 [5, 9, 2]（张量请先 .tolist()），"
                         f"收到 {tokens!r}")
    V = model.cfg.vocab_size
    for token in tokens:
        if isinstance(token, bool) or not isinstance(token, int):
            raise ValueError(f"tokens 里的词编号应为整数，收到 {token!r}")
        if not 0 <= token < V:
            raise ValueError(f"tokens 里的词编号应在 0 到 vocab_size - 1 = {V - 1} 之间，收到 {token}")
    n = prompt.size(1) + len(tokens) - 1
    if n > model.cfg.max_len:
        raise ValueError(f"提示长 {prompt.size(1)}，加上 {len(tokens)} 个词元，完整前向要处理 {n} 个位置，"
                         f"超过了 max_len = {model.cfg.max_len}")


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = TinyConfig(mlp=True, positions="learned")
    model = TinyTransformer(cfg)  # 随机初始化，没有训练：这里只比较两种算法是否一致
    prompt = torch.tensor([[0, 5, 9, 2]])
    with_cache = generate(model, prompt, 20, use_cache=True)
    without = generate(model, prompt, 20, use_cache=False)
    print("带缓存生成:", with_cache.tokens[0].tolist())
    print("不带缓存:  ", without.tokens[0].tolist())
    print("词元相同:", torch.equal(with_cache.tokens, without.tokens),
          f" logits 最大差别 {(with_cache.logits - without.logits).abs().max():.1e}")

    gpt2 = TinyConfig(vocab_size=50257, d_model=768, n_heads=12, n_layers=12, max_len=1024, mlp=True,
                      positions="learned")  # GPT-2 small 的形状
    for t in (1, 1024):
        print(f"GPT-2 small 形状，序列长 {t} 时生成下一个词元：不用缓存 {forward_macs(gpt2, t):,} 次乘加，"
              f"用缓存 {forward_macs(gpt2, 1, t - 1):,} 次")
    for beam in beam_search(model, prompt, 3, 8):
        print(f"束搜索（束宽 3）: {beam.tokens}  对数概率 {beam.log_prob:.3f}")
    print(f"  贪心的对数概率 {sequence_log_prob(model, prompt, generate(model, prompt, 8).tokens[0, 4:].tolist()):.3f}")
    print(f"GPT-2 small 形状、序列长 1024：常规写法不用缓存 {recompute_step_macs(gpt2, 1024):,} 次乘加；"
          f"用缓存的一步读 {decode_step_bytes(gpt2, 1024) / 2**20:.1f} MiB（float16）")
    size = kv_cache_bytes(12, 12, 64, 1024)
    print(f"GPT-2 small 一条 1024 个词元的序列，float16 的 KV 缓存 {size:,} 字节 = {size / 2**20:.0f} MiB")
    try:
        forward_with_cache(model, prompt, KVCache(1, 1, 4, 16, 64))
    except ValueError as e:
        print("缓存与模型不符时:", e)
