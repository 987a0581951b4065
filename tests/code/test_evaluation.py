"""code/evaluation.py：pass@k、采样、打分、地板、语料的通过率、异文和存取。

- pass@k 和「把 n 首里所有 k 首的挑法都列出来、数至少一首合格的比例」逐个相等（Chen 等 2021 的无偏估计）；
- 采样：同一个种子同样的诗，每组藏头 n 首；和一个手写的、不带 KV 缓存的采样循环写出的相同；
- 打分和地板按手数的结果核对；输入不对时抛出 ValueError。
这里的模型是随机初始化的唐诗 GPT（不读构建产物）：训练好的模型上的数由 tests/figures/test_evaluation_claims.py 核对。
"""

from __future__ import annotations

import ast
import inspect
import itertools
import math
import re

import evaluation
import pytest
import torch
from evaluation import (
    KS,
    Rate,
    check_comparison,
    corpus_pass_rates,
    draw,
    has_variant,
    load_comparison,
    mean_pass_at_k,
    other_prompt_control,
    pass_at_k,
    places_differ,
    print_comparison,
    prior_baselines,
    rate,
    sample_acrostics,
    sample_tokens,
    save_comparison,
    score_poems,
    variant_flags,
)
from gpt_from_scratch import load_poems, poem_config, split_poems
from sampling import sample
from tiny_transformer import TinyTransformer

from tests.code.test_lora_train import random_gpt, tok  # 第一阶段的词表，和这个形状的随机 GPT
from tests.code.test_sampling import check_frequencies

pytestmark = pytest.mark.usefixtures("one_thread")

POEM = "四時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅新。"  # 语料的第一首，藏头「四一送迎」
SPRING = "春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。"  # 藏头「春處夜花」，第二、四句押韵（鳥、少）


# --------------------------------------------------------------------------- pass@k


def enumerated_pass_at_k(n: int, c: int, k: int) -> float:
    """n 首里前 c 首合格：所有 C(n, k) 种挑法里，至少挑到一首合格的占多少。"""
    picks = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in pick) for pick in picks) / len(picks)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 10])
def test_pass_at_k_equals_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(enumerated_pass_at_k(n, c, k), abs=1e-12), (n, c, k)


def test_pass_at_1_is_the_share_and_large_n_is_stable() -> None:
    assert pass_at_k(16, 4, 1) == pytest.approx(4 / 16)
    # 组合数很大时也不溢出：和用 math.comb 直接算的一致
    n, c, k = 200, 7, 100
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), rel=1e-12)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 3, 3) == 1.0


def test_pass_at_k_is_not_the_naive_estimate() -> None:
    """1 - (1 - c/n)^k（把每次挑选当成有放回的）偏低：这里 0.9167 对 0.8319。"""
    assert pass_at_k(10, 3, 5) > 1 - (1 - 3 / 10) ** 5 + 0.05


def test_mean_pass_at_k() -> None:
    assert mean_pass_at_k([0, 8, 4], 8, 1) == pytest.approx((0 + 1 + 0.5) / 3)


# --------------------------------------------------------------------------- sampling


def test_sampling_is_reproducible_and_shaped() -> None:
    model, heads = random_gpt(), ["四一送迎", "春處夜花", "春夏秋冬"]
    a = sample_acrostics(model, tok(), heads, 3, seed=5)
    assert len(a) == 3 and all(len(ps) == 3 for ps in a)
    assert all("\n" not in p for ps in a for p in ps)
    assert a == sample_acrostics(model, tok(), heads, 3, seed=5)
    assert a != sample_acrostics(model, tok(), heads, 3, seed=6)


