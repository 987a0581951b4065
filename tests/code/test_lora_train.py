"""code/acrostic.py 和 code/lora_train.py：藏头样本、只在回答上算的损失、成功率、微调与存取。

- 样本：提示和回答按词元拼起来，labels 只在回答的位置上有值，第一个有值的位置是提示的最后一个词元；
  右边补齐不改变损失；sft_loss 等于 F.cross_entropy(ignore_index=-100)；
- 成功率：句首按「，」「。」断句来数；write_acrostics 的诗等于手写的贪心解码（不带缓存）写出的，句首概率也一样；
- 微调：LoRA 只改 A、B，全参数微调改全部参数；同一个种子结果逐位相同；存下再读回一样；
- 输入不对时抛出 ValueError。
这里的基座模型是随机初始化的唐诗 GPT（不读构建产物）：训练好的模型上的数由 tests/figures/test_lora_claims.py 核对。
"""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache

import pytest
import torch
import torch.nn.functional as F
from acrostic import (
    IGNORE,
    POEM_TOKENS,
    SFTData,
    acrostic_ok,
    acrostic_prompt,
    build_sft_data,
    head_hits,
    line_heads,
    playground_task,
    sft_loss,
    trim_batch,
    usable,
    well_formed,
    write_acrostics,
    written_heads,
)
from gpt_from_scratch import MIN_COUNT, load_poems, poem_config, split_poems
from lora import lora_layers
from lora_train import (
    METHODS,
    SFTSettings,
    compare_finetuning,
    evaluate_acrostics,
    finetune,
    finetuned_model,
    free_poems,
    held_out_sft_loss,
    load_finetuning,
    poem_lists,
    save_finetuning,
    summary,
)
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

POEM = "四時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅新。"  # 语料的第一首


@cache
def tok() -> CharTokenizer:
    return CharTokenizer.train(split_poems(load_poems())[0], min_count=MIN_COUNT)


