"""code/dpo_train.py：偏好对、奖励模型、DPO、评估和存取。

- 偏好对里没有同分的一对：好回答的分数总比差回答高，同分的组数记在 ties 里；
- 奖励模型的损失就是 −log σ(r_好 − r_差)（这里逐项照公式用 math 算一遍）；
- DPO 走一步，隐含奖励之差（好的对数概率比减差的）从 0 变成正的；
- 同一个种子，偏好对、奖励模型、DPO 的结果逐位相同；存下再读回一样，两次存下的文件逐字节相同；
- 实验的三部分各是一个构建产物：倒着一个个算、存下再读回合成的结果，和在一个进程里顺着算（种子 0 的 DPO、IPO、
  β 扫描，再种子 1）的每个值都相同（构建时两个核并排算它们，靠的就是这一点）；
- 输入不对时抛出 ValueError。
这里的模型是随机初始化的唐诗 GPT（不读构建产物），偏好对用语料里的诗手工拼成；训练好的模型上的数由文章的论断测试核对。
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from functools import cache

import dpo_train
import pytest
import torch
import verifiers
from acrostic import acrostic_prompt, line_heads
from dpo_train import (
    DPOSettings,
    Pairs,
    RewardModel,
    build_pairs,
    dpo_experiment,
    evaluate_policy,
    head_token_shifts,
    implicit_accuracy,
    load_dpo,
    pair_accuracy,
    pair_log_probs,
    pair_sequences,
    poem_score,
    reward_model_loss,
    run_seed,
    save_dpo,
    sequence_kl,
    tally,
    train_dpo,
    train_reward_model,
)
from evaluation import Samples, draw, sample_poems
from gpt_from_scratch import MIN_COUNT, load_poems, poem_config, split_poems
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer

from .same_values import assert_same_values

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TINY = DPOSettings(prompts=4, samples=2, steps=2, batch_size=4, rm_steps=2, eval_samples=1, lr=1e-3)


@cache
def tok() -> CharTokenizer:
    return CharTokenizer.train(split_poems(load_poems())[0], min_count=MIN_COUNT)


def random_gpt(seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(poem_config(tok().vocab_size)).eval()


@cache
def usable_poems() -> list[str]:
    """语料里每个字都在词表里的诗：编成 24 个词元，加上换行 25 个。"""
    t = tok()
    return [p for p in load_poems()[:400] if len(t.encode(p)) == 24 and len(line_heads(p)) == 4]


def hand_pairs(n: int = 8) -> Pairs:
    """手拼的偏好对：第 i 组藏头取第 i 首诗的句首，好回答就是这首诗（四句都对上），
    差回答是另一首诗（多半一句也对不上）。"""
    t, poems = tok(), usable_poems()
    heads = [line_heads(p) for p in poems[:n]]
    good = [poems[i] for i in range(n)]
    bad = [poems[n + i] for i in range(n)]
    enc = lambda texts: torch.tensor([t.encode(x + "\n") for x in texts])  # noqa: E731
    mask = torch.ones(n, 25, dtype=torch.bool)
    return Pairs(torch.tensor([t.encode(acrostic_prompt(h)) for h in heads]), enc(good), enc(bad), mask,
                 mask.clone(), heads, good, bad, [poem_score(h, x) for h, x in zip(heads, good, strict=True)],
                 [poem_score(h, x) for h, x in zip(heads, bad, strict=True)], n, 0)


# --------------------------------------------------------------------------- score and pairs


def test_score_weights_heads_above_form_and_rhyme() -> None:
    poem = usable_poems()[0]
    h = line_heads(poem)
    assert poem_score(h, poem) == 4 + 0.5 + (0.25 if dpo_train.verify(h, poem).rhyme else 0)
    assert poem_score(h, poem[:12]) == 2  # 只写了两句：格式不对，句首对上 2 个
    # 一个句首（1 分）比格式和押韵加起来（0.75）重
    assert poem_score(h, poem[:12]) > poem_score("一二三四", poem)


def test_score_without_rhyme_drops_only_the_rhyme_quarter() -> None:
    for poem in usable_poems()[:30]:
        h = line_heads(poem)
        v = dpo_train.verify(h, poem)
        assert poem_score(h, poem, rhyme=False) == poem_score(h, poem) - 0.25 * v.rhyme
        assert tally([h], [poem], rhyme=False) == {**tally([h], [poem]), "rhyme": 0}


def test_no_rhyme_never_loads_the_pronunciation_dictionary(monkeypatch) -> None:
    """rhyme=False 是给只装了 torch、numpy、matplotlib 的动手实验用的：一次也不查读音。"""
    def no_dictionary(char):
        raise AssertionError("rhyme=False 时不应查读音")

    monkeypatch.setattr(verifiers, "rhyme_group", no_dictionary)
    poem = usable_poems()[0]
    assert poem_score(line_heads(poem), poem, rhyme=False) == 4.5
    t = tok()
    pairs = build_pairs(random_gpt(3), t, [line_heads(p) for p in usable_poems()[:4]], 3, 1.0,
                        torch.Generator().manual_seed(0), rhyme=False)
    assert len(pairs) + pairs.ties == 4
    ev = evaluate_policy(random_gpt(5), random_gpt(5), t, [line_heads(poem)], replace(TINY, eval_samples=1),
                         rhyme=False)
    assert ev["sampled"]["rhyme"] == 0 and ev["greedy"]["rhyme"] == 0


def test_pairs_never_contain_ties(monkeypatch) -> None:
    """造一批分数已知的「采样」：第 0 组两首同分（丢掉），第 1 组分数各不相同，第 2 组有两首并列最高。"""
    poems = usable_poems()
    p0, p1 = poems[0], poems[1]
    h0, h1 = line_heads(p0), line_heads(p1)
    heads = [h0, h1, h0]
    texts = [p1, p1, p0[:12], p0, p0[:6], p1[:6], p0, p0]  # 分数：0.5, 0.5 | 2, 4.5+, 1, 0 | 4.5+, 4.5+
    texts[7] = texts[7][:-1] + "。"
    t = tok()
    fake = Samples(torch.tensor([t.encode((x + "\n" * 25)[:25]) for x in texts]), torch.ones(8, 25, dtype=torch.bool),
                   texts)
    monkeypatch.setattr(dpo_train, "sample_poems", lambda *args, **kwargs: fake)
    pairs = build_pairs(random_gpt(), t, heads, 2, 1.0, torch.Generator())
    assert pairs.ties == 1 and pairs.n_prompts == 3 and len(pairs) == 2
    # 第 1 组：n = 2，所以只看第 2、3 首；第 2 组：第 4、5 首
    assert pairs.heads == [h1, h0]
    assert pairs.chosen_text == [p0, p0[:6]] and pairs.rejected_text == [p0[:12], p1[:6]]
    assert all(c > r for c, r in zip(pairs.chosen_score, pairs.rejected_score, strict=True))


def test_pairs_from_a_real_sampling_have_no_ties_and_add_up() -> None:
    t = tok()
    model = random_gpt(3)
    heads = [line_heads(p) for p in usable_poems()[:6]]
    pairs = build_pairs(model, t, heads, 3, 1.0, torch.Generator().manual_seed(0))
    assert len(pairs) + pairs.ties == len(heads)
    for h, c, r, sc, sr in zip(pairs.heads, pairs.chosen_text, pairs.rejected_text, pairs.chosen_score,
                               pairs.rejected_score, strict=True):
        assert sc == poem_score(h, c) and sr == poem_score(h, r) and sc > sr


def test_samples_stop_at_the_first_newline() -> None:
    t = tok()
    s = sample_poems(random_gpt(2), t, ["四一送迎"], 3, 1.0, torch.Generator().manual_seed(1))
    newline = t.char_to_id["\n"]
    for row, m, text in zip(s.tokens.tolist(), s.mask.tolist(), s.texts, strict=True):
        end = row.index(newline) + 1 if newline in row else len(row)
        assert m == [True] * end + [False] * (len(row) - end)
        assert text == t.decode(row[:end]).split("\n")[0]


def test_sampling_is_plain_sampling_in_chunks() -> None:
    """sample_poems 带 KV 缓存、分块生成；这里不带缓存，逐步把整个序列送进模型、用同一个种子和 draw 抽样，
    结果应相同。"""
    t, model = tok(), random_gpt(4)
    s = sample_poems(model, t, ["四一送迎", "春夏秋冬"], 2, 0.7, torch.Generator().manual_seed(9), chunk=3)
    gen = torch.Generator().manual_seed(9)
    first = torch.tensor([t.encode(acrostic_prompt(h)) for h in ["四一送迎"] * 2 + ["春夏秋冬"] * 2])
    rows = []
    for part in (first[:3], first[3:]):  # 和 chunk=3 同样的分块：每块按行抽样
        seq = part
        with torch.no_grad():
            for _ in range(25):
                probs = (model(seq)[:, -1] / 0.7).softmax(-1)
                seq = torch.cat([seq, draw(probs, gen)[:, None]], dim=1)
        rows.append(seq[:, first.size(1):])
    assert torch.equal(s.tokens, torch.cat(rows))


# --------------------------------------------------------------------------- reward model


def test_reward_model_loss_is_minus_log_sigmoid_of_the_difference() -> None:
    r_c, r_r = torch.tensor([0.3, -1.2, 2.0, 0.0]), torch.tensor([0.1, 0.4, -3.0, 0.0])
    want = sum(-math.log(1 / (1 + math.exp(-(a - b)))) for a, b in zip(r_c.tolist(), r_r.tolist(), strict=True)) / 4
    assert reward_model_loss(r_c, r_r).item() == pytest.approx(want, rel=1e-6)
    assert reward_model_loss(torch.zeros(3), torch.zeros(3)).item() == pytest.approx(math.log(2), rel=1e-6)


def test_reward_is_read_at_the_last_answer_token() -> None:
    """奖励只看到回答的最后一个词元为止：把它后面的词元换掉，奖励不变（因果注意力）；换掉它自己，奖励变了。"""
    torch.manual_seed(0)
    rm = RewardModel(random_gpt()).eval()
    tokens, mask = pair_sequences(hand_pairs(2), "chosen")
    mask[:, -5:] = False
    with torch.no_grad():
        before = rm(tokens, mask)
        later = tokens.clone()
        later[:, -5:] = 7
        last = tokens.clone()
        last[:, -6] = 7
        assert torch.equal(rm(later, mask), before)
        assert not torch.allclose(rm(last, mask), before)
        hidden = rm.body(tokens)[:, -6]  # 主干没有输出层：直接是最后一层的隐状态
        assert torch.allclose(rm.head(hidden).squeeze(-1), before)


def test_reward_model_learns_the_pairs() -> None:
    pairs = hand_pairs(8)
    rm, history = train_reward_model(random_gpt(), pairs, replace(TINY, rm_steps=30, batch_size=8, rm_lr=1e-3))
    assert history.loss[-1] < history.loss[0]
    assert pair_accuracy(rm, pairs) == 1.0


# --------------------------------------------------------------------------- DPO


@pytest.mark.parametrize("loss", ["dpo", "ipo"])
def test_one_dpo_step_moves_the_margin_the_right_way(loss) -> None:
    start, pairs = random_gpt(), hand_pairs(8)
    policy, history = train_dpo(start, pairs, replace(TINY, steps=1, batch_size=8, lr=1e-4, loss=loss, beta=0.5))
    with torch.no_grad():
        c, r = pair_log_probs(policy, pairs)
        rc, rr = pair_log_probs(start, pairs)
    margin = ((c - rc) - (r - rr)).mean().item()
    assert history.margin == [0.0] and history.accuracy == [0.0]  # 第一步前策略 = 参考模型
    assert margin > 0
    assert implicit_accuracy(policy, start, pairs) > 0.5
    assert all(torch.equal(a, b) for a, b in zip(start.state_dict().values(), random_gpt().state_dict().values(),
                                                  strict=True))  # 参考模型没被改动


def test_dpo_history_records_what_it_says() -> None:
    start, pairs = random_gpt(), hand_pairs(8)
    s = replace(TINY, steps=3, batch_size=8, beta=0.2)
    _, history = train_dpo(start, pairs, s)
    with torch.no_grad():
        rc, rr = pair_log_probs(start, pairs)
    # 第一步：策略就是参考模型，log π = log π_ref；每步随机取 8 对（有放回），所以和全体的平均不一定相同
    assert history.chosen_shift[0] == pytest.approx(0.0, abs=1e-5)
    assert rc.min().item() <= history.chosen_logp[0] <= rc.max().item()
    assert rr.min().item() <= history.rejected_logp[0] <= rr.max().item()
    for m, cs, rs in zip(history.margin, history.chosen_shift, history.rejected_shift, strict=True):
        assert m == pytest.approx(0.2 * (cs - rs), abs=1e-5)


def test_same_seed_same_bits() -> None:
    t, pairs = tok(), hand_pairs(8)
    heads = [line_heads(p) for p in usable_poems()[:4]]
    a = build_pairs(random_gpt(3), t, heads, 3, 1.0, torch.Generator().manual_seed(0))
    b = build_pairs(random_gpt(3), t, heads, 3, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(a.chosen, b.chosen) and torch.equal(a.rejected, b.rejected) and a.ties == b.ties
    s = replace(TINY, steps=3)
    p1, h1 = train_dpo(random_gpt(), pairs, s)
    p2, h2 = train_dpo(random_gpt(), pairs, s)
    assert h1 == h2
    assert all(torch.equal(x, y) for x, y in zip(p1.state_dict().values(), p2.state_dict().values(), strict=True))
    r1, _ = train_reward_model(random_gpt(), pairs, s)
    r2, _ = train_reward_model(random_gpt(), pairs, s)
    assert all(torch.equal(x, y) for x, y in zip(r1.state_dict().values(), r2.state_dict().values(), strict=True))
    p3, _ = train_dpo(random_gpt(), pairs, replace(s, seed=1))
    assert not torch.equal(p3.unembed.weight, p1.unembed.weight)


# --------------------------------------------------------------------------- evaluation


def test_tally_counts_with_the_verifiers() -> None:
    poem = usable_poems()[0]
    h = line_heads(poem)
    counts = tally([h, h, "一二三四"], [poem, poem[:12], poem])
    assert counts == {"n": 3, "lines": 4 + 2 + 0, "all4": 1, "form": 2,
                      "rhyme": 2 * dpo_train.verify(h, poem).rhyme}


def test_kl_is_zero_against_itself_and_positive_otherwise() -> None:
    tokens, mask = pair_sequences(hand_pairs(3), "chosen")
    assert sequence_kl(random_gpt(), random_gpt(), tokens, mask) == pytest.approx(0.0, abs=1e-6)
    assert sequence_kl(random_gpt(), random_gpt(1), tokens, mask) > 0


def test_kl_sums_the_full_distribution_kl_over_answer_tokens() -> None:
    p, q = random_gpt(), random_gpt(1)
    tokens, mask = pair_sequences(hand_pairs(2), "chosen")
    mask[1, -3:] = False
    with torch.no_grad():
        lp, lq = p(tokens).log_softmax(-1), q(tokens).log_softmax(-1)
    total = 0.0
    for b in range(2):
        for t in range(1, tokens.size(1)):
            if mask[b, t]:  # 第 t 个词元由第 t−1 个位置的分布决定
                total += sum(math.exp(a) * (a - c) for a, c in zip(lp[b, t - 1].tolist(), lq[b, t - 1].tolist(),
                                                                   strict=True))
    assert sequence_kl(p, q, tokens, mask) == pytest.approx(total / 2, rel=1e-4)


def test_evaluation_is_reproducible_and_consistent() -> None:
    t, model = tok(), random_gpt(5)
    heads = [line_heads(p) for p in usable_poems()[:3]]
    s = replace(TINY, eval_samples=2)
    ev = evaluate_policy(model, model, t, heads, s)
    assert ev == evaluate_policy(model, model, t, heads, s)
    assert ev["sampled"]["n"] == 6 and ev["greedy"]["n"] == 3
    assert ev["kl"] == 0.0  # 模型就是参考模型：不用算
    twin = evaluate_policy(copy.deepcopy(model), model, t, heads, s)  # 一模一样的另一份：算出来也是 0，其余相同
    assert twin["kl"] == pytest.approx(0.0, abs=1e-6) and {**twin, "kl": 0.0} == ev
    # 存下的诗就是计数的那些诗：照着重新数一遍
    assert len(ev["poems"]) == 6 and len(ev["greedy_poems"]) == 3
    many = [h for h in heads for _ in range(2)]
    assert tally(many, ev["poems"]) == {k: ev["sampled"][k] for k in ("n", "lines", "all4", "form", "rhyme")}
    assert tally(heads, ev["greedy_poems"]) == {k: ev["greedy"][k] for k in ("n", "lines", "all4", "form", "rhyme")}


# --------------------------------------------------------------------------- per-token shifts


def test_token_shifts_are_zero_against_itself_and_count_every_answer_token() -> None:
    t, model, pairs = tok(), random_gpt(4), hand_pairs(6)
    out = head_token_shifts(model, model, pairs, t)
    for which in ("chosen", "rejected"):
        o = out[which]
        assert all(abs(o[k]) < 1e-6 for k in ("right", "wrong", "other", "required"))
        # 每个回答 25 个词元（24 个字加换行），其中 4 个句首
        assert o["n_right"] + o["n_wrong"] == 4 * len(pairs)
        assert o["n_right"] + o["n_wrong"] + o["n_other"] == 25 * len(pairs)
    assert out["chosen"]["n_right"] == 4 * len(pairs)  # 手拼的好回答四句都对上


def test_token_shifts_equal_a_loop_over_the_characters() -> None:
    """另一个模型当策略：逐个回答、逐个字重新算（句首由文字里的标点找出，不看词元），和函数的三类平均比。"""
    t, policy, ref, pairs = tok(), random_gpt(6), random_gpt(7), hand_pairs(4)
    out = head_token_shifts(policy, ref, pairs, t)
    for which in ("chosen", "rejected"):
        texts = getattr(pairs, f"{which}_text")
        groups = {"right": [], "wrong": [], "other": [], "required": []}
        for h, text in zip(pairs.heads, texts, strict=True):
            ids = t.encode(acrostic_prompt(h) + text + "\n")
            with torch.no_grad():
                lp = policy(torch.tensor([ids]))[0].log_softmax(-1)
                lq = ref(torch.tensor([ids]))[0].log_softmax(-1)
            start = len(t.encode(acrostic_prompt(h)))
            line = 0
            for k, ch in enumerate(text + "\n"):
                pos, tid = start + k - 1, ids[start + k]
                d = (lp[pos, tid] - lq[pos, tid]).item()
                is_start = (k == 0 or text[k - 1] in "，。") and line < 4 and ch != "\n"
                if is_start:
                    want = t.char_to_id[h[line]]
                    if ch == h[line]:
                        groups["right"].append(d)
                    else:
                        groups["wrong"].append(d)
                        groups["required"].append((lp[pos, want] - lq[pos, want]).item())
                    line += 1
                else:
                    groups["other"].append(d)
        for name, xs in groups.items():
            expected = sum(xs) / len(xs) if xs else 0.0
            assert out[which][name] == pytest.approx(expected, abs=1e-5), (which, name)


# --------------------------------------------------------------------------- the artifact


def tiny_experiment(monkeypatch) -> dict:
    """整个 dpo_experiment，只是 SFT 模型换成随机的、验证集只取 3 首、偏好对换成手拼的（随机模型写的诗几乎全同分）。"""
    poems = usable_poems()
    monkeypatch.setattr(dpo_train, "capable_model", lambda seed: (random_gpt(seed), tok()))
    monkeypatch.setattr(dpo_train, "poem_lists", lambda: (poems[:40], poems[40:43]))
    monkeypatch.setattr(dpo_train, "build_pairs", lambda *args: hand_pairs(10))
    monkeypatch.setattr(dpo_train, "BETAS", (0.1, 0.5))
    return dpo_experiment(TINY)


def test_artifact_round_trips(monkeypatch, tmp_path) -> None:
    result = tiny_experiment(monkeypatch)
    assert set(result["seeds"]) == set(dpo_train.SEEDS)
    first = result["seeds"][dpo_train.SEEDS[0]]
    assert set(first["runs"]) == {"dpo", "ipo", "dpo-beta-0.5"}
    assert set(result["seeds"][dpo_train.SEEDS[1]]["runs"]) == {"dpo"}  # IPO 和 β 的扫描只在第一个种子上
    assert first["runs"]["dpo"]["state"] is not None and first["runs"]["ipo"]["state"] is None
    save_dpo(tmp_path / "a.pt", result)
    back = load_dpo(tmp_path / "a.pt")
    assert back["settings"] == result["settings"] and back["chars"] == result["chars"]
    for seed, run in result["seeds"].items():
        got = back["seeds"][seed]
        assert got["before"] == run["before"] and got["reward_model"] == run["reward_model"]
        for field in ("prompt", "chosen", "rejected", "chosen_mask", "rejected_mask"):
            assert torch.equal(getattr(got["pairs"], field), getattr(run["pairs"], field))
        assert got["pairs"].chosen_text == run["pairs"].chosen_text and got["pairs"].ties == run["pairs"].ties
        for name, r in run["runs"].items():
            g = got["runs"][name]
            assert g["history"] == r["history"] and g["after"] == r["after"]
            assert g["held_pair_accuracy"] == r["held_pair_accuracy"]
            if r["state"] is not None:
                assert all(torch.equal(g["state"][k], v) for k, v in r["state"].items())
    assert "cpu_seconds" not in back["seeds"][0]  # 用时不进文件
    model, _ = dpo_train.dpo_model(back)
    assert torch.equal(model.unembed.weight, first["runs"]["dpo"]["state"]["unembed.weight"])


def test_same_inputs_same_file_bytes(monkeypatch, tmp_path) -> None:
    for folder in ("a", "b"):  # torch.save 把文件名写进压缩包：两份用同一个文件名
        (tmp_path / folder).mkdir()
        save_dpo(tmp_path / folder / "dpo.pt", tiny_experiment(monkeypatch))
    assert (tmp_path / "a" / "dpo.pt").read_bytes() == (tmp_path / "b" / "dpo.pt").read_bytes()


def test_each_part_is_an_artifact_and_the_whole_waits_for_them() -> None:
    from llmsite import artifacts

    found = artifacts.discover()
    parts = {name: a for name, a in found.items() if a.module == found["preference-dpo"].module and a.args}
    assert {a.args for a in parts.values()} == {(part,) for part in dpo_train.PARTS}
    assert all(a.compute == "dpo_part" and a.env == dpo_train.PART_ENVS[a.args[0]] for a in parts.values())
    assert set(parts) <= {a.name for a in artifacts.upstream(found["preference-dpo"])}
    for a in parts.values():  # 互不相干：哪一部分都不等另一部分
        assert not set(parts) & {u.name for u in artifacts.upstream(a)}, a.name
    assert DPOSettings() == dpo_train.PUBLISHED  # 构建时算的就是文章的设置


def test_parts_read_back_equal_one_process(monkeypatch, tmp_path) -> None:
    """三部分倒着各算一次、存下；读回合成的结果和一个进程里顺着算的（拆开以前的做法）每个值都相同。"""
    poems = usable_poems()
    monkeypatch.setattr(dpo_train, "capable_model", lambda seed: (random_gpt(seed), tok()))
    monkeypatch.setattr(dpo_train, "poem_lists", lambda: (poems[:40], poems[40:43]))
    monkeypatch.setattr(dpo_train, "build_pairs", lambda *args: hand_pairs(10))
    monkeypatch.setattr(dpo_train, "BETAS", (0.1, 0.5))
    monkeypatch.setattr(dpo_train, "PUBLISHED", TINY)  # 小设置当作文章的设置：走读缓存的那条路
    first, second = dpo_train.SEEDS
    one = {"settings": TINY, "chars": tok().chars,
           "seeds": {first: run_seed(first, TINY, (0.1, 0.5), ipo=True), second: run_seed(second, TINY)}}
    for part in reversed(dpo_train.PARTS):  # 倒着算：哪一部分都不靠前一部分
        path = tmp_path / f"{part}.pt"
        dpo_train.save_part(path, dpo_train.dpo_part(part))
        assert "cpu_seconds" not in torch.load(path, weights_only=True)
        monkeypatch.setenv(dpo_train.PART_ENVS[part], str(path))
    monkeypatch.setattr(dpo_train, "run_seed", lambda *args, **kw: pytest.fail("读得到缓存时不该再算"))
    split = dpo_experiment(TINY)
    for run in (*one["seeds"].values(), *split["seeds"].values()):
        run.pop("cpu_seconds", None)
    save_dpo(tmp_path / "one.pt", one)
    save_dpo(tmp_path / "split.pt", split)
    assert_same_values(load_dpo(tmp_path / "one.pt"), load_dpo(tmp_path / "split.pt"))


def test_other_settings_never_read_the_cached_parts(monkeypatch, tmp_path) -> None:
    torch.save({"pairs": {}}, tmp_path / "bad.pt")
    monkeypatch.setenv(dpo_train.PART_ENVS["seed-1"], str(tmp_path / "bad.pt"))
    calls = []
    monkeypatch.setattr(dpo_train, "run_seed", lambda *args, **kw: calls.append((args, kw)) or {})
    assert dpo_train.part_result("seed-1", TINY) == {} and calls == [((1, TINY), {"ipo": False})]
    with pytest.raises(ValueError, match="不是 save_part 存下的文件"):  # 文章的设置：读缓存，文件不对时说清楚
        dpo_train.part_result("seed-1", DPOSettings())


# --------------------------------------------------------------------------- bad input


def other_vocab_pairs() -> Pairs:
    p = hand_pairs(2)
    p.prompt[0, 0] = tok().vocab_size + 5
    return p


def empty_pairs() -> Pairs:
    p = hand_pairs(2)
    return Pairs(p.prompt[:0], p.chosen[:0], p.rejected[:0], p.chosen_mask[:0], p.rejected_mask[:0], [], [], [], [],
                 [], 2, 2)


@pytest.mark.parametrize(("call", "fragment"), [
    # 设置
    (lambda: train_dpo(random_gpt(), hand_pairs(2), "fast"), "s 应为 DPOSettings"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, prompts=0)), "prompts 应为不小于 1"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, samples=1)), "samples 应为不小于 2"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, steps=0)), "steps 应为不小于 1"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, seed=-1)), "seed 应为不小于 0"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, beta=0.0)), "beta 应为有限的正数"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, lr=float("inf"))), "lr 应为有限的正数"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, held_share=1.0)), "held_share 应在 0 和 1 之间"),
    (lambda: train_dpo(random_gpt(), hand_pairs(2), replace(TINY, loss="kto")), "loss 应是 dpo、ipo 之一"),
    # 模型、分词器、藏头
    (lambda: sample_poems(torch.nn.Linear(2, 2), tok(), ["四一送迎"], 2, 1.0, torch.Generator()),
     "model 应为 TinyTransformer"),
    (lambda: sample_poems(random_gpt(), None, ["四一送迎"], 2, 1.0, torch.Generator()), "tok 应为 CharTokenizer"),
    (lambda: sample_poems(TinyTransformer(poem_config(tok().vocab_size + 1)), tok(), ["四一送迎"], 2, 1.0,
                          torch.Generator()), "不是配套的一对"),
    (lambda: sample_poems(random_gpt(), CharTokenizer(list("四一送迎")), ["四一送迎"], 2, 1.0, torch.Generator()),
     "不是配套的一对"),
    (lambda: sample_poems(random_gpt(), tok(), "四一送迎", 2, 1.0, torch.Generator()), "heads 应是藏头的非空列表"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送"], 2, 1.0, torch.Generator()), "4 个字"),
    (lambda: sample_poems(random_gpt(), tok(), ["𣇉夏秋冬"], 2, 1.0, torch.Generator()), "不在词表里"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送迎"], 0, 1.0, torch.Generator()), "n 应是不小于 1"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送迎"], 2, 0.0, torch.Generator()), "temperature 应为有限的正数"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送迎"], 2, 1.0, 0), "generator 应为 torch.Generator"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送迎"], 2, 1.0, torch.Generator(), chunk=0), "chunk 应是不小于 1"),
    (lambda: sample_poems(random_gpt(), tok(), ["四一送迎"], 2, 1.0, torch.Generator(), max_new_tokens=0),
     "max_new_tokens 应是不小于 1"),
    (lambda: build_pairs(random_gpt(), tok(), ["四一送迎"], 1, 1.0, torch.Generator()), "n 应至少为 2"),
    # 偏好对
    (lambda: hand_pairs(3).subset([]), "index 应是偏好对编号的非空列表"),
    (lambda: hand_pairs(3).subset([0, 3]), "index 里的编号应是 0 到 2"),
    (lambda: pair_sequences("pairs", "chosen"), "pairs 应为 Pairs"),
    (lambda: pair_sequences(empty_pairs(), "chosen"), "一个偏好对也没有"),
    (lambda: pair_sequences(hand_pairs(2), "good"), "which 应是 'chosen' 或 'rejected'"),
    (lambda: pair_log_probs(torch.nn.Linear(2, 2), hand_pairs(2)), "model 应为 TinyTransformer"),
    (lambda: train_dpo(torch.nn.Linear(2, 2), hand_pairs(2), TINY), "start 应为 TinyTransformer"),
    (lambda: train_dpo(random_gpt(), other_vocab_pairs(), TINY), "超出了 start 的词表"),
    # 奖励模型
    (lambda: RewardModel(torch.nn.Linear(2, 2)), "backbone 应为 TinyTransformer"),
    (lambda: RewardModel(random_gpt())(torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool)), "torch.long"),
    (lambda: RewardModel(random_gpt())(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3)), "mask 应为"),
    (lambda: RewardModel(random_gpt())(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.bool)),
     "每一行至少要有一个 True"),
    (lambda: RewardModel(random_gpt())([[1, 2]], torch.ones(1, 2, dtype=torch.bool)), "tokens"),
    (lambda: reward_model_loss(torch.zeros(3), torch.zeros(2)), "形状应相同"),
    (lambda: reward_model_loss(torch.zeros(3, 1), torch.zeros(3, 1)), r"r_chosen 应为 \(B,\)"),
    (lambda: reward_model_loss(torch.zeros(3), torch.zeros(3, dtype=torch.long)), r"r_rejected 应为 \(B,\) 的浮点"),
    (lambda: reward_model_loss([0.0], torch.zeros(1)), "r_chosen"),
    (lambda: pair_accuracy(random_gpt(), hand_pairs(2)), "rm 应为 RewardModel"),
    # 评估
    (lambda: implicit_accuracy(random_gpt(), "ref", hand_pairs(2)), "ref 应为 TinyTransformer"),
    (lambda: tally("四一送迎", ["x"]), "heads 应是非空的列表"),
    (lambda: tally(["四一送迎"], []), "texts 应是非空的列表"),
    (lambda: tally(["四一送迎"], ["x", "y"]), "应一一对应"),
    (lambda: sequence_kl(random_gpt(), None, *pair_sequences(hand_pairs(2), "chosen")), "policy 和 ref"),
    (lambda: evaluate_policy(random_gpt(), TinyTransformer(poem_config(tok().vocab_size, 32)), tok(), ["四一送迎"],
                             TINY), "ref 应为和 model 同样结构"),
    (lambda: evaluate_policy(random_gpt(), random_gpt(), tok(), [], TINY), "heads 应是验证集藏头的非空列表"),
    (lambda: head_token_shifts(random_gpt(), "ref", hand_pairs(2), tok()), "ref 应为和 policy 同样结构"),
    (lambda: head_token_shifts(random_gpt(), random_gpt(), [], tok()), "pairs 应为 Pairs"),
    (lambda: head_token_shifts(random_gpt(), random_gpt(), hand_pairs(2), "tok"), "tok"),
    (lambda: poem_score("四一送迎", "x", rhyme="no"), "rhyme 应为 True 或 False"),
    (lambda: tally(["四一送迎"], ["x"], rhyme=1), "rhyme 应为 True 或 False"),
    (lambda: build_pairs(random_gpt(), tok(), ["四一送迎"], 2, 1.0, torch.Generator(), rhyme=None),
     "rhyme 应为 True 或 False"),
    (lambda: evaluate_policy(random_gpt(), random_gpt(), tok(), ["四一送迎"], TINY, rhyme="False"),
     "rhyme 应为 True 或 False"),
    # 整个实验和存取
    (lambda: run_seed(7, TINY), "seed 应是 0、1 之一（capable_sft 训练过的种子）"),
    (lambda: run_seed(0, TINY, betas="0.1"), "betas 应是 β 的列表"),
    (lambda: run_seed(0, TINY, betas=[0.1, -1]), "betas 里的 β 应为有限的正数"),
    (lambda: run_seed(0, TINY, ipo="yes"), "ipo 应为 True 或 False"),
    (lambda: dpo_experiment("fast"), "s 应为 DPOSettings"),
    (lambda: dpo_train.dpo_part("seed-2"), "part 应是 seed-0、betas、seed-1 之一"),
    (lambda: run_seed(0, TINY, sweep_only="yes"), "sweep_only 应为 True 或 False"),
    (lambda: dpo_train.save_part("x.pt", {"pairs": []}), "dpo_part"),
    (lambda: dpo_train.load_part("/nonexistent/part.pt"), "找不到"),
    (lambda: save_dpo("x.pt", None), "result 应是 dpo_experiment"),
    (lambda: save_dpo("x.pt", {"settings": TINY}), r"缺少 \['chars', 'seeds'\]"),
    (lambda: save_dpo("x.pt", {"settings": "s", "chars": [], "seeds": {}}), "result\\['settings'\\] 应为 DPOSettings"),
    (lambda: save_dpo("x.pt", {"settings": TINY, "chars": [], "seeds": {}}), "非空字典"),
    (lambda: save_dpo("x.pt", {"settings": TINY, "chars": [], "seeds": {0: {}}}), r"result\['seeds'\]\[0\] 应有"),
    (lambda: load_dpo(123), "path 应是文件路径"),
    (lambda: load_dpo("/nonexistent/dpo.pt"), "找不到"),
])
def test_careless_inputs_get_a_clear_message(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call()


def test_run_seed_checks_before_loading_the_model(monkeypatch) -> None:
    def no_model(seed):
        raise AssertionError("检查参数之前就去读取（或训练）SFT 模型了")

    monkeypatch.setattr(dpo_train, "capable_model", no_model)
    with pytest.raises(ValueError, match="s 应为 DPOSettings"):
        run_seed(0, "fast")
    with pytest.raises(ValueError, match="samples 应为不小于 2"):
        dpo_experiment(replace(TINY, samples=1))
