"""一个小的 Llama 式解码器：RMSNorm、SwiGLU、旋转位置编码（RoPE）与分组查询注意力（GQA）。

和第一阶段的 GPT（code/tiny_transformer.py）相比，每一层换了四样东西：
- LayerNorm → RMSNorm（code/normalization.py）：不减均值、没有偏置；
- GELU 前馈 → SwiGLU（code/feed_forward.py）：多一个门控矩阵；
- 加到词嵌入上的位置编码 → 每层在 q、k 上做的 RoPE（code/positional_encoding.py 的 apply_rope）；
- 多头注意力 → 分组查询注意力：n_kv_heads 个键值头由 n_heads 个查询头分组共用，KV 缓存随之变小。
所有线性层都没有偏置；输出层可以和词嵌入共用一个矩阵（weight tying）。

to_hf / load_into_hf 把权重复制进 Hugging Face transformers 的 LlamaForCausalLM（测试用它核对 logits）。
transformers 只在 hf_config（to_hf 调用它）里才导入：本文件单独运行、在动手实验里使用都只需要 torch。
形状或参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from attention import scaled_dot_product_attention
from feed_forward import SwiGLU, swiglu_hidden_dim
from kv_cache import kv_cache_bytes
from multi_head_attention import check_head_split
from normalization import RMSNorm
from positional_encoding import apply_rope, sinusoidal_position_encoding
from shapes import check_btd, check_float, check_int, check_same_dtype, check_tensor, fmt, shape_error
from tiny_transformer import check_tokens
from torch import Tensor, nn


# --8<-- [start:config]
@dataclass
class MiniLlamaConfig:
    """模型的超参数。n_kv_heads = n_heads 是普通的多头注意力（MHA），n_kv_heads = 1 是多查询注意力（MQA）。"""

    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2  # 须整除 n_heads：每 n_heads / n_kv_heads 个查询头共用一个键值头
    d_ff: int | None = None  # SwiGLU 的隐藏维度；None 取约 8/3 * d_model
    max_len: int = 64  # 最长的上下文。RoPE 对任何位置都算得出角度，但超出训练长度的位置模型没见过，效果会变差
    rope_base: float = 10000.0
    norm_eps: float = 1e-6
    tie_weights: bool = False  # True：输出层与词嵌入共用同一个矩阵

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ffn_dim(self) -> int:
        return swiglu_hidden_dim(self.d_model) if self.d_ff is None else self.d_ff
# --8<-- [end:config]


# --8<-- [start:mask]
def decoder_mask(t_new: int, t_total: int, device: torch.device | str | None = None) -> Tensor:
    """因果掩码 (t_new, t_total)，True 表示屏蔽。新来的 t_new 个词排在已缓存的 t_total - t_new 个词之后：
    第 i 个新词的位置是 t_total - t_new + i，它只能看到位置不超过自己的键。t_new = t_total 时就是 causal_mask。"""
    check_mask_args(t_new, t_total)
    ones = torch.ones(t_new, t_total, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=t_total - t_new + 1)
# --8<-- [end:mask]


class KVCache:
    """生成时每层缓存的键和值，形状 (B, n_kv_heads, 已缓存的长度, head_dim)。

    存的是键值头，不是查询头：GQA 省下的正是这里的内存。键在存入之前已经按各自的位置旋转过（RoPE），
    以后不用再转。
    """

    def __init__(self, n_layers: int) -> None:
        check_int("n_layers", n_layers, minimum=1)
        self.layers: list[tuple[Tensor, Tensor] | None] = [None] * n_layers

    @property
    def length(self) -> int:
        """已缓存的词元个数。"""
        first = self.layers[0]
        return 0 if first is None else first[0].size(2)

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """把新的 k、v (B, n_kv_heads, T_new, head_dim) 接到第 layer 层已有的缓存后面，返回这一层全部的 (K, V)。"""
        check_update_args(self, layer, k, v)  # 层号、形状与已缓存的相符，见文件末尾
        past = self.layers[layer]
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        self.layers[layer] = (k, v)
        return k, v

    def nbytes(self) -> int:
        """缓存实际占用的字节数（所有层的 K 和 V）。"""
        return sum(t.numel() * t.element_size() for kv in self.layers if kv is not None for t in kv)


# --8<-- [start:gqa]
class GroupedQueryAttention(nn.Module):
    """分组查询注意力：n_heads 个查询头，n_kv_heads 个键值头，第 h 个查询头用第 h // (n_heads / n_kv_heads) 个。"""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, rope_base: float = 10000.0) -> None:
        super().__init__()
        check_gqa_args(d_model, n_heads, n_kv_heads, rope_base)  # 整除、偶数的头维度，见文件末尾
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        self.group = n_heads // n_kv_heads  # 每个键值头服务几个查询头
        self.rope_base = rope_base
        self.q = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.k = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)  # 比 q 窄 group 倍
        self.v = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(n_heads * self.head_dim, d_model, bias=False)

    def forward(self, x: Tensor, positions: Tensor, mask: Tensor | None = None,
                cache: KVCache | None = None, layer: int = 0) -> Tensor:
        """x: (B, T, d_model)；positions: (T,)，这 T 个词的位置，带缓存时从缓存的长度接着数；
        mask: bool，True 为屏蔽，(T, 键的个数)；不给时按位置建因果掩码：每个词只看位置不超过自己的键。"""
        check_gqa_inputs(self, x, positions, cache, layer)  # 形状；带缓存时位置是否接着缓存数，见文件末尾
        B, T, _ = x.shape
        H, H_kv, d = self.n_heads, self.n_kv_heads, self.head_dim
        q = self.q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        k = self.k(x).view(B, T, H_kv, d).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.v(x).view(B, T, H_kv, d).transpose(1, 2)
        q = apply_rope(q, positions, self.rope_base)  # 只旋转 q 和 k，v 不动
        k = apply_rope(k, positions, self.rope_base)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, H_kv, 已缓存 + T, d)
        if mask is None:  # 缓存里的键在位置 0 .. 已缓存 - 1 上，接着是这 T 个
            key_positions = positions if cache is None else torch.arange(k.size(2), device=x.device)
            mask = key_positions[None, :] > positions[:, None]  # 位置在自己之后的键屏蔽掉
        # 把查询头按键值头分组：(B, H, T, d) -> (B, H_kv, group, T, d)。
        # k、v 补一个长度为 1 的维 (B, H_kv, 1, T_k, d)，广播给组里的每个查询头。缓存里只存 H_kv 份；
        # 矩阵乘法时 PyTorch 会临时展开成每个查询头一份，所以省下的是缓存，不是这一步的临时内存
        q = q.reshape(B, H_kv, self.group, T, d)
        y, _ = scaled_dot_product_attention(q, k[:, :, None], v[:, :, None], mask=mask)  # (B, H_kv, group, T, d)
        check_finite_output(y, x)  # float16 下 q·k 可能溢出成 inf，见文件末尾
        y = y.reshape(B, H, T, d).transpose(1, 2).reshape(B, T, H * d)  # 合头
        return self.out(y)
