"""Compare two results value by value: what a build artifact holds, however it was computed.

Two runs of the same computation give equal values; their ``torch.save`` files can still differ in how pickle shares
repeated objects (a string computed once in one process is written once; the same string read back from two files
is written twice). So "computed in one process" and "computed in parts, read back" are compared here by value:
containers item by item, tensors with ``torch.equal`` (dtype and shape too), everything else with ``==``.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

import torch


def assert_same_values(a: Any, b: Any, where: str = "result") -> None:
    if is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), (where, type(a), type(b))
        assert_same_values(asdict(a), asdict(b), where)
    elif isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (where, list(a), list(b) if isinstance(b, dict) else b)
        for key in a:
            assert_same_values(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (where, type(a), type(b))
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_values(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, (where, a, b)
