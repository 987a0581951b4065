"""code/kv_cache.py：带缓存的生成与完整重算一致；乘加次数的公式与 PyTorch 实际数出的一致；缓存的大小。

- 一致性：随机初始化的 TinyTransformer（几种配置），贪心和采样（同一个种子）生成的词元完全相同，
  每一步的 logits 在 float32 下相差不超过 1e-5、float64 下不超过 1e-10；
- attend_with_cache 与 PyTorch 的 nn.MultiheadAttention（装入相同的权重、加因果掩码）逐位置对照；
- forward_macs / generation_macs 与 torch.utils.flop_counter.FlopCounterMode 数出的矩阵乘法运算量对照；
- 形状、参数不对时抛出 ValueError。
"""

from __future__ import annotations

import pytest
import torch
from attention import causal_mask
from kv_cache import (
    KVCache,
    attend_with_cache,
    forward_macs,
    forward_with_cache,
    generate,
    generation_macs,
    kv_cache_bytes,
)
from multi_head_attention import MultiHeadAttention
from tiny_transformer import TinyConfig, TinyTransformer
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """小张量上多线程只有开销；机器忙时两个线程互相等待，会慢十几倍。测完恢复原来的线程数。"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


CONFIGS = {
    "默认（无 MLP，正弦位置）": TinyConfig(),
    "MLP + 可学习位置": TinyConfig(mlp=True, positions="learned"),
    "3 层 8 头": TinyConfig(vocab_size=30, d_model=32, n_heads=8, n_layers=3, max_len=40, mlp=True),
}


def make_model(cfg: TinyConfig, seed: int = 0, dtype: torch.dtype = torch.float32) -> TinyTransformer:
    torch.manual_seed(seed)
    model = TinyTransformer(cfg).to(dtype)
    if cfg.positions == "learned":  # 默认初始化下位置嵌入已是随机的；这里确认它不为 0，位置写错就会被发现
        assert model.pos is not None and model.pos.embedding.weight.abs().min() > 0
    return model.eval()


def prompt_for(cfg: TinyConfig, batch: int = 2, length: int = 5, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, cfg.vocab_size, (batch, length), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- cache equals recomputation


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("do_sample", [False, True])
def test_generation_with_cache_equals_recomputation(name: str, do_sample: bool) -> None:
    cfg = CONFIGS[name]
    model = make_model(cfg)
    prompt = prompt_for(cfg)
    n = cfg.max_len - prompt.size(1) + 1  # 一直生成到 max_len 用满
    runs = [generate(model, prompt, n, use_cache=use_cache, do_sample=do_sample, temperature=1.3, top_p=0.95,
                     generator=torch.Generator().manual_seed(2)) for use_cache in (True, False)]
    assert runs[0].tokens.shape == (2, prompt.size(1) + n)
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert torch.equal(runs[0].tokens[:, :prompt.size(1)], prompt)
    torch.testing.assert_close(runs[0].logits, runs[1].logits, atol=1e-5, rtol=0)


def test_generation_with_cache_equals_recomputation_float64() -> None:
    cfg = CONFIGS["MLP + 可学习位置"]
    model = make_model(cfg, dtype=torch.float64)
    prompt = prompt_for(cfg, batch=3, length=1)
    a, b = (generate(model, prompt, 30, use_cache=c, do_sample=True, generator=torch.Generator().manual_seed(4))
            for c in (True, False))
    assert torch.equal(a.tokens, b.tokens)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-10, rtol=0)


def test_logits_are_the_full_forward_of_the_generated_sequence() -> None:
    """每一步的 logits 就是把最终序列整个送进模型时，对应位置的输出（与 generate 的写法无关的对照）。"""
    cfg = CONFIGS["MLP + 可学习位置"]
    model = make_model(cfg)
    prompt = prompt_for(cfg, length=4)
    out = generate(model, prompt, 12, use_cache=True, repetition_penalty=1.3)
    with torch.no_grad():
        full = model(out.tokens[:, :-1])  # 最后一个词元之后不再预测
    torch.testing.assert_close(out.logits, full[:, prompt.size(1) - 1:], atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunks", [(12,), (1,) * 12, (5, 1, 1, 5), (3, 4, 5)])
def test_prefill_in_chunks_equals_full_forward(chunks: tuple[int, ...]) -> None:
    cfg = CONFIGS["3 层 8 头"]
    model = make_model(cfg, seed=3)
    tokens = prompt_for(cfg, batch=2, length=sum(chunks))
    cache = KVCache.for_model(model, 2)
    pieces, start = [], 0
    with torch.no_grad():
        for size in chunks:
            pieces.append(forward_with_cache(model, tokens[:, start:start + size], cache))
            start += size
        full = model(tokens)
    assert cache.length == tokens.size(1)
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=0)


def test_attend_with_cache_matches_torch_multihead_attention() -> None:
    """一个词元一个词元地喂给 attend_with_cache，与 nn.MultiheadAttention 在整个序列上（因果掩码）逐位置相同。"""
    torch.manual_seed(0)
    d, h, B, T = 24, 4, 3, 9
    mha = MultiHeadAttention(d, h).double()
    ref = nn.MultiheadAttention(d, h, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(mha.qkv.weight)
        ref.in_proj_bias.copy_(mha.qkv.bias)
        ref.out_proj.weight.copy_(mha.out.weight)
        ref.out_proj.bias.copy_(mha.out.bias)
        x = torch.randn(B, T, d, dtype=torch.float64)
        expected, _ = ref(x, x, x, attn_mask=causal_mask(T), need_weights=False)
        cache = KVCache(1, B, h, d // h, T, dtype=torch.float64)
        rows = []
        for t in range(T):
            rows.append(attend_with_cache(mha, x[:, t:t + 1], cache, 0))
            cache.length += 1
    torch.testing.assert_close(torch.cat(rows, dim=1), expected, atol=1e-12, rtol=0)
    # 缓存里存的 K、V 就是整个序列的投影拆成多头
    _, k, v = mha.qkv(x).chunk(3, dim=-1)
    for stored, full in ((cache.k[0], k), (cache.v[0], v)):
        torch.testing.assert_close(stored, full.view(B, T, h, d // h).transpose(1, 2))


class PositionsFromZero(nn.Module):
    """故意做错的位置嵌入：不管要哪些位置，都返回从 0 开始的那几行（缓存里最常见的错误）。"""

    def __init__(self, table: nn.Embedding) -> None:
        super().__init__()
        self.table = table
        self.embedding_dim = table.embedding_dim

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.table(torch.arange(positions.numel()))


def test_wrong_positions_would_be_caught() -> None:
    """对照实验：新词元的位置从 0 数时，带缓存的结果和重算的明显不同，所以上面的一致性检验能发现这种错误。

    不用缓存时整个序列的位置本来就从 0 数，这个错误只影响带缓存的路径。
    """
    cfg = CONFIGS["MLP + 可学习位置"]
    model = make_model(cfg)
    prompt = prompt_for(cfg, length=6)
    right = generate(model, prompt, 10, use_cache=True)
    model.pos.embedding = PositionsFromZero(model.pos.embedding)
    wrong = generate(model, prompt, 10, use_cache=True)
    recomputed = generate(model, prompt, 10, use_cache=False)
    torch.testing.assert_close(right.logits, recomputed.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(wrong.logits[:, 0], recomputed.logits[:, 0])  # 预填充时从 0 数恰好是对的
    assert (wrong.logits[:, 1:] - recomputed.logits[:, 1:]).abs().max() > 1e-2


# ---------------------------------------------------------------- cache bookkeeping and size


def test_cache_length_and_size() -> None:
    cfg = CONFIGS["3 层 8 头"]
    model = make_model(cfg)
    cache = KVCache.for_model(model, 4)
    assert cache.length == 0 and len(cache.k) == len(cache.v) == cfg.n_layers
    assert cache.k[0].shape == (4, cfg.n_heads, cfg.max_len, cfg.d_model // cfg.n_heads)
    expected = 2 * cfg.n_layers * 4 * cfg.max_len * cfg.d_model * 4  # K、V × 层 × 批 × 位置 × d_model × 4 字节
    assert cache.nbytes == expected
    assert kv_cache_bytes(cfg.n_layers, cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.max_len, 4, 4) == expected
    with torch.no_grad():
        forward_with_cache(model, prompt_for(cfg, batch=4, length=7), cache)
    assert cache.length == 7


def test_kv_cache_bytes_by_hand() -> None:
    assert kv_cache_bytes(1, 1, 1, 1) == 4  # K 和 V 各一个 float16
    assert kv_cache_bytes(2, 3, 5, 7, batch_size=11, bytes_per_value=4) == 2 * 2 * 3 * 5 * 7 * 11 * 4
    assert kv_cache_bytes(12, 12, 64, 0) == 0


# ---------------------------------------------------------------- multiply-adds against FlopCounterMode


def counted(fn) -> int:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        fn()
    flops = counter.get_total_flops()
    assert flops % 2 == 0
    return flops // 2


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize(("n_new", "n_cached"), [(1, 0), (7, 0), (1, 6), (3, 9), (1, 30)])
def test_forward_macs_matches_flop_counter(name: str, n_new: int, n_cached: int) -> None:
    cfg = CONFIGS[name]
    model = make_model(cfg)
    tokens = prompt_for(cfg, batch=1, length=n_new + n_cached)
    if n_cached == 0:
        assert counted(lambda: model(tokens)) == forward_macs(cfg, n_new)
    cache = KVCache.for_model(model, 1)
    if n_cached:
        with torch.no_grad():
            forward_with_cache(model, tokens[:, :n_cached], cache)
    assert counted(lambda: forward_with_cache(model, tokens[:, n_cached:], cache)) == forward_macs(
        cfg, n_new, n_cached)


@pytest.mark.parametrize("use_cache", [True, False])
def test_generation_macs_matches_flop_counter(use_cache: bool) -> None:
    cfg = CONFIGS["MLP + 可学习位置"]
    model = make_model(cfg)
    prompt = prompt_for(cfg, batch=1, length=6)
    total = counted(lambda: generate(model, prompt, 20, use_cache=use_cache))
    assert total == sum(generation_macs(cfg, 6, 20, use_cache))


def test_macs_formula_by_hand() -> None:
    """一层、d = 2、V = 3、不带 MLP 的模型，一个新词元、缓存里 4 个：逐项手算。"""
    cfg = TinyConfig(vocab_size=3, d_model=2, n_heads=1, n_layers=1, max_len=8)
    # q、k、v 投影 3·2·2 = 12，输出投影 2·2 = 4，打分和加权求和 2·1·5·2 = 20，logits 1·2·3 = 6
    assert forward_macs(cfg, 1, 4) == 12 + 4 + 20 + 6
    # 不用缓存时第 t 步正好是用缓存的 t 倍（完整的 t × t 打分矩阵、每个位置都算 logits）
    for t in range(1, 9):
        assert forward_macs(cfg, t) == t * forward_macs(cfg, 1, t - 1)


# ---------------------------------------------------------------- errors


def test_generate_rejects() -> None:
    cfg = TinyConfig()
    model = make_model(cfg)
    prompt = prompt_for(cfg)
    with pytest.raises(ValueError, match="TinyTransformer"):
        generate(nn.Linear(2, 2), prompt, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"prompt\[None\]"):
        generate(model, prompt[0], 3)
    with pytest.raises(ValueError, match="整数"):
        generate(model, prompt.float(), 3)
    with pytest.raises(ValueError, match="max_len = 64"):
        generate(model, prompt, 61)  # 5 + 61 - 1 = 65 个位置
    generate(model, prompt, 60)  # 恰好用满 64 个位置
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, prompt, -1)
    with pytest.raises(ValueError, match="use_cache"):
        generate(model, prompt, 3, use_cache="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="generator"):
        generate(model, prompt, 3, do_sample=True, generator=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="temperature"):
        generate(model, prompt, 3, do_sample=True, temperature=0)


def test_forward_with_cache_rejects() -> None:
    cfg = TinyConfig(max_len=10)
    model = make_model(cfg)
    tokens = prompt_for(cfg, batch=2, length=6)
    with pytest.raises(ValueError, match=r"KVCache\.for_model"):
        forward_with_cache(model, tokens, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache 与模型不符"):
        forward_with_cache(model, tokens, KVCache.for_model(model, 3))  # 批大小不同
    with pytest.raises(ValueError, match="cache 与模型不符"):
        forward_with_cache(model, tokens, KVCache(1, 2, cfg.n_heads, 16, 10))  # 层数不同
    cache = KVCache.for_model(model, 2)
    with torch.no_grad():
        forward_with_cache(model, tokens, cache)
        with pytest.raises(ValueError, match="max_len = 10"):
            forward_with_cache(model, tokens, cache)  # 6 + 6 > 10
    assert cache.length == 6  # 出错的那一次没有动缓存
    with pytest.raises(ValueError, match=r"tokens 的形状"):
        forward_with_cache(model, tokens[:, :0], cache)


def test_attend_with_cache_rejects() -> None:
    mha = MultiHeadAttention(16, 4)
    cache = KVCache(2, 2, 4, 4, 8)
    x = torch.randn(2, 3, 16)
    with pytest.raises(ValueError, match=r"x\[None\]"):
        attend_with_cache(mha, x[0], cache, 0)
    with pytest.raises(ValueError, match="d_model = 16"):
        attend_with_cache(mha, torch.randn(2, 3, 8), cache, 0)
    with pytest.raises(ValueError, match="batch_size"):
        attend_with_cache(mha, torch.randn(3, 3, 16), cache, 0)
    with pytest.raises(ValueError, match="缓存的层数 2"):
        attend_with_cache(mha, x, cache, 2)
    with pytest.raises(ValueError, match="n_heads = 4"):
        attend_with_cache(mha, x, KVCache(1, 2, 2, 8, 8), 0)
    with pytest.raises(ValueError, match="dtype"):
        attend_with_cache(mha.double(), x.double(), cache, 0)
    with pytest.raises(ValueError, match="MultiHeadAttention"):
        attend_with_cache(nn.Linear(16, 16), x, cache, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [
    dict(n_layers=0), dict(batch_size=0), dict(n_heads=2.0), dict(d_head=-1), dict(max_len=True),
])
def test_cache_rejects_bad_sizes(bad: dict) -> None:
    args = dict(n_layers=1, batch_size=1, n_heads=1, d_head=1, max_len=1) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        KVCache(**args)


def test_counting_functions_reject() -> None:
    with pytest.raises(ValueError, match="cfg"):
        forward_macs({"d_model": 4}, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_new"):
        forward_macs(TinyConfig(), 0)
    with pytest.raises(ValueError, match="n_cached"):
        forward_macs(TinyConfig(), 1, -1)
    with pytest.raises(ValueError, match="prompt_len"):
        generation_macs(TinyConfig(), 0, 3, True)
    with pytest.raises(ValueError, match="n_heads"):
        kv_cache_bytes(1, 0, 1, 1)
    with pytest.raises(ValueError, match="bytes_per_value"):
        kv_cache_bytes(1, 1, 1, 1, bytes_per_value=0.5)  # type: ignore[arg-type]
