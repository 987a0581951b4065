"""Every number (and every checkable statement) the LoRA article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/lora-finetune.md`` (or a figure's title and caption) and
checks the numbers it states against a recomputation done here, without ``code/acrostic.py`` or ``code/lora.py``:

- the samples: poems split, heads cut and prompts encoded with plain Python from the corpus file (the vocabulary
  recounted as the llama claims do);
- parameter counts from PyTorch's own modules on the meta device, and ``r * (d_in + d_out)`` written out;
- the fine-tuned models of the ``lora-finetune`` build artifact: the LoRA factors merged by hand
  (``W + alpha / r * B @ A``) into a plain copy of the stage-1 GPT, then the held-out SFT loss recomputed with
  ``F.cross_entropy(ignore_index=-100)``, every held-out poem rewritten by a greedy loop without a KV cache, and the
  forgetting check (poems from a bare newline, sampled at temperature 0.8 with seed 0, and one greedy poem) rewritten
  by a sampling loop without a KV cache;
- peft's own LoRA for the agreement, merge, rsLoRA and ``all-linear`` statements; trl's ``SFTConfig`` fields for its
  loss defaults; a tiny randomly initialised ``transformers`` GPT-2 for what ``all-linear`` picks there.
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
from .test_gpt_claims import check_split_rule

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
FREE_SAMPLES, FREE_TEMPERATURE, FREE_SEED = 100, 0.8, 0  # the forgetting check, as the article states it
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
    ends, newline = {corpus()["index"]["，"], corpus()["index"]["。"]}, corpus()["index"]["\n"]
    poems, probs = [], torch.zeros(len(heads), 4)
    for i, h in enumerate(heads):
        new = seqs[i, P:].tolist()
        poem = new[: new.index(newline)] if newline in new else new  # the poem ends at the first newline
        starts = [0] + [t + 1 for t, tok in enumerate(poem) if tok in ends]
        for k, step in enumerate(starts[:4]):
            if step < NEW_TOKENS:
                probs[i, k] = step_probs[step][i, corpus()["index"][h[k]]]
        poems.append(decode(new).split("\n")[0])
    return poems, probs


def written(poem: str) -> str:
    return heads_of(poem)[:4]


@cache
def free_poems(name: str) -> tuple[str, list[str]]:
    """The forgetting check: from a bare newline, one poem written greedily and FREE_SAMPLES poems sampled at
    FREE_TEMPERATURE (one torch.Generator seeded FREE_SEED, one multinomial draw per step for the whole batch), each
    cut at its first newline. No KV cache: the whole sequence goes through the hand-merged model at every step."""
    model = copy.deepcopy(model_of(name))
    model.unembed = LastPosition(model.unembed)
    start = encode("\n")
    greedy = torch.tensor([start])
    sampled = torch.tensor([start] * FREE_SAMPLES)
    gen = torch.Generator().manual_seed(FREE_SEED)
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            greedy = torch.cat([greedy, model(greedy)[:, -1].argmax(-1, keepdim=True)], dim=1)
            probs = (model(sampled)[:, -1] / FREE_TEMPERATURE).softmax(-1)
            sampled = torch.cat([sampled, torch.multinomial(probs, 1, generator=gen)], dim=1)
    return (decode(greedy[0, 1:].tolist()).split("\n")[0],
            [decode(row[1:].tolist()).split("\n")[0] for row in sampled])


@cache
def free_count(name: str) -> int:
    """How many of the sampled poems from a bare newline are well formed."""
    return sum(map(form_ok, free_poems(name)[1]))


def fact_free_matches_artifact() -> bool:
    """The artifact's forgetting check is what the stored parameters write (same poems, same rate), measured with the
    settings the article states."""
    s = result()["settings"]
    if (s.free_samples, s.free_temperature, s.free_seed) != (FREE_SAMPLES, FREE_TEMPERATURE, FREE_SEED):
        return False
    for name in ORDER:
        run = result()["runs"][name]
        greedy, sampled = free_poems(name)
        if run["free_greedy"] != greedy or run["free_poems"] != sampled:
            return False
        if run["free_well_formed"] != free_count(name) / FREE_SAMPLES:
            return False
    return True


def fact_free_greedy() -> bool:
    """The base model's greedy poem from a newline is well formed; none of the four fine-tuned models' is."""
    return form_ok(free_poems("base")[0]) and not any(form_ok(free_poems(n)[0]) for n in ORDER[1:])


def fact_lora_keeps_more() -> bool:
    return all(free_count(n) > free_count("full") for n in ("lora-1", "lora-4", "lora-8"))


def free_claim(*names: str):
    """Exact counts of well-formed free poems, after checking the artifact agrees with this recomputation."""
    def check(stated):
        if not fact_free_matches_artifact():
            return "the artifact's forgetting check differs from the recomputation"
        return approx(*[(lambda n=n: FREE_SAMPLES) if n == "samples" else (lambda n=n: free_count(n))
                        for n in names], exact=True)(stated)
    return check


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


def r1_stops() -> int:
    """Held-out head sets for which LoRA r = 1 writes only 「山水。」 and then the newline."""
    poems, _ = greedy_poems("lora-1")
    return sum(p == "山水。" for p in poems)


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
    is *the* LoRA whose format the table reports as learned: above 80 %, the other ranks below half."""
    import os

    saved = torch.load(os.environ["LLM_ARTIFACT_ACROSTIC_GPT"], weights_only=True)
    mine = model_of("lora-4").state_dict()
    if lora_train.PLAYGROUND_METHOD != "lora-4" or sorted(saved["state_dict"]) != sorted(mine):
        return False
    close = all((saved["state_dict"][k] - v).abs().max() <= 1e-6 for k, v in mine.items())
    return close and well_formed("lora-4") > 0.8 and max(well_formed("lora-1"), well_formed("lora-8")) < 0.5


