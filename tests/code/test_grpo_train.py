"""code/grpo_train.py：奖励、采样一批、逐词元的对数概率、GRPO 的训练循环。

- 奖励按验证器手算；
- rollout 的遮罩到第一个换行（含）为止，同一组的样本排在一起，诗是解码到换行之前的文字；
- token_log_probs 等于逐个位置用 softmax 手算的对数概率；
- 每批只走一步时，GRPO 损失的梯度等于 REINFORCE 加组内基线的梯度再加 KL 项（文件开头的说法）；
- 训练：同一个种子逐位相同，出发的模型（参考模型）不被改动，历史每步一条；
- 输入不对时抛出 ValueError。
模型是随机初始化的小模型（不读构建产物）；训练好的模型上的数由文章的论断测试核对。
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

import pytest
import torch
from acrostic import acrostic_prompt, build_sft_data
from grpo import group_advantages, grpo_loss
from grpo_train import GRPOSettings, reward, rollout, token_log_probs, train_grpo
from lora_train import SFTSettings, finetune
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CHARS = list("藏头：\n，。春夏秋冬风雨花月山水")
POEM = "春风花月山，夏雨水山风。秋月花风雨，冬山水月花。"  # 格式对、四个句首都对


def tiny() -> tuple[TinyTransformer, CharTokenizer]:
    tok = CharTokenizer(CHARS)
    torch.manual_seed(0)
    cfg = TinyConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=40, mlp=True,
                     positions="learned")
    return TinyTransformer(cfg).eval(), tok


LINES = ["风花月山水", "雨水山风花", "月花风雨山", "山水月花风"]


@cache
def _sft_tiny() -> tuple[TinyTransformer, CharTokenizer]:
    """随机的小模型在几首「诗」上做 60 步 SFT：学会一点格式和句首，采样出来的一组诗得分有高有低。"""
    model, tok = tiny()
    poems = []
    for k, heads in enumerate(["春夏秋冬", "冬秋夏春", "夏春冬秋", "秋冬春夏", "春秋夏冬", "夏冬春秋"]):
        lines = [h + LINES[(k + i) % 4][1:] for i, h in enumerate(heads)]
        poems.append(f"{lines[0]}，{lines[1]}。{lines[2]}，{lines[3]}。")
    data = build_sft_data(poems, tok)
    s = SFTSettings(steps=60, batch_size=6, warmup=5, full_lr=2e-2, eval_every=60, curve_samples=6)
    trained, _ = finetune(model, data, data, None, s)
    return trained, tok


def sft_tiny() -> tuple[TinyTransformer, CharTokenizer]:
    import copy

    model, tok = _sft_tiny()
    return copy.deepcopy(model), tok


def test_reward_is_the_verifiers_score() -> None:
    assert reward("春夏秋冬", POEM) == 1 + 0.25
    assert reward("春夏秋冬", POEM, "form") == 1.0
    two_heads = POEM.replace("秋", "山", 1).replace("冬", "水", 1)  # 第三、四句的句首换掉
    assert reward("春夏秋冬", two_heads) == 2 / 4 + 0.25
    assert reward("春夏秋冬", "春风花月山，夏雨水山风。") == 2 / 4  # 只有两句：格式不对
    assert reward("春夏秋冬", "春风花月山，夏雨水山风。", "form") == 0.0


def test_rollout_masks_the_answer_up_to_its_first_newline() -> None:
    model, tok = sft_tiny()
    gen = torch.Generator().manual_seed(6)
    batch = rollout(model, tok, ["春夏秋冬", "風雨花月".replace("風", "风")], group=4, temperature=1.5,
                    generator=gen, max_new_tokens=12)
    P = len(tok.encode(acrostic_prompt("春夏秋冬")))
    assert batch.prompt_len == P and batch.tokens.shape == (8, P + 12)
    assert batch.tokens[:4, :P].eq(torch.tensor(tok.encode(acrostic_prompt("春夏秋冬")))).all()
    assert batch.tokens[4:, :P].eq(torch.tensor(tok.encode(acrostic_prompt("风雨花月")))).all()
    newline = tok.char_to_id["\n"]
    saw_newline = False
    for row, mask, text in zip(batch.tokens.tolist(), batch.mask.tolist(), batch.texts, strict=True):
        answer = row[P:]
        end = answer.index(newline) + 1 if newline in answer else len(answer)  # 换行本身也算
        saw_newline |= newline in answer
        assert mask == [False] * P + [True] * end + [False] * (len(answer) - end)
        assert text == tok.decode(answer[:end]).rstrip("\n")
    assert saw_newline  # 这个种子下确实有样本提前写了换行：遮罩的截断被检查到了


def test_token_log_probs_match_a_hand_computed_softmax() -> None:
    model, _ = tiny()
    tokens = torch.randint(0, model.cfg.vocab_size, (3, 9), generator=torch.Generator().manual_seed(1))
    got = token_log_probs(model, tokens)
    logits = model(tokens).double()
    for b in range(3):
        assert got[b, 0] == 0
        for t in range(1, 9):
            row = logits[b, t - 1]
            expected = row[tokens[b, t]] - math.log(sum(math.exp(x) for x in row.tolist()))
            assert got[b, t].item() == pytest.approx(expected.item(), abs=1e-5)


def test_one_step_per_batch_is_reinforce_with_a_group_baseline_plus_the_kl_term() -> None:
    model, tok = sft_tiny()
    batch = rollout(model, tok, ["春夏秋冬"], group=6, temperature=1.5, generator=torch.Generator().manual_seed(5),
                    max_new_tokens=10)
    rewards = torch.tensor([[0.0, 0.25, 0.5, 0.5, 1.0, 0.25]])
    adv = group_advantages(rewards).flatten()
    ref = token_log_probs(model, batch.tokens).detach() + 0.1 * torch.randn(6, batch.tokens.size(1))
    beta = 0.05

    def grad(loss_of) -> list[torch.Tensor]:
        model.zero_grad()
        loss_of(token_log_probs(model, batch.tokens)).backward()
        return [p.grad.clone() for p in model.parameters()]

    ours = grad(lambda lp: grpo_loss(lp, lp.detach(), ref, adv, batch.mask, beta=beta))
    m = batch.mask.float()

    def reinforce(lp: torch.Tensor) -> torch.Tensor:
        kl = torch.exp(ref - lp) - (ref - lp) - 1
        per_token = -(adv[:, None] * lp) + beta * kl
        return ((per_token * m).sum(1) / m.sum(1)).mean()

    for a, b in zip(ours, grad(reinforce), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_a_batch_whose_groups_all_score_the_same_teaches_nothing() -> None:
    model, tok = tiny()  # 随机的模型：写不出句首，也写不出格式，每首得 0 分
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trained, hist = train_grpo(model, tok, ["春夏秋冬", "风雨花月"], GRPOSettings(steps=2, prompts=2, group=4, seed=0))
    assert hist.reward == [0.0, 0.0] and hist.flat_groups == [2, 2]
    assert all(torch.equal(trained.state_dict()[k], before[k]) for k in before)  # 优势全是 0，KL 也是 0：不动


def test_training_is_deterministic_and_leaves_the_reference_alone() -> None:
    model, tok = sft_tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    s = GRPOSettings(steps=3, prompts=2, group=4, lr=1e-2, seed=7)
    seen: list[int] = []
    a, hist = train_grpo(model, tok, ["春夏秋冬", "风雨花月", "山水春秋"], s, on_step=lambda i, _: seen.append(i))
    b, _ = train_grpo(model, tok, ["春夏秋冬", "风雨花月", "山水春秋"], s)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k  # 参考模型没有被改动
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in before)
    assert any(not torch.equal(a.state_dict()[k], before[k]) for k in before)  # 策略确实走了
    assert seen == [1, 2, 3]
    assert all(len(getattr(hist, name)) == 3 for name in ("reward", "heads", "form", "kl", "length", "flat_groups"))
    assert hist.kl[0] == pytest.approx(0.0, abs=1e-6)  # 第一批在第一步之前采样：策略和参考模型还相同
    assert all(0 <= g <= s.prompts for g in hist.flat_groups)


def test_a_different_seed_gives_a_different_run() -> None:
    model, tok = sft_tiny()
    s = GRPOSettings(steps=2, prompts=2, group=4, lr=1e-2, seed=0)
    a, _ = train_grpo(model, tok, ["春夏秋冬", "风雨花月"], s)
    b, _ = train_grpo(model, tok, ["春夏秋冬", "风雨花月"], replace(s, seed=1))
    assert any(not torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


MODEL, TOK = tiny()
GOOD = GRPOSettings(steps=1, prompts=1, group=2)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: reward("春夏秋冬", POEM, "length"), "奖励的写法"),
    (lambda: reward("春夏", POEM), "heads 应是 4 个字"),
    (lambda: reward("春夏秋冬", 5), "text 应是字符串"),
    (lambda: rollout(MODEL, TOK, "春夏秋冬", 2, 1.0, torch.Generator()), "一个字符串也要放进列表"),
    (lambda: rollout(MODEL, TOK, ["春夏秋冬"], 1, 1.0, torch.Generator()), "group"),
    (lambda: rollout(MODEL, TOK, ["春夏秋冬"], 2, 0.0, torch.Generator()), "temperature 应为有限的正数"),
    (lambda: rollout(MODEL, TOK, ["春夏秋冬"], 2, 1.0, 0), "generator 应为 torch.Generator"),
    (lambda: rollout(MODEL, TOK, ["春夏秋鬼"], 2, 1.0, torch.Generator()), "不在词表里"),
    (lambda: rollout(MODEL, CharTokenizer(list("藏头：春夏秋冬")), ["春夏秋冬"], 2, 1.0, torch.Generator()),
     "词表大小"),
    (lambda: rollout("model", TOK, ["春夏秋冬"], 2, 1.0, torch.Generator()), "model 应为 TinyTransformer"),
    (lambda: token_log_probs(MODEL, torch.zeros(2, 1, dtype=torch.long)), "T ≥ 2"),
    (lambda: token_log_probs(MODEL, torch.zeros(2, 4)), "torch.long"),
    (lambda: token_log_probs(MODEL, [[1, 2]]), "tokens"),
    (lambda: train_grpo(MODEL, TOK, [], GOOD), "train_heads"),
    (lambda: train_grpo(MODEL, TOK, "春夏秋冬", GOOD), "train_heads"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], "settings"), "GRPOSettings"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, group=1)), "group"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, beta=-0.1)), "beta"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, clip=1.0)), "clip 应小于 1"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, lr=float("nan"))), "lr"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, reward="length")), "奖励的写法"),
    (lambda: train_grpo(MODEL, TOK, ["春夏秋冬"], replace(GOOD, per_sequence=1)), "per_sequence"),
])
def test_bad_input_gets_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
