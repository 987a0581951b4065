"""code/llama.py：与 Hugging Face transformers 的 LlamaForCausalLM 逐项对照。

- 整个模型：小的随机 LlamaConfig 在 CPU 上建成（不下载），装入我们的权重，float32 下 logits 相差不超过 1e-5；
  n_kv_heads 取 1（MQA）、2（GQA）和 n_heads（MHA），共用输出层与否各一遍，序列长度用满 max_len；
  不重排 q、k 的行，logits 就对不上（说明重排确有必要，测试也能发现漏掉它）；
- 零件：RMSNorm 对 torch.nn.RMSNorm 和 LlamaRMSNorm，SwiGLU 对 LlamaMLP，RoPE 的重排对 transformers 的旋转；
  GQA 在 n_kv_heads = n_heads 时等于 code/multi_head_attention.py 的多头注意力，分组时等于把键值头复制给每组，
  也等于 F.scaled_dot_product_attention(enable_gqa=True)；
- KV 缓存的字节数：按公式手算的数（不抄程序的输出），并与 KVCache 实际占用的字节对照；
- 参数量：公式、实际数出的、transformers 建出的（真实配置在 meta 设备上建，不占内存）三者一致；
- 输入不对时抛出 ValueError，消息说清楚是哪个参数、怎么改。
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from attention import causal_mask
from feed_forward import SwiGLU
from llama import (
    LLAMA2_7B,
    LLAMA3_8B,
    GroupedQueryAttention,
    KVCache,
    LlamaBlock,
    MiniLlama,
    MiniLlamaConfig,
    added_position_scores,
    block_param_count,
    decoder_mask,
    hf_config,
    init_weights,
    kv_cache_bytes_per_token,
    kv_cache_table,
    load_into_hf,
    param_count,
    rope_pairs_to_halves,
    rope_scores,
    to_hf,
)
from multi_head_attention import MultiHeadAttention
from normalization import RMSNorm
from positional_encoding import apply_rope, sinusoidal_position_encoding
from transformers import LlamaForCausalLM  # 导入一次约 4 s，整个文件共用
from transformers.models.llama.modeling_llama import (
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

REPO = Path(__file__).resolve().parents[2]
F64 = torch.float64


def small_config(n_kv_heads: int = 2, tie_weights: bool = False, **kw) -> MiniLlamaConfig:
    base = {"vocab_size": 97, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 40, "max_len": 24}
    return MiniLlamaConfig(**{**base, **kw}, n_kv_heads=n_kv_heads, tie_weights=tie_weights)


def randomize(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """所有参数换成随机数，RMSNorm 的增益也不再是 1：层的顺序、归一化用错了哪一个都会在 logits 里看出来。

    默认的 0.02 初始化让各层的输出很小，差错也跟着变小；这里每个矩阵（嵌入也一样）的元素取 N(0, 1/最后一维)，
    logits 是几个单位的量级。嵌入不缩小的话，共用输出层时 logits 会到 30 以上，float32 的舍入误差也跟着放大。
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            if name.endswith("gain"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(noise / p.size(-1) ** 0.5)
    return model


def make_pair(cfg: MiniLlamaConfig, seed: int = 0) -> tuple[MiniLlama, LlamaForCausalLM]:
    torch.manual_seed(seed)
    ours = randomize(MiniLlama(cfg), seed).eval()
    config, state = to_hf(ours)
    theirs = LlamaForCausalLM(config).eval()
    theirs.load_state_dict(state)
    return ours, theirs


def tokens_for(cfg: MiniLlamaConfig, B: int, T: int, seed: int) -> torch.Tensor:
    return torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))


# ====================== 整个模型 ======================

KV_HEADS = {"MQA n_kv_heads=1": 1, "GQA n_kv_heads=2": 2, "MHA n_kv_heads=n_heads": 4}


@pytest.mark.parametrize("n_kv", list(KV_HEADS.values()), ids=list(KV_HEADS))
@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_logits_equal_llama_for_causal_lm(n_kv: int, tie: bool) -> None:
    cfg = small_config(n_kv, tie)
    ours, theirs = make_pair(cfg, seed=10 * n_kv + tie)
    assert theirs.config._attn_implementation == "eager"
    assert (theirs.lm_head.weight is theirs.model.embed_tokens.weight) == tie
    for B, T in ((3, cfg.max_len), (2, 5), (1, 1)):  # 用满上下文、短序列、一个词元
        tokens = tokens_for(cfg, B, T, seed=T)
        tokens[0, 0], tokens[-1, -1] = 0, cfg.vocab_size - 1  # 词表的两端也在里面
        with torch.no_grad():
            a, b = ours(tokens), theirs(tokens).logits
        assert a.shape == b.shape == (B, T, cfg.vocab_size)
        assert a.abs().max() > 1  # logits 不是几乎为 0 的小数：1e-5 的容差才有意义
        assert (a - b).abs().max().item() <= 1e-5


