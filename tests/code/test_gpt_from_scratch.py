"""code/gpt_from_scratch.py and the GPT built from the stage's modules: causality, memorising one batch,
the loss and the learning-rate schedule against PyTorch's own, batches, the corpus and its split, determinism,
saving and loading the trained model, and a ValueError naming the argument for wrong inputs."""

from __future__ import annotations

import itertools
import math
import re

import pytest
import torch
import torch.nn.functional as F
from attention import causal_mask
from gpt_from_scratch import (
    CORPUS_SHA256,
    PRETRAINED_GPT_ENV,
    GPTHistory,
    TrainSettings,
    fixed_windows,
    get_batch,
    lm_loss,
    load_poem_gpt,
    load_poems,
    lr_at,
    poem_config,
    poem_starts,
    pretrained_gpt,
    save_poem_gpt,
    split_poems,
    train_gpt,
)
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer
from transformer_block import TransformerBlock


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def small_gpt(vocab_size: int = 40, max_len: int = 24, seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(TinyConfig(vocab_size=vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=max_len,
                                      mlp=True, positions="learned"))


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("t", [0, 5, 22])
def test_model_is_causal(t: int) -> None:
    """Changing every token after position t leaves the logits at positions <= t unchanged (and changes later ones)."""
    model = small_gpt().eval()
    gen = torch.Generator().manual_seed(t)
    tokens = torch.randint(0, 40, (3, 24), generator=gen)
    changed = tokens.clone()
    changed[:, t + 1 :] = torch.randint(0, 40, (3, 24 - t - 1), generator=gen)
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6, rtol=0)
    if t + 1 < 24:
        assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :], atol=1e-3)


def test_reference_shape_is_causal_too() -> None:
    """The article's own configuration (4 layers, d_model 64, the corpus vocabulary size), randomly initialised."""
    torch.manual_seed(1)
    model = TinyTransformer(poem_config(3009)).eval()
    tokens = torch.randint(0, 3009, (2, 64))
    changed = tokens.clone()
    changed[:, 30:] = (changed[:, 30:] + 1) % 3009
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, :30], model(changed)[:, :30], atol=1e-6, rtol=0)


def test_each_layer_is_the_pre_ln_transformer_block() -> None:
    """The model, re-run by hand with code/transformer_block.py's TransformerBlock (weights copied), gives the
    same logits: embedding + positions -> Pre-LN blocks -> final LayerNorm -> output layer."""
    model = small_gpt(seed=3).eval()
    with torch.no_grad():
        for p in model.parameters():  # LayerNorm gains/biases away from 1/0, so a missing norm would show
            p.add_(0.1 * torch.randn_like(p))
    blocks = []
    for layer in model.blocks:
        block = TransformerBlock(32, 4, layout="pre", norm="layer", ffn="gelu")
        with torch.no_grad():
            block.attn.load_state_dict(layer.attn.state_dict())
            block.norm1.gain.copy_(layer.ln.weight)
            block.norm1.bias.copy_(layer.ln.bias)
            block.norm2.gain.copy_(layer.mlp[0].weight)
            block.norm2.bias.copy_(layer.mlp[0].bias)
            block.ffn.load_state_dict(layer.mlp[1].state_dict())
        blocks.append(block)
    tokens = torch.randint(0, 40, (2, 17))
    with torch.no_grad():
        x = model.embed(tokens) + model.pos.embedding(torch.arange(17))
        for block in blocks:
            x = block(x, mask=causal_mask(17))
        by_hand = F.linear(F.layer_norm(x, (32,), model.ln_f.weight, model.ln_f.bias), model.unembed.weight,
                           model.unembed.bias)
        assert torch.allclose(model(tokens), by_hand, atol=1e-5)


def test_overfits_one_small_batch() -> None:
    """A model that can learn at all memorises one fixed batch: 4 random sequences of 16 tokens over 40 symbols.

    Every prefix in the batch is distinct, so a perfect memoriser reaches loss 0. Threshold 0.05 nat a token
    means the correct next token gets probability above exp(-0.05) = 0.95 on average; an untrained model sits
    near ln(40) = 3.69, and a model that only learnt the token frequencies of the batch at about 3.3.
    """
    model = small_gpt(seed=4)
    gen = torch.Generator().manual_seed(4)
    batch = torch.randint(0, 40, (4, 17), generator=gen)
    x, y = batch[:, :-1], batch[:, 1:]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    start = lm_loss(model(x), y).item()
    for _ in range(300):
        loss = lm_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    counts = torch.bincount(y.reshape(-1), minlength=40).float()
    unigram = -(counts[y.reshape(-1)] / counts.sum()).log().mean().item()  # best frequency-only loss
    assert abs(start - math.log(40)) < 0.5
    assert unigram > 3.0
    assert lm_loss(model(x), y).item() < 0.05


