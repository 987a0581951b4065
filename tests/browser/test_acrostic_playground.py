"""The acrostic playground (build artifact ``acrostic-gpt``) on the LoRA article, in headless Chromium.

Expected poems come from PyTorch on the same float16-dequantized weights (``tests/playground/reference.py``):
plain greedy decoding with ``kv_cache.generate`` and forced decoding with ``acrostic.write_forced_acrostic``, for
held-out head sets of the fine-tuning result; the verdict the page prints is compared with ``head_hits`` and
``well_formed`` on that poem. Then bad inputs (message, no generation, nothing injected, a valid input afterwards
works), the keyboard, axe-core at 375 px in both palettes, and screenshots for a look by eye.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

from ..conftest import guard_timeouts, watched_page
from ..playground import reference
from .test_accessibility import BLOCKING, SCHEMES, axe_run, describe

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("one_thread")]
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "code") not in sys.path:
    sys.path.insert(0, str(ROOT / "code"))

from acrostic import acrostic_prompt, head_hits, well_formed, write_forced_acrostic, written_heads  # noqa: E402
from kv_cache import generate  # noqa: E402

LORA = "articles/lora-finetune/"
NAME = "acrostic-gpt"
BOX = f"#pg-{NAME}"
READY = f"{BOX} .llm-pg__app"
INPUT = f"{BOX} input.llm-pg__heads"
FORCED = f"{BOX} input[id$=-forced]"
ERROR = f"{BOX} .llm-pg__error"


@pytest.fixture(scope="module")
def ref(built_site):
    return reference.load(built_site.dir, NAME)


@pytest.fixture(scope="module")
def held_heads(trained_artifacts):
    from lora_train import finetuning

    heads = finetuning(verbose=False)["heads"]  # held out: never seen in fine-tuning
    return heads[:: len(heads) // 5][:5]


def open_article(page, site_server: str) -> None:
    guard_timeouts(page)
    page.goto(site_server + LORA)
    page.wait_for_selector(f"{BOX} .llm-pg__load")
    page.click(f"{BOX} .llm-pg__load")
    page.wait_for_selector(READY)


def button(page, label: str):
    return page.locator(f"{BOX} .llm-pg__buttons button", has_text=label)


def wait_idle(page) -> None:
    page.wait_for_function(f"() => document.querySelector('{BOX}').getAttribute('data-llm-pg-state') === 'idle'")


def session(page):
    return page.evaluate(f"""() => {{ const s = document.querySelector('{BOX}').llmPlayground.session();
      return s && {{tokens: s.tokens, prompt: s.prompt, made: s.made}}; }}""")


def write(page, heads: str, forced: bool) -> list[int]:
    page.fill(INPUT, heads)
    page.set_checked(FORCED, forced)
    button(page, "生成").click()
    wait_idle(page)
    s = session(page)
    return s["tokens"][s["prompt"]:]


def pytorch_poems(model, tok, heads: str) -> tuple[list[int], list[int]]:
    prompt = torch.tensor([tok.encode(acrostic_prompt(heads))])
    plain = generate(model, prompt, 25).tokens[0, prompt.size(1):].tolist()
    return plain, write_forced_acrostic(model, tok, heads).tokens


def check_verdict(page, heads: str, poem: str) -> None:
    lines = page.locator(f"{BOX} .llm-pg__lines li").all_inner_texts()
    assert len(lines) == len(heads)
    got = written_heads(poem)
    for i, (h, line) in enumerate(zip(heads, lines, strict=True)):
        hit = i < len(got) and got[i] == h
        assert line.startswith(f"{h} {'✓' if hit else '✗'}"), (poem, line)
    summary = page.inner_text(f"{BOX} .llm-pg__summary")
    assert f"4 句中对上了 {head_hits(heads, poem)} 句" in summary, (poem, summary)
    assert ("格式是五言四句" if well_formed(poem) else "格式不是五言四句") in summary, (poem, summary)


def test_greedy_and_forced_poems_equal_pytorch_and_the_verdict_agrees(page, site_server, ref, held_heads):
    header, model, tok = ref
    assert header["task"]["example"] == "春夏秋冬"
    open_article(page, site_server)
    assert page.input_value(INPUT) == "春夏秋冬"
    assert page.is_checked(f"{BOX} input[id$=-greedy]"), "greedy by default, as the article evaluates"
    assert page.input_value(f"{BOX} input[id$=-count]") == "25"
    formed = hits = 0
    for heads in [*held_heads, "春夏秋冬"]:
        plain, forced = pytorch_poems(model, tok, heads)
        for mode, expected in (("plain", plain), ("forced", forced)):
            got = write(page, heads, mode == "forced")
            assert got == expected, f"{heads} {mode}: {tok.decode(got)!r} vs {tok.decode(expected)!r}"
            poem = tok.decode(expected).split("\n")[0]
            check_verdict(page, heads, poem)
            formed += well_formed(poem)
            hits += head_hits(heads, poem)
        assert page.inner_text(f"{BOX} [role=status]").startswith("写完了，写了 25 个词元")
    assert formed > 0 and hits > 0, "the verdicts compared include a well-formed poem and a hit"


def test_the_forced_step_is_marked_with_the_models_own_probability(page, site_server, ref, held_heads):
    _, model, tok = ref
    heads = held_heads[0]
    out = write_forced_acrostic(model, tok, heads)
    open_article(page, site_server)
    page.fill(INPUT, heads)
    page.check(FORCED)
    for step in range(out.forced_steps[1] + 1):
        button(page, "单步").click()
        forced_row = page.locator(f"{BOX} .llm-pg__table tr.is-forced")
        note = page.inner_text(f"{BOX} .llm-pg__chart .llm-pg__hint")
        if step in out.forced_steps:
            k = out.forced_steps.index(step)
            assert forced_row.count() == 1 and "◀ 强制" in forced_row.inner_text()
            assert forced_row.locator(".llm-pg__tok").inner_text() == heads[k]
            shown = float(re.search(r"模型自己给它的概率是 (\S+?)。", note).group(1))
            p = out.forced_probs[k]
            assert abs(shown - p) <= (5e-4 if p >= 1e-3 else 0.05 * p + 1e-12), (shown, p)
        else:
            assert forced_row.count() == 0 and "强制" not in note
    assert session(page)["tokens"][-(out.forced_steps[1] + 1):] == out.tokens[: out.forced_steps[1] + 1]
    hint = page.inner_text(f"{BOX} #" + page.get_attribute(FORCED, "aria-describedby"))
    assert "不是模型学会的" in hint


BAD = [
    ("春夏秋", "恰好 4 个字，现在是 3 个"),
    ("春夏秋冬夏", "恰好 4 个字，现在是 5 个"),
    ("<img src=x onerror=alert(1)>", "恰好 4 个字"),
    ("春夏秋头", "「头」 不在模型的词表里"),
    ("春，秋冬", "是标点"),
    ("", "现在是空的"),
]


def test_bad_inputs_give_a_message_and_no_generation(page, site_server, ref):
    _, _, tok = ref
    assert "头" not in tok.char_to_id
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_article(page, site_server)
    described = page.get_attribute(INPUT, "aria-describedby").split()
    error_id = page.get_attribute(ERROR, "id")
    assert error_id in described and page.get_attribute(ERROR, "role") == "alert"
    button(page, "生成").click()  # first a valid poem, so "no generation" also means the old one is gone
    wait_idle(page)
    assert session(page)["made"] == 25
    for raw, fragment in BAD:
        page.fill(INPUT, raw)
        button(page, ["生成", "单步"][len(raw) % 2]).click()
        wait_idle(page)
        assert fragment in page.inner_text(ERROR), (raw, page.inner_text(ERROR))
        assert page.locator(ERROR).is_visible()
        assert page.get_attribute(INPUT, "aria-invalid") == "true"
        assert session(page) is None and page.locator(f"{BOX} .llm-pg__gen").count() == 0, raw
        assert page.locator(f"{BOX} .llm-pg__verdict").inner_text() == ""
        assert page.locator(f"{BOX} img").count() == 0
    page.fill(INPUT, "<b>春</b>夏")
    button(page, "生成").click()
    assert page.locator(f"{BOX} b").count() == 0 and "<b>" not in page.inner_html(ERROR)
    page.fill(INPUT, "春夏秋冬")
    page.press(INPUT, "Enter")  # Enter in the box generates
    wait_idle(page)
    assert session(page)["made"] == 25 and page.inner_text(ERROR) == ""
    assert page.get_attribute(INPUT, "aria-invalid") is None
    assert not dialogs


def test_keyboard_only(page, site_server):
    guard_timeouts(page)
    page.goto(site_server + LORA)
    page.wait_for_selector(f"{BOX} .llm-pg__load")
    page.focus(f"{BOX} .llm-pg__load")
    page.keyboard.press("Enter")
    page.wait_for_selector(READY)
    assert page.evaluate("document.activeElement.classList.contains('llm-pg__heads')"), "focus moves to the heads"
    page.keyboard.press("Control+A")
    page.keyboard.type("江山風月")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id").endswith("-forced")
    page.keyboard.press("Space")
    assert page.is_checked(FORCED)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "生成"
    page.keyboard.press("Enter")
    wait_idle(page)
    assert page.inner_text(f"{BOX} .llm-pg__summary").startswith("4 句中对上了 4 句")
    unlabelled = page.evaluate(f"""() => [...document.querySelectorAll('{BOX} :is(textarea, input, select)')]
      .filter(e => !(e.labels && e.labels.length)).map(e => e.id)""")
    assert not unlabelled, unlabelled
    labels = page.evaluate(f"""() => [...document.querySelectorAll(
      '{BOX} :is(input.llm-pg__heads, input[id$=-forced])')].map(e => e.labels[0].textContent)""")
    assert labels == ["藏头（4 个字）", "强制句首（受约束的解码）"]


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_phone_axe_and_screenshot(browser, site_server, built_site, scheme, record_artifact, tmp_path):
    with watched_page(browser, built_site, viewport={"width": 375, "height": 812}, has_touch=True, is_mobile=True,
                      color_scheme="dark" if scheme == "dark" else "light") as page:
        open_article(page, site_server)
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
        page.check(FORCED)
        button(page, "生成").tap()
        wait_idle(page)
        page.locator(BOX).scroll_into_view_if_needed()
        path = tmp_path / f"acrostic-{scheme}.png"
        page.locator(BOX).screenshot(path=str(path))
        record_artifact(f"acrostic playground, forced, 375 px ({scheme})", path)
        blocking = [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
        page.fill(INPUT, "春夏")
        button(page, "生成").tap()
        path = tmp_path / f"acrostic-error-{scheme}.png"
        page.evaluate(f"document.querySelector('{BOX} .llm-pg__form').scrollIntoView({{block: 'center'}})")
        page.locator(f"{BOX} .llm-pg__form").screenshot(path=str(path))
        record_artifact(f"acrostic playground, bad input, 375 px ({scheme})", path)
        blocking += [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
        assert not blocking, "\n".join(blocking)
        wide = page.evaluate(f"""() => {{ const b = document.querySelector('{BOX}');
          return [b.scrollWidth, b.clientWidth, document.documentElement.scrollWidth]; }}""")
        assert wide[0] <= wide[1] and wide[2] <= 375, wide