def test_without_the_rope_permutation_logits_differ() -> None:
    """只是照名字复制、不重排 q、k 的行：不报错，形状全对，logits 却差得很远。"""
    cfg = small_config(2)
    ours, theirs = make_pair(cfg, seed=3)
    with torch.no_grad():
        for ours_block, layer in zip(ours.blocks, theirs.model.layers, strict=True):
            layer.self_attn.q_proj.weight.copy_(ours_block.attn.q.weight)
            layer.self_attn.k_proj.weight.copy_(ours_block.attn.k.weight)
        tokens = tokens_for(cfg, 2, cfg.max_len, seed=4)
        assert (ours(tokens) - theirs(tokens).logits).abs().max() > 0.1
        # 位置 0 不旋转，两种配对方式在那里一样：差别只来自 RoPE 的配对
        first = tokens[:, :1]
        assert (ours(first) - theirs(first).logits).abs().max() <= 1e-5


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_load_into_an_existing_hf_model(tie: bool) -> None:
    cfg = small_config(1, tie)
    torch.manual_seed(5)
    ours = randomize(MiniLlama(cfg), 5).eval()
    theirs = LlamaForCausalLM(hf_config(cfg)).eval()  # 自己的随机初始化，随后被覆盖
    assert load_into_hf(ours, theirs) is theirs
    tokens = tokens_for(cfg, 2, cfg.max_len, seed=6)
    with torch.no_grad():
        assert (ours(tokens) - theirs(tokens).logits).abs().max().item() <= 1e-5
    assert (theirs.lm_head.weight is theirs.model.embed_tokens.weight) == tie


@pytest.mark.parametrize("base", [500000.0, 100.0], ids=["llama3-base", "small-base"])
def test_logits_equal_llama_for_causal_lm_with_another_rope_base(base: float) -> None:
    """rope_base 不是 transformers 默认的 10000 时也对得上（Llama 3 是 500000）；换回默认值，logits 就不同了。"""
    cfg = small_config(2, rope_base=base)
    ours, theirs = make_pair(cfg, seed=int(base) % 97)
    assert theirs.config.rope_parameters["rope_theta"] == base
    tokens = tokens_for(cfg, 2, cfg.max_len, seed=7)
    default = LlamaForCausalLM(hf_config(small_config(2))).eval()
    default.load_state_dict(theirs.state_dict())
    with torch.no_grad():
        a = ours(tokens)
        assert (a - theirs(tokens).logits).abs().max().item() <= 1e-5
        assert (a - default(tokens).logits).abs().max().item() > 1e-2  # 底数确实起作用：丢了它，测试能发现


def test_hf_config_refuses_transformers_4(monkeypatch) -> None:
    """hf_config 用 transformers 5 的 rope_parameters；4.x 会把它当作不认识的参数存下、底数留在 10000。"""
    import transformers

    monkeypatch.setattr(transformers, "__version__", "4.46.3")
    with pytest.raises(ValueError, match=r"transformers 5.*4\.46\.3.*5\.24\.0"):
        hf_config(small_config(rope_base=500000.0))


def test_hf_config_checks_the_rope_base_it_wrote(monkeypatch) -> None:
    """LlamaConfig 没有收下 rope_parameters 时（像 4.x 那样底数还是 10000），hf_config 报错而不是悄悄建错。"""
    import transformers

    class Forgetful(transformers.LlamaConfig):
        def __init__(self, **kw):
            kw.pop("rope_parameters", None)
            super().__init__(**kw)

    monkeypatch.setattr(transformers, "LlamaConfig", Forgetful)
    with pytest.raises(ValueError, match=r"rope_theta 是 10000\.0，应为 500000\.0"):
        hf_config(small_config(rope_base=500000.0))


def test_parameter_counts_agree_with_transformers() -> None:
    for n_kv in (1, 2, 4):
        for tie in (False, True):
            cfg = small_config(n_kv, tie)
            ours, theirs = make_pair(cfg)
            n_ours = sum(p.numel() for p in ours.parameters())  # 共用的 Parameter 只列一次
            assert n_ours == param_count(cfg) == sum(p.numel() for p in theirs.parameters())
    # 真实配置在 meta 设备上建：只有形状，不分配内存
    for cfg in (LLAMA2_7B, LLAMA3_8B):
        with torch.device("meta"):
            big = LlamaForCausalLM(hf_config(cfg))
        assert sum(p.numel() for p in big.parameters()) == param_count(cfg)


def test_published_parameter_counts() -> None:
    """手算（d = 4096，32 层）：
    Llama 2 7B：嵌入和输出层各 32000·4096 = 131,072,000；每层注意力 4·4096² = 67,108,864，
      SwiGLU 3·4096·11008 = 135,266,304，两个 RMSNorm 8,192，共 202,383,360；
      32 层 6,476,267,520 + 最后的 RMSNorm 4,096 + 2·131,072,000 = 6,738,415,616。
    Llama 3 8B：嵌入和输出层各 128256·4096 = 525,336,576；每层注意力 2·4096² + 2·4096·1024 = 41,943,040，
      SwiGLU 3·4096·14336 = 176,160,768，RMSNorm 8,192，共 218,112,000；
      32 层 6,979,584,000 + 4,096 + 2·525,336,576 = 8,030,261,248。
    """
    assert param_count(LLAMA2_7B) == 6_738_415_616
    assert param_count(LLAMA3_8B) == 8_030_261_248


# ====================== 零件 ======================


def test_rms_norm_equals_torch_and_llama_rms_norm() -> None:
    g = torch.Generator().manual_seed(7)
    x64 = torch.randn(3, 5, 16, generator=g, dtype=F64) * 3 + 1
    ours = RMSNorm(16, eps=1e-6).double()
    torch_norm = torch.nn.RMSNorm(16, eps=1e-6).double()
    with torch.no_grad():
        ours.gain.copy_(torch.rand(16, generator=g, dtype=F64) + 0.5)
        torch_norm.weight.copy_(ours.gain)
    torch.testing.assert_close(ours(x64), torch_norm(x64), atol=1e-12, rtol=1e-12)
    hf = LlamaRMSNorm(16, eps=1e-6)  # 它在 float32 里算
    ours32 = ours.float()
    with torch.no_grad():
        hf.weight.copy_(ours32.gain)
    x32 = x64.float()
    torch.testing.assert_close(ours32(x32), hf(x32), atol=1e-6, rtol=1e-6)


