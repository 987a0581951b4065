"""Every number (and every checkable statement) the LoRA article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/lora-finetune.md`` (or a figure's title and caption) and
checks the numbers it states against a recomputation done here, without ``code/acrostic.py`` or ``code/lora.py``:

- the samples: poems split, heads cut and prompts encoded with plain Python from the corpus file (the vocabulary
  recounted as the llama claims do);
- parameter counts from PyTorch's own modules on the meta device, and ``r * (d_in + d_out)`` written out;
- the fine-tuned models of the ``lora-finetune`` build artifact: the LoRA factors merged by hand
  (``W + alpha / r * B @ A``) into a plain copy of the stage-1 GPT, then the held-out SFT loss recomputed with
  ``F.cross_entropy(ignore_index=-100)`` and every held-out poem rewritten by a greedy loop without a KV cache;
- peft's own LoRA for the agreement and merge statements.
"""

from __future__ import annotations

import collections
import copy
import itertools
import re
import sys
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.conftest import computed_once

from . import claims
from .claims import Claim, approx, below_power_of_ten, holds

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "lora-finetune.md"
FIGURES = CODE / "figures" / "lora_finetune.py"
CORPUS = ROOT / "data" / "tang_wujue" / "poems.txt"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import gpt_from_scratch as gpt  # noqa: E402
import lora_train  # noqa: E402

D, LAYERS, HEADS, CONTEXT = 64, 4, 4, 64  # the stage-1 Tang GPT, as the article states
ALPHA, RANKS = 8.0, {"lora-1": 1, "lora-4": 4, "lora-8": 8}
STEPS, BATCH, EVAL_EVERY, FULL_LR, LORA_LR = 80, 8, 20, 3e-3, 2e-2
NEW_TOKENS = 25
CURVE = 64  # the curves are measured on the first 64 held-out samples
ORDER = ("base", "lora-1", "lora-4", "lora-8", "full")


# --------------------------------------------------------------------------- the samples, in plain Python


@cache
def corpus() -> dict:
    poems = CORPUS.read_bytes().decode("utf-8").split("\n")[:-1]
    train = [p for i, p in enumerate(poems) if (i + 1) % 10 != 0]
    held = [p for i, p in enumerate(poems) if (i + 1) % 10 == 0]
    counts = collections.Counter("".join(p + "\n" for p in train))
    chars = sorted((c for c, n in counts.items() if n >= 2), key=lambda c: (-counts[c], ord(c)))
    index = {c: 256 + i for i, c in enumerate(chars)}
    return {"all": poems, "train": train, "held": held, "chars": chars, "index": index}


def encode(text: str) -> list[int]:
    index = corpus()["index"]
    out: list[int] = []
    for ch in text:
        out += [index[ch]] if ch in index else list(ch.encode("utf-8"))
    return out


def decode(ids: list[int]) -> str:
    chars, out, pending = corpus()["chars"], [], bytearray()
    for i in ids:
        if i < 256:
            pending.append(i)
            continue
        out.append(pending.decode("utf-8", errors="replace"))
        pending.clear()
        out.append(chars[i - 256])
    out.append(pending.decode("utf-8", errors="replace"))
    return "".join(out)


def heads_of(poem: str) -> str:
    return "".join(line[0] for line in re.split("[，。]", poem) if line)


def usable(poems: list[str]) -> list[str]:
    index = corpus()["index"]
    return [p for p in poems if len(heads_of(p)) == 4 and all(c in index for c in heads_of(p))]


def prompt_ids(heads: str) -> list[int]:
    return encode("藏头：" + heads + "\n")