# --------------------------------------------------------------------------- loss and schedule against PyTorch


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e4])
def test_loss_matches_cross_entropy(scale: float) -> None:
    gen = torch.Generator().manual_seed(int(scale))
    logits = scale * torch.randn(3, 7, 50, generator=gen, dtype=torch.float64)
    targets = torch.randint(0, 50, (3, 7), generator=gen)
    ours = lm_loss(logits, targets)
    ref = F.cross_entropy(logits.reshape(-1, 50), targets.reshape(-1))
    assert torch.isfinite(ours)
    assert torch.allclose(ours, ref, rtol=1e-12, atol=1e-12)


def test_loss_gradient_matches_cross_entropy() -> None:
    logits = torch.randn(2, 5, 11, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 11, (2, 5))
    (g_ours,) = torch.autograd.grad(lm_loss(logits, targets), logits)
    (g_ref,) = torch.autograd.grad(F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1)), logits)
    assert torch.allclose(g_ours, g_ref, atol=1e-14)


@pytest.mark.parametrize(("total", "warmup", "peak", "low"),
                         [(300, 20, 5e-3, 5e-4), (50, 1, 1.0, 0.0), (7, 6, 0.1, 0.01)])
def test_schedule_matches_torch_schedulers(total: int, warmup: int, peak: float, low: float) -> None:
    """Linear warm-up then cosine decay, against LinearLR followed by CosineAnnealingLR in a SequentialLR."""
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=peak)
    schedulers = [torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, end_factor=1.0,
                                                    total_iters=max(warmup - 1, 1)),
                  torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=low)]
    sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers, milestones=[warmup])
    for step in range(total):
        expected = opt.param_groups[0]["lr"]
        assert lr_at(step, total, peak, warmup, low) == pytest.approx(expected, rel=1e-9, abs=1e-15), step
        opt.step()
        sched.step()
    assert lr_at(warmup - 1, total, peak, warmup, low) == pytest.approx(peak)


def test_schedule_shape() -> None:
    lrs = [lr_at(s, 300, 5e-3, 20, 5e-4) for s in range(300)]
    assert all(a < b for a, b in itertools.pairwise(lrs[:20]))  # rises during warm-up
    assert all(a >= b - 1e-15 for a, b in itertools.pairwise(lrs[19:]))  # never rises afterwards (up to rounding)
    assert lrs[19] == pytest.approx(5e-3) and 5e-4 < lrs[-1] < 5.1e-4


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def corpus():
    poems = load_poems()
    train_text, held_out_text = split_poems(poems)
    return poems, train_text, held_out_text, CharTokenizer.train(train_text, min_count=2)


def test_corpus_is_what_the_readme_says(corpus) -> None:
    poems = corpus[0]
    line = re.compile(r"^[\u4e00-\u9fff]{5}，[\u4e00-\u9fff]{5}。[\u4e00-\u9fff]{5}，[\u4e00-\u9fff]{5}。$")
    assert len(poems) == 3707 and len(set(poems)) == len(poems)
    assert all(line.match(p) for p in poems)
    assert len(CORPUS_SHA256) == 64


def test_split_is_by_whole_poems(corpus) -> None:
    poems, train_text, held_out_text, _ = corpus
    train, held = train_text.splitlines(), held_out_text.splitlines()
    assert held == poems[9::10] and len(train) + len(held) == len(poems)
    assert not set(train) & set(held)


def test_batches_are_shifted_windows_starting_at_poems(corpus) -> None:
    _, train_text, _, tok = corpus
    data = torch.tensor(tok.encode(train_text))
    newline = tok.encode("\n")[0]
    starts = poem_starts(data, newline, 64)
    assert all(data[s] == newline for s in starts.tolist())  # each window begins with the newline before a poem
    room = [i for i, t in enumerate(data.tolist()) if t == newline and i + 65 <= data.numel()]
    assert starts.tolist() == room  # every newline that still has 64 tokens after it
    assert int(starts.max()) + 65 <= data.numel()
    x, y = get_batch(data, starts, 8, 64, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 64)
    assert torch.equal(x[:, 1:], y[:, :-1])
    for row_x, row_y in zip(x, y, strict=True):  # each row is a slice of the data at a poem start
        s = next(s for s in starts.tolist() if torch.equal(data[s : s + 64], row_x))
        assert torch.equal(data[s + 1 : s + 65], row_y)
    fx, fy = fixed_windows(data, starts, 5, 64)
    assert torch.equal(fx, fixed_windows(data, starts, 5, 64)[0]) and torch.equal(fx[:, 1:], fy[:, :-1])


# --------------------------------------------------------------------------- training


TINY_TEXT = "".join(p + "\n" for p in ["山中相送罷，日暮掩柴扉。春草明年綠，王孫歸不歸。",
                                         "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"] * 6)


