"""Every number (and every checkable statement) the BPE article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/bpe-tokenizer.md`` (or a figure's caption) and checks the
numbers it states against a recomputation done here, never against the figure module's output:

- the corpus is read and split in plain Python (``test_gpt_claims.corpus``), not with ``load_poems``/``split_poems``;
- the tokenizer is trained here with ``code/bpe.py``'s ``train_bpe`` (the function the article teaches) and, as an
  independent implementation, with Hugging Face ``tokenizers``' ``BpeTrainer`` set up as in ``tests/code/test_bpe.py``.
  With HF's byte order (``ties="hf"``) the merges are compared one by one. The article's numbers use our default
  order (bytes by value), which breaks the first ties differently: on the training text the two give the same number of
  tokens at every vocabulary size of the figure (asserted exactly), on the held-out text at most 3 tokens apart
  (asserted). Each tokens-per-character number is therefore checked against ours as rounded and against HF's within
  that stated gap;
- the two trained GPTs are the build artifacts (``tang-gpt``, ``bpe-gpt``, read from the run's cache); their losses are
  recomputed here with ``F.cross_entropy`` on token ids produced by an encoder written here (pieces cut character by
  character, merges applied by rank), not by ``BPE.encode`` or ``poem_bits``; the parameter counts come from PyTorch's
  own modules on the meta device (``test_gpt_claims.param_counts``).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import re
import sys
import unicodedata
from collections import Counter
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from . import claims
from .claims import Claim, approx, holds

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "bpe-tokenizer.md"
FIGURES = CODE / "figures" / "bpe_tokenizer.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import bpe as bpe_module  # noqa: E402

from tests.code.test_bpe import BYTE_CHAR, hf_merges, hf_tokenizer, our_merges  # noqa: E402
from tests.figures.test_gpt_claims import corpus, param_counts, places_differ  # noqa: E402

POEM = "玉階生白露，夜久侵羅襪。却下水晶簾，玲瓏望秋月。"  # the segmentation figure's poem (held out)
SIZES = (256, 260, 300, 400, 500, 700, 1000, 1500, 2000, 3009, 4000, 5000, 6000, 7000, 8000)  # the curve's sizes
GPT_VOCAB = 3009
NO_LIMIT = 10**6


# --------------------------------------------------------------------------- corpus and tokenizers


def text_of(poems: list[str]) -> str:
    return "".join(p + "\n" for p in poems)


@cache
def train_text() -> str:
    return text_of(corpus()["train"])


@cache
def held_text() -> str:
    return text_of(corpus()["held"])


@cache
def ours_full() -> bpe_module.BPE:
    return bpe_module.train_bpe(train_text(), NO_LIMIT)


def ours_at(size: int) -> bpe_module.BPE:
    return bpe_module.BPE(ours_full().merges[: size - 256])


def all_sizes() -> list[int]:
    return [*SIZES, ours_full().vocab_size]


@cache
def hf_full():
    return hf_tokenizer(train_text(), NO_LIMIT)


@cache
def hf_at(size: int):
    return hf_tokenizer(train_text(), size)


@cache
def counts_at(size: int) -> dict[str, int]:
    """Tokens of the training and held-out texts, by our tokenizer and by HF's, at one vocabulary size."""
    ours, hf = ours_at(size), hf_at(size)
    return {"ours_train": len(ours.encode(train_text())), "hf_train": len(hf.encode(train_text()).ids),
            "ours_held": len(ours.encode(held_text())), "hf_held": len(hf.encode(held_text()).ids)}


HELD_GAP = 3  # the largest difference of held-out token counts the article states


def tpc(size: int, which: str = "held") -> float:
    """Tokens per character at ``size`` (ours), after checking HF's count agrees as the article states."""
    c = counts_at(size)
    text = held_text() if which == "held" else train_text()
    assert c["ours_train"] == c["hf_train"], (size, c)
    assert abs(c["ours_held"] - c["hf_held"]) <= HELD_GAP, (size, c)
    return c[f"ours_{which}"] / len(text)


