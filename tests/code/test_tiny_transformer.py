"""code/tiny_transformer.py 的测试：形状、因果性、每个头的权重、任务生成、打分、一次简短的训练，
参考模型（构建产物）的保存、读取和它学到的头，以及每个公开函数对错误输入的报错。"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import tiny_transformer
import torch
from tiny_transformer import (
    BOS,
    PRETRAINED_ENV,
    REFERENCE_STEPS,
    SCORE_NAMES,
    TinyConfig,
    TinyTransformer,
    TrainHistory,
    all_head_scores,
    format_score,
    head_scores,
    load_trained,
    make_repeat_batch,
    name_head,
    pretrained,
    repeat_metrics,
    repeat_positions,
    save_trained,
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
    assert history.seconds is not None and history.seconds > 0


@pytest.fixture(scope="module")
def reference() -> tuple[TinyTransformer, TrainHistory]:
    """The reference model as the build caches it (trained once if the cache does not have it yet)."""
    from llmsite import artifacts

    artifact = artifacts.discover()["tiny-transformer"]
    path = artifacts.ensure([artifact])["tiny-transformer"]
    return load_trained(path)


def test_the_artifact_declaration_matches_the_loader() -> None:
    from llmsite import artifacts

    artifact = artifacts.discover()["tiny-transformer"]
    assert artifact.env == PRETRAINED_ENV, "pretrained() reads the variable the build sets"
    assert (artifact.compute, artifact.save) == ("train_reference", "save_trained")


def test_reference_model_forms_the_heads_the_article_names(reference) -> None:
    """The figure multi-head-weights says: trained 1000 steps; a previous-token head in layer 0, an induction
    head in layer 1 (the figure's title and caption, and the lab, rest on this)."""
    model, history = reference
    assert len(history.loss) == REFERENCE_STEPS == 1000
    test = make_repeat_batch(256, 8, model.cfg.vocab_size, torch.Generator().manual_seed(7))
    with torch.no_grad():
        _, acc = repeat_metrics(model(test), test, 8)
    assert acc > 0.9
    scores = all_head_scores(model, test)
    assert any(name_head(h) == "前一个词头" for h in scores[0]), scores[0]
    assert any(name_head(h) == "归纳头" for h in scores[1]), scores[1]
    assert not any(name_head(h) == "归纳头" for h in scores[0]), "induction needs the earlier layer"
    # the sentence introducing the figure names the same heads in the same layers
    article = (REPO / "docs" / "articles" / "transformer-attention.md").read_text(encoding="utf-8")
    intro = article[: article.index("<!-- figure: multi-head-weights -->")].rstrip().rsplit("\n\n", 1)[-1]
    assert "8 个头" in intro and "CPU 上训练的两层小模型" in intro, intro
    assert re.search(r"第 0 层[^；。]*前一个词头", intro) and re.search(r"第 1 层[^。]*归纳头", intro), intro
    module = (REPO / "code" / "figures" / "transformer_attention.py").read_text(encoding="utf-8")
    declaration = module[module.index('"multi-head-weights"'):module.index("def multi_head_weights")]
    assert f"训练了 {REFERENCE_STEPS} 步" in declaration
    assert "第 0 层有前一个词头，第 1 层有归纳头" in declaration


def test_save_and_load_give_the_same_model(tmp_path: Path) -> None:
    torch.manual_seed(3)
    model = TinyTransformer(TinyConfig(vocab_size=12, d_model=16, n_heads=2, n_layers=1, max_len=12,
                                       positions="learned"))
    history = train(model, steps=3, batch_size=4, half_len=(2, 4), seed=1)
    save_trained(tmp_path / "m.pt", model, history)
    again, loaded = load_trained(tmp_path / "m.pt")
    assert again.cfg == model.cfg and not again.training
    tokens = make_repeat_batch(3, 5, 12, torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(again(tokens), model(tokens))
    assert loaded.loss == history.loss and loaded.repeat_acc == history.repeat_acc
    assert loaded.seconds is None, "a loaded model was not trained here: no time to report"
    with pytest.raises(ValueError, match="path"):
        load_trained(tmp_path / "missing.pt")


def test_pretrained_reads_the_cached_file_or_trains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    torch.manual_seed(0)
    small = TinyTransformer(TinyConfig(vocab_size=10, d_model=8, n_heads=2, n_layers=1, max_len=10))
    save_trained(tmp_path / "ref.pt", small, TrainHistory(loss=[1.0], repeat_acc=[0.5]))
    monkeypatch.setenv(PRETRAINED_ENV, str(tmp_path / "ref.pt"))
    monkeypatch.setattr(tiny_transformer, "train_reference", lambda: pytest.fail("trained despite the cache"))
    model, history = pretrained()
    assert model.cfg == small.cfg and history.loss == [1.0]
    assert "读取构建网站时训练好的参考模型" in capsys.readouterr().out

    trained = (small, TrainHistory(loss=[2.0], repeat_acc=[0.1], seconds=1.25))
    monkeypatch.delenv(PRETRAINED_ENV)
    monkeypatch.setattr(tiny_transformer, "train_reference", lambda: trained)
    assert pretrained() == trained
    out = capsys.readouterr().out
    assert "现场训练" in out and "训练用时 1.2 s" in out


def test_training_is_bitwise_reproducible_across_processes() -> None:
    """The build trains the reference model in one process, a downloaded notebook in another: same bits."""
    script = (
        "import sys, hashlib; sys.path.insert(0, 'code')\n"
        "import torch; torch.set_num_threads(1)\n"
        "from tiny_transformer import TinyConfig, TinyTransformer, train\n"
        "torch.manual_seed(0); m = TinyTransformer(TinyConfig())\n"
        "train(m, steps=15, seed=0)\n"
        "h = hashlib.sha256()\n"
        "for k, v in sorted(m.state_dict().items()): h.update(k.encode()); h.update(v.numpy().tobytes())\n"
        "print(h.hexdigest())\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout


def test_format_score_is_consistent_with_the_threshold() -> None:
    """Whatever is printed, comparing the printed number with the threshold gives the program's verdict."""
    assert format_score(0.2996) == "0.2996"
    assert format_score(0.3004) == "0.30"
    assert format_score(0.8123) == "0.81"
    assert format_score(0.8996, 0.9, 1, percent=True) == "89.96%"
    assert format_score(0.95, 0.9, 1, percent=True) == "95.0%"
    assert format_score(0.3) == "0.30" and format_score(0.5, 0.5, 0, percent=True) == "50%"
    rng = random.Random(0)
    for _ in range(3000):
        threshold = rng.choice([0.3, 0.5, 0.9, round(rng.random(), 3)])
        value = threshold + rng.uniform(-0.002, 0.002) if rng.random() < 0.5 else rng.random()
        for percent, digits in ((False, 2), (True, 1), (False, 0)):
            text = format_score(value, threshold, digits, percent)
            number = text.removesuffix("%")
            shown = Decimal(number) / (100 if percent else 1)  # exact: what a reader compares
            assert (shown >= Decimal(repr(threshold))) == (value >= threshold), (value, threshold, text)
            assert len(number.partition(".")[2]) >= digits


# --------------------------------------------------------------------------- wrong inputs


def _raises(fn, *words: str) -> str:
    """Call fn, expect a ValueError whose message contains every word; return the message."""
    with pytest.raises(ValueError) as info:
        fn()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return message


def test_documented_shapes_work() -> None:
    cfg = TinyConfig(vocab_size=20, d_model=16, n_heads=2, max_len=16)
    model = TinyTransformer(cfg)
    tokens = make_repeat_batch(3, 5, 20, torch.Generator().manual_seed(0))  # (3, 11)
    logits = model(tokens)
    assert logits.shape == (3, 11, 20)
    loss, acc = repeat_metrics(logits, tokens, 5)
    assert loss.dim() == 0 and 0 <= acc.item() <= 1
    scores = head_scores(model.attention_weights[0], tokens)
    assert all(v.shape == (2,) for v in scores.values())
    assert repeat_positions(5) == slice(6, 10)
    assert model(tokens.int()).shape == (3, 11, 20), "int32 token ids work as in nn.Embedding"


def test_wrong_inputs_raise_value_errors_naming_the_argument() -> None:
    cfg = TinyConfig(vocab_size=20, d_model=16, n_heads=2, max_len=16)
    model = TinyTransformer(cfg)
    tokens = make_repeat_batch(3, 5, 20, torch.Generator().manual_seed(0))  # (3, 11)
    # forward
    _raises(lambda: model(tokens[0]), "tokens", "(B, T)", "tokens[None]")
    _raises(lambda: model(tokens.float()), "tokens", "整数", "long()")
    _raises(lambda: model(torch.zeros(1, 17, dtype=torch.long)), "tokens", "max_len = 16")
    _raises(lambda: model(torch.zeros(1, 0, dtype=torch.long)), "tokens", "(B, T)")
    _raises(lambda: model(tokens + 20), "tokens", "0 到 vocab_size - 1 = 19")
    _raises(lambda: model(-tokens - 1), "tokens", "最小")
    # configuration
    _raises(lambda: TinyTransformer(TinyConfig(d_model=30, n_heads=4)), "d_model", "n_heads")
    _raises(lambda: TinyTransformer(TinyConfig(vocab_size=1)), "vocab_size")
    _raises(lambda: TinyTransformer(TinyConfig(n_layers=0)), "n_layers")
    _raises(lambda: TinyTransformer(TinyConfig(positions="rope")), "positions")
    # the task
    _raises(lambda: make_repeat_batch(2, 20, 20), "half_len", "vocab_size - 1 = 19")
    _raises(lambda: make_repeat_batch(0, 5, 20), "batch_size")
    _raises(lambda: make_repeat_batch(2, 5.0, 20), "half_len", "整数")
    _raises(lambda: make_repeat_batch(2, 5, 20, generator=0), "generator")
    _raises(lambda: repeat_positions(1), "half_len")
    # metrics: a half_len that does not match the batch would score the wrong positions
    logits = model(tokens)
    _raises(lambda: repeat_metrics(logits, tokens, 4), "tokens", "(B, 1 + 2 * half_len) = (B, 9)")
    _raises(lambda: repeat_metrics(logits[:2], tokens, 5), "logits", "(B, T, vocab_size)", "(3, 11)")
    _raises(lambda: repeat_metrics(logits, tokens.float(), 5), "tokens", "整数")
    # scores
    w = model.attention_weights[0]  # (3, 2, 11, 11)
    _raises(lambda: head_scores(w[0], tokens[0]), "weights", "(B, n_heads, T, T)", "weights[None]")
    _raises(lambda: head_scores(w, tokens[:, :10]), "tokens", "(B, T) = (3, 11)")
    _raises(lambda: head_scores(w, tokens[:2]), "tokens", "(3, 11)")
    _raises(lambda: head_scores(w[..., :10], tokens), "weights", "最后两维")
    _raises(lambda: name_head({}), "scores")
    _raises(lambda: name_head({"prev": 0.9}), "scores", "SCORE_NAMES")
    _raises(lambda: format_score(torch.tensor([0.1, 0.2]), 0.3), "value")
    _raises(lambda: format_score(float("nan")), "value")
    # training
    _raises(lambda: train(model, steps=1, half_len=(8, 4)), "half_len", "(最短, 最长)")
    _raises(lambda: train(model, steps=1, half_len=1), "half_len")
    _raises(lambda: train(model, steps=1, half_len=(4, 12)), "max_len = 16")
    _raises(lambda: train(model, steps=1, lr=0.0), "lr")
    _raises(lambda: train(model, steps=1, loss_on="first-half"), "loss_on")
    _raises(lambda: train(object(), steps=1), "model", "TinyTransformer")
    _raises(lambda: save_trained("x.pt", model, history=[1.0]), "history", "TrainHistory")


def test_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "code" / "tiny_transformer.py")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "logits 形状: (2, 13, 48)" in proc.stdout
    assert "第 1 层第 3 个头" in proc.stdout