def random_gpt(seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(poem_config(tok().vocab_size)).eval()


@cache
def small_data():
    train_poems, held_poems = poem_lists()
    return build_sft_data(train_poems[:64], tok()), build_sft_data(held_poems[:12], tok())


TINY = SFTSettings(steps=4, batch_size=4, warmup=1, eval_every=2)


# --------------------------------------------------------------------------- data


def test_heads_and_prompt() -> None:
    assert line_heads(POEM) == "四一送迎"
    assert acrostic_prompt("四一送迎") == "藏头：四一送迎\n"
    with pytest.raises(ValueError, match="4 个字"):
        acrostic_prompt("四一送")


def test_labels_cover_exactly_the_answer() -> None:
    t = tok()
    data = build_sft_data([POEM], t)
    prompt, answer = t.encode("藏头：四一送迎\n"), t.encode(POEM + "\n")
    assert len(prompt) == 1 + 3 + 3 + 4 + 1  # 「头」「：」不在词表里，各拆成 3 个字节
    assert data.prompt_lengths == [len(prompt)] and data.heads == ["四一送迎"]
    ids = prompt + answer
    assert data.inputs[0].tolist() == ids[:-1]
    labels = data.labels[0].tolist()
    assert labels[: len(prompt) - 1] == [IGNORE] * (len(prompt) - 1)  # 这些位置预测的是提示里的词元
    assert labels[len(prompt) - 1 :] == answer  # 提示的最后一个词元（换行）预测回答的第一个字


def test_padding_does_not_change_the_loss_and_matches_cross_entropy() -> None:
    t = tok()
    long_poem = "四時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅𣇉。"  # 最后一个字不在词表里：多出几个字节词元
    data = build_sft_data([POEM, long_poem], t)
    assert data.inputs.size(1) > len(t.encode("藏头：四一送迎\n" + POEM + "\n")) - 1
    assert (data.labels[0] == IGNORE).sum() > (data.labels[1] == IGNORE).sum()  # 第一条右边补齐了
    model = random_gpt()
    with torch.no_grad():
        logits = model(data.inputs)
        ours = sft_loss(logits, data.labels)
        reference = F.cross_entropy(logits.reshape(-1, logits.size(-1)), data.labels.reshape(-1), ignore_index=-100)
        alone = build_sft_data([POEM], t)
        first_alone = sft_loss(model(alone.inputs), alone.labels)
        first_padded = sft_loss(logits[:1], data.labels[:1])
    assert torch.allclose(ours, reference, atol=1e-6)
    assert torch.allclose(first_alone, first_padded, atol=1e-6)  # 因果注意力：右边补的词元影响不到前面


def test_unusable_poems_are_skipped() -> None:
    t = tok()
    rare_head = "𣇉時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅新。"
    data = build_sft_data([rare_head, POEM], t)
    assert data.heads == ["四一送迎"]
    with pytest.raises(ValueError, match="没有一首可用的诗"):
        build_sft_data([rare_head], t)


# --------------------------------------------------------------------------- success


def test_written_heads_and_hits() -> None:
    assert written_heads(POEM + "\n下一首") == "四一送迎"
    assert acrostic_ok("四一送迎", POEM)
    assert not acrostic_ok("四一送春", POEM) and head_hits("四一送春", POEM) == 3
    half = "四時運灰琯，一夕變冬春。"
    assert written_heads(half) == "四一" and head_hits("四一送迎", half) == 2
    assert written_heads("") == "" and head_hits("四一送迎", "") == 0


def test_write_acrostics_is_plain_greedy_decoding() -> None:
    """write_acrostics 带 KV 缓存；这里不带缓存，每一步把整个序列送进模型、取概率最大的词元，结果应当一样。"""
    t = tok()
    model = finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, steps=6))[0]
    heads = ["四一送迎", "春夏秋冬"]
    poems, probs = write_acrostics(model, t, heads, max_new_tokens=25)
    for i, h in enumerate(heads):
        ids = t.encode(acrostic_prompt(h))
        start = len(ids)
        step_probs = []
        with torch.no_grad():
            for _ in range(25):
                p = model(torch.tensor([ids]))[0, -1].softmax(-1)
                step_probs.append(p)
                ids.append(int(p.argmax()))
        text = t.decode(ids[start:]).split("\n")[0]
        assert poems[i] == text
        starts = [0] + [k + 1 for k, token in enumerate(ids[start:]) if t.decode([token]) in "，。"]
        for k in range(4):
            want = step_probs[starts[k]][t.char_to_id[h[k]]].item() if k < len(starts) and starts[k] < 25 else 0.0
            assert probs[i, k].item() == pytest.approx(want, abs=1e-5)
    with pytest.raises(ValueError, match="不在词表里"):
        write_acrostics(model, t, ["𣇉夏秋冬"])


def scripted_gpt(script: str, prompt_len: int) -> TinyTransformer:
    """一个不看输入、照着 script 写的唐诗 GPT：第 prompt_len + k - 1 个位置预测 script[k]（贪心解码的第 k 步）。

    只留位置嵌入（第 p 个位置是第 p 个坐标轴上的 1），注意力和前馈网络的输出都是 0；
    输出层把第 p 个坐标轴接到 script 在那一步的字上。其余的字概率很小，但不是 0。
    """
    t = tok()
    model = random_gpt()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.fill_(1.0 if name.endswith(("ln.weight", "ln_f.weight", "mlp.0.weight")) else 0.0)
        model.pos.embedding.weight.copy_(torch.eye(64))
        for k, c in enumerate(script):
            model.unembed.weight[t.char_to_id[c], prompt_len + k - 1] = 1.0
    return model.eval()


