"""The comparison playground (``<!-- playground: aligned-sft aligned-dpo aligned-grpo -->``) in headless Chromium.

The GRPO article carries the marker; the page is the site's own strict build, served like every browser test's.

Checked: nothing is fetched before the press; after it, the three greedy poems equal PyTorch's (``kv_cache.generate``
on the same int8-dequantized weights, ``tests/playground/reference.py``) for two head sets, and each column's
head marks and score line agree with ``verifiers.verify`` on that poem; a tampered weights file of one model is
reported by name and a second press works; bad heads get a message and no poem; the keyboard alone works; axe-core
finds nothing serious at 375 px and 1280 px in both palettes (screenshots for a look by eye); the page's
Content-Security-Policy is the site's, and nothing the widget does violates it (a violation is a console error,
which fails ``watched_page``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch

from ..conftest import BuiltSite, guard_timeouts, watched_page
from ..playground import reference
from .test_accessibility import BLOCKING, SCHEMES, axe_run, describe

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("one_thread")]
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "code") not in sys.path:
    sys.path.insert(0, str(ROOT / "code"))

from acrostic import acrostic_prompt  # noqa: E402
from kv_cache import generate  # noqa: E402
from verifiers import verify  # noqa: E402

PAGE = "articles/grpo/"
NAMES = ("aligned-sft", "aligned-dpo", "aligned-grpo")
LABELS = ("SFT", "DPO", "GRPO")
BOX = "#pg-" + "--".join(NAMES)
READY = f"{BOX} .llm-pg__app"
INPUT = f"{BOX} input.llm-pg__heads"
ERROR = f"{BOX} .llm-pg__error"
HEAD_SETS = ("春夏秋冬", "江山風月")  # the default and a second set; both in the vocabulary (checked)


@pytest.fixture(scope="module")
def compare_site(built_site: BuiltSite, site_server: str) -> BuiltSite:
    """The site's own strict build, served: the GRPO article carries the comparison."""
    return built_site


@pytest.fixture(scope="module")
def refs(compare_site):
    return {name: reference.load(compare_site.dir, name) for name in NAMES}


def open_page(page, site: BuiltSite, press: bool = True) -> None:
    guard_timeouts(page)
    page.goto(site.base_url + PAGE)
    page.wait_for_selector(f"{BOX} .llm-pg__load")
    if press:
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)


def wait_idle(page) -> None:
    page.wait_for_function(f"() => document.querySelector('{BOX}').getAttribute('data-llm-pg-state') === 'idle'")


def results(page) -> list:
    return page.evaluate(f"() => document.querySelector('{BOX}').llmPlayground.results()")


def write(page, heads: str) -> dict[str, list[int]]:
    page.fill(INPUT, heads)
    page.click(f"{BOX} .llm-pg__buttons button")
    wait_idle(page)
    return {r["name"]: r["result"]["tokens"][r["result"]["prompt"]:] for r in results(page)}


def pytorch_tokens(model, tok, heads: str) -> list[int]:
    prompt = torch.tensor([tok.encode(acrostic_prompt(heads))])
    return generate(model, prompt, 25).tokens[0, prompt.size(1):].tolist()


def test_the_page_has_the_comparison_and_no_request_before_the_press(compare_site, browser):
    html = (compare_site.dir / PAGE / "index.html").read_text(encoding="utf-8")
    assert html.count("data-llm-header=") == 3
    total = sum(len((compare_site.dir / "playground" / reference.read_header(compare_site.dir, n)["weights"]["file"])
                    .read_bytes()) for n in NAMES)
    with watched_page(browser, compare_site, viewport={"width": 1280, "height": 900}) as page:
        open_page(page, compare_site, press=False)
        files = [urlsplit(u).path.rsplit("/", 1)[-1] for u in page.log.requests]
        assert [f for f in files if "playground" in f or f.endswith(".bin")] == ["playground-start.js"], files
        intro = page.inner_text(f"{BOX} .llm-pg__start")
        assert f"共约 {total / 1e6:.1f} MB" in intro and "3 个训练好的模型" in intro, intro
        assert page.inner_text(f"{BOX} .llm-pg__load") == "载入 3 个模型"
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)
        later = {urlsplit(u).path.rsplit("/", 1)[-1] for u in page.log.requests}
        assert {"playground.js", *(f"{n}.json" for n in NAMES)} <= later
        assert sum(n.endswith(".bin") for n in later) == 3
        assert "每个模型权重的 SHA-256 都已核对" in page.inner_text(f"{BOX} .llm-pg__info")
        assert [t.strip() for t in page.locator(f"{BOX} .llm-pg__column .llm-pg__subtitle").all_inner_texts()] == \
            list(LABELS)