def test_sampling_equals_a_plain_loop_without_cache() -> None:
    """手写的采样：每一步把整个序列送进模型、取最后一个位置、softmax 之后用 draw 抽，同一个生成器。
    sample_poems 带 KV 缓存、一次写全部；两者抽到的词元应完全相同。draw 自己的分布由下面两项检验。"""
    t, model, heads, n = tok(), random_gpt(1), ["四一送迎", "春處夜花"], 2
    prompts = torch.tensor([t.encode("藏头：" + h + "\n") for h in heads]).repeat_interleave(n, dim=0)
    gen = torch.Generator().manual_seed(3)
    seqs = prompts
    with torch.no_grad():
        for _ in range(25):
            probs = model(seqs)[:, -1].softmax(-1)
            seqs = torch.cat([seqs, draw(probs, gen)[:, None]], dim=1)
    texts = [t.decode(row[prompts.size(1):].tolist()).split("\n")[0] for row in seqs]
    assert sample_acrostics(model, t, heads, n, seed=3) == [texts[:2], texts[2:]]


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_draw_frequencies_match_the_distribution(temperature: float) -> None:
    """draw（逆变换采样）和 sampling.sample（torch.multinomial）抽自同一个分布：20 万次里每个词元的次数都在
    二项分布均值的 4 个标准差以内，概率为 0 的词元（开头、中间、末尾各一个）一次也不出现。"""
    z = torch.tensor([-math.inf, 2.0, 1.5, 1.2, -math.inf, 0.5, 0.3, 0.0, -0.5, -1.0, -2.0, -3.0, -math.inf])
    target = torch.softmax(z.double() / temperature, -1)  # 独立算出的目标分布（float64）
    probs = torch.softmax(z / temperature, -1).expand(200_000, -1)
    draws = draw(probs, torch.Generator().manual_seed(0))
    assert draws.shape == (200_000,) and draws.dtype == torch.long
    check_frequencies(draws, target)
    multinomial = sample(z.expand(200_000, -1), torch.Generator().manual_seed(0), temperature)
    check_frequencies(multinomial, target)  # 对照：同一个检验下 torch.multinomial 也通过


def test_draw_never_runs_past_the_last_possible_token(monkeypatch) -> None:
    """随机数乘出来恰好等于总和时（舍入，极少见），累积概率里找不到更大的数：draw 退回到每行最后一个概率不为 0 的
    词元。用一个总是给出 1 的 torch.rand 把这种情况造出来。"""
    probs = torch.tensor([[0.2, 0.8, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]])
    monkeypatch.setattr(torch, "rand", lambda *size, generator=None, dtype=None: torch.ones(*size, dtype=dtype))
    assert draw(probs, torch.Generator()).tolist() == [1, 2, 3]


# --------------------------------------------------------------------------- scoring, floors, corpus, variants


def test_score_counts_lines_poems_form_and_rhyme() -> None:
    broken = "春眠不覺曉，處處聞啼鳥。"  # 只有两句：格式不对，句首对上两句
    scores = score_poems(["春處夜花", "四一送迎"], [[SPRING, broken], [POEM]])
    assert scores["line_heads"] == Rate(4 + 2 + 4, 12)  # broken 只写了两句，两句的句首都对
    assert scores["all_heads"] == Rate(2, 3) and scores["form"] == Rate(2, 3)
    assert scores["rhyme"] == Rate(2, 3)  # 鳥、少在遥条辙，春、新在人辰辙；broken 格式不对，不算押
    assert scores["all_heads_counts"] == [1, 1]


def test_other_prompt_control_shifts_by_one() -> None:
    heads = ["春處夜花", "四一送迎"]
    control = other_prompt_control(heads, [[SPRING], [POEM]])
    assert control == Rate(0, 8)  # 春處夜花的诗对四一送迎：一句也没对上，反过来也一样
    assert other_prompt_control(heads, [[POEM], [SPRING]]) == Rate(8, 8)


def test_prior_baselines_by_hand() -> None:
    train = ["不不春秋", "不一不不", "山不不不"]
    held = ["不不不不", "一二三四"]
    out = prior_baselines(train, held)
    assert out["commonest"] == ("不不不不", Rate(4, 8))
    guess = out["per_position"][0]
    assert guess == "不不不不"  # 第一句：不 2 次、山 1 次；第二句：不 2、一 1；三、四句都是不
    assert out["per_position"][1] == Rate(4, 8)


def test_corpus_poems_pass_form_and_heads() -> None:
    rates = corpus_pass_rates([POEM, SPRING])
    assert rates["form"] == Rate(2, 2) and rates["all_heads"] == Rate(2, 2)
    assert rates["rhyme"].n == 2


def test_variants_by_places() -> None:
    assert places_differ(POEM, POEM.replace("新", "親")) == 1
    assert has_variant(POEM, [POEM.replace("新", "親").replace("春", "秋")])
    assert not has_variant(POEM, [POEM.replace("新", "親").replace("春", "秋").replace("梅", "花")])
    assert not has_variant(POEM, [SPRING, POEM[:-1]])  # 字数不同的不比