def test_head_probabilities_stop_at_the_first_newline() -> None:
    """W2：模型写了「山水。」就换行，之后又接着写了几句。句首概率只量换行之前：
    第 1 句在第 0 步，第 2 句在「。」之后的第 3 步（模型在那一步写了换行），第 3、4 句没写出来，记为 0。
    以前的代码把换行后面那首诗里的句首也量了进来，第 3、4 列不是 0。"""
    t = tok()
    heads = "山風雲月"
    prompt_len = len(t.encode(acrostic_prompt(heads)))
    script = ("山水。\n山，山人不見人。不知日日暮，山水不見人。" * 2)[:POEM_TOKENS]
    model = scripted_gpt(script, prompt_len)
    poems, probs = write_acrostics(model, t, [heads])
    assert poems == ["山水。"]
    with torch.no_grad():
        ids = t.encode(acrostic_prompt(heads)) + t.encode(script)
        step = model(torch.tensor([ids]))[0, prompt_len - 1:].softmax(-1)  # 第 k 行是第 k 步的分布
    assert probs[0, 0].item() == pytest.approx(step[0, t.char_to_id["山"]].item(), rel=1e-5)
    assert probs[0, 1].item() == pytest.approx(step[3, t.char_to_id["風"]].item(), rel=1e-5)
    assert 0 < probs[0, 1] < 0.01  # 第 3 步模型写的是换行，要求的「風」只分到一点点
    assert probs[0, 2:].tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- fine-tuning


def test_lora_moves_only_a_and_b_and_full_moves_everything() -> None:
    base = random_gpt()
    train, held = small_data()
    lora_model, history = finetune(base, train, held, rank=4, s=TINY)
    assert len(history.loss) == 4 and history.eval_steps == [0, 2, 4]
    assert history.eval_held_out[0] == pytest.approx(held_out_sft_loss(base, held), abs=1e-6)  # B = 0：第 0 步就是基座
    lora_state = lora_model.state_dict()
    for key, value in base.state_dict().items():
        mapped = key.replace("attn.qkv.", "attn.qkv.base.").replace("attn.out.", "attn.out.base.")
        assert torch.equal(lora_state[mapped], value), key
    assert len(lora_layers(lora_model)) == 8
    full_model, _ = finetune(base, train, held, rank=None, s=TINY)
    changed = [k for k, v in base.state_dict().items() if not torch.equal(full_model.state_dict()[k], v)]
    assert "embed.weight" in changed and "blocks.0.attn.qkv.weight" in changed
    assert not lora_layers(base)  # 基座模型本身没有被改动（finetune 复制了一份）


def test_same_seed_same_result() -> None:
    train, held = small_data()
    a, ha = finetune(random_gpt(), train, held, rank=1, s=TINY)
    b, hb = finetune(random_gpt(), train, held, rank=1, s=TINY)
    assert ha.loss == hb.loss
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)


def test_save_and_load_round_trip(tmp_path) -> None:
    """存下再读回：评估结果、训练记录和参数都一样（随机基座、训练 4 步，为了快）。"""
    base = random_gpt()
    train, held = small_data()
    runs = {"base": {"rank": None, "trainable": 0, **evaluate_acrostics(base, tok(), held)}}
    for name, rank in METHODS.items():
        model, history = finetune(base, train, held, rank, TINY)
        runs[name] = {"rank": rank, "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
                      "history": history, "state": model.state_dict(), **evaluate_acrostics(model, tok(), held)}
    result = {"runs": runs, "settings": TINY, "chars": tok().chars, "heads": held.heads,
              "n_train": train.inputs.size(0), "total_params": sum(p.numel() for p in base.parameters())}
    path = tmp_path / "ft.pt"
    save_finetuning(path, result)
    back = load_finetuning(path)
    assert back["settings"] == TINY and back["heads"] == held.heads
    for name in runs:
        assert back["runs"][name]["poems"] == runs[name]["poems"]
        assert torch.equal(back["runs"][name]["head_probs"], runs[name]["head_probs"])
    assert back["runs"]["lora-4"]["history"].loss == runs["lora-4"]["history"].loss
    rows = summary(back)
    assert rows["full"]["trainable"] == result["total_params"]
    assert rows["lora-1"]["trainable"] == 4 * (1 * (64 + 192) + 1 * (64 + 64))