def test_the_three_poems_equal_pytorch_and_the_scores_agree_with_the_verifiers(compare_site, browser, refs):
    tok = refs[NAMES[0]][2]
    assert all(c in tok.char_to_id for heads in HEAD_SETS for c in heads)
    poems = set()
    with watched_page(browser, compare_site, viewport={"width": 1280, "height": 900}) as page:
        open_page(page, compare_site)
        assert page.input_value(INPUT) == HEAD_SETS[0]
        for heads in HEAD_SETS:
            got = write(page, heads)
            columns = page.locator(f"{BOX} .llm-pg__column")
            assert columns.count() == 3
            for k, name in enumerate(NAMES):
                _, model, tok = refs[name]
                expected = pytorch_tokens(model, tok, heads)
                assert got[name] == expected, f"{name} {heads}: {tok.decode(got[name])!r} vs {tok.decode(expected)!r}"
                poem = tok.decode(expected).split("\n")[0]
                poems.add(poem)
                column = columns.nth(k)
                assert column.locator(".llm-pg__poem").inner_text() == poem
                verdict = verify(heads, poem)
                assert column.locator(".llm-pg__score").inner_text() == \
                    f"句首 {verdict.heads}/4，格式 {'对' if verdict.form else '错'}", (name, poem)
                marks = column.locator(".llm-pg__lines li").all_inner_texts()
                assert len(marks) == 4 and sum(" ✓" in m for m in marks) == verdict.heads, (name, marks)
                assert all(m.startswith(h) for m, h in zip(marks, heads, strict=True))
            status = page.inner_text(f"{BOX} [role=status]")
            assert status.startswith("写完了。") and all(f"{lab}：句首" in status for lab in LABELS), status
    assert len(poems) > 1, "the three models wrote the same poem for every head set: nothing to compare"


def test_a_tampered_weights_file_is_reported_and_a_second_press_works(compare_site, browser):
    dpo = reference.read_header(compare_site.dir, "aligned-dpo")["weights"]["file"]

    def tamper(route):
        body = bytearray(route.fetch().body())
        body[5000] ^= 0x01
        route.fulfill(status=200, body=bytes(body), headers={"Content-Type": "application/octet-stream"})

    with watched_page(browser, compare_site, viewport={"width": 1280, "height": 900}) as page:
        page.route(f"**/playground/{dpo}", tamper)
        open_page(page, compare_site, press=False)
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(f"{BOX}[data-llm-pg-error=digest]")
        status = page.inner_text(f"{BOX} .llm-pg__status")
        assert status.startswith("「DPO」模型：权重文件的 SHA-256 和说明文件里记下的不一致"), status
        assert page.locator(READY).count() == 0
        assert page.inner_text(f"{BOX} .llm-pg__load") == "重新载入"
        assert "弱模型：强化学习放大已经会的" in page.inner_text("article")  # the section after the marker still reads
        page.unroute(f"**/playground/{dpo}")
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)
        assert page.get_attribute(BOX, "data-llm-pg-error") is None
        assert len(write(page, HEAD_SETS[0])["aligned-dpo"]) == 25


BAD = [
    ("<img src=x onerror=alert(1)>", "恰好 4 个字"),
    ("春夏秋", "恰好 4 个字，现在是 3 个"),
    ("春夏秋冬夏", "恰好 4 个字，现在是 5 个"),
    ("春夏秋头", "「头」 不在模型的词表里"),
    ("春，秋冬", "是标点"),
    ("", "现在是空的"),
]


def test_bad_heads_get_a_message_and_no_poem(compare_site, browser, refs):
    assert "头" not in refs[NAMES[0]][2].char_to_id
    dialogs: list[str] = []
    with watched_page(browser, compare_site, viewport={"width": 1280, "height": 900}) as page:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        open_page(page, compare_site)
        write(page, HEAD_SETS[0])  # first valid poems, so "no poem" also means the old ones are gone
        assert all(r["result"] for r in results(page))
        error_id = page.get_attribute(ERROR, "id")
        assert error_id in page.get_attribute(INPUT, "aria-describedby").split()
        assert page.get_attribute(ERROR, "role") == "alert"
        for raw, fragment in BAD:
            page.fill(INPUT, raw)
            page.click(f"{BOX} .llm-pg__buttons button")
            wait_idle(page)
            assert fragment in page.inner_text(ERROR), (raw, page.inner_text(ERROR))
            assert page.locator(ERROR).is_visible()
            assert page.get_attribute(INPUT, "aria-invalid") == "true"
            assert all(r["result"] is None for r in results(page)), raw
            assert "".join(page.locator(f"{BOX} :is(.llm-pg__poem, .llm-pg__score)").all_inner_texts()) == ""
            assert page.locator(f"{BOX} img").count() == 0
        page.fill(INPUT, "<b>春</b>夏")
        page.click(f"{BOX} .llm-pg__buttons button")
        assert page.locator(f"{BOX} b").count() == 0 and "<b>" not in page.inner_html(ERROR)
        page.fill(INPUT, HEAD_SETS[1])
        page.press(INPUT, "Enter")
        wait_idle(page)
        assert all(r["result"] for r in results(page)) and page.inner_text(ERROR) == ""
        assert page.get_attribute(INPUT, "aria-invalid") is None
    assert not dialogs


