"""code/bpe_gpt.py: stage 1's training loop on BPE tokens, the per-character evaluation, saving and loading.

The trained model itself (300 steps) is the build artifact ``bpe-gpt``; here it is read from the run's cache. Training
is exercised on a tiny budget, and ``poem_bits`` is checked against a loss computed by hand.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from bpe import BPE, train_bpe
from bpe_gpt import bpe_vocab_size, load_bpe_gpt, poem_bits, pretrained_bpe_gpt, save_bpe_gpt, train_bpe_gpt
from gpt_from_scratch import (
    GPTHistory,
    TrainSettings,
    load_poems,
    poem_config,
    save_poem_gpt,
    split_poems,
    train_gpt,
    train_poem_gpt,
)
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer

REPO = Path(__file__).resolve().parents[2]
TEXT = "白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n" * 4


def tiny(vocab_size: int, max_len: int = 64) -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer(TinyConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1, max_len=max_len,
                                      mlp=True, positions="learned"))


SHORT = TrainSettings(steps=25, batch_size=2, context=16, warmup=5, eval_every=10, eval_windows=2, sample_at=(25,),
                      sample_tokens=8)


def test_train_gpt_accepts_a_bpe() -> None:
    """Stage 1's train_gpt runs unchanged on a BPE tokenizer: the newline is token 10, the loss goes down."""
    torch.set_num_threads(1)
    bpe = train_bpe(TEXT, 300)
    assert bpe.encode("\n") == [10]
    model = tiny(bpe.vocab_size)
    history = train_gpt(model, bpe, TEXT, TEXT, SHORT)
    assert len(history.loss) == 25 and history.eval_train[-1] < history.eval_train[0]
    assert isinstance(history.samples[25], str)


def test_train_gpt_still_rejects_what_is_not_a_tokenizer() -> None:
    with pytest.raises(ValueError, match="tok 应为分词器"):
        train_gpt(tiny(300), "白日", TEXT, TEXT, SHORT)


def test_bpe_vocab_size_is_the_char_vocabulary() -> None:
    train_text, _ = split_poems(load_poems())
    assert bpe_vocab_size(train_text) == CharTokenizer.train(train_text, min_count=2).vocab_size == 3009


def test_poem_bits_by_hand() -> None:
    """poem_bits against the loss summed here, token by token, for a char tokenizer and a BPE."""
    poems = ["白日依山盡，黃河入海流。", "欲窮千里目，更上一層樓。"]
    for tok in (CharTokenizer.train(TEXT, min_count=1), train_bpe(TEXT, 280)):
        model = tiny(tok.vocab_size).eval()
        total, marks, n_tokens = 0.0, 0.0, 0
        mark_ids = {tok.encode(c)[0] for c in "，。\n"}
        with torch.no_grad():
            for p in poems:
                ids = tok.encode("\n" + p + "\n")
                logp = model(torch.tensor([ids[:-1]]))[0].log_softmax(-1)
                for t, target in enumerate(ids[1:]):
                    total -= logp[t, target].item()
                    marks -= logp[t, target].item() if target in mark_ids else 0.0
                n_tokens += len(ids) - 1
        n_chars = sum(len(p) + 1 for p in poems)
        r = poem_bits(model, tok, poems)
        assert r["n_chars"] == n_chars == 26 and r["n_tokens"] == n_tokens
        assert r["bits_per_char"] == pytest.approx(total / n_chars / math.log(2), rel=1e-5)
        assert r["mark_bits"] == pytest.approx(marks / n_chars / math.log(2), rel=1e-5, abs=1e-7)
        assert r["char_bits"] + r["mark_bits"] == pytest.approx(r["bits_per_char"], rel=1e-6)
        assert r["nats_per_token"] == pytest.approx(total / n_tokens, rel=1e-5)


def test_uniform_model_costs_log2_v_bits_per_token() -> None:
    """A model whose scores are all equal pays log2 V bits per token: per character that is log2 V × tokens/char."""
    bpe = train_bpe(TEXT, 280)
    model = tiny(bpe.vocab_size).eval()
    with torch.no_grad():
        model.unembed.weight.zero_()
        model.unembed.bias.zero_()
    poems = ["白日依山盡，黃河入海流。"]
    r = poem_bits(model, bpe, poems)
    n_tokens = len(bpe.encode("\n" + poems[0] + "\n")) - 1
    assert r["bits_per_char"] == pytest.approx(math.log2(bpe.vocab_size) * n_tokens / 13, rel=1e-5)


def test_save_and_load_round_trip(tmp_path) -> None:
    torch.set_num_threads(1)
    bpe = train_bpe(TEXT, 300)
    model = tiny(bpe.vocab_size)
    history = train_gpt(model, bpe, TEXT, TEXT, SHORT)
    path = tmp_path / "bpe-gpt.pt"
    save_bpe_gpt(path, model, bpe, history)
    model2, bpe2, history2 = load_bpe_gpt(path)
    assert bpe2.merges == bpe.merges and history2.samples == history.samples and history2.loss == history.loss
    x = torch.tensor([bpe.encode("白日依山盡")])
    with torch.no_grad():
        assert torch.equal(model.eval()(x), model2(x))


def test_the_artifact_is_train_bpe_gpt(trained_artifacts) -> None:
    """The cached model: same shape and parameter count as the char model, tokenizer = BPE trained to 3009 here."""
    model, bpe, history = pretrained_bpe_gpt(verbose=False)
    train_text, _ = split_poems(load_poems())
    assert bpe.merges == train_bpe(train_text, 3009).merges
    assert model.cfg == poem_config(3009)
    assert len(history.loss) == TrainSettings.steps and set(history.samples) == set(TrainSettings.sample_at)
    char_params = sum(p.numel() for p in TinyTransformer(poem_config(3009)).parameters())
    assert sum(p.numel() for p in model.parameters()) == char_params