@pytest.mark.parametrize("call, fragment", [
    (lambda: finetune(torch.nn.Linear(2, 2), *small_data(), rank=4, s=TINY), "TinyTransformer"),
    (lambda: finetune(random_gpt(), *small_data(), rank=0, s=TINY), "rank"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, warmup=4)), "warmup"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, lora_lr=0.0)), "lora_lr"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s="fast"), "SFTSettings"),
    (lambda: build_sft_data("四時運灰琯", tok()), "poems"),
    (lambda: build_sft_data([POEM + "\n" + POEM], tok()), "换行"),
    (lambda: sft_loss(torch.randn(2, 3, 5), torch.full((2, 3), IGNORE)), "IGNORE"),
    (lambda: sft_loss(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)), "labels"),
    (lambda: sft_loss(torch.randn(2, 3, 5), torch.full((2, 3), 7)), "V - 1"),
    (lambda: write_acrostics(random_gpt(), tok(), []), "非空"),
    (lambda: load_finetuning("/nonexistent/ft.pt"), "找不到"),
])
def test_wrong_input_raises_value_error(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call()


def ids(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.long)


EMPTY = SFTData(ids(0, 5), ids(0, 5), [], [])


@pytest.mark.parametrize("call, fragment", [
    (lambda: trim_batch(ids(2, 3), torch.full((2, 3), IGNORE)), "没有一个有标签的位置"),
    (lambda: trim_batch(ids(4), ids(4)), "labels 的形状应为 [(]B, T[)]，二维"),
    (lambda: trim_batch(ids(2, 3), ids(4, 7)), "inputs 的形状应为 .*与 labels 相同"),
    (lambda: trim_batch([[1, 2]], ids(1, 2)), "inputs 应为 torch.Tensor"),
    (lambda: build_sft_data([POEM], "tok"), "tok 应为 CharTokenizer"),
    (lambda: write_acrostics(random_gpt(), tok(), ["四一送迎"], max_new_tokens=0), "max_new_tokens 应为不小于 1"),
    (lambda: write_acrostics(TinyTransformer(poem_config(tok().vocab_size + 1)), tok(), ["四一送迎"]),
     "词表大小 .* 不符"),
    (lambda: write_acrostics(None, tok(), ["四一送迎"]), "model 应为 TinyTransformer"),
    (lambda: usable(None, tok()), "poem 应是字符串"),
    (lambda: usable(POEM, None), "tok 应为 CharTokenizer"),
    (lambda: line_heads([POEM]), "poem 应是字符串.*list"),
    (lambda: written_heads(None), "text 应是字符串"),
    (lambda: well_formed(b"abc"), "text 应是字符串.*bytes"),
    (lambda: acrostic_ok(list("四一送迎"), POEM), "heads 应是字符串"),
    (lambda: acrostic_ok("四一送迎", None), "text 应是字符串"),
    (lambda: head_hits(1234, POEM), "heads 应是字符串.*int"),
    (lambda: head_hits("四一送迎", ["四"]), "text 应是字符串"),
    (lambda: finetune(random_gpt(), None, small_data()[1], rank=4, s=TINY), "train 应为 SFTData"),
    (lambda: finetune(random_gpt(), small_data()[0], "held", rank=4, s=TINY), "held 应为 SFTData"),
    (lambda: finetune(random_gpt(), small_data()[0], EMPTY, rank=4, s=TINY), "held 一条样本都没有"),
    (lambda: held_out_sft_loss(random_gpt(), small_data()[1], n=0), "n 应为 None"),
    (lambda: held_out_sft_loss(random_gpt(), None), "data 应为 SFTData"),
    (lambda: held_out_sft_loss("model", small_data()[1]), "torch.nn.Module"),
])
def test_checks_added_for_learners(call, fragment) -> None:
    """以前这些输入抛出 RuntimeError、IndexError、AttributeError，或者不报错、悄悄算出错的结果。"""
    with pytest.raises(ValueError, match=fragment):
        call()


def labels_of(*rows: list[int]) -> torch.Tensor:
    return torch.tensor(rows)


def reference_loss(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """PyTorch 的交叉熵（float32 算），当作标准答案。"""
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), labels.long().reshape(-1),
                           ignore_index=IGNORE).item()


