"""code/tokenizer.py: the character tokenizer with byte fallback round-trips any UTF-8 text.

hypothesis is not installed in the project's virtualenv, so the property test draws its strings from a seeded
random generator: code points from every plane (surrogates excluded: they are not UTF-8), weighted towards the
cases that break tokenizers (emoji and ZWJ sequences, CJK extension B and later, combining marks, control
characters, the empty string).
"""

from __future__ import annotations

import random

import pytest
import torch
from gpt_from_scratch import MIN_COUNT, load_poems, split_poems
from tokenizer import N_BYTES, CharTokenizer

# Ranges the random strings draw from: (first, last, weight)
RANGES = [
    (0x00, 0x7F, 3),  # ASCII, control characters included
    (0x80, 0x7FF, 2),  # two-byte UTF-8: Latin accents, Greek, Cyrillic, Hebrew, Arabic
    (0x300, 0x36F, 2),  # combining diacritical marks
    (0x4E00, 0x9FFF, 4),  # CJK unified ideographs (mostly in the corpus vocabulary)
    (0x3000, 0x303F, 1),  # CJK punctuation
    (0xE000, 0xF8FF, 1),  # private use area
    (0xFE00, 0xFE0F, 1),  # variation selectors
    (0x1F300, 0x1FAFF, 2),  # emoji
    (0x200D, 0x200D, 1),  # zero-width joiner
    (0x20000, 0x2A6DF, 2),  # CJK extension B (four-byte UTF-8)
    (0x30000, 0x3134F, 1),  # CJK extension G
    (0xE0000, 0x10FFFF, 1),  # tags, supplementary private use, up to the last code point
]


def random_text(rng: random.Random, max_len: int = 40) -> str:
    ranges = [r[:2] for r in RANGES]
    weights = [r[2] for r in RANGES]
    chars = []
    for _ in range(rng.randint(0, max_len)):
        lo, hi = rng.choices(ranges, weights)[0]
        chars.append(chr(rng.randint(lo, hi)))
    return "".join(chars)


@pytest.fixture(scope="module")
def corpus_tokenizer() -> CharTokenizer:
    train_text, _ = split_poems(load_poems())
    return CharTokenizer.train(train_text, min_count=MIN_COUNT)


SPECIAL = ["", "\n", "\x00", "a", "é", "é", "👩‍👩‍👧‍👦", "🇨🇳", "𠀀𪛖", "\U0010ffff", "白日依山盡，黃河入海流。",
           "床前明月光 🌕 café naïve 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u0301\u0301\u0301", "\r\n\t"]


@pytest.mark.parametrize("text", SPECIAL, ids=[repr(s)[:20] for s in SPECIAL])
def test_round_trip_special_cases(corpus_tokenizer: CharTokenizer, text: str) -> None:
    assert corpus_tokenizer.decode(corpus_tokenizer.encode(text)) == text


@pytest.mark.parametrize("vocab", ["corpus", "tiny", "empty"])
def test_round_trip_random_unicode(corpus_tokenizer: CharTokenizer, vocab: str) -> None:
    """2000 random strings per vocabulary decode back to themselves exactly."""
    tok = {"corpus": corpus_tokenizer, "tiny": CharTokenizer(list("山水，。\né")), "empty": CharTokenizer([])}[vocab]
    rng = random.Random(20261130)
    for _ in range(2000):
        text = random_text(rng)
        ids = tok.encode(text)
        assert all(0 <= i < tok.vocab_size for i in ids)
        assert tok.decode(ids) == text, repr(text)
        assert tok.decode(torch.tensor(ids, dtype=torch.long)) == text


def test_unknown_characters_become_their_utf8_bytes(corpus_tokenizer: CharTokenizer) -> None:
    rng = random.Random(5)
    for _ in range(500):
        text = random_text(rng)
        expected: list[int] = []
        for c in text:  # independent of the implementation: vocabulary lookup, else Python's own UTF-8 encoder
            expected += [corpus_tokenizer.chars.index(c) + N_BYTES] if c in corpus_tokenizer.chars else list(c.encode())
        assert corpus_tokenizer.encode(text) == expected


def test_known_characters_are_one_token_each(corpus_tokenizer: CharTokenizer) -> None:
    poem = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"
    ids = corpus_tokenizer.encode(poem)
    assert len(ids) == len(poem) and min(ids) >= N_BYTES
    assert [corpus_tokenizer.token_text(i) for i in ids] == list(poem)


def test_vocabulary_is_frequent_characters_by_count() -> None:
    text = "aaab bc\n" * 3 + "z"  # a: 9, b: 6, space, c and newline: 3 each, z: once
    tok = CharTokenizer.train(text, min_count=2)
    assert tok.chars == ["a", "b", "\n", " ", "c"]  # by count, ties by code point: U+000A, U+0020, U+0063
    assert "z" not in tok.chars and tok.encode("z") == [ord("z")]
    assert tok.vocab_size == N_BYTES + 5


def test_decoding_invalid_bytes_matches_python() -> None:
    tok = CharTokenizer(["山"])
    rng = random.Random(3)
    for _ in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
        assert tok.decode(list(raw)) == raw.decode("utf-8", errors="replace")
    assert tok.decode([0xE5, 0xB1, N_BYTES, 0xB1]) == "\ufffd山\ufffd"  # a broken run ends at a character token


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda t: t.encode(b"abc"), "text"),
        (lambda t: t.encode("a\ud800b"), "text"),
        (lambda t: t.decode([1, 2, 10**6]), "ids"),
        (lambda t: t.decode([-1]), "ids"),
        (lambda t: t.decode(torch.zeros(2, 3, dtype=torch.long)), "ids"),
        (lambda t: t.decode(torch.zeros(3)), "ids"),
        (lambda t: t.decode("abc"), "ids"),
        (lambda t: CharTokenizer(["山", "山"]), "chars"),
        (lambda t: CharTokenizer(["山水"]), "chars"),
        (lambda t: CharTokenizer("山水"), "chars"),
        (lambda t: CharTokenizer.train("abc", min_count=0), "min_count"),
    ],
)
def test_errors_name_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call(CharTokenizer(["山"]))


@pytest.mark.parametrize("ids", [5, None, 3.0, {1, 2}, {1: "a"}])
def test_decode_wants_an_ordered_sequence_of_ids(ids: object) -> None:
    """A bare number, None or an unordered collection is a clear error (a bare int was a TypeError, a set decoded in
    whatever order it iterates)."""
    tok = CharTokenizer.train("春眠不覺曉", min_count=1)
    with pytest.raises(ValueError, match="有顺序的词元编号序列"):
        tok.decode(ids)