def test_swiglu_equals_llama_mlp() -> None:
    cfg = small_config()
    ours = SwiGLU(cfg.d_model, cfg.ffn_dim, bias=False)
    theirs = LlamaMLP(hf_config(cfg))
    randomize(ours, 8)
    with torch.no_grad():
        theirs.gate_proj.weight.copy_(ours.gate.weight)
        theirs.up_proj.weight.copy_(ours.up.weight)
        theirs.down_proj.weight.copy_(ours.down.weight)
    x = torch.randn(2, 7, cfg.d_model, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)


def test_rope_permutation_turns_our_pairs_into_transformers_halves() -> None:
    """同一个输入：我们的投影加我们的 RoPE，和重排后的投影加 transformers 的 RoPE，结果只差同一个重排；点积相同。"""
    cfg = small_config(2)
    d, H, T = cfg.head_dim, cfg.n_heads, 9
    g = torch.Generator().manual_seed(11)
    w_q = torch.randn(H * d, cfg.d_model, generator=g)
    w_k = torch.randn(cfg.n_kv_heads * d, cfg.d_model, generator=g)
    x = torch.randn(2, T, cfg.d_model, generator=g)
    positions = torch.arange(T)

    def heads(t: torch.Tensor, n: int) -> torch.Tensor:  # (B, T, n * d) -> (B, n, T, d)
        return t.view(2, T, n, d).transpose(1, 2)

    q_ours = apply_rope(heads(x @ w_q.T, H), positions)
    k_ours = apply_rope(heads(x @ w_k.T, cfg.n_kv_heads), positions)
    rotary = LlamaRotaryEmbedding(hf_config(cfg))
    cos, sin = rotary(x, positions[None])
    q_hf, k_hf = apply_rotary_pos_emb(heads(x @ rope_pairs_to_halves(w_q, H).T, H),
                                      heads(x @ rope_pairs_to_halves(w_k, cfg.n_kv_heads).T, cfg.n_kv_heads),
                                      cos, sin)
    order = [*range(0, d, 2), *range(1, d, 2)]
    torch.testing.assert_close(q_hf, q_ours[..., order], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k_hf, k_ours[..., order], atol=1e-5, rtol=1e-5)
    scores_ours = q_ours[:, ::2] @ k_ours.transpose(-2, -1)  # 每个键值头的第一个查询头
    scores_hf = q_hf[:, ::2] @ k_hf.transpose(-2, -1)
    torch.testing.assert_close(scores_hf, scores_ours, atol=1e-4, rtol=1e-5)


def test_rope_permutation_on_a_tiny_head() -> None:
    """一个头、4 维：第 0、2 行移到前面，第 1、3 行移到后面。"""
    w = torch.arange(8.0).view(4, 2)
    assert rope_pairs_to_halves(w, 1)[:, 0].tolist() == [0.0, 4.0, 2.0, 6.0]
    two_heads = torch.arange(8.0).view(8, 1)
    assert rope_pairs_to_halves(two_heads, 2)[:, 0].tolist() == [0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]


def gqa(n_heads: int, n_kv: int, seed: int) -> GroupedQueryAttention:
    torch.manual_seed(seed)
    return randomize(GroupedQueryAttention(24, n_heads, n_kv), seed).double()


def test_gqa_with_all_heads_equals_multi_head_attention() -> None:
    """n_kv_heads = n_heads 且位置全为 0（RoPE 转 0 度，是恒等变换）时，就是第一阶段的多头注意力。"""
    ours = gqa(4, 4, seed=12)
    mha = MultiHeadAttention(24, 4, bias=False).double()
    with torch.no_grad():
        mha.qkv.weight.copy_(torch.cat([ours.q.weight, ours.k.weight, ours.v.weight]))
        mha.out.weight.copy_(ours.out.weight)
    T = 6
    x = torch.randn(2, T, 24, generator=torch.Generator().manual_seed(13), dtype=F64)
    with torch.no_grad():
        y = ours(x, torch.zeros(T, dtype=torch.long), causal_mask(T))
        torch.testing.assert_close(y, mha(x, mask=causal_mask(T)), atol=1e-12, rtol=1e-12)
        # 位置不全为 0 时 RoPE 起作用，结果就不同了
        assert (ours(x, torch.arange(T), causal_mask(T)) - y).abs().max() > 1e-3


