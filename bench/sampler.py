"""Stage 3's rollouts: ``evaluation.sample_tokens`` (inverse-CDF draws, no per-step logits kept) against stage 1's
``kv_cache.generate(do_sample=True)`` (``torch.multinomial``, every step's logits kept), side by side.

    python -m bench.sampler [--batch 2736] [--repeats 5]

Both write the same number of tokens after the same prompts with the same model: the poem-shaped GPT of stage 1
(``gpt_from_scratch.poem_config``, its real vocabulary size) with random weights, so no trained artifact is needed
and the shapes are the evaluation's (342 held-out head sets x 8 poems = 2,736 rows, 24 new tokens). The two run on
one thread, alternating on every repeat, so load on the machine hits both; the medians and their ratio are printed.
Random weights give a flatter next-token distribution than a trained model; the cost of a draw does not depend on
it. Nothing is asserted: the figures go to bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from llmsite.paths import CODE

EVAL_ROWS = 342 * 8  # the evaluation article: 342 held-out head sets, 8 poems each


def measure(batch: int, repeats: int, tokens: int = 24, vocab: int | None = None) -> dict[str, Any]:
    """Seconds of each sampler per repeat, and the medians' ratio (generate / sample_tokens)."""
    if str(CODE) not in sys.path:
        sys.path.insert(0, str(CODE))
    import torch
    from evaluation import sample_tokens
    from gpt_from_scratch import poem_config
    from kv_cache import generate
    from tiny_transformer import TinyTransformer

    torch.set_num_threads(1)  # as the build's artifacts train: one thread each
    torch.manual_seed(0)
    vocab = vocab or 3009  # the Tang-poem tokenizer's size (stage 1)
    model = TinyTransformer(poem_config(vocab)).eval()
    prompts = torch.randint(0, vocab, (batch, 8))  # the acrostic prompt is 8 tokens long
    runs: dict[str, list[float]] = {"generate": [], "sample_tokens": []}

    def one(name: str) -> None:
        gen = torch.Generator().manual_seed(len(runs[name]))
        t0 = time.perf_counter()
        if name == "generate":
            out = generate(model, prompts, tokens, do_sample=True, generator=gen).tokens[:, prompts.size(1):]
        else:
            out = sample_tokens(model, prompts, tokens, 1.0, gen)
        runs[name].append(time.perf_counter() - t0)
        assert out.shape == (batch, tokens)

    for i in range(repeats):
        for name in (("generate", "sample_tokens") if i % 2 == 0 else ("sample_tokens", "generate")):
            one(name)
    medians = {name: statistics.median(seconds) for name, seconds in runs.items()}
    return {"batch": batch, "tokens": tokens, "vocab": vocab, "repeats": repeats, "seconds": runs,
            "median": medians, "ratio": medians["generate"] / medians["sample_tokens"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=EVAL_ROWS, help="rows written at once (default 2,736)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    r = measure(args.batch, args.repeats)
    print(f"{r['batch']} rows x {r['tokens']} tokens, vocabulary {r['vocab']}, {r['repeats']} repeats, one thread")
    for name, seconds in r["seconds"].items():
        print(f"  {name:<14} median {r['median'][name]:.2f} s  ({', '.join(f'{s:.2f}' for s in seconds)})")
    print(f"  generate / sample_tokens: {r['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