def test_the_fast_variant_search_equals_the_reference_on_the_corpus() -> None:
    """variant_flags（构建用的）和 has_variant（文章里照定义写的）在整个验证集上给出同样的 True / False。"""
    train_text, held_text = split_poems(load_poems())
    train, held = train_text.splitlines(), held_text.splitlines()
    flags = variant_flags(held, train)
    assert flags == [has_variant(p, train) for p in held]
    assert 0 < sum(flags) < len(held), "both answers occur: the comparison can tell the two apart"
    for places in (0, 1, 3):
        assert variant_flags(held[:40], train, places) == [has_variant(p, train, places) for p in held[:40]]


def test_the_fast_variant_search_handles_lengths_the_training_set_lacks() -> None:
    train = [POEM.replace("新", "親").replace("春", "秋"), SPRING[:-1]]
    three_apart = POEM.replace("四", "五").replace("一", "二").replace("送", "迎")
    poems = [POEM, SPRING, SPRING[:-2] + "？", "山" * 7, three_apart]
    assert variant_flags(poems, train) == [has_variant(p, train) for p in poems] == [True, False, True, False, False]


def test_rate_and_round_trip(tmp_path) -> None:
    r = rate(3, 10)
    assert r.value == 0.3 and r.interval[0] < 0.3 < r.interval[1]
    result = {"runs": {"m": {"pass_at_k": {1: 0.5, 2: 0.75}, "sampled": {"line_heads": r}}}, "heads": ["春處夜花"],
              "variant": [False], "baselines": {"commonest": ("不不不不", r)}, "corpus": {},
              "train_head_sets": ["春處夜花"], "settings": {"ks": [1, 2]}}
    save_comparison(tmp_path / "c.pt", result)
    back = load_comparison(tmp_path / "c.pt")
    assert back["runs"]["m"]["sampled"]["line_heads"] == r and back["baselines"]["commonest"] == ["不不不不", r]


def test_print_comparison_on_a_small_result(capsys) -> None:
    """单独运行本文件时打印的那几行：在一个手搭的小结果上跑一遍（不评估真的模型），pass@k 打印最小和最大的 k。"""
    r = rate(3, 10)
    run = {"sampled": {"line_heads": r, "form": r, "rhyme": r}, "greedy": {"line_heads": r}, "other_prompt": r,
           "pass_at_k": {k: k / 10 for k in KS}}
    result = {"runs": {"capable-0": run, "m": run}, "heads": ["春處夜花"], "variant": [False],
              "baselines": {"commonest": ("不不不不", r)}, "corpus": {}, "train_head_sets": ["春處夜花"],
              "settings": {"ks": list(KS), "sample_seeds": [0, 1], "per_seed": 2}}
    print_comparison(result, 1.5)
    out = capsys.readouterr().out
    assert f"pass@{min(KS)}/{max(KS)} {min(KS) / 10:.3f}/{max(KS) / 10:.3f}" in out
    assert "每组采样 4 首" in out and "SFT 全参数 500 步（种子 0）" in out and "地板 commonest" in out


