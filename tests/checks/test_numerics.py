"""llmsite pins PyTorch's numeric kernels (llmsite/numerics.py): the same bits on every x86-64 machine.

Without it, llama-vs-gpt's seed-1 validation loss was 6.15928 on an AVX2 machine and 6.15787 on an AVX-512 one,
and the Llama article's claims test failed on the second (2026-12-03). Each case runs in a fresh interpreter,
since the variables act only before torch loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llmsite import numerics
from llmsite.cache import key

from ..conftest import ROOT

PROBE = ("import json, os, llmsite, torch\n"
         "from llmsite.cache import key\n"
         "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(),\n"
         "                  'env': {k: os.environ.get(k) for k in llmsite.numerics.PINNED},\n"
         "                  'key': key({'x': '1'}).digest}))\n")

pytestmark = pytest.mark.skipif(not numerics.applies(), reason="the kernels are pinned on x86-64 only")


def probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in numerics.PINNED}
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(proc.stdout)


def test_importing_llmsite_pins_avx2_before_torch_loads() -> None:
    found = probe()
    assert found["env"] == numerics.PINNED
    assert found["capability"] == "AVX2"  # every x86-64 machine this site builds on has AVX2


def test_a_choice_of_the_users_is_kept_and_keys_the_cache_apart() -> None:
    pinned, default = probe(), probe(ATEN_CPU_CAPABILITY="default")
    assert default["env"]["ATEN_CPU_CAPABILITY"] == "default" and default["capability"] == "DEFAULT"
    assert default["key"] != pinned["key"], "a result computed under other kernels must not be read from the cache"


def test_the_fingerprint_is_in_every_key() -> None:
    assert key({"x": "1"}).inputs["numerics"] == numerics.fingerprint()
    assert "ATEN_CPU_CAPABILITY=avx2" in numerics.fingerprint()