def test_sft_loss_ignores_minus_infinity_at_unscored_positions() -> None:
    """K5：不算的位置上有 -inf（比如被屏蔽的词），以前 -inf × 0 得到 NaN，F.cross_entropy 得到 ln 5。"""
    logits = torch.zeros(1, 2, 5)
    logits[0, 0, 0] = float("-inf")
    labels = labels_of([IGNORE, 3])
    assert sft_loss(logits, labels).item() == pytest.approx(reference_loss(logits, labels), abs=1e-6)
    assert sft_loss(logits, labels).item() == pytest.approx(torch.log(torch.tensor(5.0)).item(), abs=1e-6)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_sft_loss_takes_any_integer_labels(dtype) -> None:
    """以前 int8、int16 的 labels 让 gather 抛出 RuntimeError。"""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 7, generator=gen)
    labels = labels_of([IGNORE, 1, 2], [3, 4, IGNORE])
    assert sft_loss(logits, labels.to(dtype)).item() == pytest.approx(reference_loss(logits, labels), abs=1e-6)


def test_sft_loss_takes_uint8_labels_without_ignored_positions() -> None:
    """uint8 放不下 -100：没有不算的位置时，照样算出所有位置的平均。"""
    logits = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(1))
    labels = labels_of([0, 1, 2], [3, 4, 6])
    assert sft_loss(logits, labels.to(torch.uint8)).item() == pytest.approx(reference_loss(logits, labels), abs=1e-6)


@pytest.mark.parametrize(("dtype", "scale"), [
    (torch.float16, 1e-6), (torch.float16, 1.0), (torch.float16, 1.5e4),
    (torch.bfloat16, 1e-6), (torch.bfloat16, 1.0), (torch.bfloat16, 3e4), (torch.bfloat16, 1e30),
])
def test_sft_loss_on_half_precision_logits_is_computed_in_float32(dtype, scale) -> None:
    """float16、bfloat16 的 logits：分数很小（几乎相同）或很大（相差超过 float16 的上限 65504）时，
    结果和把同样的 logits 换成 float32 再算的交叉熵一样。以前在 float16 里算 log_softmax、求和，
    float16 的 2e4 得到 inf，bfloat16 的 3e4 差了 0.2%。"""
    gen = torch.Generator().manual_seed(2)
    logits = (torch.randn(4, 6, 7, generator=gen) * scale).to(dtype)
    assert logits.isfinite().all()  # 输入本身没有溢出
    labels = torch.randint(0, 7, (4, 6), generator=gen)
    labels[:, :2] = IGNORE
    loss = sft_loss(logits, labels)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(reference_loss(logits, labels), rel=1e-6)