def test_training_is_the_stage_1_recipe_with_a_bpe(monkeypatch) -> None:
    """train_bpe_gpt calls train_gpt exactly as train_poem_gpt does, with only the tokenizer changed."""
    import bpe_gpt
    import gpt_from_scratch

    calls = []

    def fake(model, tok, train_text, held_out_text, s=None, log=False):
        calls.append((type(tok).__name__, model.cfg, train_text, held_out_text, s))
        return gpt_from_scratch.GPTHistory()

    monkeypatch.setattr(bpe_gpt, "train_gpt", fake)
    monkeypatch.setattr(gpt_from_scratch, "train_gpt", fake)
    train_bpe_gpt()
    train_poem_gpt()
    (bpe_name, bpe_cfg, *bpe_rest), (char_name, char_cfg, *char_rest) = calls
    assert (bpe_name, char_name) == ("BPE", "CharTokenizer")
    assert bpe_cfg == char_cfg and bpe_rest == char_rest


@pytest.mark.parametrize(("call", "name"), [
    (lambda: poem_bits("model", BPE([]), ["白日"]), "model"),
    (lambda: poem_bits(tiny(256), "tok", ["白日"]), "tok"),
    (lambda: poem_bits(tiny(300), BPE([]), ["白日"]), "vocab_size"),
    (lambda: poem_bits(tiny(256), BPE([]), "白日"), "poems"),
    (lambda: poem_bits(tiny(256), BPE([]), []), "poems"),
    (lambda: poem_bits(tiny(256), BPE([]), ["白\n日"]), "poems[0]"),
    (lambda: poem_bits(tiny(256), BPE([]), ["白日依山盡" * 5]), "max_len"),
    (lambda: save_bpe_gpt("/tmp/x.pt", tiny(256), "bpe", None), "bpe"),
    (lambda: load_bpe_gpt("/nonexistent/bpe-gpt.pt"), "path"),
    # found by probing (stage-2 review): these raised TypeError, AttributeError or KeyError
    (lambda: load_bpe_gpt(5), "path 应为文件路径"),
    (lambda: load_bpe_gpt(None), "path 应为文件路径"),
    (lambda: save_bpe_gpt(5, tiny(256), BPE([]), GPTHistory()), "path 应为文件路径"),
    (lambda: save_bpe_gpt("/nonexistent/dir/x.pt", tiny(256), BPE([]), GPTHistory()), "文件夹不存在"),
])
def test_bad_input_raises_value_error_in_chinese(call, name: str) -> None:
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert name in message and re.search(r"[\u4e00-\u9fff]", message), message


def test_load_rejects_a_file_that_is_not_a_saved_bpe_gpt(tmp_path) -> None:
    """A file torch cannot read, a torch file of something else, and the character model's file (no merges)."""
    text_file = tmp_path / "notes.txt"
    text_file.write_text("白日依山盡", encoding="utf-8")
    other = tmp_path / "other.pt"
    torch.save({"x": 1}, other)
    char = tmp_path / "tang-gpt.pt"
    tok = CharTokenizer.train(TEXT, min_count=1)
    save_poem_gpt(char, tiny(tok.vocab_size), tok, GPTHistory())
    for path in (text_file, other, char):
        with pytest.raises(ValueError, match="不是 save_bpe_gpt 存下的文件"):
            load_bpe_gpt(path)


@pytest.mark.parametrize("size", [256, 257, 258, 259])
def test_poem_bits_refuses_a_tokenizer_that_splits_the_marks(size: int) -> None:
    """With fewer than the four merges that make ，and 。 (the first four on the poems), a mark is several byte tokens
    that many Han characters share: poem_bits used to count those characters' tokens as marks. On 20 held-out poems
    with bytes only, 301 target tokens were counted as marks where the marks and newlines are 260 tokens."""
    train_text, _ = split_poems(load_poems())
    full = train_bpe(train_text, 260)
    bpe = BPE(full.merges[: size - 256])
    with pytest.raises(ValueError, match="编成单独一个词元") as info:
        poem_bits(tiny(bpe.vocab_size, max_len=80), bpe, load_poems()[9::10][:20])  # 74 byte tokens a poem
    assert re.search(r"'[，。]'", str(info.value))
    assert len(BPE(full.merges).encode("，")) == len(BPE(full.merges).encode("。")) == 1  # 260 is enough
    assert poem_bits(tiny(260, max_len=80), BPE(full.merges), load_poems()[9::10][:20])["n_chars"] == 20 * 25
    char_tok = CharTokenizer.train("白日白日")  # no marks in its vocabulary: they fall back to bytes
    with pytest.raises(ValueError, match="编成单独一个词元"):
        poem_bits(tiny(char_tok.vocab_size), char_tok, ["白日，白日。"])


def test_cross_entropy_is_what_poem_bits_sums() -> None:
    bpe = train_bpe(TEXT, 280)
    model = tiny(bpe.vocab_size).eval()
    ids = bpe.encode("\n白日依山盡，黃河入海流。\n")
    with torch.no_grad():
        nats = F.cross_entropy(model(torch.tensor([ids[:-1]]))[0], torch.tensor(ids[1:]), reduction="sum").item()
    r = poem_bits(model, bpe, ["白日依山盡，黃河入海流。"])
    assert r["bits_per_char"] == pytest.approx(nats / 13 / math.log(2), rel=1e-5)


def test_runs_on_its_own(trained_artifacts) -> None:
    proc = subprocess.run([sys.executable, "code/bpe_gpt.py"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "BPE 的词表大小取字符级词表的大小：3009" in proc.stdout
    assert "每个字符 8.48" in proc.stdout
