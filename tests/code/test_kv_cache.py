"""code/kv_cache.py：带缓存的生成与完整重算一致；乘加次数的公式与 PyTorch 实际数出的一致；缓存的大小。

- 一致性：随机初始化的 TinyTransformer（几种配置），贪心和采样（同一个种子）生成的词元完全相同，
  每一步的 logits 在 float32 下相差不超过 1e-5、float64 下不超过 1e-10；
- attend_with_cache 与 PyTorch 的 nn.MultiheadAttention（装入相同的权重、加因果掩码）逐位置对照；
- forward_macs / generation_macs 与 torch.utils.flop_counter.FlopCounterMode 数出的矩阵乘法运算量对照；
  recompute_step_macs（常规写法的重算：因果注意力只算下三角、只算最后一个位置的 logits）也一样；
- 束搜索：束宽 1 就是贪心；束宽不小于候选总数时等于穷举（和枚举全部序列的排名逐条相同）；
  结果按分数排好，对数概率与完整前向算出的相同；
- 每步读多少字节：weight_bytes 与模型里矩阵的参数个数、decode_step_bytes 与 KVCache 实际分配的字节数对照；
- 形状、参数不对时抛出 ValueError。
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from attention import causal_mask
from kv_cache import (
    A100_BANDWIDTH,
    A100_PEAK_FLOPS,
    KVCache,
    attend_with_cache,
    beam_search,
    decode_step_bytes,
    forward_macs,
    forward_with_cache,
    generate,
    generation_macs,
    kv_cache_bytes,
    length_normalized,
    recompute_step_macs,
    reorder_cache,
    roofline_seconds,
    sequence_log_prob,
    weight_bytes,
)
from multi_head_attention import MultiHeadAttention
from tiny_transformer import TinyConfig, TinyTransformer
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py




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


def test_generate_needs_at_least_one_new_token() -> None:
    """以前 max_new_tokens = 0 通过了检查，最后 torch.stack 一个空列表，抛出难懂的 RuntimeError。"""
    cfg = TinyConfig()
    model = make_model(cfg)
    with pytest.raises(ValueError, match="max_new_tokens 应为不小于 1"):
        generate(model, prompt_for(cfg), 0)
    assert generate(model, prompt_for(cfg), 1).tokens.shape == (2, 6)


@pytest.mark.parametrize(("tokens", "fragment"), [
    ([5, 999], "tokens 里的词编号应在 0 到 vocab_size - 1 = 47 之间，收到 999"),
    ([5, -1], "tokens 里的词编号应在 0 到 vocab_size - 1 = 47 之间，收到 -1"),
    ([48], "收到 48"),
    ([5, 1.5], "tokens 里的词编号应为整数"),
    ("5", "tokens 应是词元编号的列表"),
    ([1] * 61, "max_len = 64"),  # 4 + 61 - 1 = 64 个位置放得下；再多一个就放不下
])
def test_sequence_log_prob_checks_every_token(tokens, fragment: str) -> None:
    """以前只检查 full[:, :-1]：最后一个词元超出词表时抛出 IndexError 或 RuntimeError。"""
    cfg = TinyConfig()
    model = make_model(cfg)
    prompt = prompt_for(cfg, batch=1, length=4)
    if fragment == "max_len = 64":
        sequence_log_prob(model, prompt, tokens)  # 恰好用满
        tokens = [*tokens, 1]
    with pytest.raises(ValueError, match=re.escape(fragment)):
        sequence_log_prob(model, prompt, tokens)


def test_store_rejects() -> None:
    """以前 store 不做检查：形状不符时悄悄广播，超过 max_len 时抛出「expanded size」的 RuntimeError。"""
    cache = KVCache(2, 2, 4, 3, 8)
    kv = torch.zeros(2, 4, 5, 3)
    with pytest.raises(ValueError, match=r"k_new 的形状应为 \(B, n_heads, T_new, d_head\)"):
        cache.store(0, torch.zeros(1, 2, 1, 1), torch.zeros(1, 2, 1, 1))  # 以前悄悄广播
    with pytest.raises(ValueError, match=r"k_new 的形状应为"):
        cache.store(0, torch.zeros(2, 4, 5), torch.zeros(2, 4, 5))
    with pytest.raises(ValueError, match=r"v_new 的形状应为"):
        cache.store(0, kv, torch.zeros(2, 4, 5, 1))
    with pytest.raises(ValueError, match="缓存的层数 2"):
        cache.store(2, kv, kv)
    with pytest.raises(ValueError, match="layer 应为不小于 0"):
        cache.store(-1, kv, kv)
    with pytest.raises(ValueError, match=r"k_new 应为 torch\.Tensor"):
        cache.store(0, [0.0], kv)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        cache.store(0, kv.double(), kv.double())
    k_all, _ = cache.store(0, kv, kv)  # 合法的写入照常返回这一层的前 5 个位置
    assert k_all.shape == (2, 4, 5, 3) and cache.length == 0  # store 不改 length
    cache.length = 5
    with pytest.raises(ValueError, match="max_len = 8"):
        cache.store(0, kv, kv)  # 5 + 5 > 8，以前抛出 RuntimeError
    cache.store(0, kv[:, :, :3], kv[:, :, :3])  # 5 + 3 = 8 恰好放得下


def test_reorder_cache_rejects() -> None:
    """以前 rows 越界时抛出 IndexError，是浮点数时抛出 RuntimeError。"""
    cache = KVCache(2, 3, 1, 2, 4)
    for layer in range(2):
        cache.k[layer][:, 0, 0, 0] = torch.tensor([10.0, 11.0, 12.0])
    with pytest.raises(ValueError, match=r"rows 里的行号应在 0 到 2 之间（缓存有 3 行），收到最小 0、最大 5"):
        reorder_cache(cache, torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="收到最小 -1"):
        reorder_cache(cache, torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match="rows 应为整数张量"):
        reorder_cache(cache, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="rows 应为整数张量"):
        reorder_cache(cache, torch.tensor([True, False]))
    with pytest.raises(ValueError, match=r"rows 的形状应为 \(n,\)"):
        reorder_cache(cache, torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match=r"rows 的形状应为 \(n,\)"):
        reorder_cache(cache, torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError, match=r"rows 应为 torch\.Tensor"):
        reorder_cache(cache, [0, 1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache 应为 KVCache"):
        reorder_cache(None, torch.tensor([0]))  # type: ignore[arg-type]
    reorder_cache(cache, torch.tensor([2, 2, 0]))  # 合法的重排：行数可以变（束搜索里候选数会变）
    assert cache.k[1][:, 0, 0, 0].tolist() == [12.0, 12.0, 10.0]


@pytest.mark.parametrize(("args", "fragment"), [
    ((-3.0, 0, 1.0), "length 应为不小于 1"),  # 以前 ZeroDivisionError
    ((-3.0, 2.0, 1.0), "length 应为整数"),
    ((-3.0, 2, float("nan")), "length_penalty 应为有限的实数"),
    ((-3.0, 2, "1"), "length_penalty 应为有限的实数"),
    ((float("nan"), 2, 1.0), "log_prob 应为不大于 0 的实数"),
    ((0.5, 2, 1.0), "log_prob 应为不大于 0 的实数"),
    (("-3", 2, 1.0), "log_prob 应为不大于 0 的实数"),
])
def test_length_normalized_rejects(args, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        length_normalized(*args)


def test_length_normalized_values() -> None:
    assert length_normalized(-3.0, 2, 1.0) == -1.5
    assert length_normalized(-3.0, 4, 0.0) == -3.0
    assert length_normalized(-8, 4, 0.5) == -4.0
    assert length_normalized(0.0, 1, 2.0) == 0.0


# ---------------------------------------------------------------- beam search


BEAM_CFG = TinyConfig(vocab_size=4, d_model=8, n_heads=2, n_layers=2, max_len=8, mlp=True, positions="learned")


def sharp_model(seed: int) -> TinyTransformer:
    """词表只有 4 个词元的小模型；输出矩阵放大 4 倍，让各个序列的概率拉开，不会有并列。"""
    model = make_model(BEAM_CFG, seed=seed)
    with torch.no_grad():
        model.unembed.weight.mul_(4)
        model.unembed.bias.mul_(4)
    return model


def reference_log_prob(model: TinyTransformer, prompt: torch.Tensor, tokens: tuple[int, ...]) -> float:
    """不经过 code/kv_cache.py：一次完整前向，逐个位置取 log_softmax（float64）。"""
    full = torch.cat([prompt, torch.tensor([tokens])], dim=1)
    with torch.no_grad():
        logp = torch.log_softmax(model(full[:, :-1]).double(), dim=-1)[0, prompt.size(1) - 1:]
    return sum(logp[i, t].item() for i, t in enumerate(tokens))


def all_hypotheses(V: int, n: int, eos_id: int | None) -> list[tuple[int, ...]]:
    """束搜索可能给出的全部结果：写满 n 个词元且中间没有 eos，或者在第一个 eos 处结束。"""
    out = []
    for length in range(1, n + 1):
        for seq in itertools.product(range(V), repeat=length):
            if eos_id is not None and eos_id in seq[:-1]:
                continue
            if length < n and seq[-1] != eos_id:
                continue
            out.append(seq)
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_beam_width_one_is_greedy(name: str) -> None:
    cfg = CONFIGS[name]
    model = make_model(cfg)
    for seed in range(3):
        prompt = prompt_for(cfg, batch=1, length=4, seed=seed)
        greedy_tokens = generate(model, prompt, 12).tokens[0, 4:].tolist()
        (best,) = beam_search(model, prompt, 1, 12)
        assert best.tokens == greedy_tokens and not best.finished


def test_beam_width_one_with_an_end_token() -> None:
    """有结束符时：长度惩罚为 0，束宽 1 仍是贪心（写到结束符为止）；按平均对数概率排名时，
    写完的那条可能输给一条更长的，文章《解码》说的正是这一点。"""
    n, differs = 5, 0
    for seed in range(40):
        model = sharp_model(seed)
        prompt = prompt_for(BEAM_CFG, batch=1, length=2, seed=seed)
        greedy = generate(model, prompt, n).tokens[0, 2:].tolist()
        greedy = greedy[: greedy.index(0) + 1] if 0 in greedy else greedy
        (best,) = beam_search(model, prompt, 1, n, length_penalty=0.0, eos_id=0)
        assert best.tokens == greedy
        (averaged,) = beam_search(model, prompt, 1, n, length_penalty=1.0, eos_id=0)
        differs += averaged.tokens != greedy
    assert differs > 0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("eos_id", [None, 0])
@pytest.mark.parametrize("length_penalty", [0.0, 1.0, 2.0])
def test_wide_beam_is_exhaustive(seed: int, eos_id: int | None, length_penalty: float) -> None:
    """束宽不小于候选的总数时，束搜索就是穷举：结果和枚举全部序列、按分数排出的前几名完全相同。"""
    model = sharp_model(seed)
    prompt = prompt_for(BEAM_CFG, batch=1, length=2, seed=seed)
    n = 4
    hyps = all_hypotheses(BEAM_CFG.vocab_size, n, eos_id)
    scored = sorted(((reference_log_prob(model, prompt, h) / len(h) ** length_penalty, h) for h in hyps),
                    reverse=True)
    width = 2 * len(hyps)
    beams = beam_search(model, prompt, width, n, length_penalty=length_penalty, eos_id=eos_id)
    assert [tuple(b.tokens) for b in beams] == [h for _, h in scored]
    # float32：带缓存与完整前向的舍入不同，分数只在 1e-5 以内相同
    assert [b.score for b in beams] == pytest.approx([s for s, _ in scored], abs=1e-5)


def test_length_penalty_changes_the_winner() -> None:
    """同一个模型，length_penalty = 0 偏爱短的结果，= 1 按平均每个词元比较：至少有一个种子让两者选得不同。"""
    differ = []
    for seed in range(12):
        model = sharp_model(seed)
        prompt = prompt_for(BEAM_CFG, batch=1, length=2, seed=seed)
        short, mean = (beam_search(model, prompt, 64, 4, length_penalty=a, eos_id=0)[0] for a in (0.0, 1.0))
        assert len(short.tokens) <= len(mean.tokens)
        differ.append(short.tokens != mean.tokens)
    assert any(differ)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_beams_are_sorted_and_scored_by_their_log_prob(name: str) -> None:
    cfg = CONFIGS[name]
    model = make_model(cfg)
    prompt = prompt_for(cfg, batch=1, length=3)
    for eos_id, alpha in ((None, 1.0), (5, 0.0), (5, 0.7)):
        beams = beam_search(model, prompt, 5, 10, length_penalty=alpha, eos_id=eos_id)
        assert len(beams) == 5
        scores = [b.score for b in beams]
        assert scores == sorted(scores, reverse=True)
        for b in beams:
            assert b.log_prob == pytest.approx(reference_log_prob(model, prompt, tuple(b.tokens)), abs=1e-4)
            assert b.log_prob == pytest.approx(sequence_log_prob(model, prompt, b.tokens), abs=1e-4)
            assert b.score == pytest.approx(b.log_prob / len(b.tokens) ** alpha)
            assert b.finished == (b.tokens[-1] == eos_id)
            assert eos_id not in b.tokens[:-1]
            assert b.finished or len(b.tokens) == 10


def test_beam_search_rejects() -> None:
    cfg = CONFIGS["MLP + 可学习位置"]
    model = make_model(cfg)
    prompt = prompt_for(cfg, batch=1, length=4)
    with pytest.raises(ValueError, match="束搜索一次只处理一条提示"):
        beam_search(model, prompt_for(cfg, batch=2), 2, 3)
    with pytest.raises(ValueError, match="beam_width"):
        beam_search(model, prompt, 0, 3)
    with pytest.raises(ValueError, match="max_new_tokens"):
        beam_search(model, prompt, 2, 0)
    with pytest.raises(ValueError, match="max_len"):
        beam_search(model, prompt, 2, cfg.max_len)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(model, prompt, 2, 3, length_penalty=float("nan"))
    with pytest.raises(ValueError, match="eos_id"):
        beam_search(model, prompt, 2, 3, eos_id=cfg.vocab_size)
    with pytest.raises(ValueError, match="model"):
        beam_search(nn.Linear(2, 2), prompt, 2, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens"):
        sequence_log_prob(model, prompt, [])


# ---------------------------------------------------------------- the ordinary no-cache count, and bytes read


def causal_rows_macs(cfg: TinyConfig, t: int) -> int:
    """常规写法的一次重算，交给 FlopCounterMode 数：投影和 MLP 用 PyTorch 的 nn.Linear 算全部 t 个位置，
    注意力一行一行地算（第 i 个查询只和前 i 个键），logits 只算最后一个位置。"""
    d, H = cfg.d_model, cfg.n_heads
    with torch.device("meta"):
        qkv, out, up, down, unembed = (nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, 4 * d),
                                       nn.Linear(4 * d, d), nn.Linear(d, cfg.vocab_size))

    def run() -> None:
        x = torch.randn(1, t, d)
        for _ in range(cfg.n_layers):
            q, k, v = (z.view(1, t, H, d // H).transpose(1, 2) for z in qkv(x).chunk(3, dim=-1))
            rows = [nn.functional.scaled_dot_product_attention(q[:, :, i:i + 1], k[:, :, :i + 1], v[:, :, :i + 1])
                    for i in range(t)]
            x = out(torch.cat(rows, dim=2).transpose(1, 2).reshape(1, t, d))
            if cfg.mlp:
                x = down(nn.functional.gelu(up(x)))
        unembed(x[:, -1:])

    with FlopCounterMode(display=False) as counter, torch.device("meta"):
        run()
    return counter.get_total_flops() // 2


@pytest.mark.parametrize("name", list(CONFIGS))
def test_recompute_step_macs_matches_flop_counter(name: str) -> None:
    cfg = CONFIGS[name]
    for t in (1, 2, 5, 17):
        assert recompute_step_macs(cfg, t) == causal_rows_macs(cfg, t)
        assert recompute_step_macs(cfg, t) <= forward_macs(cfg, t)
    # 一层、d = 2、V = 3、不带 MLP，t = 4：投影 4·2·2·4 = 64，下三角的打分和加权求和 2·(1+2+3+4)·2 = 40，logits 2·3 = 6
    assert recompute_step_macs(TinyConfig(vocab_size=3, d_model=2, n_heads=1, n_layers=1, max_len=8), 4) == 110


def test_weight_and_decode_bytes() -> None:
    for cfg in CONFIGS.values():
        model = make_model(cfg)
        skip = {id(model.embed.weight)} | ({id(model.pos.embedding.weight)} if model.pos is not None else set())
        matrices = sum(p.numel() for p in model.parameters() if p.dim() == 2 and id(p) not in skip)
        assert weight_bytes(cfg, 4) == 4 * matrices
        d_head = cfg.d_model // cfg.n_heads
        for t, batch in ((1, 1), (9, 3)):
            cache = KVCache(cfg.n_layers, batch, cfg.n_heads, d_head, t, dtype=torch.float16)
            assert decode_step_bytes(cfg, t, batch) == weight_bytes(cfg) + cache.nbytes
    # float16、批大小 1：每读 2 个字节（一个数）正好做 1 次乘加
    cfg = CONFIGS["3 层 8 头"]
    assert all(decode_step_bytes(cfg, t) == 2 * forward_macs(cfg, 1, t - 1) for t in range(1, 41))


def test_roofline_seconds() -> None:
    assert roofline_seconds(10, 1, 20.0, 1.0) == 1.0  # 算 1 秒，读 1 秒
    assert roofline_seconds(10, 1, 2.0, 1.0) == 10.0  # 算力是瓶颈
    assert roofline_seconds(1, 100, 2.0, 10.0) == 10.0  # 带宽是瓶颈
    assert (A100_PEAK_FLOPS, A100_BANDWIDTH) == (312e12, 2039e9)  # 数据手册上的数
    for bad in (dict(peak_flops=0.0), dict(bandwidth=float("inf")), dict(bandwidth="1")):
        args = dict(macs=1, nbytes=1, peak_flops=1.0, bandwidth=1.0) | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            roofline_seconds(**args)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nbytes"):
        roofline_seconds(1, -1, 1.0, 1.0)
    with pytest.raises(ValueError, match="t"):
        decode_step_bytes(TinyConfig(), 0)
    with pytest.raises(ValueError, match="cfg"):
        weight_bytes({"d_model": 4})  # type: ignore[arg-type]