# --8<-- [end:gqa]


# --8<-- [start:block]
class LlamaBlock(nn.Module):
    """一层 Pre-Norm 块：h = x + 注意力(RMSNorm(x))；返回 h + SwiGLU(RMSNorm(h))。"""

    def __init__(self, cfg: MiniLlamaConfig) -> None:
        super().__init__()
        check_config(cfg)
        self.attn_norm = RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.attn = GroupedQueryAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.rope_base)
        self.ffn_norm = RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.ffn = SwiGLU(cfg.d_model, cfg.ffn_dim, bias=False)

    def forward(self, x: Tensor, positions: Tensor, mask: Tensor,
                cache: KVCache | None = None, layer: int = 0) -> Tensor:
        x = x + self.attn(self.attn_norm(x), positions, mask, cache, layer)  # 归一化在子层之前，残差流不归一化
        return x + self.ffn(self.ffn_norm(x))
# --8<-- [end:block]


# --8<-- [start:model]
class MiniLlama(nn.Module):
    """词嵌入 → n_layers 个 LlamaBlock → RMSNorm → 输出层。没有位置嵌入：位置信息由每层的 RoPE 给出。"""

    def __init__(self, cfg: MiniLlamaConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or MiniLlamaConfig()
        check_config(self.cfg)  # 超参数不合理就报错，见文件末尾
        c = self.cfg
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.d_model, eps=c.norm_eps)  # 最后一层之后还要归一化一次
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.apply(init_weights)
        if c.tie_weights:
            # 共用同一个 Parameter：词 i 的嵌入就是给词 i 打分的那一行，参数少了 vocab_size * d_model 个
            self.lm_head.weight = self.embed.weight

    def forward(self, tokens: Tensor, cache: KVCache | None = None) -> Tensor:
        """tokens: (B, T) 的整数张量，返回 logits (B, T, vocab_size)。给了 cache 时接着缓存里的词往后算。"""
        check_forward_args(self, tokens, cache)  # 形状、编号范围、总长度，见文件末尾
        T = tokens.size(1)
        start = 0 if cache is None else cache.length
        positions = torch.arange(start, start + T, device=tokens.device)
        mask = decoder_mask(T, start + T, device=tokens.device)
        x = self.embed(tokens)  # (B, T, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, mask, cache, layer=i)
        return self.lm_head(self.norm(x))
# --8<-- [end:model]