@pytest.mark.parametrize("n_kv", [1, 2, 3])
def test_grouped_heads_equal_mha_with_copied_key_value_heads(n_kv: int) -> None:
    """分组共用，等于把每个键值头的投影复制给它那一组查询头（第 h 个查询头用第 h // group 个键值头）。"""
    H, T = 6, 5
    ours = gqa(H, n_kv, seed=14 + n_kv)
    d, group = ours.head_dim, H // n_kv
    mha = MultiHeadAttention(24, H, bias=False).double()

    def repeat_heads(w: torch.Tensor) -> torch.Tensor:  # (n_kv * d, d_model) -> (H * d, d_model)
        return w.view(n_kv, d, -1).repeat_interleave(group, dim=0).reshape(H * d, -1)

    with torch.no_grad():
        mha.qkv.weight.copy_(torch.cat([ours.q.weight, repeat_heads(ours.k.weight), repeat_heads(ours.v.weight)]))
        mha.out.weight.copy_(ours.out.weight)
    x = torch.randn(3, T, 24, generator=torch.Generator().manual_seed(15), dtype=F64)
    with torch.no_grad():
        y = ours(x, torch.zeros(T, dtype=torch.long), causal_mask(T))
        torch.testing.assert_close(y, mha(x, mask=causal_mask(T)), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("n_kv", [1, 2, 6])
def test_gqa_equals_torch_sdpa_with_enable_gqa(n_kv: int) -> None:
    """带 RoPE 的完整计算，对照 PyTorch 自带的分组注意力。"""
    H, T = 6, 7
    ours = gqa(H, n_kv, seed=20 + n_kv)
    d = ours.head_dim
    x = torch.randn(2, T, 24, generator=torch.Generator().manual_seed(16), dtype=F64)
    positions = torch.arange(3, 3 + T)  # 不从 0 开始也行
    with torch.no_grad():
        q = apply_rope((x @ ours.q.weight.T).view(2, T, H, d).transpose(1, 2), positions)
        k = apply_rope((x @ ours.k.weight.T).view(2, T, n_kv, d).transpose(1, 2), positions)
        v = (x @ ours.v.weight.T).view(2, T, n_kv, d).transpose(1, 2)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ref = ref.transpose(1, 2).reshape(2, T, H * d) @ ours.out.weight.T
        torch.testing.assert_close(ours(x, positions, causal_mask(T)), ref, atol=1e-12, rtol=1e-12)


def test_tied_weights_share_one_parameter() -> None:
    tied, untied = MiniLlama(small_config(tie_weights=True)), MiniLlama(small_config())
    assert tied.lm_head.weight is tied.embed.weight
    n_tied, n_untied = (sum(p.numel() for p in m.parameters()) for m in (tied, untied))
    assert n_untied - n_tied == 97 * 32  # 少了一个 vocab_size × d_model 的矩阵
    tokens = tokens_for(tied.cfg, 2, 6, seed=17)
    tied(tokens).sum().backward()
    assert tied.embed.weight.grad is not None and tied.embed.weight.grad.abs().sum() > 0


def test_decoder_mask() -> None:
    for T in (1, 4, 9):
        assert torch.equal(decoder_mask(T, T), causal_mask(T))
    # 已缓存 3 个，新来 2 个（位置 3、4）：第一个新词看得到 0..3，第二个看得到 0..4
    assert decoder_mask(2, 5).tolist() == [[False, False, False, False, True], [False] * 5]


def test_gqa_without_a_mask_is_causal() -> None:
    """不给 mask 时按位置建因果掩码：和传 causal_mask 一样，后面的词改了，前面的输出不变。"""
    attn = gqa(4, 2, seed=30)
    T = 6
    x = torch.randn(2, T, 24, generator=torch.Generator().manual_seed(31), dtype=F64)
    with torch.no_grad():
        y = attn(x, torch.arange(T))
        torch.testing.assert_close(y, attn(x, torch.arange(T), causal_mask(T)), atol=1e-12, rtol=1e-12)
        changed = x.clone()
        changed[:, -1] += 1.0
        torch.testing.assert_close(attn(changed, torch.arange(T))[:, :-1], y[:, :-1], atol=1e-12, rtol=1e-12)
        # 位置不从 0 开始、也不相邻时，仍按位置比较：每个词只看位置不超过自己的键
        positions = torch.tensor([3, 5, 9, 10, 20, 21])
        torch.testing.assert_close(attn(x, positions), attn(x, positions, causal_mask(T)), atol=1e-12, rtol=1e-12)


def test_gqa_with_a_cache_and_no_mask_equals_the_full_causal_pass() -> None:
    """直接用 GroupedQueryAttention 逐个生成（不传 mask，位置从缓存的长度接着数），等于一次算完的因果注意力。"""
    attn = gqa(6, 2, seed=32)
    T = 7
    x = torch.randn(2, T, 24, generator=torch.Generator().manual_seed(33), dtype=F64)
    cache = KVCache(1)
    with torch.no_grad():
        full = attn(x, torch.arange(T), causal_mask(T))
        steps = [attn(x[:, :3], torch.arange(3), None, cache)]
        steps += [attn(x[:, t : t + 1], torch.arange(t, t + 1), None, cache) for t in range(3, T)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-12, rtol=1e-12)


def test_cache_positions_are_checked_layer_by_layer() -> None:
    """MiniLlama 里第 0 层先存进缓存，第 1 层拿到的还是同一组位置：检查看的是这一层自己已缓存的长度。"""
    cfg = small_config(2)
    torch.manual_seed(34)
    m = MiniLlama(cfg).eval()
    cache = KVCache(cfg.n_layers)
    tokens = tokens_for(cfg, 1, 6, seed=35)
    with torch.no_grad():
        m(tokens[:, :4], cache)
        m(tokens[:, 4:], cache)
    assert cache.length == 6


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=["int64", "int32"])
def test_int32_tokens_give_the_same_logits(dtype: torch.dtype) -> None:
    tokens = tokens_for(model().cfg, 2, 5, seed=36)
    with torch.no_grad():
        assert torch.equal(model()(tokens.to(dtype)), model()(tokens))


def test_an_empty_batch_gives_empty_logits() -> None:
    with torch.no_grad():
        assert model()(torch.zeros(0, 4, dtype=torch.long)).shape == (0, 4, 97)


# 半精度：和同一组（已舍入的）权重、输入在 float32 下的结果比，误差在这种 dtype 的精度之内
HALF = {"float16": (torch.float16, 1e-2), "bfloat16": (torch.bfloat16, 5e-2)}


