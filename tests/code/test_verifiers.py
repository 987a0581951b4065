"""code/verifiers.py: the rhyme groups against readings written out by hand, the verdicts on real and broken poems,
the diversity measures, the Wilson interval against scipy's, and the error of a difference against simulated draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from verifiers import (
    RHYME_GROUPS,
    Verdict,
    char_diversity,
    difference_error,
    distinct_share,
    line_ends,
    rhyme_group,
    rhymes,
    verify,
    wilson_interval,
)

SPRING = "春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。"  # 孟浩然《春曉》: 鳥 niǎo / 少 shǎo


def test_every_final_is_in_exactly_one_group() -> None:
    finals = [f for group in RHYME_GROUPS.values() for f in group]
    assert len(finals) == len(set(finals))
    assert len(RHYME_GROUPS) == 13


@pytest.mark.parametrize(("char", "group"), [
    ("鳥", "遥条"), ("少", "遥条"),  # niao, shao
    ("知", "一七"), ("衣", "一七"), ("魚", "一七"),  # zhi (-i), yi, yu (ü): one group in the thirteen
    ("中", "中东"), ("風", "中东"),  # zhong, feng
    ("春", "人辰"), ("新", "人辰"),  # chun (uen), xin
    ("歸", "灰堆"),  # gui (uei)
    ("花", "发花"), ("斜", "乜斜"),  # hua, xie: rhymed in Tang (麻韵), not today
])
def test_rhyme_group_of_known_readings(char: str, group: str) -> None:
    assert rhyme_group(char) == group


def test_non_hanzi_have_no_group() -> None:
    assert rhyme_group("，") is None
    assert rhyme_group("a") is None


def test_a_tang_quatrain_rhymes_and_a_modern_split_does_not() -> None:
    assert line_ends(SPRING) == ["曉", "鳥", "聲", "少"]
    assert rhymes(SPRING)
    # lines 2 and 4 end in 歸 and 衣: one rhyme (微韵) in Middle Chinese, gui and yi today
    split = "山中一夜雨，遊子幾時歸。莫問天涯事，風吹白布衣。"
    assert not rhymes(split)


def test_verify_counts_heads_form_and_rhyme() -> None:
    assert verify("春處夜花", SPRING) == Verdict(form=True, heads=4, rhyme=True)
    assert verify("春處夜花", SPRING).all_heads
    wrong_heads = verify("秋處夜花", SPRING)
    assert wrong_heads.heads == 3 and not wrong_heads.all_heads
    short = verify("春處夜花", "春眠不覺曉，處處聞啼鳥。\n夜來")
    assert short == Verdict(form=False, heads=2, rhyme=False)


def test_diversity_measures() -> None:
    assert distinct_share([SPRING, SPRING, SPRING, "x"]) == 0.5
    assert char_diversity(["山山山山", "水水山山"]) == 2 / 8


def test_wilson_interval_equals_scipy() -> None:
    for (k, n), level in zip([(0, 10), (1, 10), (5, 10), (10, 10), (206, 342), (7, 200), (1, 1)],
                             [0.95, 0.95, 0.9, 0.95, 0.99, 0.95, 0.5], strict=True):
        ours = wilson_interval(k, n, level)
        ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        assert ours == pytest.approx((ci.low, ci.high), abs=1e-9), (k, n)


def test_difference_error_by_hand() -> None:
    # 0.5 ± 0.05 each (sqrt(0.25 / 100)); two independent ones: 0.05 · √2
    assert difference_error((50, 100), (50, 100)) == pytest.approx(0.05 * 2 ** 0.5, rel=1e-12)
    assert difference_error((0, 40), (40, 40)) == 0.0  # no spread in either sample
    assert difference_error((3, 10), (120, 400)) == difference_error((120, 400), (3, 10))


@pytest.mark.parametrize(("a", "b"), [((60, 200), (30, 50)), ((547, 1368), (684, 1368))])
def test_difference_error_matches_the_spread_of_simulated_differences(a: tuple[int, int],
                                                                      b: tuple[int, int]) -> None:
    """Draw the two samples 200,000 times at the measured rates: the spread of the difference is the formula's.
    (The standard deviation of 200,000 draws is itself off by about 0.16 %; the bound is 1 %.)"""
    rng = np.random.default_rng(0)
    (k0, n0), (k1, n1) = a, b
    draws = rng.binomial(n1, k1 / n1, 200_000) / n1 - rng.binomial(n0, k0 / n0, 200_000) / n0
    assert difference_error(a, b) == pytest.approx(draws.std(), rel=0.01)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: rhyme_group("春天"), "一个字符"),
    (lambda: rhyme_group(5), "一个字符"),
    (lambda: distinct_share(SPRING), "列表"),
    (lambda: distinct_share([]), "空列表"),
    (lambda: distinct_share([SPRING, 3]), r"texts\[1\]"),
    (lambda: char_diversity(["abc"]), "一个汉字也没有"),
    (lambda: wilson_interval(3, 0), "正整数"),
    (lambda: wilson_interval(11, 10), "0 到 n"),
    (lambda: wilson_interval(0.5, 10), "整数"),
    (lambda: wilson_interval(True, 10), "整数"),
    (lambda: wilson_interval(1, 10, confidence=95), "0 和 1 之间"),
    (lambda: difference_error([3, 10], (3, 10)), "a 应为"),
    (lambda: difference_error((3, 10), (3, 10, 1)), "b 应为"),
    (lambda: difference_error((3, 10), (11, 10)), "0 到 n"),
    (lambda: difference_error((3, 0), (1, 10)), "正整数"),
    (lambda: verify("春夏", SPRING), "heads"),
    (lambda: verify("春處夜花", None), "text"),
])
def test_bad_input_gets_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