def test_sft_loss_keeps_float64() -> None:
    logits = torch.randn(2, 3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    labels = labels_of([IGNORE, 1, 2], [3, 4, IGNORE])
    reference = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=IGNORE)
    loss = sft_loss(logits, labels)
    assert loss.dtype == torch.float64 and abs(loss.item() - reference.item()) < 1e-12


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: sft_loss(torch.randn(0, 3, 5), ids(0, 3)), "B 和 T 至少为 1"),
    (lambda: sft_loss(torch.randn(2, 0, 5), ids(2, 0)), "B 和 T 至少为 1"),
    (lambda: sft_loss(torch.randn(2, 3, 0), ids(2, 3)), "词表大小 V 至少为 1"),
    (lambda: sft_loss(torch.full((1, 2, 5), float("nan")), labels_of([1, 2])), "NaN 或 \\+inf"),
    (lambda: sft_loss(torch.tensor([[[float("inf"), 0.0, 0.0]]]), labels_of([1])), "NaN 或 \\+inf"),
    (lambda: sft_loss(torch.randn(1, 2, 5), torch.ones(1, 2, dtype=torch.bool)), "labels 应为整数张量"),
    (lambda: trim_batch(ids(2, 3), torch.ones(2, 3)), "labels 应为整数张量"),
    (lambda: trim_batch(torch.zeros(2, 3), ids(2, 3)), "inputs 应为整数张量"),
    (lambda: acrostic_prompt("ABCD"), "heads 应是 4 个字的字符串（4 个汉字"),
    (lambda: acrostic_prompt("春 夏秋"), "不含标点、空格"),
    (lambda: acrostic_prompt("春！夏秋"), "不含标点"),
    (lambda: acrostic_prompt(["春夏秋冬"]), "只要一组藏头"),
    (lambda: playground_task("ABCD"), "4 个汉字"),
    (lambda: head_hits("春夏", POEM), "heads 应是 4 个字"),
    (lambda: acrostic_ok("四一送", POEM), "heads 应是 4 个字"),
    (lambda: write_acrostics(random_gpt(), tok(), "春夏秋冬"), "只写一组也请放进列表"),
    (lambda: evaluate_acrostics(random_gpt(), tok(), None), "held 应为 SFTData"),
    (lambda: evaluate_acrostics(random_gpt(), tok(), small_data()[1], s="fast"), "s 应为 SFTSettings"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, lora_lr="1e-3")), "lora_lr 应为有限的正数"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, full_lr=float("nan"))), "full_lr"),
    (lambda: finetune(random_gpt(), *small_data(), rank=4, s=replace(TINY, seed=1.5)), "seed 应为整数"),
    (lambda: free_poems(random_gpt(), tok(), replace(TINY, free_temperature=0.0)), "free_temperature"),
    (lambda: free_poems(torch.nn.Linear(2, 2), tok(), TINY), "model 应为 TinyTransformer"),
    (lambda: free_poems(random_gpt(), None, TINY), "tok 应为 CharTokenizer"),
    (lambda: free_poems(TinyTransformer(poem_config(tok().vocab_size + 1)), tok(), TINY), "配套的一对"),
    (lambda: load_finetuning(123), "path 应是文件路径"),
])
def test_careless_inputs_get_a_clear_message(call, fragment) -> None:
    """以前这些输入抛出 RuntimeError、TypeError、AttributeError，返回 NaN，报的原因不对（空的一批说成「全是 IGNORE」），
    或者不报错（「ABCD」当藏头、两个字的藏头算出 0 句命中）；compare_finetuning("fast") 还会先去训练基座模型。"""
    with pytest.raises(ValueError, match=fragment):
        call()


@pytest.mark.parametrize(("s", "fragment"), [(lambda: "fast", "s 应为 SFTSettings"),
                                              (lambda: replace(TINY, free_samples=0), "free_samples 应为不小于 1")])
def test_compare_checks_its_settings_before_loading_the_base_model(monkeypatch, s, fragment) -> None:
    """以前 compare_finetuning("fast") 先读取（没有缓存时先训练）基座模型，到 finetune 才报错。"""
    import lora_train

    def no_base_model():
        raise AssertionError("读取基座模型之前就该报错")

    monkeypatch.setattr(lora_train, "base_model", no_base_model)
    with pytest.raises(ValueError, match=fragment):
        compare_finetuning(s())


def test_rare_hanzi_are_heads_too() -> None:
    """扩展区的汉字（这里是 U+231C9）也是汉字：提示照样造得出来，只是它不在词表里，写藏头时会被拒绝。"""
    assert acrostic_prompt("𣇉夏秋冬") == "藏头：𣇉夏秋冬\n"


# --------------------------------------------------------------------------- forgetting