def fact_tie_rule_counts() -> bool:
    return all(counts_at(v)["ours_train"] == counts_at(v)["hf_train"] for v in all_sizes()) and max(
        abs(counts_at(v)["ours_held"] - counts_at(v)["hf_held"]) for v in all_sizes()) <= HELD_GAP


@cache
def hf_rule_same() -> int:
    """Our trainer with HF's byte order gives HF's merges one by one; returns their number (and it equals ours')."""
    ours_hf = bpe_module.train_bpe(train_text(), NO_LIMIT, ties="hf")
    expected = hf_merges(hf_full())
    assert our_merges(ours_hf) == expected
    assert len(ours_full().merges) == len(expected)
    assert ours_full().merges[0] != ours_hf.merges[0]
    return len(expected)


def fact_first_80_differ() -> bool:
    text = text_of(corpus()["poems"][:80])
    by_value, by_hf = (bpe_module.train_bpe(text, NO_LIMIT, ties=t) for t in ("bytes", "hf"))
    return len(by_value.merges) != len(by_hf.merges)


def fact_hf_byte_numbering() -> bool:
    """188 bytes stand for themselves (! to ~ among them), the other 68 are written from U+0100 on."""
    own = [b for b, c in BYTE_CHAR.items() if ord(c) == b]
    moved = sorted(ord(c) for b, c in BYTE_CHAR.items() if ord(c) != b)
    return len(own) == 188 and all(b in own for b in range(0x21, 0x7F)) and moved == list(range(0x100, 0x100 + 68))


def pieces(text: str) -> list[str]:
    """Pre-tokenisation character by character: newline alone, letters/marks/numbers together, the rest together."""
    out: list[str] = []
    last = None
    for c in text:
        kind = "nl" if c == "\n" else ("text" if unicodedata.category(c)[0] in "LMN" else "other")
        if kind == last and kind != "nl":
            out[-1] += c
        else:
            out.append(c)
        last = kind
    return out


def first_pair_counts() -> Counter:
    return Counter(p for piece in pieces(train_text()) for p in pairwise(piece.encode("utf-8")))


TIED = [(0xEF, 0xBC), (0xBC, 0x8C), (0xE3, 0x80), (0x80, 0x82)]


def fact_four_way_tie() -> bool:
    counts = first_pair_counts()
    top = max(counts.values())
    return sorted(p for p, n in counts.items() if n == top) == sorted(TIED)


def fact_first_merges() -> bool:
    """(80, 82), (BC, 8C), then E3 and EF joined on: 。 and ，; then two-byte prefixes of Han characters before the
    first whole character, and whole characters before the first two-character token; 白日 and 千里 are tokens."""
    b = ours_at(GPT_VOCAB)
    m = b.merges
    if m[:2] != [(0x80, 0x82), (0xBC, 0x8C)]:
        return False
    if [b.tokens[b.ranks[p][1]] for p in m[2:4]] != ["。".encode(), "，".encode()]:
        return False
    made = [b.tokens[b.ranks[p][1]] for p in m]

    def kind(t: bytes) -> str:
        try:
            return f"{len(t.decode())}char"
        except UnicodeDecodeError:
            return "partial"

    kinds = [kind(t) for t in made]
    first_char = next(k for k in range(4, len(m)) if kinds[k] == "1char")
    return (all(kinds[k] == "partial" and len(made[k]) == 2 for k in range(4, first_char)) and first_char > 5
            and kinds.index("2char") > first_char and {"白日".encode(), "千里".encode()} <= set(b.tokens))


def composition() -> Counter:
    b = ours_at(GPT_VOCAB)
    out: Counter = Counter()
    for t in b.tokens[256:]:
        try:
            n = len(t.decode())
            out["1" if n == 1 else "2" if n == 2 else "3-5" if 3 <= n <= 5 else "more"] += 1
        except UnicodeDecodeError:
            out["partial"] += 1
    return out