def init_weights(module: nn.Module) -> None:
    """线性层和嵌入取 N(0, 0.02²)（与 transformers 的 initializer_range = 0.02 相同）；RMSNorm 的增益保持为 1。

    共用权重时输出层就是嵌入矩阵：默认的 N(0, 1) 嵌入会让一开始的 logits 大到约 sqrt(d_model)。
    用法是 model.apply(init_weights)：它对每一层各调用一次；直接 init_weights(model) 只看最外层，什么也不做。
    """
    if not isinstance(module, nn.Module):
        raise ValueError(f"init_weights 的参数应为 nn.Module（一层），收到 {type(module).__name__}；"
                         "给整个模型初始化用 model.apply(init_weights)")
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


def param_count(cfg: MiniLlamaConfig) -> int:
    """按公式数出 MiniLlama(cfg) 的参数个数（共用的矩阵只算一次），不用真的建模型：7B 的配置也能算。"""
    check_config(cfg)
    d = cfg.d_model
    per_layer = sum(block_param_count(cfg).values())  # 注意力、SwiGLU、两个 RMSNorm 的增益
    embed = cfg.vocab_size * d
    head = 0 if cfg.tie_weights else cfg.vocab_size * d
    return embed + cfg.n_layers * per_layer + d + head


# --8<-- [start:kv-bytes]
def kv_cache_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """每多一个词元，KV 缓存多占的字节数：K、V 两份 × 层数 × 键值头数 × 每头维数 × 每个数的字节数。

    和查询头的个数无关：GQA 把 n_kv_heads 从 n_heads 降下来，缓存就按同样的比例变小。
    bytes_per_value：float16 / bfloat16 为 2，float32 为 4。
    """
    return kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len=1, bytes_per_value=bytes_per_value)
# --8<-- [end:kv-bytes]


# --8<-- [start:real-configs]
# 两个公开模型的结构，取自它们在 Hugging Face 上发布的 config.json（这里下载不了，数值照发布的文件写下）：
#   meta-llama/Llama-2-7b-hf：   hidden_size 4096，intermediate_size 11008，num_hidden_layers 32，
#                                num_attention_heads 32，num_key_value_heads 32，vocab_size 32000，
#                                max_position_embeddings 4096，rms_norm_eps 1e-05，（rope_theta 默认 10000）
#   meta-llama/Meta-Llama-3-8B： hidden_size 4096，intermediate_size 14336，num_hidden_layers 32，
#                                num_attention_heads 32，num_key_value_heads 8，vocab_size 128256，
#                                max_position_embeddings 8192，rms_norm_eps 1e-05，rope_theta 500000.0
# 两者都不共用输出层（tie_word_embeddings false）。
LLAMA2_7B = MiniLlamaConfig(vocab_size=32000, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32, d_ff=11008,
                            max_len=4096, rope_base=10000.0, norm_eps=1e-5)
LLAMA3_8B = MiniLlamaConfig(vocab_size=128256, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
                            max_len=8192, rope_base=500000.0, norm_eps=1e-5)
REAL_CONFIGS = {"meta-llama/Llama-2-7b-hf": LLAMA2_7B, "meta-llama/Meta-Llama-3-8B": LLAMA3_8B}


def kv_cache_table(seq_len: int = 4096, bytes_per_value: int = 2) -> list[dict[str, Any]]:
    """两个真实配置的 KV 缓存：每个词元多少字节、seq_len 个词元一共多少字节（批大小 1）。"""
    check_int("seq_len", seq_len, minimum=1)
    rows = []
    for name, cfg in REAL_CONFIGS.items():
        per_token = kv_cache_bytes_per_token(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, bytes_per_value)
        rows.append({"model": name, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads,
                     "bytes_per_token": per_token, "total_bytes": per_token * seq_len,
                     "params": param_count(cfg)})
    return rows
# --8<-- [end:real-configs]


# --8<-- [start:rope-scores]
def rope_scores(q: Tensor, k: Tensor, offset: int = 0, size: int = 16, base: float = 10000.0) -> Tensor:
    """同一对 q、k（各为 (d,)）放在位置 offset .. offset + size - 1 上，旋转之后两两点积。

    返回 (size, size) 的表：第 i 行第 j 列是「q 在位置 offset + i、k 在位置 offset + j」的分数。
    RoPE 下它只取决于 i - j：整块往后挪（改 offset），表不变；每条对角线上的数都相同。
    在 float64 里算、返回 float64：半精度的 q、k 很小时分数会下溢成 0，很大时会溢出成 inf。
    """
    check_score_args(q, k, offset, size, base)
    q, k = q.double(), k.double()
    positions = torch.arange(offset, offset + size)
    qs = apply_rope(q.expand(size, -1), positions, base)  # (size, d)：每个位置各转一次
    ks = apply_rope(k.expand(size, -1), positions, base)
    return qs @ ks.T


