"""The exported model read back in PyTorch, independently of the browser's script.

The header says where each tensor starts; the bytes are read by numpy (``export.read_tensors``: little-endian float16,
or int8 codes times their row's scale) and loaded into
``code/``'s own TinyTransformer, so a test compares the browser with the teaching code on the same weights.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from llmsite.playground import export

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "code") not in sys.path:
    sys.path.insert(0, str(ROOT / "code"))

from tiny_transformer import TinyConfig, TinyTransformer  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402

NAME = "tang-gpt"


def read_header(site: Path, name: str = NAME) -> dict:
    return json.loads((site / "playground" / f"{name}.json").read_text(encoding="utf-8"))


def dequantized(header: dict, weights: bytes) -> TinyTransformer:
    """TinyTransformer with the exported (float16 or int8) weights turned back into float32 (eval mode)."""
    model = TinyTransformer(TinyConfig(**header["config"]))
    state = {name: torch.from_numpy(values) for name, values in export.read_tensors(header, weights).items()}
    model.load_state_dict(state)  # strict: every parameter of the module, nothing else
    model.eval()
    return model


def load(site: Path, name: str = NAME) -> tuple[dict, TinyTransformer, CharTokenizer]:
    header = read_header(site, name)
    weights = (site / "playground" / header["weights"]["file"]).read_bytes()
    return header, dequantized(header, weights), CharTokenizer(header["vocab"]["chars"])