def fact_whole_marks() -> bool:
    """The comma and the full stop are among the merged tokens that are one whole character."""
    merged = set(ours_at(GPT_VOCAB).tokens[256:])
    return "，".encode() in merged and "。".encode() in merged


def fact_newline_is_the_extra_one() -> bool:
    """The characters that are one token but not a merged token: only the newline, which is byte token 10."""
    b = ours_at(GPT_VOCAB)
    whole, merged = set(b.tokens), set(b.tokens[256:])
    extra = [c for c in char_vocab() if c.encode() in whole and c.encode() not in merged]
    return extra == ["\n"] and b.tokens[10] == b"\n"


def char_vocab() -> list[str]:
    return corpus()["chars"]


def single_token_chars() -> int:
    b = ours_at(GPT_VOCAB)
    whole = set(b.tokens)
    return sum(c.encode() in whole for c in char_vocab())


def char_tpc(text: str) -> float:
    vocab = set(char_vocab())
    return sum(1 if c in vocab else len(c.encode()) for c in text) / len(text)


# --------------------------------------------------------------------------- segmentation of the figure's poem


def segmentation(size: int) -> list[bytes]:
    b = ours_at(size)
    return [b.tokens[i] for i in b.encode(POEM + "\n")]


def whole(tokens: list[bytes]) -> list[str]:
    out = []
    for t in tokens:
        with contextlib.suppress(UnicodeDecodeError):
            out.append(t.decode())
    return out


def variants_of_poem() -> list[str]:
    """Training poems of the same length as POEM that differ from it in one or two places."""
    return [p for p in corpus()["train"] if len(p) == len(POEM) and 1 <= places_differ(p, POEM) <= 2]


def min_frequency() -> int:
    return inspect.signature(bpe_module.train_bpe).parameters["min_frequency"].default


def fact_variant_makes_luowa() -> bool:
    """羅襪 is one token when training runs to the end, and is not when the variant is left out of the training text."""
    (variant,) = variants_of_poem()
    without_variant = train_text().replace(variant + "\n", "", 1)
    assert without_variant != train_text()
    without = bpe_module.train_bpe(without_variant, NO_LIMIT)
    without_tokens = [without.tokens[i] for i in without.encode(POEM + "\n")]
    return "羅襪" in whole(segmentation(ours_full().vocab_size)) and "羅襪" not in whole(without_tokens)


def fact_segmentation() -> bool:
    s300, s1000, s3009, s_all = (segmentation(v) for v in (300, 1000, 3009, ours_full().vocab_size))
    han = [c for c in POEM if c not in "，。"]
    marks_whole = all(m in whole(s300) for m in "，。") and not any(c in whole(s300) for c in han)
    most_whole = sum(c in whole(s1000) for c in han) > len(han) / 2
    pairs_3009 = [t for t in whole(s3009) if len(t) == 2]
    split_3009 = all(c not in whole(s3009) and sum(c.encode().startswith(t) or c.encode().endswith(t)
                                                    for t in s3009 if len(t) < 3) >= 2 for c in "襪晶玲瓏")
    return (marks_whole and most_whole and pairs_3009 == ["白露", "秋月"] and split_3009
            and {"玉階", "玲瓏", "羅襪", "下水"} <= set(whole(s_all)))


def fact_shan_half() -> bool:
    b = ours_at(GPT_VOCAB)
    return "山".encode()[:2] in b.tokens and b.decode([b.tokens.index("山".encode()[:2])]) == "\ufffd"


# --------------------------------------------------------------------------- the two GPTs


@cache
def models() -> dict:
    import bpe_gpt
    import gpt_from_scratch

    char_model, char_tok, _ = gpt_from_scratch.pretrained_gpt(verbose=False)
    bpe_model, bpe_tok, history = bpe_gpt.pretrained_bpe_gpt(verbose=False)
    assert char_tok.chars == char_vocab()
    assert bpe_tok.merges == ours_full().merges[: GPT_VOCAB - 256], "the BPE GPT's tokenizer differs from ours"
    return {"char": char_model, "bpe": bpe_model, "merges": bpe_tok.merges, "history": history}