def added_position_scores(q: Tensor, k: Tensor, offset: int = 0, size: int = 16) -> Tensor:
    """对照：把正弦位置编码直接加到 q、k 上再点积（相当于第一阶段的做法、投影取单位矩阵）。

    (q + p_m)·(k + p_n) 里有 q·p_n、p_m·k 这样只和绝对位置有关的项，整块挪动后表就变了。
    和 rope_scores 一样在 float64 里算、返回 float64。
    """
    check_score_args(q, k, offset, size, max_positions=MAX_ADDED_POSITIONS)
    q, k = q.double(), k.double()
    pe = sinusoidal_position_encoding(offset + size, q.numel()).double()[offset:]  # (size, d)
    return (q + pe) @ (k + pe).T
# --8<-- [end:rope-scores]


MAX_ADDED_POSITIONS = 1_000_000  # added_position_scores 要先算出整张正弦编码表：最多这么多个位置


def block_param_count(cfg: MiniLlamaConfig) -> dict[str, int]:
    """一个 LlamaBlock 的参数，分成注意力、SwiGLU、两个 RMSNorm 三部分（按公式数，不建模型）。"""
    check_config(cfg)
    d, hd = cfg.d_model, cfg.head_dim
    return {"attention": 2 * d * cfg.n_heads * hd + 2 * d * cfg.n_kv_heads * hd,
            "ffn": 3 * d * cfg.ffn_dim, "norms": 2 * d}


# ---------- 与 transformers 的 LlamaForCausalLM 互通：测试用它核对我们的实现 ----------


# --8<-- [start:hf-permute]
def rope_pairs_to_halves(w: Tensor, n_heads: int) -> Tensor:
    """重排 q 或 k 投影的行，让 transformers 的 RoPE 写法算出和我们一样的结果。

    两种写法旋转的角度相同，配对的维度不同：
    - 我们（positional_encoding.apply_rope）把相邻的 (2i, 2i+1) 当作一对；
    - transformers 的 rotate_half 把每个头切成前后两半，第 i 维和第 i + d/2 维是一对。
    把每个头的第 2i 行挪到第 i 行、第 2i+1 行挪到第 i + d/2 行，同一对数在两边就受到同样的旋转。
    q 和 k 按同一种方式重排，点积 q·k 不变（只是换了求和的顺序），所以注意力权重、v 和输出投影都不用动。
    不重排也不会报错：形状完全一样，只是 logits 不同。从 Meta 原始权重转换到 transformers 时也要做这种重排。
    """
    check_permute_args(w, n_heads)
    rows, cols = w.shape
    d = rows // n_heads
    order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # 0, 2, 4, ..., 1, 3, 5, ...
    return w.view(n_heads, d, cols)[:, order].reshape(rows, cols)
# --8<-- [end:hf-permute]


def hf_config(cfg: MiniLlamaConfig) -> Any:
    """与 cfg 结构相同的 transformers.LlamaConfig（eager 注意力：逐项计算，结果可复现）。

    RoPE 的底数按 transformers 5 的写法放进 rope_parameters（仓库锁定 5.24.0）；4.x 不认识这个参数，
    会把它原样存下、底数留在默认的 10000，所以遇到 4.x 就报错。建好之后再读回底数核对一遍。
    """
    check_config(cfg)
    import transformers  # 只在这里需要 transformers

    check_transformers_version(transformers.__version__)
    config = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.ffn_dim,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim, max_position_embeddings=cfg.max_len, rms_norm_eps=cfg.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base},
        tie_word_embeddings=cfg.tie_weights, attention_bias=False, mlp_bias=False, hidden_act="silu",
        bos_token_id=None, eos_token_id=None, pad_token_id=None, attn_implementation="eager",
    )
    check_hf_rope(config, cfg.rope_base)
    return config


def hf_rope_theta(config: Any) -> float | None:
    """LlamaConfig 里 RoPE 的底数：transformers 5 放在 rope_parameters["rope_theta"]，4.x 放在 rope_theta。"""
    params = getattr(config, "rope_parameters", None)
    if isinstance(params, dict) and "rope_theta" in params:
        return params["rope_theta"]
    return getattr(config, "rope_theta", None)