@cache
def held_rows() -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out samples: inputs right-padded, labels -100 except on the answer."""
    rows = []
    for poem in usable(corpus()["held"]):
        p, a = prompt_ids(heads_of(poem)), encode(poem + "\n")
        rows.append(((p + a)[:-1], [-100] * (len(p) - 1) + a))
    T = max(len(x) for x, _ in rows)
    newline = encode("\n")[0]
    inputs = torch.tensor([x + [newline] * (T - len(x)) for x, _ in rows])
    labels = torch.tensor([y + [-100] * (T - len(y)) for _, y in rows])
    return inputs, labels


def held_heads() -> list[str]:
    return [heads_of(p) for p in usable(corpus()["held"])]


def held_heads_seen_in_training() -> int:
    """Held-out acrostic heads that are also the heads of a training sample."""
    seen = {heads_of(p) for p in usable(corpus()["train"])}
    return sum(h in seen for h in held_heads())


# --------------------------------------------------------------------------- the trained models, merged by hand


@cache
def result() -> dict:
    return lora_train.finetuning(verbose=False)


@cache
def base() -> nn.Module:
    model, tok, _ = gpt.pretrained_gpt(verbose=False)
    assert tok.chars == corpus()["chars"]
    return model.eval()


@cache
def model_of(name: str) -> nn.Module:
    """A plain copy of the stage-1 GPT carrying what the method learned: for LoRA, W + alpha / r * B @ A."""
    model = copy.deepcopy(base())
    if name == "base":
        return model
    run = result()["runs"][name]
    state = model.state_dict()
    if name == "full":
        state = {k: v.clone() for k, v in run["state"].items()}
    else:
        r = RANKS[name]
        for key in list(state):
            if key.endswith(("attn.qkv.weight", "attn.out.weight")):
                prefix = key[: -len("weight")]
                A, B = run["state"][prefix + "lora_A"], run["state"][prefix + "lora_B"]
                assert A.shape == (r, D) and B.shape == (state[key].shape[0], r)
                state[key] = state[key] + ALPHA / r * B @ A
    model.load_state_dict(state)
    return model.eval()


@cache
def held_loss(name: str, n: int | None = None) -> float:
    """The SFT loss on the first n held-out samples (all of them by default): answer tokens only."""
    inputs, labels = held_rows()
    with torch.no_grad():
        logits = model_of(name)(inputs[:n])
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:n].reshape(-1), ignore_index=-100).item()


class LastPosition(nn.Module):
    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.linear = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x[:, -1:])


@cache
def greedy_poems(name: str) -> tuple[list[str], torch.Tensor]:
    """Every held-out head set, written greedily without a cache (the whole sequence each step); also each line's
    probability of its required head at the step that starts the line. Computed once per run: the browser test of
    the article's figure (another worker) reads the same poems (tests/conftest.py: ``computed_once``)."""
    return computed_once(f"lora-greedy-poems-{name}", lambda: _greedy_poems(name))


def _greedy_poems(name: str) -> tuple[list[str], torch.Tensor]:
    heads = held_heads()
    seqs = torch.tensor([prompt_ids(h) for h in heads])
    P = seqs.size(1)
    # The loop reads the last position's logits only: the output layer (64 -> 3,009) is applied to that position
    # alone, the same weights on the same vector. Over every position it was 70 % of this function's time.
    model = copy.deepcopy(model_of(name))
    model.unembed = LastPosition(model.unembed)
    step_probs = []
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            p = model(seqs)[:, -1].softmax(-1)
            step_probs.append(p)
            seqs = torch.cat([seqs, p.argmax(-1, keepdim=True)], dim=1)
    ends = {corpus()["index"]["，"], corpus()["index"]["。"]}
    poems, probs = [], torch.zeros(len(heads), 4)
    for i, h in enumerate(heads):
        new = seqs[i, P:].tolist()
        starts = [0] + [t + 1 for t, tok in enumerate(new) if tok in ends]
        for k, step in enumerate(starts[:4]):
            if step < NEW_TOKENS:
                probs[i, k] = step_probs[step][i, corpus()["index"][h[k]]]
        poems.append(decode(new).split("\n")[0])
    return poems, probs


