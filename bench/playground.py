"""The model that runs in the browser (issue 25): speed against PyTorch, and what it costs on the wire.

    python -m bench.playground [SITE_DIR] [--repeats 5] [--tokens 63]   # SITE_DIR: a built site (default site/)
    python -m llmsite bench --only playground                           # the same, on the benchmark's seed build

Side by side in one run, interleaved, greedy decoding with a KV cache, the same dequantized weights, the same
prompt (a newline) and the same number of new tokens:
- headless Chromium: ``llmPlayground.generate`` of docs/assets/javascripts/playground.js (plain JavaScript);
- PyTorch on one thread: ``code/kv_cache.py``'s ``generate`` on TinyTransformer.
Tokens per second are new tokens over wall time (the prompt's prefill included in both); the ratio is
browser / PyTorch, median over the repeats. Also: the first token after the weights arrive (digest, float16
decoding, building the model, prefill and one token), the bytes on the wire (a gzip server, as Pages serves),
the script's gzip size and how much the article's first load grows before the reader presses the button.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from .common import REPO, load_average, log
from .httpd import GzipServer, gzip_size, serve
from .weight import browser

ARTICLE = "articles/gpt-from-scratch/"
NAME = "tang-gpt"
PROMPT = "\n"
SCRIPT_GOAL = 30_000  # bytes gzip
WEIGHTS_GOAL = 1_200_000  # bytes on the wire
GROWTH_GOAL = 5_000  # bytes the article's first load may grow by
SPEED_GOAL = 200.0  # tokens per second in the browser
FIRST_TOKEN_GOAL = 1.0  # seconds after the weights arrive

_GENERATE = """async ([url, prompt, n]) => {
  const {model} = await window.llmPlayground.load(url);
  const ids = model.encode(prompt);
  const t0 = performance.now();
  const out = window.llmPlayground.generate(model, ids, n, {greedy: true, penalty: 1});
  return {seconds: (performance.now() - t0) / 1000, tokens: out};
}"""
_FIRST_TOKEN = """async ([url, prompt]) => {
  const loaded = await window.llmPlayground.load(url);
  const t0 = performance.now();
  window.llmPlayground.generate(loaded.model, loaded.model.encode(prompt), 1, {greedy: true, penalty: 1});
  return {setup: (loaded.readyAt - loaded.weightsAt) / 1000, token: (performance.now() - t0) / 1000};
}"""


def torch_model(site: Path) -> tuple[Any, Any, dict[str, Any]]:
    """TinyTransformer with the site's float16 weights (as float32) and the tokenizer, from code/."""
    import torch

    code = str(REPO / "code")
    if code not in sys.path:
        sys.path.insert(0, code)
    from tiny_transformer import TinyConfig, TinyTransformer
    from tokenizer import CharTokenizer

    from llmsite.playground import export

    header = json.loads((site / "playground" / f"{NAME}.json").read_text(encoding="utf-8"))
    weights = (site / "playground" / header["weights"]["file"]).read_bytes()
    model = TinyTransformer(TinyConfig(**header["config"]))
    model.load_state_dict({name: torch.from_numpy(v) for name, v in export.read_tensors(header, weights).items()})
    model.eval()
    return model, CharTokenizer(header["vocab"]["chars"]), header


def torch_seconds(model: Any, ids: list[int], n: int) -> tuple[float, list[int]]:
    import torch
    from kv_cache import generate

    prompt = torch.tensor([ids])
    t0 = time.perf_counter()
    out = generate(model, prompt, n)
    return time.perf_counter() - t0, out.tokens[0].tolist()


def first_load(server: GzipServer, b: Any, site: Path) -> dict[str, Any]:
    """The article before the press (what the playground adds to it), then the press (what it downloads)."""
    context = b.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    page = context.new_page()
    server.take_log()
    try:
        page.goto(server.base_url + ARTICLE, wait_until="load")
        page.wait_for_load_state("networkidle")
        before = [s for s in server.take_log() if "playground" in s.path]
        page.click(f"#pg-{NAME} .llm-pg__load")
        page.wait_for_selector(f"#pg-{NAME} .llm-pg__app", timeout=60_000)
        after = [s for s in server.take_log() if "playground" in s.path]
        timing = page.evaluate(_FIRST_TOKEN, [server.base_url + f"playground/{NAME}.json", PROMPT])
    finally:
        context.close()
    html = (site / ARTICLE / "index.html").read_text(encoding="utf-8")
    block = re.search(r'<div class="llm-pg"[^>]*></div>\n?', html)
    html_delta = gzip_size(html.encode()) - gzip_size(html.replace(block.group(0), "").encode()) if block else 0
    growth = sum(s.wire_bytes for s in before) + html_delta
    weights = [s for s in after if s.path.endswith(".bin")]
    weights_file = site / "playground" / Path(weights[0].path).name if weights else None
    return {
        "before_press": {s.path: s.wire_bytes for s in before},
        "html_delta_gzip": html_delta,
        "first_load_growth": growth,
        "after_press": {s.path: {"wire": s.wire_bytes, "raw": s.raw_bytes, "encoding": s.encoding} for s in after},
        "weights_wire": sum(s.wire_bytes for s in weights),
        "weights_gzip_if_compressed": gzip_size(weights_file.read_bytes()) if weights_file else None,
        "script_gzip": len(gzip.compress((site / "assets/javascripts/playground.js").read_bytes(), 9, mtime=0)),
        "first_token_seconds": timing["setup"] + timing["token"],
        "first_token_parts": timing,
    }