def hf_state_dict(model: MiniLlama) -> dict[str, Tensor]:
    """把我们的参数改成 LlamaForCausalLM 的名字；q、k 的行按 rope_pairs_to_halves 重排。"""
    check_model(model)
    cfg = model.cfg
    sd = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm.gain,
          "lm_head.weight": model.lm_head.weight}  # 共用权重时这两项是同一个 Parameter，最后一行会各复制一份
    for i, block in enumerate(model.blocks):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = block.attn_norm.gain
        sd[p + "post_attention_layernorm.weight"] = block.ffn_norm.gain
        sd[p + "self_attn.q_proj.weight"] = rope_pairs_to_halves(block.attn.q.weight, cfg.n_heads)
        sd[p + "self_attn.k_proj.weight"] = rope_pairs_to_halves(block.attn.k.weight, cfg.n_kv_heads)
        sd[p + "self_attn.v_proj.weight"] = block.attn.v.weight
        sd[p + "self_attn.o_proj.weight"] = block.attn.out.weight
        sd[p + "mlp.gate_proj.weight"] = block.ffn.gate.weight
        sd[p + "mlp.up_proj.weight"] = block.ffn.up.weight
        sd[p + "mlp.down_proj.weight"] = block.ffn.down.weight
    # 每项复制一份，不与 model 共用内存。共用权重时 embed_tokens 和 lm_head 因此成了两个值相同的独立张量：
    # 装进 tie_word_embeddings=True 的 LlamaForCausalLM 时，两项先后拷进它那一个共用的矩阵，值一样，不冲突
    return {name: t.detach().clone() for name, t in sd.items()}


def to_hf(model: MiniLlama) -> tuple[Any, dict[str, Tensor]]:
    """返回 (transformers.LlamaConfig, state_dict)：LlamaForCausalLM(config) 装入这份 state_dict 就与 model 等价。"""
    check_model(model)
    return hf_config(model.cfg), hf_state_dict(model)


def load_into_hf(model: MiniLlama, hf_model: Any) -> Any:
    """把 model 的权重复制进一个已经建好的 LlamaForCausalLM（结构须与 model.cfg 相同），返回 hf_model。"""
    check_model(model)
    check_hf_model(model, hf_model)
    with torch.no_grad():
        missing, unexpected = hf_model.load_state_dict(hf_state_dict(model), strict=False)
    # 旋转位置编码的频率表是不保存的 buffer，本来就不在 state_dict 里；除此之外不许缺、不许多
    missing = [n for n in missing if "rotary_emb" not in n]
    if missing or unexpected:
        raise ValueError(f"hf_model 的参数名与本模型对不上：缺少 {missing}，多出 {unexpected}")
    return hf_model


# ---------- 参数检查：不在文章里展示，出错时给出看得懂的消息 ----------


def check_head_args(d_model: int, n_heads: int, n_kv_heads: int) -> None:
    """d_model 被 n_heads 整除、n_heads 被 n_kv_heads 整除，每个头的维数是偶数（RoPE 两两配对）。"""
    check_head_split(d_model, n_heads)  # 和第一阶段的多头注意力同一条规则
    check_int("n_kv_heads", n_kv_heads, minimum=1)
    if n_kv_heads > n_heads or n_heads % n_kv_heads != 0:
        raise ValueError(
            f"n_heads = {n_heads} 应能被 n_kv_heads = {n_kv_heads} 整除：查询头平均分成 n_kv_heads 组，"
            f"每组共用一个键值头（n_kv_heads = 1 是 MQA，n_kv_heads = n_heads 是普通的多头注意力）"
        )
    head_dim = d_model // n_heads
    if head_dim % 2 != 0:
        raise ValueError(
            f"每个头的维数 d_model / n_heads = {d_model} / {n_heads} = {head_dim} 应为偶数："
            "RoPE 把维度两两配对旋转。可以换一个 n_heads，或把 d_model 调成 2 * n_heads 的倍数"
        )


def check_finite_positive(name: str, value: object) -> None:
    """value 是有限的正数（int 或 float）：写成字符串 "1e-5"、inf、nan、0 或负数都不行。"""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} 应为有限的正数，收到 {value!r}")


def check_gqa_args(d_model: int, n_heads: int, n_kv_heads: int, rope_base: float) -> None:
    check_head_args(d_model, n_heads, n_kv_heads)
    check_finite_positive("rope_base", rope_base)


def check_config(cfg: MiniLlamaConfig) -> None:
    """MiniLlamaConfig 的各项合理：正整数，头数能整除，头维度为偶数，eps 和 rope_base 为正数。"""
    if not isinstance(cfg, MiniLlamaConfig):
        raise ValueError(f"cfg 应为 MiniLlamaConfig，收到 {type(cfg).__name__}")
    check_int("vocab_size", cfg.vocab_size, minimum=1)
    check_int("n_layers", cfg.n_layers, minimum=1)
    check_int("max_len", cfg.max_len, minimum=1)
    check_head_args(cfg.d_model, cfg.n_heads, cfg.n_kv_heads)
    if cfg.d_ff is not None:
        check_int("d_ff", cfg.d_ff, minimum=1)
    check_finite_positive("rope_base", cfg.rope_base)
    check_finite_positive("norm_eps", cfg.norm_eps)
    if not isinstance(cfg.tie_weights, bool):
        raise ValueError(f"tie_weights 应为 True 或 False，收到 {cfg.tie_weights!r}")