def test_keyboard_only(compare_site, browser):
    with watched_page(browser, compare_site, viewport={"width": 1280, "height": 900}) as page:
        open_page(page, compare_site, press=False)
        page.focus(f"{BOX} .llm-pg__load")
        page.keyboard.press("Enter")
        page.wait_for_selector(READY)
        assert page.evaluate("document.activeElement.classList.contains('llm-pg__heads')"), "focus moves to the heads"
        page.keyboard.press("Control+A")
        page.keyboard.type(HEAD_SETS[1])
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "生成"
        page.keyboard.press("Enter")
        wait_idle(page)
        assert page.locator(f"{BOX} .llm-pg__score").count() == 3
        assert all(t.startswith("句首 ") for t in page.locator(f"{BOX} .llm-pg__score").all_inner_texts())
        assert page.evaluate("document.activeElement.textContent") == "生成", "focus stays on the button"
        label = page.evaluate(f"document.querySelector('{INPUT}').labels[0].textContent")
        assert label == "藏头（4 个字）"


def test_the_content_security_policy_is_the_sites(compare_site):
    def policy(path: Path) -> str:
        found = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"',
                           path.read_text(encoding="utf-8"))
        assert len(found) == 1, path
        return found[0]

    article = policy(compare_site.dir / PAGE / "index.html")
    assert article == policy(compare_site.dir / "about" / "index.html")
    assert "'unsafe-inline'" not in article.split("script-src")[1].split(";")[0]
    block = re.search(r'<div class="llm-pg llm-pg--compare".*?</div></div>',
                      (compare_site.dir / PAGE / "index.html").read_text(encoding="utf-8"), re.S).group(0)
    assert "<script" not in block and "style=" not in block


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_axe_layout_and_screenshots(compare_site, browser, scheme, width, record_artifact, tmp_path):
    phone = width == 375
    options = {"viewport": {"width": width, "height": 812 if phone else 900},
               "color_scheme": "dark" if scheme == "dark" else "light"}
    if phone:
        options.update(has_touch=True, is_mobile=True)
    with watched_page(browser, compare_site, **options) as page:
        open_page(page, compare_site, press=False)
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
        blocking = [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
        page.click(f"{BOX} .llm-pg__load")
        page.wait_for_selector(READY)
        page.click(f"{BOX} .llm-pg__buttons button")
        wait_idle(page)
        blocking += [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
        boxes = page.evaluate(f"""() => [...document.querySelectorAll('{BOX} .llm-pg__column')]
          .map(c => {{ const r = c.getBoundingClientRect(); return [r.x, r.y]; }})""")
        xs, ys = {round(b[0]) for b in boxes}, {round(b[1]) for b in boxes}
        if phone:
            assert len(xs) == 1 and len(ys) == 3, boxes  # a list, one under the other
        else:
            assert len(xs) == 3 and len(ys) == 1, boxes  # three columns side by side
        wide = page.evaluate(f"""() => {{ const b = document.querySelector('{BOX}');
          return [b.scrollWidth, b.clientWidth, document.documentElement.scrollWidth]; }}""")
        assert wide[0] <= wide[1] and wide[2] <= width, wide
        page.locator(BOX).scroll_into_view_if_needed()
        path = tmp_path / f"compare-{width}-{scheme}.png"
        page.locator(BOX).screenshot(path=str(path))
        record_artifact(f"comparison playground, {width} px ({scheme})", path)
        page.fill(INPUT, "春夏")
        page.click(f"{BOX} .llm-pg__buttons button")
        blocking += [describe(v) for v in axe_run(page, context={"include": [[BOX]]}) if v["impact"] in BLOCKING]
        assert not blocking, "\n".join(blocking)