def tiny_run(seed: int = 0) -> tuple[TinyTransformer, CharTokenizer, GPTHistory]:
    tok = CharTokenizer.train(TINY_TEXT, min_count=1)
    settings = TrainSettings(steps=12, batch_size=4, context=24, warmup=3, eval_every=4, eval_windows=3,
                             sample_at=(0, 12), sample_tokens=10, seed=seed)
    torch.manual_seed(seed)
    model = TinyTransformer(TinyConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=24,
                                       mlp=True, positions="learned"))
    return model, tok, train_gpt(model, tok, TINY_TEXT, TINY_TEXT, settings)


def test_training_is_deterministic_and_recorded() -> None:
    _, _, a = tiny_run()
    _, _, b = tiny_run()
    assert a.loss == b.loss and a.samples == b.samples and a.eval_held_out == b.eval_held_out
    assert len(a.loss) == len(a.lr) == len(a.grad_norm) == 12
    assert a.eval_steps == [0, 4, 8, 12] and sorted(a.samples) == [0, 12]
    assert a.lr == [lr_at(s, 12, TrainSettings.peak_lr, 3, TrainSettings.min_lr) for s in range(12)]
    assert a.eval_train[-1] < a.eval_train[0]
    assert tiny_run(seed=1)[2].loss != a.loss


def test_save_and_load(tmp_path, monkeypatch) -> None:
    model, tok, history = tiny_run()
    path = tmp_path / "gpt.pt"
    save_poem_gpt(path, model, tok, history)
    loaded, tok2, h2 = load_poem_gpt(path)
    tokens = torch.tensor([tok.encode("白日依山盡")])
    with torch.no_grad():
        assert torch.equal(loaded(tokens), model(tokens))
    assert tok2.chars == tok.chars and h2.samples == history.samples and h2.loss == history.loss
    assert h2.seconds is None
    monkeypatch.setenv(PRETRAINED_GPT_ENV, str(path))
    assert pretrained_gpt(verbose=False)[1].chars == tok.chars  # read from the file, not trained again


# --------------------------------------------------------------------------- errors


def _data():
    return torch.arange(100)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: get_batch(_data()[None], torch.tensor([0]), 2, 8), "data"),
        (lambda: get_batch(_data().float(), torch.tensor([0]), 2, 8), "data"),
        (lambda: get_batch(_data(), torch.tensor([95]), 2, 8), "starts"),
        (lambda: get_batch(_data(), torch.tensor([[0]]), 2, 8), "starts"),
        (lambda: get_batch(_data(), torch.tensor([0]), 0, 8), "batch_size"),
        (lambda: get_batch(_data(), torch.tensor([0]), 2, 200), "data"),
        (lambda: lm_loss(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)), "targets"),
        (lambda: lm_loss(torch.randn(6, 5), torch.zeros(6, dtype=torch.long)), "logits"),
        (lambda: lm_loss(torch.randn(2, 3, 5), torch.full((2, 3), 5)), "targets"),
        (lambda: lm_loss(torch.randn(2, 3, 5), torch.zeros(2, 3)), "targets"),
        (lambda: lr_at(0, 10, 1e-3, 10, 0.0), "warmup"),
        (lambda: lr_at(10, 10, 1e-3, 2, 0.0), "step"),
        (lambda: lr_at(0, 10, 1e-3, 2, 1e-2), "min_lr"),
        (lambda: lr_at(0, 10, -1.0, 2, 0.0), "peak_lr"),
        (lambda: split_poems(["a", "b"], every=1), "every"),
        (lambda: small_gpt()(torch.zeros(1, 25, dtype=torch.long)), "tokens"),
        (lambda: poem_starts(_data(), -1, 8), "newline_id"),
    ],
)
def test_errors_name_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(("poems", "fragment"), [
    ("白日依山盡，黃河入海流。欲窮千里目，更上一層樓。", r"poems 应是诗的列表.*收到 str"),  # 以前悄悄按字切开
    (("白日依山盡",), r"poems 应是诗的列表.*收到 tuple"),
    ([], "一首诗都没有"),
    (["白日依山盡", 5], r"poems\[1\] 应是一首诗的字符串，收到 int"),
    (["白日依山盡", ""], r"poems\[1\] 是空字符串"),
    (["白日依山盡\n黃河入海流"], r"poems\[0\] 含有换行"),
])
def test_split_poems_checks_poems(poems, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        split_poems(poems)


def test_split_poems_small_list() -> None:
    assert split_poems(["甲", "乙", "丙"], every=2) == ("甲\n丙\n", "乙\n")


def test_training_arguments_are_checked() -> None:
    tok = CharTokenizer.train(TINY_TEXT, min_count=1)
    model = small_gpt(vocab_size=tok.vocab_size)
    with pytest.raises(ValueError, match="vocab_size"):
        train_gpt(small_gpt(vocab_size=tok.vocab_size + 1), tok, TINY_TEXT, TINY_TEXT)
    with pytest.raises(ValueError, match="context"):
        train_gpt(model, tok, TINY_TEXT, TINY_TEXT, TrainSettings(context=64))
    with pytest.raises(ValueError, match="train_text"):
        train_gpt(model, tok, b"abc", TINY_TEXT, TrainSettings(context=24))