def check_mask_args(t_new: int, t_total: int) -> None:
    check_int("t_new", t_new)
    check_int("t_total", t_total)
    if t_new > t_total:
        raise ValueError(f"t_new = {t_new} 不能超过 t_total = {t_total}：新来的词也算在总长度里")


def check_gqa_inputs(attn: GroupedQueryAttention, x: Tensor, positions: Tensor, cache: KVCache | None,
                     layer: int) -> None:
    """x 为 (B, T, d_model)，dtype 与参数相同，没有 inf、nan；positions 为 (T,) 的张量；cache 为 KVCache 或 None。

    带缓存时，这一层已缓存了 n 个词元（位置 0 .. n - 1），新来的 T 个的位置必须是 n, n + 1, …, n + T - 1：
    每一步都从 0 数，RoPE 给出的相对距离就全错了，而形状都对，不会报别的错。
    """
    check_btd("x", x, attn.d_model)
    check_same_dtype("x", x, "模型参数", attn.q.weight.dtype)
    bad = int((~torch.isfinite(x)).sum())
    if bad:
        raise ValueError(f"x 里有 {bad} 个 inf 或 nan：注意力的输出会全是 nan。先找出它们是从哪一步来的")
    check_tensor("positions", positions)
    T = x.size(1)
    if positions.dim() != 1 or positions.size(0) != T:
        raise shape_error("positions", f"(T,) = {fmt((T,))}，x 里每个词元的位置", positions.shape)
    check_cache(cache)
    if cache is None:
        return
    check_layer(cache, layer)
    past = cache.layers[layer]
    cached = 0 if past is None else past[0].size(2)
    if positions.tolist() != list(range(cached, cached + T)):
        raise ValueError(
            f"带 KV 缓存时，positions 应从这一层已缓存的词元数接着数：第 {layer} 层已缓存 {cached} 个"
            f"{f'（位置 0 到 {cached - 1}）' if cached else ''}，这 {T} 个新词元的位置应为 "
            f"{show_positions(range(cached, cached + T))}，"
            f"收到 {show_positions(positions.tolist())}。每一步都从 0 数的话，RoPE 给出的相对距离就全错了"
        )


def show_positions(values: Any) -> str:
    """位置写成 [5, 6, 7]；太长时只写头尾：[0, 1, 2, …, 99]。"""
    values = [int(v) if float(v).is_integer() else v for v in values]
    if len(values) <= 8:
        return "[" + ", ".join(str(v) for v in values) + "]"
    return "[" + ", ".join(str(v) for v in values[:3]) + f", …, {values[-1]}]"


def check_finite_output(y: Tensor, x: Tensor) -> None:
    """注意力的输出没有 inf、nan（输入 x 已检查过）：出了就是 q·k 超出了 dtype 的范围，或者参数坏了。"""
    if torch.isfinite(y).all():
        return
    raise ValueError(
        f"注意力的输出里出现了 inf 或 nan，而输入 x 里没有：{x.dtype} 能表示的最大数约为 {torch.finfo(x.dtype).max:g}，"
        f"q·k 很可能超出了它（x 里最大的绝对值是 {x.abs().max().item():g}）。请改用 float32 或 bfloat16；"
        "已经是 float32 的话，看看模型参数里是否有 inf 或 nan（训练发散时会这样）"
    )


def check_cache(cache: object) -> None:
    if cache is not None and not isinstance(cache, KVCache):
        raise ValueError(f"cache 应为 KVCache 或 None，收到 {type(cache).__name__}；可以用 KVCache(n_layers) 新建")


def check_layer(cache: KVCache, layer: int) -> None:
    check_int("layer", layer)
    if layer >= len(cache.layers):
        raise ValueError(f"layer 应在 0 到 {len(cache.layers) - 1} 之间，收到 {layer}")


def check_update_args(cache: KVCache, layer: int, k: Tensor, v: Tensor) -> None:
    """layer 在层数之内；k、v 是同形状、同 dtype 的浮点张量 (B, n_kv_heads, T_new, head_dim)，与这一层已缓存的相符。"""
    check_layer(cache, layer)
    hint = "先拆头再存：x.view(B, T, n_kv_heads, head_dim).transpose(1, 2)"
    for name, t in (("k", k), ("v", v)):
        check_float(name, t)
        if t.dim() != 4:
            raise shape_error(name, "(B, n_kv_heads, T_new, head_dim)，四维", t.shape, hint)
    if v.shape != k.shape:
        raise shape_error("v", f"和 k 一样的 {fmt(k.shape)}", v.shape)
    check_same_dtype("v", v, "k", k.dtype)
    past = cache.layers[layer]
    if past is None:
        return
    B, H_kv, _, d = past[0].shape
    if (k.size(0), k.size(1), k.size(3)) != (B, H_kv, d):
        raise shape_error("k", f"(B, n_kv_heads, T_new, head_dim)，B = {B}、n_kv_heads = {H_kv}、head_dim = {d}，"
                          f"与第 {layer} 层已缓存的 {fmt(past[0].shape)} 相符", k.shape)
    check_same_dtype("k", k, "已缓存的 K", past[0].dtype)