@pytest.mark.parametrize("scale", [1e-4, 1.0, 30.0])
@pytest.mark.parametrize("name", list(HALF))
def test_gqa_in_half_precision_matches_float32(name: str, scale: float) -> None:
    dtype, tol = HALF[name]
    half = gqa(4, 2, seed=37).to(dtype)
    ref = gqa(4, 2, seed=37).float()
    ref.load_state_dict({k: v.float() for k, v in half.state_dict().items()})
    x = (torch.randn(2, 5, 24, generator=torch.Generator().manual_seed(38)) * scale).to(dtype)
    with torch.no_grad():
        got, want = half(x, torch.arange(5)).float(), ref(x.float(), torch.arange(5))
    assert got.dtype == torch.float32 and torch.isfinite(got).all()
    assert ((got - want).abs().max() / want.abs().max()).item() < tol


def test_bfloat16_attention_with_huge_inputs_stays_finite() -> None:
    """bfloat16 的指数和 float32 一样多：1e4 量级的输入不会溢出（float16 会，见 WRONG 里的那一条）。"""
    half = gqa(4, 2, seed=39).to(torch.bfloat16)
    ref = gqa(4, 2, seed=39).float()
    ref.load_state_dict({k: v.float() for k, v in half.state_dict().items()})
    x = (torch.randn(1, 4, 24, generator=torch.Generator().manual_seed(40)) * 1e4).to(torch.bfloat16)
    with torch.no_grad():
        got, want = half(x, torch.arange(4)).float(), ref(x.float(), torch.arange(4))
    assert ((got - want).abs().max() / want.abs().max()).item() < 5e-2


def test_llama_block_norm_in_float16_with_large_activations() -> None:
    """残差流里的数到 1e4 量级（float16 还放得下）：块里的 RMSNorm 应当给出和 float32 一样的结果。"""
    block = LlamaBlock(small_config()).half()
    x = (torch.randn(1, 3, 32, generator=torch.Generator().manual_seed(41)) * 1e4).half()
    want = x.float() / x.float().pow(2).mean(-1, keepdim=True).add(block.attn_norm.eps).sqrt()
    got = block.attn_norm(x).float()
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-2


@pytest.mark.parametrize("scale", [1e-4, 1e4])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_score_tables_of_half_inputs_are_exact(dtype: torch.dtype, scale: float) -> None:
    """分数表在 float64 里算：半精度的 q、k（很小或很大）也不会下溢成 0、溢出成 inf。"""
    g = torch.Generator().manual_seed(42)
    q, k = ((torch.randn(8, generator=g, dtype=F64) * scale).to(dtype) for _ in range(2))
    for fn, offset in ((rope_scores, 1000), (added_position_scores, 10)):
        got = fn(q, k, offset=offset, size=5)
        want = fn(q.double(), k.double(), offset=offset, size=5)
        assert got.dtype == F64 and torch.isfinite(got).all()
        torch.testing.assert_close(got, want, atol=0, rtol=1e-12)


# ====================== KV 缓存 ======================


@pytest.mark.parametrize("n_kv", [1, 2, 4])
def test_kv_cache_decoding_equals_full_forward(n_kv: int) -> None:
    cfg = small_config(n_kv)
    torch.manual_seed(18)
    model = randomize(MiniLlama(cfg), 18).eval()
    B, T = 2, cfg.max_len
    tokens = tokens_for(cfg, B, T, seed=19)
    cache = KVCache(cfg.n_layers)
    with torch.no_grad():
        full = model(tokens)
        pieces = [model(tokens[:, :5], cache)]  # 先一次读进 5 个词元（预填充），再一个一个地来
        pieces += [model(tokens[:, t : t + 1], cache) for t in range(5, T)]
    assert cache.length == T
    assert (torch.cat(pieces, dim=1) - full).abs().max().item() <= 1e-5
    # 缓存实际占的字节 = 每个词元的字节（float32，4 字节）× 词元数 × 批大小；
    # 手算：K、V 两份 × 2 层 × n_kv 个键值头 × 每头 32 / 4 = 8 维 × 4 字节 = 128 · n_kv 字节一个词元
    assert kv_cache_bytes_per_token(cfg.n_layers, n_kv, cfg.head_dim, bytes_per_value=4) == 128 * n_kv
    assert cache.nbytes() == 128 * n_kv * T * B


def test_kv_cache_bytes_of_real_configs() -> None:
    """手算（float16，2 字节）：K、V 两份 × 32 层 × 键值头数 × 128 维（4096 / 32）× 2 字节。
    Llama 2 7B（32 个键值头）：2 × 32 × 32 × 128 × 2 = 524,288 字节 = 512 KiB 一个词元；
    Llama 3 8B（8 个键值头）：  2 × 32 × 8 × 128 × 2  = 131,072 字节 = 128 KiB 一个词元，是前者的 1/4。
    4096 个词元：2 GiB 对 512 MiB。"""
    assert LLAMA2_7B.head_dim == LLAMA3_8B.head_dim == 128
    assert kv_cache_bytes_per_token(32, 32, 128) == 524_288
    assert kv_cache_bytes_per_token(32, 8, 128) == 131_072
    assert kv_cache_bytes_per_token(32, 8, 128, bytes_per_value=4) == 262_144
    rows = {r["model"]: r for r in kv_cache_table(seq_len=4096)}
    assert set(rows) == {"meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B"}
    llama2, llama3 = rows["meta-llama/Llama-2-7b-hf"], rows["meta-llama/Meta-Llama-3-8B"]
    assert (llama2["n_kv_heads"], llama3["n_kv_heads"]) == (32, 8)
    assert llama2["bytes_per_token"] == 524_288 and llama3["bytes_per_token"] == 131_072
    assert llama2["total_bytes"] == 2 * 1024**3 and llama3["total_bytes"] == 512 * 1024**2