def encode_char(text: str) -> list[int]:
    index = {c: 256 + i for i, c in enumerate(char_vocab())}
    return [i for c in text for i in ([index[c]] if c in index else list(c.encode()))]


def encode_bpe(text: str) -> list[int]:
    """Our own encoder from the merge list: bytes of each piece, then the earliest-learned pair merged, repeatedly."""
    merges = models()["merges"]
    tokens = [bytes([b]) for b in range(256)]
    rank, made = {}, {}
    for k, (a, b) in enumerate(merges):
        joined = tokens[a] + tokens[b]
        if joined not in made:
            made[joined] = len(tokens)
            tokens.append(joined)
        rank[(a, b)] = (k, made[joined])
    out = []
    for piece in pieces(text):
        ids = list(piece.encode())
        while True:
            candidates = [(rank[p][0], k) for k, p in enumerate(pairwise(ids)) if p in rank]
            if not candidates:
                break
            _, k = min(candidates)
            pair = (ids[k], ids[k + 1])
            new, i, merged = rank[pair][1], 0, []
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            ids = merged
        out += ids
    return out


MARK_CHARS = "，。\n"


@cache
def scores(name: str) -> dict[str, float]:
    """Held-out poems, each as newline + poem + newline; losses of every token after the first newline."""
    model = models()[name]
    encode = encode_char if name == "char" else encode_bpe
    marks = {encode(c)[0] for c in MARK_CHARS}
    nats = {"marks": 0.0, "chars": 0.0}
    n_tokens = 0
    with torch.no_grad():
        for poem in corpus()["held"]:
            ids = encode("\n" + poem + "\n")
            loss = F.cross_entropy(model(torch.tensor([ids[:-1]]))[0], torch.tensor(ids[1:]), reduction="none")
            for t, v in zip(ids[1:], loss.tolist(), strict=True):
                nats["marks" if t in marks else "chars"] += v
            n_tokens += len(ids) - 1
    n_chars = sum(len(p) + 1 for p in corpus()["held"])
    total = nats["marks"] + nats["chars"]
    return {"bpc": total / n_chars / math.log(2), "char_bits": nats["chars"] / n_chars / math.log(2),
            "mark_bits": nats["marks"] / n_chars / math.log(2), "per_token": total / n_tokens, "n_chars": n_chars}


def poem_chars() -> int:
    """Characters of each held-out poem with its newline (all poems have the same length)."""
    lengths = {len(p) + 1 for p in corpus()["held"]}
    assert len(lengths) == 1, lengths
    return lengths.pop()


def fact_same_params() -> bool:
    counts = [sum(p.numel() for p in models()[k].parameters()) for k in ("char", "bpe")]
    return counts[0] == counts[1] == param_counts()["total"]


def more_text_per_step() -> float:
    """Characters a 64-token window covers, BPE over char: the ratio of tokens per character on the training text."""
    return 100 * (char_tpc(train_text()) / tpc(GPT_VOCAB, "train") - 1)


def bpe_poem_lengths() -> list[int]:
    return [len(encode_bpe(p)) for p in corpus()["train"]]


def fact_char_positions() -> bool:
    """A poem with no byte fallback is 24 tokens and its first comma is the 6th token after the newline."""
    rows = [encode_char(p) for p in corpus()["poems"]]
    comma = encode_char("，")[0]
    return all(r.index(comma) == 5 for r in rows if len(r) == 24) and any(len(r) == 24 for r in rows)


BPE_SAMPLE = "可照翻門雲，還似叟�向。飛三金清，無心橫曉。"


