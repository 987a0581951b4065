"""The acrostic model the browser runs (build artifact ``acrostic-gpt``) and the forced decoding it offers.

- the merged LoRA r=4 model gives the same logits as the unmerged one on held-out prompts (<= 1e-5);
- the artifact file holds exactly that merged model, its vocabulary, and the task record built from
  ``acrostic_prompt`` (template with one ``{heads}``) and the module's constants;
- ``write_forced_acrostic`` (KV cache) is checked against a full forward pass without cache at every step: forced
  steps sit exactly at the line starts and write the heads, the probability it reports is the model's own, every
  other step is the argmax; with the heads the model writes anyway, it is plain greedy decoding token for token;
- wrong inputs raise ValueError.
"""

from __future__ import annotations

from functools import cache

import pytest
import torch
from acrostic import (
    N_LINES,
    POEM_TOKENS,
    acrostic_prompt,
    playground_task,
    well_formed,
    write_forced_acrostic,
    written_heads,
)
from kv_cache import generate
from lora import lora_layers
from lora_train import PLAYGROUND_METHOD, acrostic_gpt, finetuned_model, finetuning, poem_lists

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


@cache
def result() -> dict:
    return finetuning(verbose=False)


@cache
def merged():
    return acrostic_gpt()


def heads_sample(n: int = 8) -> list[str]:
    heads = result()["heads"]  # the held-out head sets, never seen in fine-tuning
    return heads[:: len(heads) // n][:n]


def test_the_playground_model_is_lora_r4_with_its_format_learned():
    assert PLAYGROUND_METHOD == "lora-4"
    runs = result()["runs"]
    # the reason given in code/lora_train.py and the article: the LoRA rank whose format is learned
    assert runs["lora-4"]["well_formed"] > 0.8 > max(runs["lora-1"]["well_formed"], runs["lora-8"]["well_formed"])


def test_merged_logits_equal_the_lora_model_on_held_out_prompts():
    lora_model, tok = finetuned_model(result(), PLAYGROUND_METHOD)
    assert len(lora_layers(lora_model)) == 8
    model, tok2 = merged()
    assert not lora_layers(model) and tok2.chars == tok.chars
    _, held = poem_lists()
    rows = [tok.encode(acrostic_prompt(h) + poem)[:64] for h, poem in zip(heads_sample(), held, strict=False)]
    worst = 0.0
    with torch.no_grad():
        for ids in rows:
            x = torch.tensor([ids])
            worst = max(worst, (model(x) - lora_model(x)).abs().max().item())
    assert worst <= 1e-5, worst
    assert len(rows) == 8


def test_the_artifact_file_is_the_merged_model_and_the_task(trained_artifacts):
    saved = torch.load(trained_artifacts["acrostic-gpt"], weights_only=True)
    model, tok = merged()
    assert saved["chars"] == tok.chars
    assert sorted(saved["state_dict"]) == sorted(model.state_dict())
    for name, tensor in model.state_dict().items():
        assert torch.equal(saved["state_dict"][name], tensor), name
    task = saved["task"]
    assert task == playground_task()
    assert task["template"].count("{heads}") == 1
    assert task["template"].replace("{heads}", "春夏秋冬") == acrostic_prompt("春夏秋冬")
    assert (task["heads"], task["tokens"], task["line_ends"]) == (N_LINES, POEM_TOKENS, "，。")


def test_the_task_describes_the_form_well_formed_checks():
    t = playground_task()

    def poem(chars: int) -> str:
        return "".join("春" * chars + t["line_ends"][k % 2] for k in range(t["heads"]))

    assert well_formed(poem(t["line_chars"]))
    assert not well_formed(poem(t["line_chars"] - 1)) and not well_formed(poem(t["line_chars"] + 1))


def full_forward_probs(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids]))[0, -1].softmax(-1)


def test_forced_decoding_puts_the_heads_at_the_line_starts_and_is_greedy_elsewhere():
    model, tok = merged()
    ends = {tok.char_to_id["，"], tok.char_to_id["。"]}
    heads = [*heads_sample(4), "春夏秋冬"]
    for h in heads:
        out = write_forced_acrostic(model, tok, h)
        assert len(out.tokens) == POEM_TOKENS
        starts = [0] + [t + 1 for t, token in enumerate(out.tokens) if token in ends]
        assert out.forced_steps == [s for s in starts if s < POEM_TOKENS][:N_LINES]
        ids = tok.encode(acrostic_prompt(h))
        forced = dict(zip(out.forced_steps, out.forced_probs, strict=True))
        for step, token in enumerate(out.tokens):
            probs = full_forward_probs(model, ids + out.tokens[:step])  # no cache: the whole prefix again
            if step in forced:
                assert token == tok.char_to_id[h[out.forced_steps.index(step)]]
                assert abs(forced[step] - probs[token].item()) <= 1e-6
            else:
                assert token == int(probs.argmax()), (h, step)
        if len(out.forced_steps) == N_LINES and "\n" not in tok.decode(out.tokens[: out.forced_steps[-1]]):
            assert written_heads(out.text) == h
        assert out.text == tok.decode(out.tokens).split("\n")[0]


def test_forcing_what_the_model_writes_anyway_is_plain_greedy():
    model, tok = merged()
    checked = 0
    for h in heads_sample(8):
        prompt = torch.tensor([tok.encode(acrostic_prompt(h))])
        plain = generate(model, prompt, POEM_TOKENS).tokens[0, prompt.size(1):].tolist()
        w = written_heads(tok.decode(plain))
        if len(w) != N_LINES or any(c not in tok.char_to_id for c in w):
            continue
        out = write_forced_acrostic(model, tok, w, prompt_heads=h)
        assert out.tokens == plain, (h, w)
        if w != h:  # forcing the prompt's own heads instead changes the poem (the model does not write them)
            assert write_forced_acrostic(model, tok, h).tokens != plain
        checked += 1
    assert checked >= 4, checked


@pytest.mark.parametrize("call, fragment", [
    (lambda m, t: write_forced_acrostic(m, t, "春夏秋"), "heads 应是 4 个字"),
    (lambda m, t: write_forced_acrostic(m, t, "春，秋冬"), "heads 应是 4 个字"),
    (lambda m, t: write_forced_acrostic(m, t, "春夏秋头"), "不在词表里"),
    (lambda m, t: write_forced_acrostic(m, t, "春夏秋冬", prompt_heads="春夏秋头"), "不在词表里"),
    (lambda m, t: write_forced_acrostic(m, t, "春夏秋冬", max_new_tokens=60), "超过了模型的上下文"),
    (lambda m, t: write_forced_acrostic(m, t, "春夏秋冬", max_new_tokens=0), "max_new_tokens"),
    (lambda m, t: write_forced_acrostic("model", t, "春夏秋冬"), "model 应为 TinyTransformer"),
    (lambda m, t: playground_task("春夏"), "heads 应是 4 个字"),
])
def test_wrong_input_raises_value_error(call, fragment):
    model, tok = merged()
    with pytest.raises(ValueError, match=fragment):
        call(model, tok)