def run(site: Path, repeats: int = 5, tokens: int = 63) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"load_average_start": load_average(), "tokens": tokens, "repeats": repeats}
    torch.set_num_threads(1)
    model, tok, header = torch_model(site)
    ids = tok.encode(PROMPT)
    if len(ids) + tokens - 1 > header["config"]["max_len"]:
        raise ValueError(f"{tokens} tokens after the prompt do not fit the context of {header['config']['max_len']}")
    browser_s, torch_s = [], []
    with serve(site) as server, browser() as b:
        out.update(first_load(server, b, site))
        context = b.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
        page = context.new_page()
        page.goto(server.base_url + ARTICLE, wait_until="load")
        page.click(f"#pg-{NAME} .llm-pg__load")
        page.wait_for_selector(f"#pg-{NAME} .llm-pg__app", timeout=60_000)
        url = server.base_url + f"playground/{NAME}.json"
        page.evaluate(_GENERATE, [url, PROMPT, tokens])  # warm-up: the JIT, and PyTorch's first call
        torch_seconds(model, ids, tokens)
        for i in range(repeats):  # interleaved, alternating which goes first
            for side in ("browser", "torch") if i % 2 == 0 else ("torch", "browser"):
                if side == "browser":
                    got = page.evaluate(_GENERATE, [url, PROMPT, tokens])
                    browser_s.append(got["seconds"])
                    browser_tokens = got["tokens"]
                else:
                    seconds, torch_tokens = torch_seconds(model, ids, tokens)
                    torch_s.append(seconds)
        context.close()
    out["same_tokens"] = browser_tokens == torch_tokens
    out["browser_tokens_per_s"] = [tokens / s for s in browser_s]
    out["torch_tokens_per_s"] = [tokens / s for s in torch_s]
    out["browser_median"] = statistics.median(out["browser_tokens_per_s"])
    out["torch_median"] = statistics.median(out["torch_tokens_per_s"])
    out["ratio"] = out["browser_median"] / out["torch_median"]
    out["paired_ratio_median"] = statistics.median(t / b for b, t in zip(browser_s, torch_s, strict=True))
    out["load_average_end"] = load_average()
    out["goals"] = {
        "weights_wire <= 1.2 MB": out["weights_wire"] <= WEIGHTS_GOAL,
        "script_gzip <= 30 kB": out["script_gzip"] <= SCRIPT_GOAL,
        "first_load_growth <= 5 kB": out["first_load_growth"] <= GROWTH_GOAL,
        "browser >= 1.0x PyTorch": out["ratio"] >= 1.0,
        "browser >= 200 tokens/s": out["browser_median"] >= SPEED_GOAL,
        "first token <= 1 s after the weights": out["first_token_seconds"] <= FIRST_TOKEN_GOAL,
    }
    return out


def table(r: dict[str, Any]) -> str:
    rows = [
        ("tokens/s, headless Chromium (plain JS, KV cache)", f"{r['browser_median']:.0f}"),
        ("tokens/s, PyTorch 1 thread (kv_cache.generate)", f"{r['torch_median']:.0f}"),
        ("ratio browser / PyTorch (medians; paired)", f"{r['ratio']:.2f}; {r['paired_ratio_median']:.2f}"),
        ("same greedy tokens", str(r["same_tokens"])),
        ("first token after the weights arrive", f"{r['first_token_seconds'] * 1000:.0f} ms"),
        ("weights on the wire", f"{r['weights_wire']:,} B (gzip would give {r['weights_gzip_if_compressed']:,} B)"),
        ("playground.js gzip", f"{r['script_gzip']:,} B"),
        ("article first-load growth before the press", f"{r['first_load_growth']:,} B"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines += [f"goal {'met' if ok else 'NOT met'}: {name}" for name, ok in r["goals"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The browser playground against PyTorch, and its bytes")
    parser.add_argument("site", nargs="?", type=Path, default=REPO / "site", help="a built site (default: site/)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=63, help="new tokens per generation (prompt: a newline)")
    args = parser.parse_args(argv)
    if not (args.site / "playground" / f"{NAME}.json").is_file():
        print(f"{args.site} has no playground/{NAME}.json: build the site first (make build)", file=sys.stderr)
        return 2
    log(f"playground: {args.repeats} interleaved repeats of {args.tokens} tokens")
    result = run(args.site, args.repeats, args.tokens)
    print(table(result))
    print(json.dumps({k: v for k, v in result.items() if k != "goals"}, ensure_ascii=False, default=str)[:2000],
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