def fact_bpe_sample() -> bool:
    """The recorded sample, regenerated here without the KV cache: its third and fourth lines have 4 characters, and
    the � of the second line is one lone byte token 0xBC (a continuation byte) after a whole character."""
    import gpt_from_scratch
    from kv_cache import generate

    s = gpt_from_scratch.TrainSettings()
    out = generate(models()["bpe"], torch.tensor([[10]]), s.sample_tokens, use_cache=False, do_sample=True,
                   temperature=s.sample_temperature, generator=torch.Generator().manual_seed(s.sample_seed))
    ids = out.tokens[0, 1:].tolist()
    text = b"".join(bytes([i]) for i in ids if i < 256 and i != 10)  # the byte tokens other than newlines
    sample = models()["history"].samples[300]
    lines = re.split(r"[，。]", sample.split("\n")[0])
    return (sample.startswith(BPE_SAMPLE) and "\ufffd" in lines[1] and len(lines[2]) == len(lines[3]) == 4
            and text == b"\xbc" and ids.index(0xBC) == len(encode_bpe("可照翻門雲，還似叟")))


def fact_char_sample_quatrain() -> bool:
    import gpt_from_scratch

    _, _, history = gpt_from_scratch.pretrained_gpt(verbose=False)
    return re.match(r"^(?:[^，。\n]{5}，[^，。\n]{5}。){2}$", history.samples[300]) is not None


# --------------------------------------------------------------------------- the table

N = r"(\d[\d,]*(?:\.\d+)?)"

