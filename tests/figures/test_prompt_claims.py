"""The arithmetic the prompt-engineering article states (the power bank example) is recomputed here."""

from __future__ import annotations

import re
from pathlib import Path

ARTICLE = Path(__file__).resolve().parents[2] / "docs" / "articles" / "prompt-engineering.md"
PHONE_VOLTS = 3.85  # a phone cell's nominal voltage (3.7–3.87 V); 5 Ah × 3.85 V ≈ 19 Wh


def _text() -> str:
    return ARTICLE.read_text(encoding="utf-8")


def test_energy_of_the_power_bank() -> None:
    m = re.search(r"(\d+) Ah × ([\d.]+) V = (\d+) Wh", _text())
    assert m, "the sentence with the power bank's energy is gone"
    ah, volts, wh = float(m.group(1)), float(m.group(2)), float(m.group(3))
    assert round(ah * volts) == wh
    assert f"{int(ah * 1000)} mAh" in _text()


def test_number_of_charges() -> None:
    text = _text()
    m = re.search(
        r"手机电池约 (\d+) Wh，再扣掉升压和充电的损耗"
        r"（这里按真正充进手机的占 (\d+)%–(\d+)% 估算），是 ([\d.]+)–(\d+) 次",
        text,
    )
    assert m, "the sentence with the number of charges is gone"
    phone_wh, lo_eff, hi_eff, lo, hi = (float(g) for g in m.groups())
    assert round(5.0 * PHONE_VOLTS) == phone_wh  # a 5000 mAh phone
    bank_wh = 20.0 * 3.7
    low, high = bank_wh * lo_eff / 100 / phone_wh, bank_wh * hi_eff / 100 / phone_wh
    assert abs(low - lo) <= 0.05 and high <= hi + 0.05 and high > lo, (low, high)
    assert "充电约 2.5–3 次" in text and "充 2.5 到 3 次" in text  # the example input and output say the same
    assert bank_wh < 100 and "低于 100 Wh" in text  # the 100 Wh cabin limit
