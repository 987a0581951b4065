"""code/aligned_models.py: the SFT, DPO and GRPO models the comparison playground runs side by side.

The three artifact files are the models their training files rebuild (``capable_model``, ``dpo_model``,
``policy_model``), saved in the acrostic playground's format; they differ from each other; each reloads to the same
logits; bad inputs get a Chinese ValueError."""

from __future__ import annotations

import io

import pytest
import torch
from acrostic import acrostic_prompt, playground_task
from aligned_models import BUILD_ARTIFACTS, GRPO_RUN, SFT_SEED, load_aligned, save_aligned
from tiny_transformer import TinyConfig, TinyTransformer
from tokenizer import CharTokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

NAMES = ("aligned-sft", "aligned-dpo", "aligned-grpo")


@pytest.fixture(scope="module")
def files() -> dict:
    """The three artifacts (and what they read: the SFT, DPO and GRPO runs) from the run's artifact cache, with
    ``LLM_ARTIFACT_<NAME>`` set so the training files' loaders read them instead of training."""
    from llmsite import artifacts

    declared = artifacts.discover()
    return artifacts.ensure([declared[n] for n in NAMES], out=io.StringIO())


def rebuilt(name: str) -> tuple[TinyTransformer, CharTokenizer]:
    """The model as its own training file rebuilds it, independently of aligned_models."""
    from capable_sft import capable_model
    from dpo_train import dpo_model, dpo_results
    from grpo_train import grpo_results, policy_model

    if name == "aligned-sft":
        return capable_model(SFT_SEED)
    if name == "aligned-dpo":
        return dpo_model(dpo_results(verbose=False))
    return policy_model(grpo_results(verbose=False), GRPO_RUN)


def logits(model: TinyTransformer, tok: CharTokenizer, heads: str = "春夏秋冬") -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tok.encode(acrostic_prompt(heads))]))[0]


def test_three_artifacts_are_declared() -> None:
    assert tuple(BUILD_ARTIFACTS) == NAMES
    assert {save for _, save in BUILD_ARTIFACTS.values()} == {"save_aligned"}


def test_each_file_is_the_trained_model_with_the_acrostic_task(files) -> None:
    for name in NAMES:
        saved = torch.load(files[name], weights_only=True)
        assert sorted(saved) == ["chars", "config", "state_dict", "task"], name
        assert saved["task"] == playground_task(), name
        model, tok = rebuilt(name)
        assert saved["chars"] == tok.chars, name
        state = model.state_dict()
        assert sorted(saved["state_dict"]) == sorted(state), name
        for key, tensor in state.items():
            assert torch.equal(saved["state_dict"][key], tensor), (name, key)


def test_the_three_models_differ_but_share_config_and_vocabulary(files) -> None:
    saved = {n: torch.load(files[n], weights_only=True) for n in NAMES}
    first = saved[NAMES[0]]
    for name in NAMES[1:]:
        assert saved[name]["config"] == first["config"] and saved[name]["chars"] == first["chars"], name
    for i, a in enumerate(NAMES):
        for b in NAMES[i + 1:]:
            changed = [k for k in saved[a]["state_dict"]
                       if not torch.equal(saved[a]["state_dict"][k], saved[b]["state_dict"][k])]
            assert changed, f"{a} and {b} have the same parameters"
            models = [load_aligned(files[n]) for n in (a, b)]
            assert not torch.equal(logits(*models[0]), logits(*models[1])), (a, b)


def test_each_reloads_to_the_same_logits(files, tmp_path) -> None:
    for name in NAMES:
        model, tok = rebuilt(name)
        expected = logits(model, tok)
        again, tok2 = load_aligned(files[name])
        assert not again.training and tok2.chars == tok.chars
        assert torch.equal(logits(again, tok2), expected), name
        path = tmp_path / f"{name}.pt"  # and a second save of the reloaded model: the same file content
        save_aligned(path, again, tok2)
        third, tok3 = load_aligned(path)
        assert torch.equal(logits(third, tok3), expected), name


CHARS = list("藏头：\n，。春夏秋冬")


def tiny() -> tuple[TinyTransformer, CharTokenizer]:
    tok = CharTokenizer(CHARS)
    torch.manual_seed(0)
    cfg = TinyConfig(vocab_size=tok.vocab_size, d_model=8, n_heads=2, n_layers=1, max_len=40, mlp=True,
                     positions="learned")
    return TinyTransformer(cfg).eval(), tok


def test_a_small_model_round_trips(tmp_path) -> None:
    model, tok = tiny()
    save_aligned(tmp_path / "m.pt", model, tok)
    again, tok2 = load_aligned(str(tmp_path / "m.pt"))
    assert torch.equal(logits(again, tok2), logits(model, tok))


def bad_file(tmp_path):
    path = tmp_path / "bad.pt"
    torch.save({"config": {}, "chars": []}, path)
    return path


@pytest.mark.parametrize(("call", "message"), [
    (lambda p: save_aligned(5, *tiny()), "path 应是文件路径"),
    (lambda p: save_aligned(p / "m.pt", "model", tiny()[1]), "model 应为 TinyTransformer"),
    (lambda p: save_aligned(p / "m.pt", tiny()[0], list("春夏")), "tok 应为 CharTokenizer"),
    (lambda p: save_aligned(p / "m.pt", tiny()[0], CharTokenizer(list("春夏"))), "词表大小"),
    (lambda p: save_aligned(p / "m.pt", tiny()[0], CharTokenizer(list("藏头：\n，。春夏秋鬼"))), "不在词表里"),
    (lambda p: load_aligned(None), "path 应是文件路径"),
    (lambda p: load_aligned(p / "missing.pt"), "找不到"),
    (lambda p: load_aligned(bad_file(p)), "不是 save_aligned 存下的文件"),
])
def test_bad_input_gets_a_clear_error(call, message: str, tmp_path) -> None:
    with pytest.raises(ValueError, match=message):
        call(tmp_path)
