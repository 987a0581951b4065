"""code/llama_train.py：两个模型都由第一阶段的 train_gpt 训练，比较的设置如文章所说，输入不对时报错。"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from gpt_from_scratch import MIN_COUNT, GPTHistory, TrainSettings, load_poems, poem_config, split_poems, train_gpt
from llama import MiniLlama, param_count
from llama_train import (
    COMPARE_SETTINGS,
    SEEDS,
    compare_on_poems,
    held_out_loss,
    llama_poem_config,
    load_comparison,
    save_comparison,
    summary,
)
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def poems() -> tuple[CharTokenizer, str, str]:
    train_text, held_out_text = split_poems(load_poems())
    return CharTokenizer.train(train_text, min_count=MIN_COUNT), train_text, held_out_text


def test_train_gpt_trains_the_llama_model_and_samples_only_the_stage_one_model(poems) -> None:
    """train_gpt takes any model with cfg.vocab_size / max_len; asking it for samples of a MiniLlama is an error."""
    tok, train_text, held_out_text = poems
    s = replace(TrainSettings(), steps=6, warmup=2, eval_every=3, eval_windows=4, sample_at=())
    torch.manual_seed(0)
    model = MiniLlama(llama_poem_config(tok.vocab_size))
    history = train_gpt(model, tok, train_text, held_out_text, s)
    assert len(history.loss) == 6 and history.eval_steps == [0, 3, 6] and history.samples == {}
    assert history.eval_held_out[-1] < history.eval_held_out[0]
    with pytest.raises(ValueError, match="只支持 TinyTransformer"):
        train_gpt(model, tok, train_text, held_out_text, replace(s, sample_at=(0,)))
    with pytest.raises(ValueError, match="语言模型"):
        train_gpt(torch.nn.Linear(2, 2), tok, train_text, held_out_text, s)


def test_comparison_settings_and_matched_parameters(poems) -> None:
    tok = poems[0]
    s = COMPARE_SETTINGS
    assert (s.steps, s.batch_size, s.context, s.warmup, s.eval_every, s.sample_at) == (75, 8, 64, 10, 25, ())
    base = TrainSettings()  # 其余的超参数和第一阶段相同
    assert (s.peak_lr, s.min_lr, s.weight_decay, s.clip, s.eval_windows) == (
        base.peak_lr, base.min_lr, base.weight_decay, base.clip, base.eval_windows)
    assert SEEDS == (0, 1, 2)
    gpt = TinyTransformer(poem_config(tok.vocab_size))
    llama = MiniLlama(llama_poem_config(tok.vocab_size))
    n_gpt, n_llama = (sum(p.numel() for p in m.parameters()) for m in (gpt, llama))
    assert n_llama == param_count(llama.cfg)
    assert abs(n_gpt - n_llama) == 1
    cfg = llama.cfg
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.ffn_dim) == (64, 4, 4, 2, 205)


def test_held_out_loss_uses_non_overlapping_windows(poems) -> None:
    """held_out_loss 等于自己截的段上的交叉熵：每隔 3 首诗一段，段与段不重叠。"""
    tok, _, held_out_text = poems
    torch.manual_seed(1)
    model = MiniLlama(llama_poem_config(tok.vocab_size)).eval()
    ids = tok.encode(held_out_text)
    newline = tok.encode("\n")[0]
    starts = [i for i, t in enumerate(ids) if t == newline and i + 65 <= len(ids)][::3]
    assert all(b - a >= 65 for a, b in itertools.pairwise(starts))
    rows = torch.tensor([ids[i : i + 65] for i in starts])
    with torch.no_grad():
        want = torch.nn.functional.cross_entropy(model(rows[:, :-1]).reshape(-1, tok.vocab_size),
                                                 rows[:, 1:].reshape(-1)).item()
    assert held_out_loss(model, tok, held_out_text) == pytest.approx(want, rel=1e-6)


def test_save_and_load_round_trip(tmp_path, poems) -> None:
    """存下再读回：模型的参数、记录和最后的损失都一样（只训练 2 步、1 个种子，为了快）。"""
    s = replace(COMPARE_SETTINGS, steps=2, warmup=1, eval_every=1, eval_windows=2)
    result = compare_on_poems(seeds=(0,), s=s)
    path = tmp_path / "cmp.pt"
    save_comparison(path, result)
    back = load_comparison(path)
    assert back["settings"] == s and back["chars"] == result["chars"]
    for kind in ("gpt", "llama"):
        a, b = result["runs"][kind][0], back["runs"][kind][0]
        assert a["held_out"] == b["held_out"]
        assert a["history"].eval_held_out == b["history"].eval_held_out
        for (na, pa), (nb, pb) in zip(a["model"].state_dict().items(), b["model"].state_dict().items(), strict=True):
            assert na == nb and torch.equal(pa, pb)
    rows = summary(back)
    assert rows["gpt"]["params"] - rows["llama"]["params"] == 1


BAD_RESULT = {"runs": None, "chars": "ab", "settings": COMPARE_SETTINGS}  # 各个测试换掉 runs
RUN = {"seed": 0, "history": GPTHistory(), "model": torch.nn.Linear(2, 2), "held_out": 6.1}  # 各个测试换掉一项
GOOD_RESULT = {**BAD_RESULT, "runs": {"gpt": [RUN]}}
FOREIGN: dict[str, Path] = {}  # 不是 save_comparison 存的文件，由下面的 fixture 写好


def fresh_llama(tok: CharTokenizer) -> MiniLlama:
    torch.manual_seed(0)
    return MiniLlama(llama_poem_config(tok.vocab_size)).eval()


@pytest.fixture(scope="module", autouse=True)
def foreign_files(tmp_path_factory) -> None:
    """一个文本文件、一个 torch.save 存的别的字典：load_comparison 都应说清楚它们不是比较的结果。"""
    folder = tmp_path_factory.mktemp("foreign")
    FOREIGN["text"], FOREIGN["other"] = folder / "notes.pt", folder / "weights.pt"
    FOREIGN["text"].write_text("hello", encoding="utf-8")
    torch.save({"weights": torch.zeros(2)}, FOREIGN["other"])


@pytest.mark.parametrize("call, fragment", [
    (lambda tok, tr, he: held_out_loss(torch.nn.Linear(2, 2), tok, he), "MiniLlama"),
    (lambda tok, tr, he: held_out_loss(MiniLlama(llama_poem_config(tok.vocab_size)), tok, "没有换行"), "held_out_text"),
    (lambda tok, tr, he: train_gpt(MiniLlama(llama_poem_config(10)), tok, tr, he, COMPARE_SETTINGS), "vocab_size"),
    (lambda tok, tr, he: train_gpt(MiniLlama(llama_poem_config(tok.vocab_size)), tok, "", he, COMPARE_SETTINGS),
     "train_text"),
    (lambda tok, tr, he: compare_on_poems(seeds=()), "seeds"),
    (lambda tok, tr, he: compare_on_poems(seeds=(-1,)), "seed"),
    (lambda tok, tr, he: load_comparison("/nonexistent/cmp.pt"), "找不到"),
    (lambda tok, tr, he: compare_on_poems(seeds=(0,), s={"steps": 2}), "s 应为 TrainSettings"),
    (lambda tok, tr, he: summary("result"), "result 应是 compare_on_poems"),
    (lambda tok, tr, he: summary({"runs": {"gpt": []}}), "缺少 \\['chars', 'settings'\\]"),
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {}}), "非空字典"),
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {"gpt": []}}), "非空的列表"),
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {"gpt": ["run"]}}), "一次训练的字典"),
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {"gpt": [{"seed": 0}]}}), "'history', 'model', 'held_out'"),
    (lambda tok, tr, he: save_comparison("unused.pt", {"chars": "ab"}), "缺少 \\['runs', 'settings'\\]"),
    (lambda tok, tr, he: save_comparison("unused.pt", None), "result 应是 compare_on_poems"),
    # 验证集太短，一段也截不出来；一段比模型的 max_len 还长
    (lambda tok, tr, he: held_out_loss(fresh_llama(tok), tok, "".join(he.splitlines(keepends=True)[:3])),
     "held_out_text 太短"),
    (lambda tok, tr, he: held_out_loss(fresh_llama(tok), tok, he, context=128),
     "context = 128 超过了模型的 max_len = 64"),
    (lambda tok, tr, he: held_out_loss(fresh_llama(tok), tok, he, context=0), "context 应为不小于 1 的整数"),
    (lambda tok, tr, he: held_out_loss(fresh_llama(tok).to(torch.bfloat16), tok, he), "模型的参数是 torch.bfloat16"),
    (lambda tok, tr, he: held_out_loss(fresh_llama(tok).half(), tok, he), "model.float()"),
    # 结果字典里的一项不是训练出来的东西
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {"gpt": [{**RUN, "held_out": "6.1"}]}}),
     "'held_out' 应是验证集损失"),
    (lambda tok, tr, he: summary({**BAD_RESULT, "runs": {"gpt": [{**RUN, "model": "gpt"}]}}),
     "'model' 应是训练好的模型"),
    (lambda tok, tr, he: save_comparison("unused.pt", {**BAD_RESULT, "runs": {"gpt": [{**RUN, "history": None}]}}),
     "'history' 应是 train_gpt 返回的 GPTHistory"),
    # 存到不存在的目录、读不是它存的文件
    (lambda tok, tr, he: save_comparison("/nonexistent/dir/cmp.pt", GOOD_RESULT), "目录 /nonexistent/dir 不存在"),
    (lambda tok, tr, he: load_comparison(5), "path 应为文件路径"),
    (lambda tok, tr, he: load_comparison(FOREIGN["text"]), "不是 save_comparison 存下的文件"),
    (lambda tok, tr, he: load_comparison(FOREIGN["other"]), "不是 save_comparison 存下的文件"),
])
def test_wrong_input_raises_value_error(poems, call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call(*poems)