def percent_of_full(name: str) -> float:
    return 100 * counts()[name] / counts()["full"]


def fact_end_marker_is_labelled() -> bool:
    """The answer's closing newline is the last labelled position of every held-out sample."""
    _, labels = held_rows()
    newline = encode("\n")[0]
    return all(row[row != -100][-1].item() == newline for row in labels)


def fixed_positions() -> list[int]:
    """Where the four heads sit in the prompt, and where the four lines of a poem without byte fallback start (from
    0): the same for every such held-out sample, or the check fails."""
    prompt = prompt_ids("春夏秋冬")
    in_prompt = [i for i, t in enumerate(prompt) if t in {encode(c)[0] for c in "春夏秋冬"}]
    starts = set()
    for poem in usable(corpus()["held"]):
        if len(encode(poem)) != len(poem):
            continue  # a character fell back to bytes: the positions shift
        P = len(prompt_ids(heads_of(poem)))
        starts.add(tuple(P + i for i in range(len(poem)) if i == 0 or poem[i - 1] in "，。"))
    assert len(starts) == 1, starts
    (line_starts,) = starts
    return [in_prompt[0], in_prompt[-1], *line_starts]


def fact_trl_defaults() -> bool:
    """trl 1.16.0's SFTConfig: completion_only_loss defaults to None, documented as loss on the completion for
    prompt-completion data; assistant_only_loss (conversational data) defaults to False, i.e. the whole sequence."""
    import dataclasses

    import trl

    fields = {f.name: f for f in dataclasses.fields(trl.SFTConfig)}
    completion, assistant = fields["completion_only_loss"], fields["assistant_only_loss"]
    return (trl.__version__ == "1.16.0" and completion.default is None and assistant.default is False
            and "loss is computed on the completion for prompt-completion datasets" in completion.metadata["help"]
            and "conversational" in assistant.metadata["help"])


def fact_chat_template() -> bool:
    from transformers import PreTrainedTokenizerBase

    return callable(getattr(PreTrainedTokenizerBase, "apply_chat_template", None))


def fact_rslora() -> bool:
    """peft's use_rslora=True scales by alpha / sqrt(r): alpha = 8, r = 4 gives 4 (alpha / r would give 2)."""
    from peft import LoraConfig, get_peft_model
    from tiny_transformer import TinyTransformer

    torch.manual_seed(0)
    model = get_peft_model(TinyTransformer(gpt.poem_config(300)),
                           LoraConfig(r=4, lora_alpha=ALPHA, target_modules=["qkv"], use_rslora=True))
    scales = {m.scaling["default"] for n, m in model.named_modules() if n.endswith("attn.qkv")}
    return scales == {ALPHA / 4 ** 0.5}


