"""code/bpe_tokenizer.py 的测试：与 PyTorch 自带的实现对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
from bpe_tokenizer import main_idea

ROOT = Path(__file__).resolve().parents[2]


def test_matches_torch_softmax() -> None:
    x = torch.randn(4, 7, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(main_idea(x), torch.softmax(x, dim=-1))


def test_rows_sum_to_one_even_for_large_inputs() -> None:
    x = torch.tensor([[1000.0, 0.0, -1000.0]])
    y = main_idea(x)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y.sum(dim=-1), torch.ones(1))


def test_runs_on_its_own() -> None:
    proc = subprocess.run([sys.executable, "code/bpe_tokenizer.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
