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
    SFTData,
    acrostic_ok,
    acrostic_prompt,
    build_sft_data,
    head_hits,
    line_heads,
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
    evaluate_acrostics,
    finetune,
    finetuned_model,
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


def result_like(**changes):
    """不训练、手写的一份 compare_finetuning 结果：只有基座模型一行（summary、save_finetuning 够用了）。"""
    run = {"rank": None, "trainable": 0, "held_out": 5.0, "success": 0.0, "line_hits": 0.25, "well_formed": 0.5}
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
                                               "well_formed": 0.5}
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