def all_linear_targets(model: nn.Module) -> set[str]:
    from peft import LoraConfig, get_peft_model

    wrapped = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules="all-linear"))
    return {n.rsplit(".", 1)[-1] for n, m in wrapped.named_modules() if hasattr(m, "lora_A") and hasattr(m, "scaling")}


def fact_all_linear() -> bool:
    """target_modules="all-linear": on a (tiny, random) transformers GPT-2 every linear layer but the output layer
    lm_head; on our TinyTransformer every linear layer, unembed included."""
    from tiny_transformer import TinyTransformer
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16, n_positions=8))
    ours = TinyTransformer(gpt.poem_config(300))
    return (all_linear_targets(gpt2) == {"c_attn", "c_proj", "c_fc"}
            and all_linear_targets(ours) == {"qkv", "out", "up", "down", "unembed"})


def capable_settings() -> lora_train.SFTSettings:
    import capable_sft

    return capable_sft.CAPABLE_SETTINGS


def changed_settings() -> set[str]:
    """The fields in which the evaluation article's longer run differs from this article's settings."""
    ours, longer = lora_train.SFTSettings(), capable_settings()
    return {f for f in vars(ours) if getattr(ours, f) != getattr(longer, f)}


CLAIMS: list[Claim] = [
    Claim("split rule", "article", r"每 (\d+) 首诗留 (\d+) 首作验证集", check_split_rule),
    Claim("the budget is the run's", "article", r"(\d+) 步、每步 (\d+) 条样本的训练没教会它",
          approx(lambda: lora_train.SFTSettings().steps, lambda: lora_train.SFTSettings().batch_size, exact=True)),
    # the evaluation article's longer run: the same finetune, only these four settings changed
    Claim("the longer run", "article",
          r"只把步数、每步的样本数、预热和峰值学习率加到 (\d+) 步、每步 (\d+) 条",
          lambda st: approx(lambda: capable_settings().steps, lambda: capable_settings().batch_size, exact=True)(st)
          or (None if changed_settings() == {"steps", "batch_size", "warmup", "full_lr"}
              else f"the longer run changes {sorted(changed_settings())}")),
    Claim("the longer run (summary)", "article", r"《评测》一文把同样的全参数微调加到 (\d+) 步",
          approx(lambda: capable_settings().steps, exact=True)),
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
    Claim("format r8 r1", "article", rf"r=8 只有 {P}，r=1 只有 {P}，{N} 组藏头里有 {N} 组，它只写下「山水。」就换行了",
          approx(lambda: 100 * well_formed("lora-8"), lambda: 100 * well_formed("lora-1"), lambda: len(held_heads()),
                 r1_stops)),
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
    Claim("r4 like full", "article",
          rf"秩为 4 的 LoRA（{N} 个参数）和全参数微调差不多，验证集损失只差 {N}；"
          rf"格式它这一次也学会了，可同样是 LoRA，r=8 只有 {P}",
          approx(lambda: counts()["lora-4"], lambda: held_loss("lora-4") - held_loss("full"),
                 lambda: 100 * well_formed("lora-8"))),
    Claim("small model", "article", r"我们这个约 (\d+) 万参数的小模型", approx(lambda: counts()["full"] / 10_000)),
    Claim("summary", "article",
          rf"验证集的 SFT 损失从 {N} 降到 {N} 到 {N} 之间，LoRA r=1 用全部参数的 {P} 拿到了全参数微调 {P} 的降幅",
          approx(lambda: held_loss("base"), lambda: min(held_loss(n) for n in ORDER[1:]),
                 lambda: max(held_loss(n) for n in ORDER[1:]), lambda: percent_of_full("lora-1"),
                 lambda: 100 * drop_share("lora-1"))),
    Claim("summary acrostic", "article", r"藏头却一首也没成功", holds(lambda: all(success(n) == 0 for n in ORDER))),
    Claim("playground model", "article", r"下面就是 LoRA r=4 微调出的模型.*它是学会了格式的那个 LoRA",
          holds(fact_playground_model)),
    # where SFT sits, templates, what LoRA saves, rsLoRA, which layers
    Claim("trl defaults", "article",
          r"`trl` 1\.16\.0 的 `SFTTrainer` 对「提示 \+ 回答」格式的数据默认只算回答，对多轮对话格式的数据默认整段都算",
          holds(fact_trl_defaults)),
    Claim("chat template", "article", r"用 `apply_chat_template` 把一串消息拼成模型要的那种文字",
          holds(fact_chat_template)),
    Claim("end marker", "article",
          r"这里回答末尾的换行就是结束标记：它的位置有标签，评估时写出的文字截到第一个换行为止",
          holds(lambda: fact_end_marker_is_labelled() and all("\n" not in p for p in greedy_poems("full")[0]))),
    Claim("rslora", "article", r"提出改用 \$\\alpha/\\sqrt\{r\}\$（rsLoRA；`peft` 里设 `use_rslora=True`）",
          holds(fact_rslora)),
    Claim("all-linear", "article",
          r"用在 Hugging Face `transformers` 的模型上时不含输出层；"
          r"用在我们的 `TinyTransformer` 上，它连输出层 `unembed` 也选上了",
          holds(fact_all_linear)),
    Claim("fixed positions", "article",
          r"提示里的四个字总在第 (\d+) 到第 (\d+) 个位置，没有字节回退的诗，"
          r"四句的第一个字总在第 (\d+)、(\d+)、(\d+)、(\d+) 个位置",
          lambda st: approx(*[lambda i=i: fixed_positions()[i] for i in range(6)], exact=True)(st)),
    # forgetting
    Claim("free: the poem starts later", "article", r"微调时它见到的每一条样本，诗都从第 (\d+) 个位置开始",
          approx(lambda: len(prompt_ids("春夏秋冬")), exact=True)),
    Claim("free: settings", "article", r"用第一阶段写样本时的温度 (\d\.\d)、同一个随机数种子采样写 (\d+) 首",
          lambda st: (None if (gpt.TrainSettings().sample_temperature == FREE_TEMPERATURE
                               and fact_free_matches_artifact())
                      else "not stage 1's temperature, or the artifact differs")
          or approx(lambda: FREE_TEMPERATURE, lambda: FREE_SAMPLES, exact=True)(st)),
    Claim("free: counts", "article",
          r"基座模型写的 (\d+) 首里有 (\d+) 首格式正确，贪心写的那首也对。微调 (\d+) 步之后，全参数微调只剩 (\d+) 首，"
          r"LoRA r=1、4、8 分别是 (\d+)、(\d+)、(\d+) 首，四个模型贪心写的那首格式都不对",
          lambda st: (None if fact_free_greedy() else "the greedy poems from a newline differ")
          or approx(lambda: FREE_SAMPLES, lambda: free_count("base"), lambda: STEPS, lambda: free_count("full"),
                    lambda: free_count("lora-1"), lambda: free_count("lora-4"), lambda: free_count("lora-8"),
                    exact=True)(st)),
    Claim("free: LoRA keeps more", "article", r"LoRA 留下的比全参数微调多", holds(fact_lora_keeps_more)),
    Claim("free: summary", "article",
          r"只给一个换行时，基座模型采样的 (\d+) 首里 (\d+) 首格式正确，全参数微调后只剩 (\d+) 首，LoRA 留下的多一些",
          lambda st: (None if fact_lora_keeps_more() else "LoRA does not keep more")
          or free_claim("samples", "base", "full")(st)),
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
    "2203.02155": "InstructGPT's arXiv identifier",
    "2305.18290": "DPO's arXiv identifier",
    "2402.03300": "DeepSeekMath's (GRPO) arXiv identifier",
    "2405.14394": "Shi et al. 2024's arXiv identifier",
    "2312.03732": "rsLoRA's arXiv identifier",
    "2305.14314": "QLoRA's arXiv identifier",
    "2405.09673": "Biderman et al. 2024's arXiv identifier",
    "0.21": "the version of peft the tests compare with (0.21.2)",
    "1.16": "the version of trl whose SFTConfig defaults the article states (1.16.0; fact_trl_defaults checks it)",
    "10,000": "quoted from Hu et al. 2021 (arXiv:2106.09685), the abstract: GPT-3 175B, 10,000 times fewer parameters",
    "25%": "quoted from Hu et al. 2021 (arXiv:2106.09685), section 4.2: GPT-3 175B trains 25% faster with LoRA",
}
