"""The trained Tang-poem GPT running in the browser (docs/assets/javascripts/playground.js), in headless Chromium.

Every number the browser computes is compared with ``code/`` on the same (dequantized) weights: the logits with
TinyTransformer, the KV-cache step with the browser's own full recompute, the greedy continuations with
``kv_cache.generate``, the decoding filters with ``sampling.py``. Expected values always come from PyTorch here,
never from the page. The comparisons run in one browser page and a few ``page.evaluate`` calls.
Then the page itself: nothing is fetched before the reader presses the button, generate / step / stop, the notes
for an empty or a too long prompt, a corrupted weights file, keyboard only, a 375 px phone with touch, axe-core
in both palettes, reduced motion, instant navigation and no JavaScript.
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch

from ..conftest import PageLog, guard_timeouts, wait_for_path, watched_page
from ..playground import reference
from .test_accessibility import BLOCKING, SCHEMES, axe_run, describe

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("one_thread")]
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "code") not in sys.path:
    sys.path.insert(0, str(ROOT / "code"))

from kv_cache import generate  # noqa: E402
from sampling import apply_repetition_penalty, next_token_probs  # noqa: E402

GPT = "articles/gpt-from-scratch/"
DECODING = "articles/decoding/"
BOX = "#pg-tang-gpt"
READY = f"{BOX} .llm-pg__app"
FIRST_LOAD_BUDGET = 5_000  # bytes gzip the article may grow by before the reader presses the button
SCRIPT_BUDGET = 30_000  # bytes gzip of playground.js

# Prompts for the forward pass: lines of poems (in the training set or not), characters outside the vocabulary
# (byte fallback: an emoji, Latin letters with accents, a CJK extension character, full-width letters), a newline,
# and one exactly at the context length (built in the test from the model's max_len).
PROMPTS = [
    "\n", "床前", "白日依山盡，", "春眠不覺曉，處處聞啼鳥。", "千山鳥飛絕，萬徑人蹤滅。", "紅豆生南國，",
    "獨坐幽篁裏，彈琴復長嘯。", "月落烏啼霜滿天", "君自故鄉來，應知故鄉事。", "空山不見人，但聞人語響。",
    "🙂", "café 與茶", "𠀀𪚥", "ＡＢＣ，", "山中相送罷，日暮掩柴扉。\n", "國破山河在，城春草木深。感時花濺淚，",
    "a", "，。\n", "向晚意不適，驅車登古原。夕陽無限好，只是近黃昏。", "江流天地外，山色有無中。",
]
GREEDY_PROMPTS = ["\n", "床前", "白日", "春眠不覺曉，", "月", "江上", "🙂", "孤帆遠影", "秋風", "山中相送罷，", "café"]


def open_article(page, site_server: str, path: str = GPT, press: bool = True) -> None:
    # a hang guard, not a speed limit: the articles are long, and two cores may be shared with builds
    guard_timeouts(page)
    page.goto(site_server + path)
    page.wait_for_selector(f"{BOX} .llm-pg__load")
    if press:
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)


def button(page, label: str):
    return page.locator(f"{BOX} .llm-pg__buttons button", has_text=label)


def wait_idle(page) -> None:
    # a function, not an expression: Playwright would poll an expression with eval, which the site's CSP forbids
    page.wait_for_function(f"() => document.querySelector('{BOX}').getAttribute('data-llm-pg-state') === 'idle'")


def generated(page) -> str:
    return "".join(page.locator(f"{BOX} .llm-pg__gen").all_inner_texts())


# --------------------------------------------------------------------------- the model, against PyTorch


@pytest.fixture(scope="module")
def ref(built_site):
    return reference.load(built_site.dir)


@pytest.fixture(scope="module")
def engine(browser, site_server, built_site, ref):
    """One page that runs every comparison of the model in the browser; the results by name."""
    header, model, tok = ref
    T = header["config"]["max_len"]
    full = "".join(reference_poem_text(tok))[:T]
    assert len(tok.encode(full)) == T
    prompts = [*PROMPTS, full]
    # logits to run the decoding filters on: the model's own, at a few prompts (float32, as PyTorch gives them)
    with torch.no_grad():
        samples = [model(torch.tensor([tok.encode(p)]))[0, -1] for p in ("床前", "春眠不覺曉，", "\n", "江流天地外，")]
    previous = tok.encode("床前明月光，疑是地上霜。")
    with watched_page(browser, built_site, viewport={"width": 1280, "height": 900}) as page:
        open_article(page, site_server)
        header_url = site_server + "playground/tang-gpt.json"
        out = page.evaluate("""async ([url, prompts, greedyPrompts, n]) => {
          const {model} = await window.llmPlayground.load(url);
          const forward = prompts.map(p => {
            const ids = model.encode(p), cache = model.newCache();
            const steps = ids.map(id => model.step(cache, id));
            const rows = model.forward(ids);
            let stepVsFull = 0;
            rows.forEach((row, t) => row.forEach((v, i) => {
              stepVsFull = Math.max(stepVsFull, Math.abs(v - steps[t][i]));
            }));
            return {ids, last: Array.from(steps[steps.length - 1]), stepVsFull};
          });
          const greedy = greedyPrompts.map(p => {
            const ids = model.encode(p);
            return {plain: window.llmPlayground.generate(model, ids, n, {greedy: true, penalty: 1}),
                    penalized: window.llmPlayground.generate(model, ids, n, {greedy: true, penalty: 1.3})};
          });
          return {forward, greedy};
        }""", [header_url, prompts, GREEDY_PROMPTS, 24])
        settings = [{"greedy": False, "temperature": t, "topK": k, "topP": p, "penalty": r, "seed": 0}
                    for t in (0.7, 1.0, 1.6) for k in (0, 1, 5, 40) for p in (1, 0.9, 0.5) for r in (1, 1.3)]
        out["decoding"] = page.evaluate("""([logits, previous, settings]) => logits.map(l => settings.map(s => {
            const d = window.llmPlayground.distribution(Float64Array.from(l), previous, s);
            return {before: Array.from(d.before), after: Array.from(d.after)};
          }))""", [[s.tolist() for s in samples], previous, settings])
    out.update(prompts=prompts, samples=samples, previous=previous, settings=settings)
    return out


def reference_poem_text(tok) -> list[str]:
    """Characters of held-out poems that are all in the vocabulary (a prompt exactly at the context length)."""
    from gpt_from_scratch import load_poems, split_poems

    _, held_out = split_poems(load_poems())
    return [c for c in held_out if c in tok.char_to_id]


def test_logits_match_pytorch_on_the_same_weights(engine, ref):
    header, model, tok = ref
    assert len(engine["forward"]) >= 21
    lengths, worst = [], 0.0
    for prompt, got in zip(engine["prompts"], engine["forward"], strict=True):
        assert got["ids"] == tok.encode(prompt), f"tokenizer differs on {prompt!r}"
        lengths.append(len(got["ids"]))
        with torch.no_grad():
            expected = model(torch.tensor([got["ids"]]))[0, -1].double()
        diff = (torch.tensor(got["last"], dtype=torch.float64) - expected).abs().max().item()
        worst = max(worst, diff)
        assert diff <= 1e-4, f"{prompt!r}: max |Δ| = {diff:.2e}"
    assert max(lengths) == header["config"]["max_len"], "one prompt fills the whole context"
    assert any(i < 256 for got in engine["forward"] for i in got["ids"]), "some prompts go through the byte fallback"
    print(f"max |Δlogit| over {len(lengths)} prompts: {worst:.2e}")


def test_kv_cache_step_equals_a_full_recompute(engine):
    for prompt, got in zip(engine["prompts"], engine["forward"], strict=True):
        assert got["stepVsFull"] <= 1e-5, f"{prompt!r}: {got['stepVsFull']:.2e}"


def test_greedy_continuations_equal_code_generate(engine, ref):
    _, model, tok = ref
    assert len(engine["greedy"]) >= 10
    for prompt, got in zip(GREEDY_PROMPTS, engine["greedy"], strict=True):
        ids = torch.tensor([tok.encode(prompt)])
        plain = generate(model, ids, 24).tokens[0].tolist()
        penalized = generate(model, ids, 24, repetition_penalty=1.3).tokens[0].tolist()
        assert got["plain"] == plain, f"{prompt!r}: {tok.decode(got['plain'])!r} vs {tok.decode(plain)!r}"
        assert got["penalized"] == penalized, f"{prompt!r} with repetition penalty 1.3"


def test_decoding_filters_equal_sampling_py(engine):
    previous = torch.tensor([engine["previous"]])
    checked = 0
    for logits, per_setting in zip(engine["samples"], engine["decoding"], strict=True):
        for s, got in zip(engine["settings"], per_setting, strict=True):
            scores = logits[None]
            if s["penalty"] != 1:
                scores = apply_repetition_penalty(scores, previous, s["penalty"])
            before = next_token_probs(scores, s["temperature"])[0].double()
            after = next_token_probs(scores, s["temperature"], s["topK"] or None,
                                     s["topP"] if s["topP"] < 1 else None)[0].double()
            got_after = torch.tensor(got["after"], dtype=torch.float64)
            assert torch.equal(got_after > 0, after > 0), f"kept set differs for {s}"
            assert (got_after - after).abs().max().item() <= 1e-6, s
            assert (torch.tensor(got["before"], dtype=torch.float64) - before).abs().max().item() <= 1e-6, s
            checked += 1
    assert checked == len(engine["samples"]) * len(engine["settings"])


# --------------------------------------------------------------------------- the page


def gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), 9, mtime=0))


def test_nothing_heavy_before_the_press_and_the_sizes(page, site_server, built_site):
    open_article(page, site_server, press=False)
    early = [u for u in page.log.requests if "playground" in u]
    assert sorted(urlsplit(u).path.rsplit("/", 1)[-1] for u in early) == ["playground-start.js"]
    # its stylesheet comes in the page's one stylesheet (llmsite/stylesheets.py)
    assert (built_site.dir / "assets/stylesheets/playground.css").read_bytes() in \
        (built_site.dir / "assets/stylesheets/site.css").read_bytes()
    html = (built_site.dir / GPT / "index.html").read_text(encoding="utf-8")
    block = re.search(r'<div class="llm-pg"[^>]*></div>', html)
    assert block is not None
    growth = (gz(built_site.dir / "assets/javascripts/playground-start.js")
              + gz(built_site.dir / "assets/stylesheets/playground.css") + len(block.group(0).encode()))
    assert growth <= FIRST_LOAD_BUDGET, growth
    assert gz(built_site.dir / "assets/javascripts/playground.js") <= SCRIPT_BUDGET
    intro = page.inner_text(f"{BOX} .llm-pg__start")
    assert "592,321 个参数" in intro and "1.2 MB" in intro  # from the header, written into the page at build time
    page.click(f"{BOX} .llm-pg__load")
    page.wait_for_selector(READY)
    later = {urlsplit(u).path.rsplit("/", 1)[-1] for u in page.log.requests if "playground" in u}
    assert {"playground.js", "tang-gpt.json"} <= later and any(n.endswith(".bin") for n in later)
    assert "SHA-256 已核对" in page.inner_text(f"{BOX} .llm-pg__info")


def test_generate_step_and_stop(page, site_server, ref):
    _, model, tok = ref
    open_article(page, site_server)
    page.fill(f"{BOX} textarea", "床前")
    button(page, "生成").click()
    wait_idle(page)
    first = generated(page)
    assert first and re.search(r"每秒 \d+ 个词元", page.inner_text(f"{BOX} .llm-pg__speed"))
    assert page.locator(f"{BOX} .llm-pg__table tr.is-chosen").count() == 1
    assert 10 <= page.locator(f"{BOX} .llm-pg__table tbody tr").count() <= 11
    assert page.inner_text(f"{BOX} [role=status]").startswith("写完了，写了 24 个词元")
    assert page.locator(f"{BOX} .llm-ix__cell").count() > 0, "the attention heatmap is drawn"
    button(page, "生成").click()  # the same seed and settings: the same text
    wait_idle(page)
    assert generated(page) == first
    page.check(f"{BOX} input[type=checkbox]")  # greedy: the same tokens as code/kv_cache.py's generate
    button(page, "生成").click()
    wait_idle(page)
    expected = generate(model, torch.tensor([tok.encode("床前")]), 24).tokens[0, 2:]
    assert generated(page) == tok.decode(expected)
    button(page, "单步").click()
    assert page.inner_text(f"{BOX} [role=status]").startswith("下一个词元：")
    # stop: press 生成 with room for 64 tokens, press 停止 two frames later
    page.fill(f"{BOX} textarea", "")
    page.fill(f"{BOX} input[id$=-count]", "64")
    made = page.evaluate("""async (box) => {
      const root = document.querySelector(box), buttons = root.querySelectorAll('.llm-pg__buttons button');
      buttons[0].click();
      await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
      buttons[2].click();
      while (root.getAttribute('data-llm-pg-state') !== 'idle') await new Promise(r => setTimeout(r, 20));
      return root.llmPlayground.session().made;
    }""", BOX)
    assert made < 64
    assert page.inner_text(f"{BOX} [role=status]").startswith(f"已停止，写了 {made} 个词元")


def test_empty_and_too_long_prompts_get_a_note(page, site_server, ref):
    header, _, tok = ref
    T = header["config"]["max_len"]
    open_article(page, site_server)
    page.fill(f"{BOX} textarea", "")
    button(page, "单步").click()
    assert "提示是空的" in page.inner_text(f"{BOX} .llm-pg__note")
    assert page.evaluate(f"document.querySelector('{BOX}').llmPlayground.session().tokens[0]") == tok.encode("\n")[0]
    long = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。" * 4 + "🙂"  # 97 characters, the emoji is 4 byte tokens
    cut = 0
    while len(tok.encode(long[cut:])) > T:
        cut += 1
    page.fill(f"{BOX} textarea", long)
    button(page, "单步").click()
    note = page.inner_text(f"{BOX} .llm-pg__note")
    assert f"去掉了开头的 {cut} 个字符，只用最后 {len(tok.encode(long[cut:]))} 个词元" in note, note
    assert page.locator(f"{BOX} .llm-pg__note").is_visible()


def test_a_corrupted_weights_file_is_reported_and_the_page_keeps_working(page, site_server):
    def corrupt(route):
        body = bytearray(route.fetch().body())
        body[1000] ^= 0xFF
        route.fulfill(status=200, body=bytes(body), headers={"Content-Type": "application/octet-stream"})

    page.route("**/playground/*.bin", corrupt)
    open_article(page, site_server, GPT, press=False)  # named: its interactive figures are that article's
    page.click(f"{BOX} .llm-pg__load")
    page.wait_for_selector(f"{BOX}[data-llm-pg-error=digest]")
    assert "SHA-256 和说明文件里记下的不一致" in page.inner_text(f"{BOX} .llm-pg__status")
    assert page.locator(READY).count() == 0
    assert page.locator("figure.llm-figure--live").count() >= 1, "the interactive figures still work"
    page.unroute("**/playground/*.bin")
    page.click(f"{BOX} .llm-pg__load")  # 重新载入
    page.wait_for_selector(READY)


def test_a_weights_file_that_does_not_load_is_reported(browser, site_server, built_site):
    """HTTP 404 for the weights: the message says so. Its own context: Chromium logs the failed request as a console
    error, which is expected here and the only one allowed."""
    log = PageLog(allowed_netloc=f"127.0.0.1:{built_site.port}")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    try:
        page = context.new_page()
        page.on("request", lambda r: log.requests.append(r.url))
        page.on("console", lambda m: log.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: log.page_errors.append(str(e)))
        page.route("**/playground/*.bin", lambda route: route.fulfill(status=404, body="not here"))
        open_article(page, site_server, press=False)
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(f"{BOX}[data-llm-pg-error=weights]")
        assert "权重文件没有下载成功（HTTP 404）" in page.inner_text(f"{BOX} .llm-pg__status")
        assert page.inner_text(f"{BOX} .llm-pg__load") == "重新载入"
    finally:
        context.close()
    log.console_errors = [m for m in log.console_errors if "404" not in m]
    assert not log.problems(), log.problems()


def test_keyboard_only_and_reduced_motion(page, site_server):
    page.emulate_media(reduced_motion="reduce")
    open_article(page, site_server, press=False)
    page.focus(f"{BOX} .llm-pg__load")
    page.keyboard.press("Enter")
    page.wait_for_selector(READY)
    assert page.evaluate("document.activeElement.tagName") == "TEXTAREA", "focus moves to the prompt"
    page.keyboard.press("Control+A")
    page.keyboard.type("春眠")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "生成"
    page.keyboard.press("Enter")
    wait_idle(page)
    assert generated(page)
    # every control of the playground is reached by Tab, in order, and each has a label
    ids = page.evaluate(f"""() => [...document.querySelectorAll('{BOX} .llm-pg__app :is(textarea, input, select)')]
      .filter(e => !e.disabled).map(e => e.id)""")
    unlabelled = page.evaluate(f"""() => [...document.querySelectorAll('{BOX} :is(textarea, input, select)')]
      .filter(e => !(e.labels && e.labels.length)).map(e => e.id)""")
    assert not unlabelled, unlabelled
    page.focus(f"{BOX} textarea")
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.id"))
        if reached[-1].endswith("-head"):
            break
    assert [i for i in reached if i in ids] == ids[1:], reached
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowDown")  # the layer
    assert page.inner_text(f"{BOX} .llm-pg__attention .llm-pg__hint").startswith("第 1 层头 0")
    duration = page.evaluate(f"getComputedStyle(document.querySelector('{BOX} .llm-pg__bar')).transitionDuration")
    assert duration == "0s"


def test_phone_with_touch(browser, site_server, built_site):
    with watched_page(browser, built_site, viewport={"width": 375, "height": 812}, has_touch=True,
                      is_mobile=True) as page:
        page.goto(site_server + GPT)
        page.tap(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)
        button(page, "生成").tap()
        wait_idle(page)
        assert generated(page)
        sizes = page.evaluate(f"""() => [...document.querySelectorAll('{BOX} :is(button, input, select, textarea)')]
          .map(e => {{ const r = e.getBoundingClientRect(); return [e.id || e.textContent, r.width, r.height]; }})""")
        small = [s for s in sizes if s[1] < 24 or s[2] < 24]
        assert not small, small
        wide = page.evaluate(f"""() => {{ const b = document.querySelector('{BOX}');
          return [b.scrollWidth, b.clientWidth, document.documentElement.scrollWidth]; }}""")
        assert wide[0] <= wide[1] and wide[2] <= 375, wide


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_axe_on_the_running_playground(page, site_server, scheme):
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    open_article(page, site_server, DECODING, press=False)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
    blocking = [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
    assert not blocking, "before the press:\n" + "\n".join(blocking)
    page.click(f"{BOX} .llm-pg__load")
    page.wait_for_selector(READY)
    button(page, "生成").click()
    wait_idle(page)
    violations = axe_run(page, context={"include": [[BOX]]})
    blocking = [describe(v) for v in violations if v["impact"] in BLOCKING]
    assert not blocking, "\n".join(blocking)


def test_instant_navigation_keeps_the_model_and_mounts_again(page, site_server):
    open_article(page, site_server)
    weights = [u for u in page.log.requests if u.endswith(".bin")]
    page.locator('a[href$="/decoding/"]:visible').first.click()
    wait_for_path(page, DECODING, wait_until="commit")
    page.wait_for_selector(f"{BOX} .llm-pg__load")
    page.click(f"{BOX} .llm-pg__load")
    page.wait_for_selector(READY)
    assert [u for u in page.log.requests if u.endswith(".bin")] == weights, "the weights are downloaded once"
    button(page, "单步").click()
    assert generated(page)


def test_without_javascript_the_static_figure_stays(browser, site_server):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 375, "height": 812}, locale="zh-CN")
    try:
        page = context.new_page()
        page.goto(site_server + GPT)
        assert not page.locator(BOX).is_visible()
        assert page.locator("#fig-gpt-samples img").first.is_visible()
    finally:
        context.close()
