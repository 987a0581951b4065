"""code/sampling.py：温度、top-k、top-p、重复惩罚、采样与贪心。

集合是否「恰好」对，用逐个词元独立判断的参考实现核对（不排序、不累加）：
- top-k：比它分数高的词元不到 k 个，就留下；
- top-p：比它概率高的那些词元加起来（math.fsum）不到 p，就留下。
另有概率恰好是 2 的负幂的手算例子，覆盖并列和 p 正好落在累计概率上的边界。
采样的频率用二项分布的标准差定容差：N 次中每个词元的次数与 N·p 的差不超过 4 个标准差。
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from sampling import (
    apply_repetition_penalty,
    apply_temperature,
    greedy,
    next_token_probs,
    sample,
    top_k_filter,
    top_p_filter,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py




F64 = torch.float64
LN2 = math.log(2)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def tied_logits(*shape: int, seed: int = 0) -> torch.Tensor:
    """取值只有 0..4 的整数 logits：同一行里有很多并列。"""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 5, shape, generator=g).to(F64)


def kept(filtered: torch.Tensor) -> torch.Tensor:
    return torch.isfinite(filtered)


# ---------------------------------------------------------------- references


def reference_top_k(row: list[float], k: int) -> list[bool]:
    return [sum(other > z for other in row) < k for z in row]


def reference_top_p(probs: list[float], p: float) -> list[bool]:
    if p >= 1:
        return [True] * len(probs)
    return [math.fsum(q for q in probs if q > pi) < p for pi in probs]


# ---------------------------------------------------------------- temperature


def test_temperature_divides_and_keeps_order() -> None:
    z = randn(3, 11)
    for t in (0.1, 0.5, 1.0, 2.0, 7.0):
        out = apply_temperature(z, t)
        torch.testing.assert_close(out, z / t)
        assert torch.equal(out.argsort(dim=-1), z.argsort(dim=-1))


def test_temperature_limits() -> None:
    z = torch.tensor([1.0, 3.0, 2.0, -1.0], dtype=F64)
    cold = torch.softmax(apply_temperature(z, 1e-3), dim=-1)
    hot = torch.softmax(apply_temperature(z, 1e4), dim=-1)
    torch.testing.assert_close(cold, torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=F64))
    torch.testing.assert_close(hot, torch.full((4,), 0.25, dtype=F64), atol=1e-3, rtol=0)
    torch.testing.assert_close(torch.softmax(apply_temperature(z, 1.0), dim=-1), torch.softmax(z, dim=-1))


def test_lower_temperature_is_sharper() -> None:
    z = randn(20)
    entropies = []
    for t in (0.25, 0.5, 1.0, 2.0, 4.0):
        p = torch.softmax(z / t, dim=-1)
        entropies.append(-(p * p.log()).sum().item())
    assert entropies == sorted(entropies)


@pytest.mark.parametrize("bad", [0, 0.0, -1.0, float("inf"), float("nan"), True, "1", None])
def test_temperature_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="temperature"):
        apply_temperature(randn(2, 5), bad)  # type: ignore[arg-type]


def test_temperature_zero_points_to_greedy() -> None:
    with pytest.raises(ValueError, match="greedy"):
        apply_temperature(randn(2, 5), 0)


# ---------------------------------------------------------------- top-k


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [1, 2, 3, 5, 9, 12, 50])
def test_top_k_keeps_exactly_the_intended_set(seed: int, k: int) -> None:
    for z in (randn(4, 12, seed=seed), tied_logits(4, 12, seed=seed)):
        out = top_k_filter(z, k)
        for row, mask, filtered in zip(z.tolist(), kept(out).tolist(), out, strict=True):
            assert mask == reference_top_k(row, k)
            kept_values = [v for v, m in zip(row, mask, strict=True) if m]
            torch.testing.assert_close(filtered[torch.isfinite(filtered)],
                                       torch.tensor(kept_values, dtype=F64))  # 留下的分数不变


def test_top_k_without_ties_matches_torch_topk() -> None:
    z = randn(6, 30, seed=3)
    out = top_k_filter(z, 7)
    expected = torch.zeros_like(z, dtype=torch.bool).scatter(-1, z.topk(7, dim=-1).indices, True)
    assert torch.equal(kept(out), expected)


def test_top_k_ties_by_hand() -> None:
    z = torch.tensor([2.0, 1.0, 1.0, 0.0])
    assert kept(top_k_filter(z, 1)).tolist() == [True, False, False, False]
    assert kept(top_k_filter(z, 2)).tolist() == [True, True, True, False]  # 第 2 名并列：两个都留
    assert kept(top_k_filter(z, 3)).tolist() == [True, True, True, False]
    assert kept(top_k_filter(z, 4)).tolist() == [True] * 4
    assert kept(top_k_filter(torch.zeros(5), 1)).tolist() == [True] * 5  # 全部并列


def test_top_k_batch_dims_and_input_untouched() -> None:
    z = randn(2, 3, 10)
    before = z.clone()
    out = top_k_filter(z, 4)
    assert out.shape == z.shape and torch.equal(z, before)
    assert (kept(out).sum(dim=-1) == 4).all()


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_top_k_rejects_k(bad: object) -> None:
    with pytest.raises(ValueError, match="k"):
        top_k_filter(randn(2, 5), bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- top-p


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("p", [1e-9, 0.1, 0.3, 0.5, 0.75, 0.9, 0.95, 0.999, 1.0])
def test_top_p_keeps_exactly_the_intended_set(seed: int, p: float) -> None:
    for z in (randn(4, 12, seed=seed), tied_logits(4, 12, seed=seed), 3 * randn(4, 12, seed=seed + 10)):
        out = top_p_filter(z, p)
        probs = torch.softmax(z, dim=-1)
        for prob_row, mask in zip(probs.tolist(), kept(out).tolist(), strict=True):
            assert mask == reference_top_p(prob_row, p)
            # 留下的概率之和达到 p，且只差最后一档（并列的一组）就不够
            mass = math.fsum(q for q, m in zip(prob_row, mask, strict=True) if m)
            assert mass >= p or math.isclose(mass, p) or p >= 1
            smallest = min(q for q, m in zip(prob_row, mask, strict=True) if m)
            assert math.fsum(q for q in prob_row if q > smallest) < p or p >= 1


def dyadic(*exponents: int) -> torch.Tensor:
    """logits = e · ln 2：softmax 之后恰好是 2 的幂之比，累加没有舍入误差。"""
    return torch.tensor(exponents, dtype=F64) * LN2


@pytest.mark.parametrize(("p", "expected"), [
    (1e-6, [True, False, False, False]),  # 很小的 p：只留概率最高的
    (0.5, [True, False, False, False]),  # 第一个词元恰好 0.5：已经够了
    (0.5000001, [True, True, False, False]),  # 刚超过 0.5：跨线的第二个也要留
    (0.75, [True, True, False, False]),  # 恰好等于前两个之和
    (0.76, [True, True, True, True]),  # 第 3、4 个并列（各 0.125）：一起留
    (1.0, [True, True, True, True]),
])
def test_top_p_boundaries_by_hand(p: float, expected: list[bool]) -> None:
    z = dyadic(2, 1, 0, 0)  # 概率 0.5、0.25、0.125、0.125
    assert torch.softmax(z, dim=-1).tolist() == [0.5, 0.25, 0.125, 0.125]  # 例子的前提：概率是精确的
    assert kept(top_p_filter(z, p)).tolist() == expected
    assert kept(top_p_filter(z.float(), p)).tolist() == expected  # float32 也一样


def test_top_p_all_tied_keeps_all() -> None:
    assert kept(top_p_filter(torch.zeros(4), 0.3)).tolist() == [True] * 4


def test_top_p_keeps_one_token_whose_probability_exceeds_p() -> None:
    z = dyadic(3, 0, 0)  # 0.8、0.1、0.1
    assert kept(top_p_filter(z, 0.5)).tolist() == [True, False, False]


def test_top_p_one_keeps_tokens_with_underflowing_probability() -> None:
    z = torch.tensor([0.0, -200.0, -1000.0])  # 后两个的概率在 float32 里下溢为 0
    assert kept(top_p_filter(z, 1.0)).tolist() == [True, True, True]


def test_top_p_respects_earlier_filter() -> None:
    z = top_k_filter(dyadic(3, 2, 1, 0), 2)
    assert kept(top_p_filter(z, 1.0)).tolist() == [True, True, False, False]
    assert kept(top_p_filter(z, 0.99)).tolist() == [True, True, False, False]


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.01, float("nan"), True, "0.9", None])
def test_top_p_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="p"):
        top_p_filter(randn(2, 5), bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the whole pipeline


def test_next_token_probs_is_temperature_then_top_k_then_top_p() -> None:
    z = randn(3, 16, seed=8)
    for t, k, p in ((0.7, 6, 0.8), (1.5, 10, 0.6), (1.0, None, 0.9), (0.5, 3, None)):
        scaled = z / t
        keep = torch.ones_like(z, dtype=torch.bool)
        if k is not None:
            keep &= torch.tensor([reference_top_k(row, k) for row in scaled.tolist()])
        if p is not None:
            masked = scaled.masked_fill(~keep, float("-inf"))
            keep &= torch.tensor([reference_top_p(row, p) for row in torch.softmax(masked, -1).tolist()])
        expected = torch.softmax(scaled, dim=-1) * keep
        expected = expected / expected.sum(dim=-1, keepdim=True)  # 留下的按原来的比例重新归一化
        torch.testing.assert_close(next_token_probs(z, t, k, p), expected)


def test_order_of_temperature_and_top_p_matters() -> None:
    """先调温度再截断，和先截断再调温度，留下的集合不同（文章「容易写错的地方」第 3 条）。"""
    z = torch.tensor([3.0, 2.2, 1.8, 1.2, 0.8, 0.3, -0.5, -1.5], dtype=F64)
    temperature_first = kept(top_p_filter(apply_temperature(z, 2.0), 0.9)).sum().item()
    top_p_first = kept(apply_temperature(top_p_filter(z, 0.9), 2.0)).sum().item()
    assert temperature_first != top_p_first


# ---------------------------------------------------------------- sampling


def check_frequencies(draws: torch.Tensor, target: torch.Tensor, n_sd: float = 4.0) -> None:
    """每个词元被抽中的次数与 N·p 的差不超过 n_sd 个二项分布标准差；p = 0 的一次也不出现。"""
    n = draws.numel()
    counts = torch.bincount(draws, minlength=target.numel()).to(F64)
    for i, (c, p) in enumerate(zip(counts.tolist(), target.tolist(), strict=True)):
        if p == 0:
            assert c == 0, f"词元 {i} 已被过滤（p = 0），却被抽中 {c:.0f} 次"
            continue
        sd = math.sqrt(n * p * (1 - p))
        assert abs(c - n * p) <= n_sd * sd, f"词元 {i}：抽中 {c:.0f} 次，期望 {n * p:.1f} ± {n_sd} × {sd:.1f}"


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [
    (1.0, None, None), (0.7, None, None), (2.0, None, None), (1.0, 4, None), (1.0, None, 0.8), (0.8, 6, 0.9),
])
def test_sampling_frequencies_match_the_distribution(temperature: float, top_k: int | None,
                                                     top_p: float | None) -> None:
    z = torch.tensor([2.0, 1.5, 1.2, 0.5, 0.3, 0.0, -0.5, -1.0, -2.0, -3.0])
    n = 200_000
    target = next_token_probs(z.double(), temperature, top_k, top_p)  # 独立算出的目标分布（float64）
    draws = sample(z.expand(n, -1), torch.Generator().manual_seed(0), temperature, top_k, top_p)
    assert draws.shape == (n,) and draws.dtype == torch.long
    check_frequencies(draws, target)


def test_frequency_check_can_fail() -> None:
    """上面的检验确实能发现错误：从均匀分布抽的签，拿去和一个不均匀的分布比，会被抓出来。"""
    z = torch.tensor([2.0, 1.5, 1.2, 0.5, 0.3, 0.0, -0.5, -1.0, -2.0, -3.0])
    wrong = sample(torch.zeros(200_000, 10), torch.Generator().manual_seed(0))
    with pytest.raises(AssertionError):
        check_frequencies(wrong, torch.softmax(z.double(), -1))


def test_sampling_is_reproducible_with_a_generator() -> None:
    z = randn(64, 20).float()
    a = sample(z, torch.Generator().manual_seed(5), top_p=0.9)
    b = sample(z, torch.Generator().manual_seed(5), top_p=0.9)
    c = sample(z, torch.Generator().manual_seed(6), top_p=0.9)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_sample_with_top_k_one_is_greedy() -> None:
    z = randn(50, 30)
    assert torch.equal(sample(z, torch.Generator().manual_seed(0), top_k=1), greedy(z))


# ---------------------------------------------------------------- greedy


def test_greedy_is_argmax_and_takes_lowest_index_on_ties() -> None:
    z = randn(5, 9)
    assert torch.equal(greedy(z), z.argmax(dim=-1))
    assert greedy(torch.tensor([[1.0, 3.0, 3.0, 0.0]])).tolist() == [1]


# ---------------------------------------------------------------- repetition penalty


def reference_penalty(logits: torch.Tensor, previous: torch.Tensor, penalty: float) -> torch.Tensor:
    out = logits.clone()
    for b in range(logits.size(0)):
        for token in set(previous[b].tolist()):
            z = logits[b, token].item()
            out[b, token] = z / penalty if z > 0 else z * penalty
    return out


def test_repetition_penalty_matches_reference() -> None:
    z = randn(3, 12)
    previous = torch.tensor([[0, 1, 1, 5], [11, 11, 11, 11], [2, 3, 4, 2]])
    for penalty in (0.8, 1.0, 1.3, 2.0):
        torch.testing.assert_close(apply_repetition_penalty(z, previous, penalty),
                                   reference_penalty(z, previous, penalty))


def test_repetition_penalty_lowers_seen_tokens() -> None:
    z = randn(2, 10)
    previous = torch.tensor([[1, 2], [3, 3]])
    out = apply_repetition_penalty(z, previous, 1.5)
    p_before, p_after = torch.softmax(z, -1), torch.softmax(out, -1)
    for b, seen in enumerate(previous.tolist()):
        for t in set(seen):
            assert p_after[b, t] < p_before[b, t]


def test_repetition_penalty_depends_on_the_sign() -> None:
    """logits 整体加一个常数，softmax 不变，重复惩罚之后的分布却变了（文章「容易写错的地方」第 7 条）。"""
    z = torch.tensor([[-1.0, -2.0, -0.5, -3.0]], dtype=F64)
    previous = torch.tensor([[0, 2]])
    torch.testing.assert_close(torch.softmax(z, -1), torch.softmax(z + 10, -1))
    a = torch.softmax(apply_repetition_penalty(z, previous, 1.5), -1)
    b = torch.softmax(apply_repetition_penalty(z + 10, previous, 1.5), -1)
    assert (a - b).abs().max() > 0.01


# ---------------------------------------------------------------- shapes and arguments


@pytest.mark.parametrize(("fn", "args"), [
    (apply_temperature, (1.0,)), (top_k_filter, (2,)), (top_p_filter, (0.9,)),
])
def test_filters_reject_bad_logits(fn, args) -> None:
    for bad, match in ((torch.tensor(1.0), "logits 的形状"), (torch.zeros(3, 0), "logits 的形状"),
                       (torch.tensor([1, 2, 3]), "浮点"), (torch.tensor([1.0, float("nan")]), "NaN"),
                       (torch.full((2, 3), float("-inf")), "-inf"), ([1.0, 2.0], "torch.Tensor")):
        with pytest.raises(ValueError, match=match):
            fn(bad, *args)


@pytest.mark.parametrize("fn", [greedy, lambda z: sample(z, torch.Generator())])
def test_sample_and_greedy_want_two_dims(fn) -> None:
    with pytest.raises(ValueError, match=r"logits\[None\]"):
        fn(randn(7))
    with pytest.raises(ValueError, match=r"logits\[:, -1\]"):
        fn(randn(2, 3, 7))


def test_sample_rejects_a_non_generator() -> None:
    with pytest.raises(ValueError, match="generator"):
        sample(randn(2, 5), generator=0)  # type: ignore[arg-type]


def test_repetition_penalty_rejects() -> None:
    z = randn(2, 5)
    ok = torch.tensor([[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r"previous 的形状.*previous\[None\]"):
        apply_repetition_penalty(z, torch.tensor([0, 1]), 1.2)
    with pytest.raises(ValueError, match="previous 的形状"):
        apply_repetition_penalty(z, torch.tensor([[0, 1]]), 1.2)  # B 不一致
    with pytest.raises(ValueError, match="整数"):
        apply_repetition_penalty(z, ok.float(), 1.2)
    with pytest.raises(ValueError, match="0 到 V - 1 = 4"):
        apply_repetition_penalty(z, torch.tensor([[0, 5], [1, 2]]), 1.2)
    with pytest.raises(ValueError, match="0 到 V - 1"):
        apply_repetition_penalty(z, torch.tensor([[0, -1], [1, 2]]), 1.2)
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(ValueError, match="penalty"):
            apply_repetition_penalty(z, ok, bad)  # type: ignore[arg-type]


def test_checks_survive_python_O() -> None:
    """检查用的是 raise 而不是 assert：python -O 下照样报错。"""
    code = Path(__file__).resolve().parents[2] / "code"
    script = (
        "import sys, torch; sys.path.insert(0, sys.argv[1])\n"
        "from sampling import top_p_filter\n"
        "from kv_cache import KVCache\n"
        "for f in (lambda: top_p_filter(torch.zeros(3), 0), lambda: KVCache(0, 1, 1, 1, 1)):\n"
        "    try:\n        f()\n    except ValueError:\n        pass\n"
        "    else:\n        sys.exit(1)\n"
    )
    proc = subprocess.run([sys.executable, "-O", "-c", script, str(code)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
