"""The arithmetic the prompt-engineering article states (the power bank example), recomputed here.

The article has no figures and no code; its one computation is the power bank's energy and how many times it charges
a phone. The inputs are the ones the sentences state (20000 mAh at 3.7 V, a 5000 mAh phone, 65 % to 75 % of the
energy reaching it); the phone cell's nominal voltage, which the article leaves out, is written here. The energy and
the naive count are exact products, so they are asserted exactly; the charges are rounded as written (half a unit:
arithmetic, nothing a CPU changes).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from . import claims
from .claims import Claim, approx, rounded

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = ROOT / "docs" / "articles" / "prompt-engineering.md"
SOURCES = claims.Sources(ROOT, ARTICLE)

PHONE_VOLTS = 3.85  # a phone cell's nominal voltage (3.7–3.87 V); 5 Ah × 3.85 V ≈ 19 Wh
# The example's inputs, as its sentences state them: a 20000 mAh bank of 3.7 V cells, a 5000 mAh phone.
BANK_MAH, BANK_VOLTS, PHONE_MAH = 20000, 3.7, 5000
CABIN_LIMIT_WH = 100  # carry-on limit for power banks (CAAC's rule, which the article cites)
LOSS_SHARES = (65, 75)  # per cent of the bank's energy that reaches the phone, as the article assumes


def bank_wh() -> float:
    return BANK_MAH / 1000 * BANK_VOLTS


def phone_wh() -> float:
    return PHONE_MAH / 1000 * PHONE_VOLTS


def charges_after_losses() -> tuple[float, float]:
    return tuple(bank_wh() * share / 100 / phone_wh() for share in LOSS_SHARES)


def energy(stated: list[Decimal]) -> str | None:
    """「20000 mAh 并不等于能给 5000 mAh 的手机充 4 次：充电宝的能量是 20 Ah × 3.7 V = 74 Wh」."""
    bank_mah, phone_mah, naive, ah, volts, wh = stated
    if (bank_mah, phone_mah, ah, volts) != (BANK_MAH, PHONE_MAH, Decimal(BANK_MAH) / 1000, Decimal(str(BANK_VOLTS))):
        return f"states {bank_mah} mAh = {ah} Ah at {volts} V and a {phone_mah} mAh phone: not the example's inputs"
    return approx(lambda: BANK_MAH / PHONE_MAH, bank_wh, exact=True)([naive, wh])


def charges(stated: list[Decimal]) -> str | None:
    """「手机电池约 19 Wh ……（按真正充进手机的占 65%–75% 估算），是 2.5–3 次」: the 74 Wh bank over the phone."""
    phone, low_share, high_share, low, high = stated
    if (low_share, high_share) != LOSS_SHARES:
        return f"states {low_share}%–{high_share}%, the recomputation assumes {LOSS_SHARES}"
    return rounded(phone_wh, *(lambda i=i: charges_after_losses()[i] for i in (0, 1)))([phone, low, high])


CLAIMS = [
    Claim("naive charges and the bank's energy", "article",
          r"(\d+) mAh 并不等于能给 (\d+) mAh 的手机充 (\d+) 次："
          r"充电宝的能量是 (\d+) Ah × ([\d.]+) V = (\d+) Wh", energy),
    Claim("charges after losses", "article",
          r"手机电池约 (\d+) Wh，再扣掉升压和充电的损耗"
          r"（这里按真正充进手机的占 (\d+)%–(\d+)% 估算），是 ([\d.]+)–(\d+) 次",
          charges),
    # the example's input and output restate the same facts
    Claim("the example's bank", "article", r"容量 (\d+) mAh（电芯 ([\d.]+) V，额定能量 (\d+) Wh）",
          approx(lambda: BANK_MAH, lambda: BANK_VOLTS, bank_wh, exact=True)),
    Claim("the example's charges", "article", r"能给电池容量 (\d+) mAh 的手机充电约 ([\d.]+)–(\d+) 次",
          lambda s: approx(lambda: PHONE_MAH, exact=True)(s[:1]) or rounded(
              *(lambda i=i: charges_after_losses()[i] for i in (0, 1)))(s[1:])),
    Claim("the example output's charges", "article",
          r"这款 (\d+) mAh 的充电宝，能给 (\d+) mAh 的手机充 ([\d.]+) 到 (\d+) 次",
          lambda s: approx(lambda: BANK_MAH, lambda: PHONE_MAH, exact=True)(s[:2]) or rounded(
              *(lambda i=i: charges_after_losses()[i] for i in (0, 1)))(s[2:])),
    # the output states only what the prompt's product information gives (「不要自己添加参数或承诺」): under 100 Wh
    Claim("under the cabin limit", "article", r"额定能量 (\d+) Wh，不到 (\d+) Wh，放进随身包",
          lambda s: approx(bank_wh, lambda: CABIN_LIMIT_WH, exact=True)(s)
          or (None if bank_wh() < CABIN_LIMIT_WH else f"{bank_wh()} Wh is not under {CABIN_LIMIT_WH} Wh")),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# Numbers in the prose that are not results of a computation, each with its reason.
NOT_COMPUTED: dict[str, str] = {
    "10 条中 6 条": "the prompt log's table is an illustration (the article says 数字是示意), not a measurement",
    "8 条正确": "the prompt log's table is an illustration (the article says 数字是示意), not a measurement",
    "9 条正确": "the prompt log's table is an illustration (the article says 数字是示意), not a measurement",
    "GPT-4.1": "a model's name (OpenAI's GPT-4.1 prompting guide, which the sentence cites)",
}


def block(title: str) -> str:
    """The first fenced block of the article whose title is ``title``, without its fences."""
    text = ARTICLE.read_text(encoding="utf-8")
    start = text.index(f'title="{title}"\n') + len(f'title="{title}"\n')
    return text[start:text.index("\n```", start)]


def test_the_example_output_keeps_its_own_prompt() -> None:
    """The power bank's expected output is held to the prompt above it: at most 120 characters (spaces not counted)
    in two paragraphs, none of the words it forbids, and no figure that the product information does not give."""
    prompt, output = block("改后"), block("期望的输出（一种合格的写法）")
    limit = int(re.search(r"不超过 (\d+) 字，分两段", prompt)[1])
    assert len("".join(output.split())) <= limit
    assert len([p for p in output.split("\n\n") if p.strip()]) == 2
    forbidden = re.findall(r"「([^」]+)」", prompt.split("语气亲切", 1)[1].split("\n", 1)[0])
    assert forbidden == ["史上最强", "颠覆"]
    assert not [w for w in forbidden if w in output]
    given = set(re.findall(r"\d+(?:\.\d+)?", prompt.split("读者", 1)[0]))
    assert set(re.findall(r"\d+(?:\.\d+)?", output)) - given == set()