def written(poem: str) -> str:
    return heads_of(poem)[:4]


def form_ok(poem: str) -> bool:
    lines = re.split("[，。]", poem)
    five = all(len(x) == 5 and all("一" <= c <= "鿿" for c in x) for x in lines[:4])
    return (len(lines) == 5 and lines[4] == "" and five
            and [poem[5], poem[11], poem[17], poem[23]] == ["，", "。", "，", "。"])


@cache
def well_formed(name: str) -> float:
    poems, _ = greedy_poems(name)
    return sum(map(form_ok, poems)) / len(poems)


def distinct(name: str) -> int:
    return len(set(greedy_poems(name)[0]))


@cache
def success(name: str) -> float:
    poems, _ = greedy_poems(name)
    return sum(written(p) == h for p, h in zip(poems, held_heads(), strict=True)) / len(poems)


@cache
def line_hits(name: str) -> float:
    poems, _ = greedy_poems(name)
    hits = sum(a == b for p, h in zip(poems, held_heads(), strict=True) for a, b in zip(written(p), h, strict=False))
    return hits / (4 * len(poems))


def numel(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


@cache
def counts() -> dict[str, int]:
    V = 256 + len(corpus()["chars"])
    with torch.device("meta"):
        full = (numel(nn.Embedding(V, D)) + numel(nn.Embedding(CONTEXT, D))
                + LAYERS * numel(nn.TransformerEncoderLayer(D, HEADS, 4 * D)) + numel(nn.LayerNorm(D))
                + numel(nn.Linear(D, V)))
        qkv, out = nn.Linear(D, 3 * D), nn.Linear(D, D)
    per_rank = LAYERS * sum(layer.in_features + layer.out_features for layer in (qkv, out))
    return {"full": full, "vocab": V, "per_rank": per_rank, **{n: r * per_rank for n, r in RANKS.items()}}


def trainable(name: str) -> int:
    return counts()["full"] if name == "full" else 0 if name == "base" else counts()[name]


# --------------------------------------------------------------------------- facts about the artifact


def fact_artifact_matches() -> bool:
    """The artifact was trained with the recipe the article states, its stored numbers are the ones recomputed here
    (losses, poems, success rates), and its poems and head probabilities are what the stored parameters write."""
    r = result()
    s = r["settings"]
    if (s.steps, s.batch_size, s.eval_every, s.full_lr, s.lora_lr) != (STEPS, BATCH, EVAL_EVERY, FULL_LR, LORA_LR):
        return False
    if lora_train.LORA_ALPHA != ALPHA or tuple(lora_train.LORA_TARGETS) != ("qkv", "out"):
        return False
    if r["heads"] != held_heads() or r["chars"] != corpus()["chars"]:
        return False
    for name in ORDER:
        run = r["runs"][name]
        poems, probs = greedy_poems(name)
        if run["poems"] != poems or (run["head_probs"] - probs).abs().max() > 1e-4:
            return False
        if abs(run["held_out"] - held_loss(name)) > 1e-4 or run["success"] != success(name):
            return False
        if run["well_formed"] != well_formed(name) or abs(run["line_hits"] - line_hits(name)) > 1e-12:
            return False
        if run["trainable"] != trainable(name) or (name != "base" and run["rank"] != RANKS.get(name)):
            return False
    return True


def fact_curves_start_at_base() -> bool:
    """Every method's held-out curve (the first 64 held-out samples) starts at the base model's loss (B = 0; the full
    copy is the base itself), is measured every 20 steps, and ends at the trained model's loss on those samples."""
    r = result()
    for name in ("lora-1", "lora-4", "lora-8", "full"):
        h = r["runs"][name]["history"]
        if h.eval_steps != list(range(0, STEPS + 1, EVAL_EVERY)) or r["settings"].curve_samples != CURVE:
            return False
        if (abs(h.eval_held_out[0] - held_loss("base", CURVE)) > 1e-5
                or abs(h.eval_held_out[-1] - held_loss(name, CURVE)) > 1e-4):
            return False
    return True


def fact_static_poems() -> bool:
    """The static poem figure shows the first three held-out head sets, in corpus order."""
    return result()["heads"][:3] == held_heads()[:3] and held_heads() == [heads_of(p) for p in usable(corpus()["held"])]


def first_poem_heads() -> bool:
    first = corpus()["all"][0]
    return heads_of(first) == "四一送迎" and first == "四時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅新。"


def fact_prompt_bytes() -> bool:
    index = corpus()["index"]
    return "头" not in index and "：" not in index and "藏" in index


def peft_gap() -> float:
    """Our LoRA against peft's on a random stage-1-shaped GPT (float64): logits, and merged outputs and weights."""
    from lora import add_lora, lora_layers, merge_lora  # the module under test
    from peft import LoraConfig, get_peft_model
    from tiny_transformer import TinyTransformer

    torch.manual_seed(0)
    plain = TinyTransformer(gpt.poem_config(300)).double().eval()
    ours = copy.deepcopy(plain)
    add_lora(ours, ("qkv", "out"), r=4, alpha=ALPHA)
    theirs = get_peft_model(copy.deepcopy(plain), LoraConfig(r=4, lora_alpha=ALPHA, target_modules=["qkv", "out"],
                                                             lora_dropout=0.0))
    named = dict(theirs.named_modules())
    assert len(lora_layers(ours)) == 8
    with torch.no_grad():
        for name, layer in lora_layers(ours).items():
            layer.lora_B.normal_()
            named[f"base_model.model.{name}"].lora_A["default"].weight.copy_(layer.lora_A)
            named[f"base_model.model.{name}"].lora_B["default"].weight.copy_(layer.lora_B)
        tokens = torch.randint(0, 300, (2, 40), generator=torch.Generator().manual_seed(0))
        gaps = [(ours(tokens) - theirs(tokens)).abs().max().item()]
        before = ours(tokens)
        merge_lora(ours)
        theirs = theirs.merge_and_unload()
        gaps += [(ours(tokens) - before).abs().max().item(), (ours(tokens) - theirs(tokens)).abs().max().item()]
    return max(gaps)


def fact_peft_gpt2_target() -> bool:
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as MAPPING

    return MAPPING["gpt2"] == ["c_attn"]


# --------------------------------------------------------------------------- the table

N = r"(\d[\d,]*(?:\.\d+)?)"
P = r"(\d+(?:\.\d+)?)%"

def drop_share(name: str) -> float:
    return (held_loss("base") - held_loss(name)) / (held_loss("base") - held_loss("full"))


def fact_loss_order() -> bool:
    losses = [held_loss(n) for n in ("lora-1", "lora-4", "lora-8", "full")]
    return all(a > b for a, b in itertools.pairwise(losses)) and held_loss("base") > losses[0]


def fact_most_drop_by_20() -> bool:
    """On every method's curve, more than half of the drop from step 0 to the end happened by step 20."""
    for name in ("lora-1", "lora-4", "lora-8", "full"):
        h = result()["runs"][name]["history"]
        first, at20, last = h.eval_held_out[0], h.eval_held_out[h.eval_steps.index(20)], h.eval_held_out[-1]
        if not first - at20 > 0.5 * (first - last):
            return False
    return fact_curves_start_at_base()


def fact_r1_stops() -> bool:
    poems, _ = greedy_poems("lora-1")
    return sum(p == "山水。" for p in poems) > 0.5 * len(poems)


def fact_same_poem() -> bool:
    heads = held_heads()[:3]
    for name in ("lora-4", "full"):
        poems = greedy_poems(name)[0][:3]
        if len(set(poems)) != 1 or len(set(heads)) != 3:
            return False
        if any(a == b for p, h in zip(poems, heads, strict=True) for a, b in zip(written(p), h, strict=False)):
            return False
    return True


def fact_settings() -> bool:
    s = result()["settings"]
    return ((s.steps, s.batch_size, s.eval_every, s.full_lr, s.lora_lr) == (STEPS, BATCH, EVAL_EVERY, FULL_LR, LORA_LR)
            and lora_train.LORA_ALPHA == ALPHA and tuple(lora_train.METHODS.values()) == (None, 1, 4, 8))


def fact_playground_model() -> bool:
    """The browser's model (artifact acrostic-gpt) is LoRA r=4, merged: its weights are the hand merge above, and r=4
    is a LoRA whose format the table reports as learned."""
    import os

    saved = torch.load(os.environ["LLM_ARTIFACT_ACROSTIC_GPT"], weights_only=True)
    mine = model_of("lora-4").state_dict()
    if lora_train.PLAYGROUND_METHOD != "lora-4" or sorted(saved["state_dict"]) != sorted(mine):
        return False
    close = all((saved["state_dict"][k] - v).abs().max() <= 1e-6 for k, v in mine.items())
    return close and well_formed("lora-4") > 0.8


def percent_of_full(name: str) -> float:
    return 100 * counts()[name] / counts()["full"]


CLAIMS: list[Claim] = [
    Claim("first poem", "article",
          r"语料的第一首是「四時運灰琯，一夕變冬春。送寒餘雪盡，迎歲早梅新。」，它的藏头是「四一送迎」",
          holds(first_poem_heads)),
    Claim("prompt tokens", "article",
          r"「头」和全角冒号「：」都不在词表里，各拆成 (\d+) 个字节词元（字节回退），所以整个提示是 (\d+) 个词元",
          lambda st: (None if fact_prompt_bytes() else "头 or ： in the vocabulary")
          or approx(lambda: len("头".encode()), lambda: len(prompt_ids("春夏秋冬")), exact=True)(st)),
    Claim("samples", "article", rf"训练集有 {N} 条样本，验证集有 {N} 组藏头",
          approx(lambda: len(usable(corpus()["train"])), lambda: len(held_heads()), exact=True)),
    Claim("held-out heads seen in training", "article",
          rf"这 {N} 组里有 {N} 组和训练集里某首诗的藏头相同",
          approx(lambda: len(held_heads()), held_heads_seen_in_training, exact=True)),
    Claim("full params", "article", rf"唐诗 GPT 一共 {N} 个参数，全部更新",
          lambda st: (None if result()["total_params"] == counts()["full"] else "the artifact's base differs")
          or approx(lambda: counts()["full"], exact=True)(st)),
    Claim("per layer", "article", r"一层 \$384r\$，四层 \$1536r\$",
          holds(lambda: counts()["per_rank"] == 1536 and counts()["per_rank"] // LAYERS == 384)),
    Claim("r1 r8", "article", rf"\$r=1\$ 只要训练 {N} 个参数，是全部参数的 {P}；\$r=8\$ 是 {N} 个，{P}",
          approx(lambda: counts()["lora-1"], lambda: percent_of_full("lora-1"), lambda: counts()["lora-8"],
                 lambda: percent_of_full("lora-8"))),
    Claim("vocab", "article", rf"词表有 {N} 个词元", approx(lambda: counts()["vocab"], exact=True)),
    Claim("peft layers", "article", r"两边换掉的都是这 (\d+) 个层", approx(lambda: 2 * LAYERS, exact=True)),
    Claim("peft gap", "article", r"float64 下最大的差小于 \$10\^\{(-\d+)\}\$", below_power_of_ten(peft_gap)),
    Claim("peft gpt2", "article", r"`peft` 给 GPT-2 默认的 LoRA 目标就是它合起来的 `c_attn`",
          holds(fact_peft_gpt2_target)),
    Claim("alpha", "article", r"我们取 \$\\alpha=8\$", holds(fact_settings)),
    Claim("steps", "article", rf"\*\*同样的数据和顺序\*\*：{N} 步，每步从训练集随机取 (\d+) 条样本",
          lambda st: (None if fact_settings() else "settings differ")
          or approx(lambda: STEPS, lambda: BATCH, exact=True)(st)),
    Claim("learning rates", "article", r"全参数微调 \$3\\times10\^\{-3\}\$，LoRA \$2\\times10\^\{-2\}\$",
          holds(fact_settings)),
    Claim("r1 in the exercise", "article", rf"LoRA r=1 只训练 {N} 个参数",
          approx(lambda: counts()["lora-1"], exact=True)),
    Claim("prompt in the exercise", "article", r"提示是 \$1\+3\+3\+4\+1=(\d+)\$ 个词元",
          approx(lambda: len(prompt_ids("春夏秋冬")), exact=True)),
    # the results
    *[Claim(f"row {name}", "article",
            rf"^\| {re.escape(label)} \| {N} \| {N} \| {P} \| {P} \| {P} \|$",
            lambda st, name=name: (None if fact_artifact_matches() else "the artifact differs from the recomputation")
            or approx(lambda: trainable(name), lambda: held_loss(name), lambda: 100 * well_formed(name),
                      lambda: 100 * success(name), lambda: 100 * line_hits(name))(st))
      for name, label in (("base", "基座模型（微调前）"), ("lora-1", "LoRA r=1"), ("lora-4", "LoRA r=4"),
                          ("lora-8", "LoRA r=8"), ("full", "全参数微调"))],
    Claim("losses", "article", rf"四种微调都把验证集的 SFT 损失从 {N} 降到了 {N} 到 {N} 之间",
          approx(lambda: held_loss("base"), lambda: min(held_loss(n) for n in ORDER[1:]),
                 lambda: max(held_loss(n) for n in ORDER[1:]))),
    Claim("first 20 steps", "article", r"大头在前 20 步就降完了", holds(fact_most_drop_by_20)),
    Claim("order", "article", r"秩越大损失越低，全参数微调最低", holds(fact_loss_order)),
    Claim("r1 share", "article", rf"r=1 只训练 {N} 个参数，就拿到了全参数微调降幅的 {P}，和它只差 {N}",
          approx(lambda: counts()["lora-1"], lambda: 100 * drop_share("lora-1"),
                 lambda: held_loss("lora-1") - held_loss("full"))),
    Claim("base format", "article", rf"{N} 首里没有一首格式正确，比如「風雨。不可憐，不見不知人。」",
          lambda st: approx(lambda: len(held_heads()), exact=True)(st)
          or (None if well_formed("base") == 0 and greedy_poems("base")[0][0] == "風雨。不可憐，不見不知人。"
              else "the base model writes something else")),
    Claim("poem start", "article", r"现在诗从第 (\d+) 个位置开始",
          approx(lambda: len(prompt_ids("四一送迎")), exact=True)),
    Claim("format full r4", "article", rf"全参数微调写出的诗 {P} 格式正确，LoRA r=4 是 {P}",
          approx(lambda: 100 * well_formed("full"), lambda: 100 * well_formed("lora-4"))),
    Claim("format r8 r1", "article", rf"r=8 只有 {P}，r=1 只有 {P}，它几乎总是写下「山水。」就停了",
          lambda st: approx(lambda: 100 * well_formed("lora-8"), lambda: 100 * well_formed("lora-1"))(st)
          or (None if fact_r1_stops() else "r=1 does not mostly write 山水。")),
    Claim("distinct", "article",
          rf"给验证集的 {N} 组藏头，全参数微调只写出 {N} 首不同的诗，r=4 写出 {N} 首，r=8 写出 {N} 首",
          approx(lambda: len(held_heads()), lambda: distinct("full"), lambda: distinct("lora-4"),
                 lambda: distinct("lora-8"), exact=True)),
    Claim("no acrostic", "article", rf"五个模型在 {N} 组藏头上都是 0 首",
          lambda st: approx(lambda: len(held_heads()), exact=True)(st)
          or (None if all(success(n) == 0 for n in ORDER) else "some poem hides its heads")),
    Claim("line hits", "article", rf"句首写对的比例在 {P} 到 {P} 之间，和基座模型的 {P} 差不多",
          approx(lambda: 100 * min(line_hits(n) for n in ORDER), lambda: 100 * max(line_hits(n) for n in ORDER),
                 lambda: 100 * line_hits("base"))),
    Claim("same poem", "article", r"LoRA r=4 和全参数微调写出的却都是同一首诗（每个模型对三组藏头写的是同一首），"
          r"句首一个也没对上",
          holds(fact_same_poem)),
    Claim("r4 like full", "article", rf"秩为 4 的 LoRA（{N} 个参数）和全参数微调差不多",
          lambda st: approx(lambda: counts()["lora-4"], exact=True)(st) or (None if (
              held_loss("lora-4") - held_loss("full") < 0.1 and well_formed("lora-4") > 0.8
              and well_formed("full") > 0.8) else "r = 4 is not close to full fine-tuning")),
    Claim("small model", "article", r"我们这个 60 万参数的小模型", holds(lambda: 5.5e5 < counts()["full"] < 6.5e5)),
    Claim("summary", "article",
          rf"验证集的 SFT 损失从 {N} 降到 {N} 到 {N} 之间，LoRA r=1 用全部参数的 {P} 拿到了全参数微调 {P} 的降幅",
          approx(lambda: held_loss("base"), lambda: min(held_loss(n) for n in ORDER[1:]),
                 lambda: max(held_loss(n) for n in ORDER[1:]), lambda: percent_of_full("lora-1"),
                 lambda: 100 * drop_share("lora-1"))),
    Claim("summary acrostic", "article", r"藏头却一首也没成功", holds(lambda: all(success(n) == 0 for n in ORDER))),
    Claim("playground model", "article", r"下面就是 LoRA r=4 微调出的模型.*它是学会了格式的那个 LoRA",
          holds(fact_playground_model)),
    # captions
    Claim("params caption", "lora-params", r"LoRA 的参数与秩成正比，每层每个秩 (\d+) 个",
          approx(lambda: counts()["per_rank"] // LAYERS, exact=True)),
    Claim("results caption", "lora-results", r"各微调 (\d+) 步，每步 (\d+) 条，种子相同",
          lambda st: (None if fact_settings() else "settings differ")
          or approx(lambda: STEPS, lambda: BATCH, exact=True)(st)),
    Claim("results caption curves", "lora-results",
          r"每 (\d+) 步在验证集的前 (\d+) 条样本上量一次，第 0 步就是基座模型",
          lambda st: approx(lambda: EVAL_EVERY, lambda: CURVE, exact=True)(st) or (None if (
              fact_curves_start_at_base() and fact_artifact_matches()) else "the curves differ")),
    Claim("poems caption", "lora-poems", r"验证集里前三组藏头（按语料的顺序，没有挑选",
          holds(lambda: fact_static_poems() and fact_artifact_matches())),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# --------------------------------------------------------------------------- no new unchecked number

NOT_COMPUTED: dict[str, str] = {
    "2106.09685": "the LoRA paper's arXiv identifier",
    "0.21": "the version of peft the tests compare with (0.21.2)",
    "10,000": "quoted from Hu et al. 2021 (arXiv:2106.09685), the abstract: GPT-3 175B, 10,000 times fewer parameters",
}


def test_every_number_in_the_article_is_a_checked_claim() -> None:
    unchecked = claims.unchecked_numbers(SOURCES, CLAIMS, NOT_COMPUTED)
    assert not unchecked, "numbers with no recomputing claim in CLAIMS:\n" + "\n".join(unchecked)