def check_score_args(q: Tensor, k: Tensor, offset: int, size: int, base: float = 10000.0,
                     max_positions: int | None = None) -> None:
    """q、k 是同样长度的一维浮点张量，长度为偶数；offset ≥ 0，size ≥ 1；base 是有限的正数。"""
    check_tensor("q", q)
    check_tensor("k", k)
    if q.dim() != 1 or not q.is_floating_point() or q.numel() % 2 != 0:
        raise shape_error("q", "(d,) 的浮点张量，d 为偶数（RoPE 两两配对）", q.shape)
    if tuple(k.shape) != tuple(q.shape) or k.dtype != q.dtype:
        raise shape_error("k", f"和 q 一样的 {fmt(q.shape)}、dtype {q.dtype}", k.shape)
    check_int("offset", offset)
    check_int("size", size, minimum=1)
    check_finite_positive("base", base)
    if max_positions is not None and offset + size > max_positions:
        raise ValueError(f"offset + size = {offset + size:,} 太大：这个对照要先算出前 offset + size 个位置的整张"
                         f"正弦编码表，最多 {max_positions:,} 个位置（rope_scores 只算用到的位置，没有这个限制）")


def check_model(model: object) -> None:
    if not isinstance(model, MiniLlama):
        raise ValueError(f"model 应为 MiniLlama，收到 {type(model).__name__}")


def check_forward_args(model: MiniLlama, tokens: Tensor, cache: KVCache | None) -> None:
    """tokens 为 (B, T) 的整数张量、编号在词表内；加上缓存里的词，总长度不超过 max_len。"""
    check_tokens("tokens", tokens, model.cfg)
    if tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens 的 dtype 应为 torch.long（int64）或 torch.int32：nn.Embedding 只收这两种，"
                         f"收到 {tokens.dtype}；可以先用 tokens.long() 转换")
    check_cache(cache)
    if cache is None:
        return
    if len(cache.layers) != model.cfg.n_layers:
        raise ValueError(f"cache 有 {len(cache.layers)} 层，模型有 n_layers = {model.cfg.n_layers} 层："
                         "请用 KVCache(model.cfg.n_layers) 新建")
    total = cache.length + tokens.size(1)
    if total > model.cfg.max_len:
        raise ValueError(f"缓存里已有 {cache.length} 个词元，再加 {tokens.size(1)} 个共 {total} 个，"
                         f"超过了 max_len = {model.cfg.max_len}")
    first = cache.layers[0]
    if first is not None and first[0].size(0) != tokens.size(0):
        raise ValueError(f"tokens 的批大小 {tokens.size(0)} 与缓存里的 {first[0].size(0)} 不同")


def check_permute_args(w: Tensor, n_heads: int) -> None:
    """w 是二维的 (n_heads * head_dim, d_model)，head_dim 为正的偶数。"""
    check_tensor("w", w)
    if w.dim() != 2:
        raise shape_error("w", "二维 (行, 列) = (n_heads * head_dim, d_model)，q 或 k 投影的 weight", w.shape)
    check_int("n_heads", n_heads, minimum=1)
    rows = w.size(0)
    if rows % n_heads != 0:
        raise ValueError(f"w 的行数 {rows} 应能被 n_heads = {n_heads} 整除：每个头占 head_dim 行。"
                         "k 投影要传 n_kv_heads")
    d = rows // n_heads
    if d == 0 or d % 2 != 0:
        raise ValueError(f"每个头的行数 {rows} / {n_heads} = {d} 应为正的偶数：RoPE 把维度两两配对")


def check_transformers_version(version: str) -> None:
    if int(version.split(".")[0]) < 5:
        raise ValueError(
            f"hf_config 按 transformers 5 的接口（rope_parameters）写配置，这里装的是 {version}："
            "4.x 会把 rope_parameters 当作不认识的参数存下，RoPE 的底数悄悄留在 10000。"
            "请按 requirements.txt 装 transformers==5.24.0"
        )