def test_real_configs_are_the_published_ones() -> None:
    """config.json 里的字段（见 code/llama.py 的注释）：层数、头数、键值头数、宽度、SwiGLU 宽度、词表。"""
    fields = ("n_layers", "n_heads", "n_kv_heads", "d_model", "d_ff", "vocab_size", "max_len", "rope_base")
    assert tuple(getattr(LLAMA2_7B, f) for f in fields) == (32, 32, 32, 4096, 11008, 32000, 4096, 10000.0)
    assert tuple(getattr(LLAMA3_8B, f) for f in fields) == (32, 32, 8, 4096, 14336, 128256, 8192, 500000.0)
    assert not LLAMA2_7B.tie_weights and not LLAMA3_8B.tie_weights


# ====================== 输入不对时的错误 ======================

_model = None


def model() -> MiniLlama:
    global _model
    if _model is None:
        _model = MiniLlama(small_config())
    return _model


def filled_cache(T: int = 24) -> KVCache:
    """一条序列、已缓存 T 个词元（默认 T = max_len，缓存满了）。"""
    cache = KVCache(2)
    with torch.no_grad():
        model()(torch.zeros(1, T, dtype=torch.long), cache)
    return cache


def update_twice(k_shape: tuple[int, ...], v_dtype: torch.dtype = torch.float32) -> None:
    """先存一个 (1, 2, 3, 8) 的 k、v，再存 k_shape 的（v 取 v_dtype）。"""
    cache = KVCache(2)
    cache.update(0, torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8))
    cache.update(0, torch.zeros(k_shape), torch.zeros(k_shape, dtype=v_dtype))


def block_forward(cache: object = None, x_shape: tuple[int, ...] = (1, 3, 32)) -> torch.Tensor:
    return LlamaBlock(small_config())(torch.zeros(x_shape), torch.arange(3), causal_mask(3), cache)


