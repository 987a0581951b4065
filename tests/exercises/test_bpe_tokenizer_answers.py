"""The computed answers of the BPE article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked with its ``check``. Nothing here
calls the answer functions or the figure module: byte counts come from Python's UTF-8 encoder, the conversion to bits
is written out, the segmentation is done by the encoder written in ``tests/figures/test_bpe_claims.py`` (pieces cut
character by character, merges applied by rank) and cross-checked with Hugging Face ``tokenizers``, and the prefix
property is checked on HF's own ``BpeTrainer``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CODE = Path(__file__).resolve().parents[2] / "code"
if str(CODE) not in sys.path:  # tests/code/test_bpe.py imports code/bpe.py by its name
    sys.path.insert(0, str(CODE))

from tests.code.test_bpe import hf_merges, hf_tokenizer  # noqa: E402
from tests.figures import test_bpe_claims as bpe_claims  # noqa: E402

from .test_answers import Value, check  # noqa: E402

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

POEM = bpe_claims.POEM


def bytes_only_poem_tokens() -> int:
    return len((POEM + "\n").encode("utf-8"))


def bpc_from_nats() -> float:
    return 6.0 * 99 / 100 / math.log(2)


def poem_tokens_at_3009() -> int:
    ours = len(bpe_claims.encode_bpe(POEM + "\n"))
    hf = len(bpe_claims.hf_at(3009).encode(POEM + "\n").ids)  # HF breaks the first ties differently: same count
    assert ours == hf, (ours, hf)
    return ours


def prefix_same_as_training() -> str:
    text = bpe_claims.train_text()
    direct = hf_merges(hf_tokenizer(text, 1000))
    assert len(direct) == 744
    return "完全相同" if direct == hf_merges(bpe_claims.hf_full())[:744] else "不同"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "bytes-only-poem-tokens": bytes_only_poem_tokens,
    "bpc-from-nats": bpc_from_nats,
    "poem-tokens-at-3009": poem_tokens_at_3009,
    "prefix-same-as-training": prefix_same_as_training,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