def test_free_poems_are_plain_sampling_from_a_newline() -> None:
    """free_poems 带 KV 缓存；这里不带缓存，每一步把整个序列送进模型，按温度 0.8 用同一个种子抽样，写出的应当一样。"""
    t, model = tok(), random_gpt(1)
    s = replace(TINY, free_samples=6, free_temperature=0.8, free_seed=5)
    greedy, sampled = free_poems(model, t, s)
    seqs = torch.tensor([t.encode("\n")] * 6)
    plain = torch.tensor([t.encode("\n")])
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for _ in range(POEM_TOKENS):
            probs = (model(seqs)[:, -1] / 0.8).softmax(-1)
            seqs = torch.cat([seqs, torch.multinomial(probs, 1, generator=gen)], dim=1)
            plain = torch.cat([plain, model(plain)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert sampled == [t.decode(row[1:]).split("\n")[0] for row in seqs]
    assert greedy == t.decode(plain[0, 1:]).split("\n")[0]
    assert free_poems(model, t, s) == (greedy, sampled)  # 同一个种子，同样的诗


def test_evaluate_counts_well_formed_free_poems() -> None:
    t = tok()
    model = finetune(random_gpt(), *small_data(), rank=4, s=TINY)[0]
    s = replace(TINY, free_samples=8)
    row = evaluate_acrostics(model, t, small_data()[1], s)
    greedy, sampled = free_poems(model, t, s)
    assert row["free_poems"] == sampled and row["free_greedy"] == greedy
    assert row["free_well_formed"] == sum(map(well_formed, sampled)) / 8


def result_like(**changes):
    """不训练、手写的一份 compare_finetuning 结果：只有基座模型一行（summary、save_finetuning 够用了）。"""
    run = {"rank": None, "trainable": 0, "held_out": 5.0, "success": 0.0, "line_hits": 0.25, "well_formed": 0.5,
           "free_well_formed": 0.6}
    return {"runs": {"base": run}, "settings": TINY, "chars": tok().chars, "heads": ["四一送迎"], "n_train": 64,
            "total_params": 1} | changes


def bad_run_keys():
    good = result_like()
    return result_like(runs={**good["runs"], "full": {"rank": None, "trainable": 1}})


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: summary(None), "result 应是 compare_finetuning.*NoneType"),
    (lambda: summary({"runs": result_like()["runs"]}), r"缺少 \['settings', 'chars', 'heads'"),
    (lambda: summary(result_like(runs={})), r"result\['runs'\] 应是.*非空字典.*收到 空的字典"),
    (lambda: summary(result_like(runs={"base": "x"})), r"result\['runs'\]\['base'\] 应是一种方法的结果.*str"),
    (lambda: summary(bad_run_keys()), r"result\['runs'\]\['full'\] 缺少 \['held_out', 'success'.*'state'\]"),
    (lambda: finetuned_model({}, "full"), r"缺少 \['runs'"),
    (lambda: finetuned_model("ft.pt", "full"), r"收到 str.*load_finetuning\(path\)"),
    (lambda: save_finetuning("/nonexistent/ft.pt", result_like(settings={"steps": 4})),
     r"result\['settings'\] 应为 SFTSettings，收到 dict"),
    (lambda: save_finetuning("/nonexistent/ft.pt", {"runs": {}, "settings": TINY}), r"缺少 \['chars'"),
])
def test_result_is_checked(call, fragment) -> None:
    """以前 result 不对时抛出 KeyError、TypeError，或者（runs 是空的）不报错。
    finetuned_model 先检查、再读基座模型：这些输入不会去训练。"""
    with pytest.raises(ValueError, match=fragment):
        call()


def test_hand_written_result_still_works(tmp_path) -> None:
    assert summary(result_like())["base"] == {"trainable": 0, "held_out": 5.0, "success": 0.0, "line_hits": 0.25,
                                               "well_formed": 0.5, "free_well_formed": 0.6}
    save_finetuning(tmp_path / "ft.pt", result_like())
    assert load_finetuning(tmp_path / "ft.pt")["runs"]["base"]["held_out"] == 5.0


def test_trim_batch_and_held_out_loss_still_work() -> None:
    inputs, labels = ids(2, 6), torch.full((2, 6), IGNORE)
    labels[0, 1], labels[1, 3] = 5, 7
    x, y = trim_batch(inputs, labels)
    assert x.shape == y.shape == (2, 4) and y[1, 3] == 7
    model, held = random_gpt(), small_data()[1]
    with torch.no_grad():
        first_two = sft_loss(model(held.inputs[:2]), held.labels[:2]).item()
    assert held_out_sft_loss(model, held, n=2) == pytest.approx(first_two, abs=1e-6)


def test_base_model_is_not_modified_by_finetune() -> None:
    base = random_gpt()
    before = copy.deepcopy(base.state_dict())
    finetune(base, *small_data(), rank=None, s=TINY)
    for key, value in base.state_dict().items():
        assert torch.equal(value, before[key])