def check_hf_rope(config: Any, rope_base: float) -> None:
    """建好的 LlamaConfig 读回来的 RoPE 底数就是 rope_base。"""
    theirs = hf_rope_theta(config)
    if theirs != rope_base:
        raise ValueError(f"LlamaConfig 里的 rope_theta 是 {theirs}，应为 {rope_base}：这个版本的 transformers 没有收下 "
                         "rope_parameters。请按 requirements.txt 装 transformers==5.24.0")


def check_hf_model(model: MiniLlama, hf_model: Any) -> None:
    """hf_model 是结构与 model.cfg 相同的 LlamaForCausalLM。"""
    config = getattr(hf_model, "config", None)
    if config is None or getattr(config, "model_type", None) != "llama":
        raise ValueError(f"hf_model 应为 transformers 的 LlamaForCausalLM，收到 {type(hf_model).__name__}")
    cfg = model.cfg
    pairs = {
        "vocab_size": (config.vocab_size, cfg.vocab_size), "hidden_size": (config.hidden_size, cfg.d_model),
        "intermediate_size": (config.intermediate_size, cfg.ffn_dim),
        "num_hidden_layers": (config.num_hidden_layers, cfg.n_layers),
        "num_attention_heads": (config.num_attention_heads, cfg.n_heads),
        "num_key_value_heads": (config.num_key_value_heads, cfg.n_kv_heads),
        "head_dim": (config.head_dim, cfg.head_dim),
        "rms_norm_eps": (config.rms_norm_eps, cfg.norm_eps),
        "rope_theta": (hf_rope_theta(config), cfg.rope_base),
        "tie_word_embeddings": (config.tie_word_embeddings, cfg.tie_weights),
    }
    wrong = [f"{name} 是 {theirs}，应为 {ours}" for name, (theirs, ours) in pairs.items() if theirs != ours]
    if wrong:
        raise ValueError("hf_model 的结构与 model.cfg 不同：" + "；".join(wrong) + "。可以用 hf_config(model.cfg) 建")


def format_bytes(n: int) -> str:
    """把字节数写成 KiB / MiB / GiB（按 1024 进位）。"""
    check_int("n", n)
    for unit, power in (("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if n >= 1024**power:
            return f"{n / 1024**power:g} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    torch.manual_seed(0)
    print("参数量（按公式，不建模型；共用输出层的矩阵只算一次）:")
    for n_kv in (4, 2, 1):
        for tie in (False, True):
            cfg = MiniLlamaConfig(n_kv_heads=n_kv, tie_weights=tie)
            model = MiniLlama(cfg)
            counted = sum(p.numel() for p in model.parameters())  # parameters() 不重复列出共用的参数
            kind = {4: "MHA", 1: "MQA"}.get(n_kv, "GQA")
            print(f"  n_heads = 4，n_kv_heads = {n_kv}（{kind}），共用输出层 {tie!s:<5}：{param_count(cfg):>7,}"
                  f"（实际数出 {counted:,}）")
    cfg = MiniLlamaConfig()
    model = MiniLlama(cfg).eval()
    tokens = torch.randint(0, cfg.vocab_size, (2, 10))
    with torch.no_grad():
        logits = model(tokens)
        cache = KVCache(cfg.n_layers)
        steps = [model(tokens[:, i : i + 1], cache) for i in range(tokens.size(1))]  # 一次一个词元
    print("logits 形状:", tuple(logits.shape))
    diff = (torch.cat(steps, dim=1) - logits).abs().max().item()
    print(f"带 KV 缓存逐个计算与一次算完的最大差 {diff:.1e}；缓存占 {cache.nbytes():,} 字节"
          f"（{cfg.n_layers} 层 × 2 × {cfg.n_kv_heads} 个键值头 × {cfg.head_dim} 维 × 10 个词元 × 2 条 × 4 字节）")

    print("\nKV 缓存（float16，批大小 1，上下文 4096 个词元）:")
    for row in kv_cache_table(seq_len=4096):
        print(f"  {row['model']:<28} 查询头 {row['n_heads']}，键值头 {row['n_kv_heads']:>2}：每个词元 "
              f"{format_bytes(row['bytes_per_token'])}，4096 个词元 {format_bytes(row['total_bytes'])}；"
              f"参数 {row['params'] / 1e9:.2f}B")
    a, b = (kv_cache_bytes_per_token(c.n_layers, c.n_kv_heads, c.head_dim) for c in (LLAMA2_7B, LLAMA3_8B))
    print(f"  Llama 3 8B 每个词元的缓存是 Llama 2 7B 的 1/{a // b}：键值头从 32 个减到 8 个")
    print(f"  两者的查询头都是 32 个；参数多出的部分主要来自词表（{LLAMA3_8B.vocab_size:,} 对 "
          f"{LLAMA2_7B.vocab_size:,}）和更宽的 SwiGLU（{LLAMA3_8B.d_ff} 对 {LLAMA2_7B.d_ff}）")