# (说明, 调用, 消息里必须有的片段)
WRONG = [
    ("重排的 w 是一维", lambda: rope_pairs_to_halves(torch.zeros(8), 2), ["w 的形状", "二维 (行, 列)", "收到 (8,)"]),
    ("重排的 w 不是张量", lambda: rope_pairs_to_halves([[1.0, 2.0]], 1), ["w 应为 torch.Tensor", "收到 list"]),
    ("重排时行数不能被 n_heads 整除", lambda: rope_pairs_to_halves(torch.zeros(6, 3), 4),
     ["行数 6", "n_heads = 4", "整除"]),
    ("重排时 n_heads = 0", lambda: rope_pairs_to_halves(torch.zeros(8, 3), 0), ["n_heads", "不小于 1"]),
    ("重排时每个头的维数是奇数", lambda: rope_pairs_to_halves(torch.zeros(6, 3), 2), ["6 / 2 = 3", "偶数", "RoPE"]),
    ("缓存存入一维的 k、v", lambda: KVCache(2).update(0, torch.zeros(8), torch.zeros(8)),
     ["k 的形状", "(B, n_kv_heads, T_new, head_dim)", "收到 (8,)"]),
    ("缓存存入的 k 不是张量", lambda: KVCache(2).update(0, "k", torch.zeros(1, 2, 3, 8)), ["k 应为 torch.Tensor"]),
    ("缓存存入的 v 与 k 形状不同", lambda: KVCache(2).update(0, torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 4)),
     ["v 的形状", "和 k 一样的 (1, 2, 3, 8)", "收到 (1, 2, 3, 4)"]),
    ("缓存存入的 v 与 k dtype 不同", lambda: update_twice((1, 2, 1, 8), torch.float64), ["v 的 dtype", "float32"]),
    ("缓存存入的键值头数与已缓存的不同", lambda: update_twice((1, 4, 1, 8)),
     ["n_kv_heads = 2", "已缓存的 (1, 2, 3, 8)", "收到 (1, 4, 1, 8)"]),
    ("缓存存入的批大小与已缓存的不同", lambda: update_twice((2, 2, 1, 8)), ["B = 1", "收到 (2, 2, 1, 8)"]),
    ("GQA 的 cache 不是 KVCache", lambda: gqa(4, 2, 0).float()(torch.zeros(1, 3, 24), torch.arange(3), None, "abc"),
     ["cache 应为 KVCache 或 None", "收到 str"]),
    ("块的 cache 不是 KVCache", lambda: block_forward(cache="abc"), ["cache 应为 KVCache 或 None", "收到 str"]),
    ("块的 x 是二维", lambda: block_forward(x_shape=(3, 32)), ["x 的形状", "收到 (3, 32)"]),
    ("块的 cfg 不是 MiniLlamaConfig", lambda: LlamaBlock("x"), ["cfg 应为 MiniLlamaConfig", "收到 str"]),
    ("块的 cfg 头数不整除", lambda: LlamaBlock(small_config(3)), ["n_heads = 4", "n_kv_heads = 3", "整除"]),
    ("n_heads 不能被 n_kv_heads 整除", lambda: MiniLlama(small_config(3)), ["n_heads = 4", "n_kv_heads = 3", "整除"]),
    ("n_kv_heads 比 n_heads 多", lambda: MiniLlama(small_config(8)), ["n_kv_heads = 8", "MQA"]),
    ("n_kv_heads = 0", lambda: MiniLlama(small_config(0)), ["n_kv_heads", "不小于 1"]),
    ("d_model 不能被 n_heads 整除", lambda: MiniLlama(small_config(d_model=30)), ["d_model = 30", "整除"]),
    ("每个头的维数是奇数", lambda: MiniLlama(small_config(1, d_model=12)), ["12 / 4 = 3", "偶数", "RoPE"]),
    ("GQA 的头数不整除", lambda: GroupedQueryAttention(24, 6, 4), ["n_heads = 6", "n_kv_heads = 4"]),
    ("GQA 的头维度为奇数", lambda: GroupedQueryAttention(18, 6, 2), ["偶数", "RoPE"]),
    ("rope_base 为 0", lambda: GroupedQueryAttention(24, 4, 2, rope_base=0.0), ["rope_base", "正数"]),
    ("norm_eps 为负", lambda: MiniLlama(small_config(norm_eps=-1.0)), ["norm_eps"]),
    ("d_ff 为 0", lambda: MiniLlama(small_config(d_ff=0)), ["d_ff"]),
    ("cfg 不是 MiniLlamaConfig", lambda: MiniLlama({"d_model": 32}), ["MiniLlamaConfig"]),
    ("tie_weights 不是 bool", lambda: MiniLlama(small_config(tie_weights="yes")), ["tie_weights"]),
    ("词编号超出词表", lambda: model()(torch.tensor([[1, 97]])), ["0 到 vocab_size - 1 = 96", "最大 97"]),
    ("负的词编号", lambda: model()(torch.tensor([[-1, 3]])), ["vocab_size", "最小 -1"]),
    ("浮点的词编号", lambda: model()(torch.zeros(1, 3)), ["整数张量", ".long()"]),
    ("一维的 tokens", lambda: model()(torch.zeros(3, dtype=torch.long)), ["(B, T)", "tokens[None]"]),
    ("序列超过 max_len", lambda: model()(torch.zeros(1, 25, dtype=torch.long)), ["max_len = 24", "收到 (1, 25)"]),
    ("缓存满了还往里加", lambda: model()(torch.zeros(1, 1, dtype=torch.long), filled_cache()),
     ["已有 24", "max_len = 24"]),
    ("缓存的层数不对", lambda: model()(torch.zeros(1, 1, dtype=torch.long), KVCache(3)),
     ["KVCache(model.cfg.n_layers)"]),
    ("缓存的批大小不对", lambda: model()(torch.zeros(2, 1, dtype=torch.long), filled_cache(3)),
     ["批大小 2", "缓存里的 1"]),
    ("GQA 的 x 是二维", lambda: gqa(4, 2, 0).float()(torch.zeros(5, 24), torch.arange(5)), ["x", "收到 (5, 24)"]),
    ("GQA 的位置个数不对", lambda: gqa(4, 2, 0).float()(torch.zeros(1, 5, 24), torch.arange(6)),
     ["positions", "收到 (6,)"]),
    ("GQA 的 x 与参数 dtype 不同", lambda: gqa(4, 2, 0)(torch.zeros(1, 5, 24), torch.arange(5)), ["dtype"]),
    ("t_new 超过 t_total", lambda: decoder_mask(3, 2), ["t_new = 3", "t_total = 2"]),
    ("结构不同的 hf_model", lambda: load_into_hf(model(), LlamaForCausalLM(hf_config(small_config(1)))),
     ["num_key_value_heads 是 1，应为 2", "hf_config(model.cfg)"]),
    ("hf_model 不是 Llama", lambda: load_into_hf(model(), torch.nn.Linear(2, 2)), ["LlamaForCausalLM"]),
    ("to_hf 的参数不是 MiniLlama", lambda: to_hf(torch.nn.Linear(2, 2)), ["MiniLlama"]),
    # 带缓存时位置要从这一层已缓存的词元数接着数（文章的「容易写错的地方」第 3 条）
    ("带缓存逐个生成时每一步都从 0 数", lambda: gqa_step_after(5, torch.arange(1)),
     ["positions", "已缓存 5 个", "应为 [5]", "收到 [0]"]),
    ("带缓存时位置跳过了一段", lambda: gqa_step_after(5, torch.arange(7, 9)),
     ["已缓存 5 个", "应为 [5, 6]", "收到 [7, 8]"]),
    ("空缓存的第一步不从 0 数", lambda: gqa_step_after(0, torch.arange(3, 6)),
     ["已缓存 0 个，", "应为 [0, 1, 2]", "收到 [3, 4, 5]"]),
    ("带缓存时 layer 超出层数",
     lambda: gqa(4, 2, 0).float()(torch.zeros(1, 3, 24), torch.arange(3), None, KVCache(1), 1),
     ["layer 应在 0 到 0 之间"]),
    # 词编号：nn.Embedding 只收 int64 和 int32
    ("int16 的词编号", lambda: model()(torch.ones(1, 3, dtype=torch.int16)), ["int16", "tokens.long()"]),
    ("uint8 的词编号", lambda: model()(torch.ones(1, 3, dtype=torch.uint8)), ["uint8", "tokens.long()"]),
    # 配置里的数写成了字符串、无穷大
    ("rope_base 是字符串", lambda: MiniLlama(small_config(rope_base="1e4")), ["rope_base", "'1e4'", "有限的正数"]),
    ("rope_base 是无穷大", lambda: MiniLlama(small_config(rope_base=float("inf"))), ["rope_base", "inf"]),
    ("norm_eps 是字符串", lambda: MiniLlama(small_config(norm_eps="1e-5")), ["norm_eps", "'1e-5'"]),
    ("norm_eps 是无穷大", lambda: MiniLlama(small_config(norm_eps=float("inf"))), ["norm_eps", "inf"]),
    ("GQA 的 rope_base 是字符串", lambda: GroupedQueryAttention(24, 4, 2, rope_base="x"), ["rope_base", "'x'"]),
    ("分数表的 base 是字符串", lambda: rope_scores(torch.zeros(4), torch.zeros(4), base="1e4"), ["base", "'1e4'"]),
    ("加位置编码的对照挪得太远", lambda: added_position_scores(torch.zeros(4), torch.zeros(4), offset=10**9),
     ["offset + size", "1,000,000"]),
    # 数值：输入里已经有 nan，或 float16 的 q·k 超出了它能表示的范围
    ("GQA 的 x 里有 nan", lambda: gqa(4, 2, 0).float()(torch.full((1, 3, 24), float("nan")), torch.arange(3)),
     ["x 里有", "nan"]),
    ("GQA 在 float16 下溢出", lambda: gqa(4, 2, 0).half()(torch.full((1, 3, 24), 300.0, dtype=torch.float16),
                                                     torch.arange(3)),
     ["float16", "65504", "float32"]),
    ("缓存存入整数张量", lambda: KVCache(2).update(0, torch.zeros(1, 2, 3, 8, dtype=torch.long),
                                          torch.zeros(1, 2, 3, 8, dtype=torch.long)), ["k 应为浮点张量"]),
    ("init_weights 的参数不是层", lambda: init_weights("model"), ["nn.Module", "model.apply(init_weights)"]),
]