def test_the_main_block_comes_last() -> None:
    """`python code/evaluation.py` 运行 __main__ 那一段时，它用到的函数（包括文件末尾的检查函数）都要已经定义好：
    这一段是文件里最后一条顶层语句。"""
    tree = ast.parse(inspect.getsource(evaluation))
    mains = [i for i, node in enumerate(tree.body) if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    assert mains == [len(tree.body) - 1]


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: pass_at_k(5, 6, 1), "不能比写的首数"),
    (lambda: pass_at_k(5, 2, 6), "挑不出 k 首"),
    (lambda: pass_at_k(0, 0, 1), "n 应是不小于 1"),
    (lambda: pass_at_k(5, -1, 1), "c 应是不小于 0"),
    (lambda: pass_at_k(5, 1, 0), "k 应是不小于 1"),
    (lambda: pass_at_k(5.0, 1, 1), "n 应是不小于 1 的整数"),
    (lambda: pass_at_k(True, 1, 1), "n 应是不小于 1 的整数"),
    (lambda: mean_pass_at_k([], 4, 1), "非空的整数列表"),
    (lambda: mean_pass_at_k([5], 4, 1), "比每组写的首数"),
    (lambda: mean_pass_at_k("12", 4, 1), "非空的整数列表"),
    (lambda: sample_acrostics("model", tok(), ["春處夜花"], 2, 0), "TinyTransformer"),
    (lambda: sample_acrostics(random_gpt(), tok(), "春處夜花", 2, 0), "列表"),
    (lambda: sample_acrostics(random_gpt(), tok(), ["春處夜花"], 0, 0), "n 应是不小于 1"),
    (lambda: sample_acrostics(random_gpt(), tok(), ["春處夜花"], 2, -1), "seed 应是不小于 0"),
    (lambda: sample_acrostics(random_gpt(), tok(), ["春處夜花"], 2, 0, temperature=0), "temperature"),
    (lambda: sample_acrostics(random_gpt(), tok(), ["春處夜花"], 2, 0, temperature=float("inf")), "temperature"),
    (lambda: sample_acrostics(TinyTransformer(poem_config(300)), tok(), ["春處夜花"], 2, 0), "不是配套的一对"),
    (lambda: score_poems(["春處夜花"], [SPRING]), "一首也要放进列表"),
    (lambda: score_poems(["春處夜花"], [[SPRING], [POEM]]), "每组藏头一项"),
    (lambda: score_poems([], []), "非空的藏头列表"),
    (lambda: score_poems(["春處夜"], [[SPRING]]), "4 个字"),
    (lambda: score_poems(["春處夜花"], [[]]), "非空列表"),
    (lambda: other_prompt_control(["春處夜花", "春處夜花"], [[SPRING], [SPRING]]), "两组不同的藏头"),
    (lambda: prior_baselines([], ["春處夜花"]), "train_heads 应是非空"),
    (lambda: prior_baselines(["春處夜花"], "春處夜花"), "held_heads 应是非空"),
    (lambda: corpus_pass_rates([]), "非空列表"),
    (lambda: corpus_pass_rates(["山水。"]), "没有一首是四句"),
    (lambda: places_differ(POEM, SPRING[:-1]), "字数不同"),
    (lambda: places_differ(POEM, None), "两首诗"),
    (lambda: has_variant(POEM, POEM), "list"),
    (lambda: has_variant("", [POEM]), "非空的 str"),
    (lambda: has_variant(POEM, [POEM], places=-1), "places 应是不小于 0"),
    (lambda: variant_flags(POEM, [POEM]), "诗的列表"),
    (lambda: variant_flags([], [POEM]), "非空"),
    (lambda: variant_flags([POEM, ""], [POEM]), "非空的 str"),
    (lambda: variant_flags([POEM], POEM), "list"),
    (lambda: rate(3, 2), "successes 应在 0 到 n"),
    (lambda: check_comparison({"runs": {}}), "compare_models"),
    (lambda: load_comparison("/nonexistent/c.pt"), "找不到"),
])
def test_wrong_input_raises_value_error(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call()


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: draw(torch.tensor([0.5, 0.5]), torch.Generator()), "probs 的形状应为 (B, V)"),
    (lambda: draw(torch.tensor([[1, 0]]), torch.Generator()), "probs 应为浮点的 torch.Tensor"),
    (lambda: draw(torch.tensor([[0.5, 0.5]]), 0), "generator 应为 torch.Generator"),
    (lambda: sample_tokens(torch.nn.Linear(2, 2), torch.zeros(1, 3, dtype=torch.long), 2, 1.0, torch.Generator()),
     "model 应为 TinyTransformer"),
    (lambda: sample_tokens(random_gpt(), torch.zeros(3, dtype=torch.long), 2, 1.0, torch.Generator()),
     "prompts 应为 (B, P) 的整数张量"),
    (lambda: sample_tokens(random_gpt(), torch.zeros(1, 3, dtype=torch.long), 0, 1.0, torch.Generator()),
     "max_new_tokens 应是不小于 1"),
    (lambda: sample_tokens(random_gpt(), torch.zeros(1, 3, dtype=torch.long), 2, 0.0, torch.Generator()),
     "temperature 应为有限的正数"),
])
def test_draw_and_sample_tokens_reject_wrong_input(call, fragment) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        call()
