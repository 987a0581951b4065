"""One set of numeric kernels on every x86-64 machine, so trained models and computed figures have the same bits.

PyTorch and MKL pick their vector kernels by the processor: the same training run gave a validation loss of 6.15928
with AVX2 kernels and 6.15787 with AVX-512 ones (llama-vs-gpt, seed 1, 75 steps), enough to change a number an
article states. ``pin()`` asks for the AVX2 kernels everywhere (every x86-64 processor of the last ten years has
them): ATen's dispatch, MKL's conditional numerical reproducibility, oneDNN's instruction set. The variables act
only when set before torch loads, so ``llmsite`` calls ``pin()`` when it is imported (the build, the CLI, the
tests) and every process it starts (artifact trainers, figure workers, lab kernels) inherits them. A value set
by the user is kept, and ``fingerprint()`` enters every cache key, so a different choice never reads a cached
result computed under another.
"""

from __future__ import annotations

import os
import platform

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
X86 = ("x86_64", "amd64", "i386", "i686")


def applies() -> bool:
    return platform.machine().lower() in X86


def pin() -> None:
    """Set the pinned variables that are not set yet (x86 only; elsewhere the kernels are left as they are)."""
    if applies():
        for name, value in PINNED.items():
            os.environ.setdefault(name, value)


def fingerprint() -> str:
    """The machine kind and the kernel choice in force, e.g. ``x86_64 ATEN_CPU_CAPABILITY=avx2 ...``."""
    parts = [platform.machine().lower() or "unknown"]
    parts += [f"{name}={os.environ.get(name, '')}" for name in PINNED]
    return " ".join(parts)