def gqa_step_after(n_cached: int, positions: torch.Tensor) -> torch.Tensor:
    """一层 GQA、一个 KVCache：先按位置 0 .. n_cached - 1 存进 n_cached 个词元，再用给定的 positions 算下一步。"""
    attn, cache = gqa(4, 2, 0).float(), KVCache(1)
    with torch.no_grad():
        if n_cached:
            attn(torch.zeros(1, n_cached, 24), torch.arange(n_cached), None, cache)
        return attn(torch.zeros(1, positions.numel(), 24), positions, None, cache)


# ====================== 文章里的 RoPE 分数表和块的参数 ======================


def rotate_by_hand(x: torch.Tensor, pos: int) -> torch.Tensor:
    """RoPE 用 2×2 旋转矩阵逐对写一遍：第 i 对转 pos * 10000^(-2i/d)。"""
    d = x.numel()
    out = torch.empty_like(x)
    for i in range(d // 2):
        angle = torch.tensor(pos * 10000.0 ** (-2 * i / d), dtype=F64)
        c, s = torch.cos(angle), torch.sin(angle)
        out[2 * i] = c * x[2 * i] - s * x[2 * i + 1]
        out[2 * i + 1] = s * x[2 * i] + c * x[2 * i + 1]
    return out


def test_rope_scores_equal_rotations_by_hand_and_depend_only_on_distance() -> None:
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(8, generator=g, dtype=F64), torch.randn(8, generator=g, dtype=F64)
    table = rope_scores(q, k, offset=7, size=5)
    for i in range(5):
        for j in range(5):
            want = rotate_by_hand(q, 7 + i) @ rotate_by_hand(k, 7 + j)
            assert table[i, j].item() == pytest.approx(want.item(), abs=1e-12)
    torch.testing.assert_close(rope_scores(q, k, offset=3000, size=5), table, atol=1e-10, rtol=0)
    for d in range(-4, 5):  # 每条对角线上的数相同
        diag = torch.diagonal(table, d)
        assert (diag.max() - diag.min()).item() < 1e-12


def test_added_position_scores_depend_on_absolute_positions() -> None:
    g = torch.Generator().manual_seed(6)
    q, k = torch.randn(8, generator=g, dtype=F64), torch.randn(8, generator=g, dtype=F64)
    pe = sinusoidal_position_encoding(20, 8).to(F64)
    table = added_position_scores(q, k, offset=10, size=4)
    assert table[2, 1].item() == pytest.approx(((q + pe[12]) @ (k + pe[11])).item(), abs=1e-12)
    assert (added_position_scores(q, k, offset=0, size=4) - table).abs().max() > 0.1


@pytest.mark.parametrize("n_kv", [1, 2, 4])
def test_block_param_count_equals_the_built_block(n_kv: int) -> None:
    cfg = MiniLlamaConfig(d_model=96, n_heads=4, n_kv_heads=n_kv)
    parts = block_param_count(cfg)
    block = LlamaBlock(cfg)
    assert parts["attention"] == sum(p.numel() for p in block.attn.parameters())
    assert parts["ffn"] == sum(p.numel() for p in block.ffn.parameters())
    assert parts["norms"] == 2 * 96
    assert sum(parts.values()) == sum(p.numel() for p in block.parameters())


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: rope_scores(torch.zeros(2, 4), torch.zeros(2, 4)), "q 的形状"),
    (lambda: rope_scores(torch.zeros(5), torch.zeros(5)), "d 为偶数"),
    (lambda: rope_scores(torch.zeros(4), torch.zeros(6)), "k 的形状"),
    (lambda: added_position_scores(torch.zeros(4), torch.zeros(4), offset=-1), "offset"),
    (lambda: rope_scores(torch.zeros(4), torch.zeros(4), size=0), "size"),
])
def test_score_tables_reject_wrong_input(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call()


@pytest.mark.parametrize(("call", "fragments"), [w[1:] for w in WRONG], ids=[w[0] for w in WRONG])
def test_wrong_input_raises_value_error_with_a_helpful_message(call, fragments) -> None:
    with pytest.raises(ValueError) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value)


def test_script_runs_without_transformers() -> None:
    """python code/llama.py 能单独运行，而且不导入 transformers（动手实验只装 torch）。"""
    script = ("import runpy, sys; sys.path.insert(0, 'code'); runpy.run_path('code/llama.py', run_name='__main__'); "
              "print('transformers imported:', 'transformers' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert "transformers imported: False" in result.stdout
    assert "每个词元 512 KiB" in result.stdout and "每个词元 128 KiB" in result.stdout