CLAIMS = [
    # stage 1 and bytes
    Claim("char vocabulary", "article", rf"256 个字节词元，加上训练集里出现至少 2 次的 {N} 个字符",
          approx(lambda: len(char_vocab()), exact=True)),
    Claim("bytes of a poem", "article", rf"共 (\d+) 个字符，UTF-8 下是 (\d+) 个字节："
          rf"只用字节词元时，验证集上平均每个字符 {N} 个词元",
          approx(lambda: 25, lambda: len((corpus()["held"][0] + "\n").encode()), lambda: tpc(256))),
    # training
    Claim("four-way tie", "article", rf"在训练集的 {N} 首诗上，第一步就碰上平局.*都出现了 {N} 次，比其他任何一对都多",
          lambda stated: (None if fact_four_way_tie() else "not a four-way tie") or approx(
              lambda: len(corpus()["train"]), lambda: first_pair_counts()[TIED[0]], exact=True)(stated)),
    Claim("first merges", "article", r"按编号选，先合 \(80, 82\)，再合 \(BC, 8C\)；第三、四步把 E3 和 EF 接上去",
          holds(fact_first_merges)),
    Claim("half of 山", "article", r"比如「山」的前两个字节本身就是一个词元", holds(fact_shan_half)),
    # Hugging Face
    Claim("HF byte numbering", "article", r"`!` 到 `~` 等 (\d+) 个字节用它们自己，其余 (\d+) 个换成 U\+0100",
          lambda stated: None if fact_hf_byte_numbering() and [int(s) for s in stated] == [188, 68] else "differs"),
    Claim("HF first merge", "article", r"上面那个四方平局里，它先合的是 \(BC, 8C\)",
          holds(lambda: hf_merges(hf_full())[0] == (b"\xbc", b"\x8c"))),
    Claim("same merges as HF", "article", rf"两边的 {N} 次合并逐条相同",
          approx(hf_rule_same, exact=True)),
    Claim("tie rule and counts", "article",
          rf"两种顺序合并了同样多次；在下图画的 (\d+) 个词表大小上，训练文本编成的词元数两者完全相同，"
          rf"验证集的词元数最多差 (\d+) 个（在 {N} 个字符上）",
          lambda stated: (None if fact_tie_rule_counts() and hf_rule_same() else "counts differ more") or approx(
              lambda: len(all_sizes()), lambda: HELD_GAP, lambda: len(held_text()), exact=True)(stated)),
    Claim("first 80 poems", "article", r"只取语料的前 80 首诗来训练时，两种顺序连合并的次数都不一样",
          holds(fact_first_80_differ)),
    # vocabulary size
    Claim("full vocabulary", "article", rf"在训练集上一直训练到没有哪一对出现两次，共 {N} 个词元",
          approx(lambda: ours_full().vocab_size, exact=True)),
    Claim("full vocabulary (caption)", "bpe-tokens-per-char", rf"一直到没有哪一对出现两次（{N} 个词元）",
          approx(lambda: ours_full().vocab_size, exact=True)),
    Claim("caption counts", "bpe-tokens-per-char", rf"在 {N} 首训练集的诗上训练.*验证集的 {N} 首诗上量.*（{N} 个词元，",
          approx(lambda: len(corpus()["train"]), lambda: len(corpus()["held"]), lambda: 256 + len(char_vocab()),
                 exact=True)),
    Claim("curve", "article", rf"词表从 256 长到 500，验证集上每个字符的词元数从 {N} 降到 {N}；"
          rf"到 1000 是 {N}，到 2000 是 {N}",
          approx(lambda: tpc(256), lambda: tpc(500), lambda: tpc(1000), lambda: tpc(2000))),
    Claim("curve flattens", "article", rf"词表 3009 时是 {N}，9336 时是 {N}",
          approx(lambda: tpc(3009), lambda: tpc(ours_full().vocab_size))),
    Claim("train vs held", "article", rf"词表到 {N} 时，训练集上是 {N}，验证集上是 {N}",
          approx(lambda: ours_full().vocab_size, lambda: tpc(ours_full().vocab_size, "train"),
                 lambda: tpc(ours_full().vocab_size))),
    Claim("char tokenizer", "article", rf"同样是 {N} 个词元，在验证集上每个字符 {N} 个词元，和同样大小的 BPE（{N}）",
          approx(lambda: 256 + len(char_vocab()), lambda: char_tpc(held_text()), lambda: tpc(GPT_VOCAB))),
    Claim("composition", "article",
          rf"训练到 {N} 个词元的 BPE，除了 256 个字节之外，有 {N} 个词元是一个完整的字（含逗号、句号）、"
          rf"{N} 个是两个字、{N} 个是三到五个字，还有 {N} 个不成字",
          lambda stated: (None if composition()["more"] == 0 else "longer tokens")
          or (None if fact_whole_marks() else "comma or full stop is not one token") or approx(
              lambda: GPT_VOCAB, lambda: composition()["1"], lambda: composition()["2"], lambda: composition()["3-5"],
              lambda: composition()["partial"], exact=True)(stated)),
    Claim("single-token chars", "article", rf"字符级词表的 {N} 个字符里，只有 {N} 个在这个 BPE 里是单独一个词元",
          approx(lambda: len(char_vocab()), single_token_chars, exact=True)),
    Claim("the extra one", "article", r"比上面多出的一个是换行，它在 BPE 里本来就是字节词元 10",
          holds(lambda: fact_newline_is_the_extra_one() and single_token_chars() == composition()["1"] + 1)),
    Claim("segmentation", "article", r"只有字节时，这首诗连同换行是 (\d+) 个词元.*一共 (\d+) 个",
          lambda stated: (None if fact_segmentation() else "segmentation differs") or approx(
              lambda: len(segmentation(256)), lambda: len(segmentation(ours_full().vocab_size)), exact=True)(stated)),
    # the GPTs
    Claim("same parameters", "article", rf"所以两个模型的参数都是 {N} 个",
          lambda stated: (None if fact_same_params() else "parameter counts differ") or approx(
              lambda: param_counts()["total"], exact=True)(stated)),
    Claim("text per step", "article",
          rf"在训练集上，BPE 每个字符 {N} 个词元，字符级是 {N} 个.*多约 {N}\s*%",
          approx(lambda: tpc(GPT_VOCAB, "train"), lambda: char_tpc(train_text()), more_text_per_step)),
    Claim("positions", "article", r"一首没有字节回退的诗总是 24 个词元，逗号总在换行后的第 6 个位置",
          holds(fact_char_positions)),
    Claim("BPE poem lengths", "article", rf"在训练集上从 {N} 个到 {N} 个都有",
          approx(lambda: min(bpe_poem_lengths()), lambda: max(bpe_poem_lengths()), exact=True)),
    Claim("held-out characters", "article", rf"（{N} 首诗，每首 (\d+) 个字符）",
          approx(lambda: len(corpus()["held"]), poem_chars, exact=True)),
    Claim("per token", "article", rf"每词元的损失，字符级模型是 {N} 奈特，BPE 模型是 {N} 奈特",
          approx(lambda: scores("char")["per_token"], lambda: scores("bpe")["per_token"])),
    Claim("per char", "article", rf"换成每个字符，字符级模型是 {N} 比特，BPE 模型是 {N} 比特，多了 {N} 比特",
          approx(lambda: scores("char")["bpc"], lambda: scores("bpe")["bpc"],
                 lambda: scores("bpe")["bpc"] - scores("char")["bpc"])),
    Claim("Han part", "article", rf"\*\*汉字\*\*：落在汉字上的，字符级模型是每字符 {N} 比特，BPE 模型 {N} 比特",
          approx(lambda: scores("char")["char_bits"], lambda: scores("bpe")["char_bits"])),
    Claim("split chars", "article", r"这个 BPE 词表有三分之一多的字要拆成两三个词元",
          holds(lambda: 1 / 3 < 1 - single_token_chars() / len(char_vocab()) < 1 / 2)),
    Claim("marks part", "article", rf"字符级模型只花 {N} 比特.*BPE 模型要 {N} 比特，是它的三倍多",
          lambda stated: (None if 3 < scores("bpe")["mark_bits"] / scores("char")["mark_bits"] < 4 else "not 3x")
          or approx(lambda: scores("char")["mark_bits"], lambda: scores("bpe")["mark_bits"])(stated)),
    Claim("samples", "article", r"字符级模型写出了格式完全正确的一首.*BPE 模型写出的却是「"
          + BPE_SAMPLE + "」",
          holds(lambda: fact_bpe_sample() and fact_char_sample_quatrain())),
    Claim("no compression", "article", rf"三千个词元的 BPE 几乎压缩不了（验证集上每个字符 {N} 个词元）",
          approx(lambda: tpc(GPT_VOCAB))),
    Claim("gpt caption", "bpe-gpt-bits",
          rf"词表都是 {N} 个词元，按同样的设置在 {N} 首训练集的诗上训练 (\d+) 步，"
          rf"每步 (\d+) 段、每段 (\d+) 个词元.*验证集的 {N} 首诗",
          approx(lambda: GPT_VOCAB, lambda: len(corpus()["train"]), lambda: 300, lambda: 16, lambda: 64,
                 lambda: len(corpus()["held"]), exact=True)),
    Claim("segmentation caption", "bpe-segmentation",
          r"切的是验证集里的李白《玉階怨》（它不在训练集里，但训练集里有一个只差一个字的异文）",
          holds(lambda: POEM in corpus()["held"] and POEM not in corpus()["train"] and len(variants_of_poem()) == 1)),
    Claim("variant", "article", r"但训练集里收了它的一个异文：「却下水晶簾」写作「却下水精簾」，其余的字都一样",
          holds(lambda: variants_of_poem() == [POEM.replace("水晶簾", "水精簾")])),
    Claim("the variant makes 羅襪", "article",
          r"「羅襪」能成为词元，靠的正是那首异文：这两个字在训练集里只挨着出现 (\d+) 次，其中 (\d+) 次就在异文里；"
          r"少了它，这一对凑不够 (\d+) 次，训练到底也不会合并",
          lambda st: (None if fact_variant_makes_luowa() else "羅襪 is a token without the variant, or not at all")
          or approx(lambda: train_text().count("羅襪"), lambda: variants_of_poem()[0].count("羅襪"),
                    min_frequency, exact=True)(st)),
    # summary
    Claim("summary merges", "article", rf"在唐诗训练集上的 {N} 次合并逐条相同", approx(hf_rule_same, exact=True)),
    Claim("summary curve", "article", rf"词表从 256 长到 3009，验证集每个字符的词元数从 {N} 降到 {N}",
          approx(lambda: tpc(256), lambda: tpc(GPT_VOCAB))),
    Claim("summary GPT", "article", rf"BPE 的小 GPT 在验证集上每个字符 {N} 比特，字符级模型 {N} 比特",
          approx(lambda: scores("bpe")["bpc"], lambda: scores("char")["bpc"])),
    # numbers inside the exercises (their answers are checked by tests/exercises/test_bpe_tokenizer_answers.py)
    Claim("exercise: bytes-only poem", "article", rf"每个字符平均约 {N} 个词元，正是上图最左边那一点",
          approx(lambda: tpc(256))),
    Claim("exercise: 1000", "article", r"词表 1000 时，《玉階怨》连同换行是 (\d+) 个词元",
          approx(lambda: len(segmentation(1000)), exact=True)),
    Claim("exercise: 744", "article", r"直接把 BPE 训练到词表 1000，得到 (\d+) 次合并",
          approx(lambda: len(bpe_module.train_bpe(train_text(), 1000).merges), exact=True)),
    Claim("exercise: concept losses", "article", rf"字符级模型每词元 {N} 奈特，BPE 模型每词元 {N} 奈特",
          approx(lambda: scores("char")["per_token"], lambda: scores("bpe")["per_token"])),
    Claim("exercise: gap", "article", rf"每词元的损失差了 {N} 奈特",
          approx(lambda: scores("bpe")["per_token"] - scores("char")["per_token"])),
    Claim("exercise: characters", "article", rf"同样 {N} 首诗的同样 {N} 个字符",
          approx(lambda: len(corpus()["held"]), lambda: scores("char")["n_chars"], exact=True)),
    Claim("exercise: total loss", "article", r"这里 BPE 模型的总损失反而更大",
          holds(lambda: scores("bpe")["bpc"] > scores("char")["bpc"])),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


def test_poem_bits_matches_the_recomputation() -> None:
    """code/bpe_gpt.py's poem_bits (what the figure draws) gives the numbers recomputed here."""
    import bpe_gpt
    import gpt_from_scratch

    char_model, char_tok, _ = gpt_from_scratch.pretrained_gpt(verbose=False)
    bpe_model, bpe_tok, _ = bpe_gpt.pretrained_bpe_gpt(verbose=False)
    for name, model, tok in (("char", char_model, char_tok), ("bpe", bpe_model, bpe_tok)):
        got = bpe_gpt.poem_bits(model, tok, corpus()["held"])
        want = scores(name)
        assert got["bits_per_char"] == pytest.approx(want["bpc"], abs=1e-4)
        assert got["char_bits"] == pytest.approx(want["char_bits"], abs=1e-4)
        assert got["mark_bits"] == pytest.approx(want["mark_bits"], abs=1e-4)
        assert got["nats_per_token"] == pytest.approx(want["per_token"], abs=1e-4)


# --------------------------------------------------------------------------- no new unchecked number

NOT_COMPUTED: dict[str, str] = {
    "151,646": "the Qwen2 tokenizer's size as the Qwen2 Technical Report states it (sourced, named in the sentence)",
    "151,936": "vocab_size in the Qwen2 models' config.json (sourced)",
    "152,064": "vocab_size in the Qwen2-72B config.json (sourced)",
    "128,256": "Llama 3's vocabulary as Meta's model card and config state it (sourced)",
}


def test_every_number_in_the_article_is_a_checked_claim() -> None:
    unchecked = claims.unchecked_numbers(SOURCES, CLAIMS, NOT_COMPUTED)
    assert not unchecked, "numbers with no recomputing claim in CLAIMS:\n" + "\n".join(unchecked)
