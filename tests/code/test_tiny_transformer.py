"""code/tiny_transformer.py 的测试：形状、因果性、每个头的权重、任务生成、打分和一次简短的训练。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_transformer import (
    BOS,
    SCORE_NAMES,
    TinyConfig,
    TinyTransformer,
    all_head_scores,
    head_scores,
    make_repeat_batch,
    name_head,
    repeat_metrics,
    train,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _one_thread():
    """The model is tiny: one thread is fast enough and does not stall when the machine is busy."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
@pytest.mark.parametrize("mlp", [False, True])
def test_shapes_and_weights_per_head(positions: str, mlp: bool) -> None:
    cfg = TinyConfig(vocab_size=20, d_model=32, n_heads=4, n_layers=3, max_len=16, mlp=mlp, positions=positions)
    model = TinyTransformer(cfg)
    tokens = torch.randint(0, cfg.vocab_size, (5, 11))
    logits = model(tokens)
    assert logits.shape == (5, 11, cfg.vocab_size)
    assert len(model.attention_weights) == cfg.n_layers
    for w in model.attention_weights:
        assert w.shape == (5, cfg.n_heads, 11, 11)
        assert torch.allclose(w.sum(dim=-1), torch.ones(5, cfg.n_heads, 11), atol=1e-5)
        assert (w.triu(diagonal=1) == 0).all(), "weights on future positions must be exactly 0"
        assert not w.requires_grad, "exposed weights are detached copies"


def test_weights_match_the_attention_module() -> None:
    """The exposed weights are the ones MultiHeadAttention computed, head by head."""
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(vocab_size=16, d_model=16, n_heads=2, n_layers=1, max_len=8))
    tokens = torch.randint(0, 16, (2, 6))
    model(tokens)
    x = model.embed(tokens) + model.pe[:6]
    from attention import causal_mask

    _, ref = model.blocks[0].attn(model.blocks[0].ln(x), mask=causal_mask(6), need_weights=True)
    assert torch.allclose(model.attention_weights[0], ref)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_causal_future_tokens_do_not_change_the_past(positions: str) -> None:
    torch.manual_seed(1)
    cfg = TinyConfig(vocab_size=30, d_model=32, n_heads=4, n_layers=2, max_len=20, mlp=True, positions=positions)
    model = TinyTransformer(cfg).eval()
    tokens = torch.randint(0, cfg.vocab_size, (3, 14))
    t = 6
    changed = tokens.clone()
    changed[:, t + 1 :] = torch.randint(0, cfg.vocab_size, (3, 14 - t - 1))
    assert not torch.equal(changed, tokens)
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6)
    assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :], atol=1e-3)


def test_too_long_and_bad_positions() -> None:
    model = TinyTransformer(TinyConfig(max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="positions"):
        TinyTransformer(TinyConfig(positions="rope"))


def test_make_repeat_batch() -> None:
    gen = torch.Generator().manual_seed(0)
    batch = make_repeat_batch(64, 10, 48, gen)
    assert batch.shape == (64, 21) and batch.dtype == torch.long
    assert (batch[:, 0] == BOS).all()
    first, second = batch[:, 1:11], batch[:, 11:]
    assert torch.equal(first, second)
    assert ((first >= 1) & (first < 48)).all()
    assert all(len(set(row.tolist())) == 10 for row in first), "the first half has no repeated token"
    again = make_repeat_batch(64, 10, 48, torch.Generator().manual_seed(0))
    assert torch.equal(batch, again), "seeded"
    with pytest.raises(ValueError):
        make_repeat_batch(1, 48, 48)


def _attention_to(target: torch.Tensor, T: int, B: int = 1) -> torch.Tensor:
    """One head whose row i puts all its weight on position target[i] (B, 1, T, T)."""
    w = torch.zeros(B, 1, T, T)
    w[:, 0, torch.arange(T), target] = 1.0
    return w


def test_head_scores_on_handmade_heads() -> None:
    tokens = make_repeat_batch(1, 5, 20, torch.Generator().manual_seed(3))  # T = 11
    T = tokens.size(1)
    prev = _attention_to(torch.clamp(torch.arange(T) - 1, min=0), T)
    s = head_scores(prev, tokens)
    assert s["previous"].item() == pytest.approx(1.0)
    assert s["induction"].item() == pytest.approx(0.0)
    # Induction: position i (second half) attends to i - n + 1; elsewhere to itself.
    n = 5
    target = torch.arange(T)
    target[n + 1 :] = torch.arange(n + 1, T) - n + 1
    s = head_scores(_attention_to(target, T), tokens)
    assert s["induction"].item() == pytest.approx(1.0)
    assert s["duplicate"].item() == pytest.approx(0.0)
    assert name_head({k: float(v) for k, v in s.items()}) == "归纳头"
    s = head_scores(_attention_to(torch.zeros(T, dtype=torch.long), T), tokens)
    assert s["first"].item() == pytest.approx(1.0)
    assert set(s) == set(SCORE_NAMES)


def test_name_head_threshold() -> None:
    rest = {"self": 0.2, "first": 0.1, "induction": 0.0, "duplicate": 0.0}
    assert name_head({"previous": 0.31, **rest}) == "前一个词头"
    assert name_head({"previous": 0.29, **rest}) == "没有明显分工"


def test_short_seeded_training_lowers_the_loss() -> None:
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(d_model=32, n_heads=2))
    history = train(model, steps=60, batch_size=32, half_len=(4, 8), seed=0)
    assert len(history.loss) == len(history.repeat_acc) == 60
    first, last = sum(history.loss[:10]) / 10, sum(history.loss[-10:]) / 10
    assert last < first - 0.2, f"loss {first:.3f} -> {last:.3f}"
    torch.manual_seed(0)
    again = train(TinyTransformer(TinyConfig(d_model=32, n_heads=2)), steps=60, batch_size=32, half_len=(4, 8), seed=0)
    assert again.loss == history.loss, "seeded training is reproducible"
    assert not model.training
    with pytest.raises(ValueError):
        train(model, steps=1, loss_on="first-half")


def test_trained_model_forms_induction() -> None:
    """The default configuration learns the task and the expected heads (as in labs/attention_heads_lab.py)."""
    torch.manual_seed(0)
    model = TinyTransformer()
    train(model, steps=600, seed=0)
    test = make_repeat_batch(256, 8, model.cfg.vocab_size, torch.Generator().manual_seed(7))
    with torch.no_grad():
        _, acc = repeat_metrics(model(test), test, 8)
    assert acc > 0.9
    scores = all_head_scores(model, test)
    assert max(h["previous"] for h in scores[0]) > 0.3
    assert max(h["induction"] for h in scores[1]) > 0.5


def test_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "code" / "tiny_transformer.py")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "logits 形状: (2, 13, 48)" in proc.stdout
    assert "第 1 层第 3 个头" in proc.stdout
