"""Every number in every article's prose is asserted by its claims test or exempt with a reason.

The articles are the site's (``article_files``: a new one, as ``python -m llmsite new`` creates it, is checked with
no edit here). An article's prose is its Markdown with front matter, code blocks, snippet lines, inline code, HTML
comments (figure markers), link targets and HTML tags blanked (``claims.prose_lines``, with the content checks'
masks), plus the titles and captions of the figures it declares. A number is a decimal, a percentage, a number with
thousands separators, or a whole number with a measure word of a count (「28 首」「89 倍」: ``claims.COUNTED``).

An article's claims test is the ``tests/figures/test_*_claims.py`` whose ``SOURCES`` names the article; its
``CLAIMS`` assert numbers (a claim covers the numbers its pattern's match spans), its ``NOT_COMPUTED`` exempts the
others, each with a reason. ``python -m tests.figures.test_claims_coverage`` prints the coverage of every article.
"""

from __future__ import annotations

import datetime as dt
import importlib
import shutil
import textwrap
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from llmsite import scaffold
from llmsite.content.articles import article_files
from llmsite.figures import registry

from . import claims
from .claims import Claim, Coverage, approx

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ARTICLES = article_files(ROOT / "docs")


def figure_module(article: Path, root: Path) -> Path | None:
    """The article's figure module by the scaffold's convention: code/figures/<slug with _>.py, if it exists."""
    path = root / "code" / "figures" / f"{article.stem.replace('-', '_')}.py"
    return path if path.is_file() else None


def claims_file_for(article: Path) -> str:
    """The claims test a new article should get (the name the problem message suggests)."""
    return f"tests/figures/test_{article.stem.replace('-', '_')}_claims.py"


@cache
def claims_modules(folder: Path = HERE) -> dict[Path, ModuleType]:
    """The claims modules of ``folder`` (``test_*_claims.py``, imported) by the article their ``SOURCES`` names."""
    found: dict[Path, ModuleType] = {}
    for path in sorted(folder.glob("test_*_claims.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        sources = getattr(module, "SOURCES", None)
        assert isinstance(sources, claims.Sources), (
            f"{path.name}: a claims test defines SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES), CLAIMS and "
            "NOT_COMPUTED, so the site-wide check can find the article it is about"
        )
        article = sources.article.resolve()
        assert article not in found, f"{path.name} and {found[article].__name__} both claim {article.name}"
        found[article] = module
    return found


def article_problems(article: Path, module: ModuleType | None, root: Path = ROOT) -> tuple[Coverage, list[str]]:
    """The coverage of one article's numbers and what is wrong with it (nothing: an empty list)."""
    rel = article.relative_to(root)
    figures = figure_module(article, root)
    if module is None:
        found = claims.coverage(claims.Sources(root, article, figures), [], {})
        if not found.numbers:
            return found, []
        first = "\n".join(f"  {n}" for n in found.numbers[:5])
        return found, [
            f"{rel}: {len(found.numbers)} number(s) in its prose and no claims test: create "
            f"{claims_file_for(article)} with SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES), CLAIMS (a claim "
            f"recomputing each result) and NOT_COMPUTED (each setting or cited fact with a reason); see "
            f"tests/figures/test_attention_claims.py. The first numbers:\n{first}"
        ]
    name = f"tests/figures/{Path(module.__file__).name}"
    sources: claims.Sources = module.SOURCES
    problems = []
    if figures is not None and sources.figures != figures:
        problems.append(f"{name}: SOURCES names figures {sources.figures}, the article's are declared in {figures}")
    # every figure declared for this article (@figure(article=...), in whichever module) has its caption scanned
    declared = {s.name for s in registry.discover(root / "code").values() if s.article == article.stem}
    problems += [f"{name}: figure {f} of {rel} is not in SOURCES ({sources.figures}), so its caption is not checked"
                 for f in sorted(declared - set(sources.figure_texts()))]
    try:
        found = claims.assert_numbers_checked(sources, module.CLAIMS, module.NOT_COMPUTED, name)
    except AssertionError as exc:
        problems += str(exc).splitlines()
        found = claims.coverage(sources, module.CLAIMS, module.NOT_COMPUTED)
    return found, problems


@pytest.mark.parametrize("article", ARTICLES, ids=[a.stem for a in ARTICLES])
def test_every_number_is_asserted_or_exempt(article: Path) -> None:
    _, problems = article_problems(article, claims_modules().get(article.resolve()))
    assert not problems, "\n".join(problems)


def test_every_claims_module_is_about_an_article() -> None:
    articles = {a.resolve() for a in ARTICLES}
    stray = [f"{m.__name__}: {path}" for path, m in claims_modules().items() if path not in articles]
    assert not stray, "claims tests about no article of the site:\n" + "\n".join(stray)


def table() -> str:
    """Per article and in total: numbers in the prose, asserted by a claim, exempt, uncovered."""
    rows = [("article", "numbers", "asserted", "exempt", "uncovered")]
    totals = [0, 0, 0, 0]
    for article in ARTICLES:
        found, _ = article_problems(article, claims_modules().get(article.resolve()))
        counts = [len(found.numbers), found.count("asserted"), found.count("exempt"), found.count("uncovered")]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        rows.append((article.stem, *map(str, counts)))
    rows.append(("total", *map(str, totals)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                    strict=True)))
                     for r in rows)


# --------------------------------------------------------------------------- the check itself, on made-up articles

FRONT = "---\ntitle: 演示\n---\n\n"


def write(root: Path, body: str, figures: str | None = None) -> claims.Sources:
    article = root / "docs" / "articles" / "demo.md"
    article.parent.mkdir(parents=True, exist_ok=True)
    article.write_text(FRONT + body, encoding="utf-8")
    module = None
    if figures is not None:
        module = root / "code" / "figures" / "demo.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(figures, encoding="utf-8")
    return claims.Sources(root, article, module)


def check(sources: claims.Sources, claim_list: list[Claim], not_computed: dict[str, str]) -> str:
    """The failure message of the shared check, or '' when it passes."""
    try:
        claims.assert_numbers_checked(sources, claim_list, not_computed, "tests/figures/test_demo_claims.py")
    except AssertionError as exc:
        return str(exc)
    return ""


def test_an_unclaimed_number_fails_with_where_and_what_to_do(tmp_path: Path) -> None:
    sources = write(tmp_path, "训练后损失是 2.31，验证集有 370 首。\n")
    message = check(sources, [], {})
    assert message.splitlines() == [
        "docs/articles/demo.md:5: 2.31 in 「训练后损失是 2.31，验证集有 370 首。」 — add a claim in "
        "tests/figures/test_demo_claims.py or list it in NOT_COMPUTED with a reason",
        "docs/articles/demo.md:5: 370 首 in 「训练后损失是 2.31，验证集有 370 首。」 — add a claim in "
        "tests/figures/test_demo_claims.py or list it in NOT_COMPUTED with a reason",
    ]


def test_a_claimed_number_passes_and_only_the_span_of_the_match_counts(tmp_path: Path) -> None:
    sources = write(tmp_path, "训练后损失是 2.31，验证集有 370 首。\n")
    loss = Claim("loss", "article", r"损失是 (\d\.\d+)", approx(lambda: 2.3104))
    poems = Claim("held", "article", r"验证集有 (\d+) 首", approx(lambda: 370, exact=True))
    assert check(sources, [loss, poems], {}) == ""
    found = claims.coverage(sources, [loss, poems], {})
    assert [(n.text, n.status) for n in found.numbers] == [("2.31", "asserted"), ("370 首", "asserted")]
    assert "370 首" in check(sources, [loss], {})  # the other claim's match does not reach it


def test_an_exemption_needs_a_reason_and_a_number_it_exempts(tmp_path: Path) -> None:
    sources = write(tmp_path, "学习率取 0.005，比 Qwen2-1.5B 小。\n")
    reasons = {"0.005": "the learning rate, a setting", "Qwen2-1.5B": "a model's name"}
    assert check(sources, [], reasons) == ""
    assert "'0.005': give a reason" in check(sources, [], {**reasons, "0.005": "  "})
    assert "'0.005': give a reason" in check(sources, [], {**reasons, "0.005": "0.005"})
    stale = check(sources, [], {**reasons, "0.02": "nanoGPT's initial standard deviation"})
    assert stale == ("tests/figures/test_demo_claims.py: NOT_COMPUTED lists '0.02', which no longer exempts a number "
                     "of docs/articles/demo.md: drop the entry")


def test_an_exempt_phrase_covers_that_phrase_only(tmp_path: Path) -> None:
    sources = write(tmp_path, "模型叫 Qwen2-1.5B；温度 1.5 时更平。\n")
    message = check(sources, [], {"Qwen2-1.5B": "part of a model's name"})
    assert "1.5 in" in message and message.count("\n") == 0  # only the temperature


def test_what_is_not_prose_is_not_scanned(tmp_path: Path) -> None:
    body = textwrap.dedent("""\
        正文没有数字，下面的都不算。

        ```python
        loss = 2.31  # 370 首
        ```

        !!! note "说明"

            ~~~text
            输出 0.79
            ~~~

        --8<-- "code/x_1.5.py:part"

        调用 `sample(p=0.9)`，见 [论文](https://arxiv.org/abs/2305.04388) 和 <span title="0.25">这里</span>。

        <!-- figure: demo-1.5 -->

        <!--
        多行注释 3.14
        -->
        """)
    sources = write(tmp_path, body)
    assert claims.coverage(sources, [], {}).numbers == []
    head = sources.article.read_text(encoding="utf-8").replace("title: 演示", "title: 损失 2.31")
    sources.article.write_text(head, encoding="utf-8")
    assert claims.coverage(sources, [], {}).numbers == []  # front matter is not prose either


def test_captions_are_prose(tmp_path: Path) -> None:
    figures = textwrap.dedent('''\
        from figkit import figure


        @figure("demo-loss", article="demo", title="损失曲线", caption="训练 300 步后损失是 2.31（`lr=0.005`）。")
        def loss():
            pass
        ''')
    sources = write(tmp_path, "正文。\n", figures)
    assert [str(n) for n in claims.coverage(sources, [], {}).numbers] == [
        "code/figures/demo.py:5 (figure demo-loss): 2.31 in 「训练 300 步后损失是 2.31（`lr=0.005`）。」"]
    caption = Claim("loss", "demo-loss", r"损失是 (\d\.\d+)", approx(lambda: 2.31))
    assert check(sources, [caption], {}) == ""


def test_which_whole_numbers_count() -> None:
    def numbers(line: str) -> list[str]:
        return [text for _, _, text in claims.find_numbers(claims.prose_lines(line)[0])]

    assert numbers("其中 28 首只差一个字，342 组藏头，相差 89 倍，256 行里有 160 行，出现 3 次，4 条候选") == [
        "28 首", "342 组", "89 倍", "256 行", "160 行", "3 次", "4 条"]
    assert numbers("第 25 步、第 3 次、GPT-2 次、$10^{5}$ 次、x_3 行、§3 条") == []  # ordinals, names, formulas
    assert numbers("训练 300 步，每层 4 个头，64 维") == []  # settings with other measure words are not scanned
    # a decimal percentage is found as its decimal (the exempt lists name it so)
    assert numbers("0.5 倍，1,000 次，12.5%，30%，§3.5 节，版本 2.0.1") == ["0.5", "1,000", "12.5", "30%", "2.0"]


def test_an_article_without_claims_test_fails_only_when_it_has_numbers(tmp_path: Path) -> None:
    (tmp_path / "docs" / "articles").mkdir(parents=True)
    article = tmp_path / "docs" / "articles" / "kv-demo.md"
    article.write_text(FRONT + "没有数字的正文。\n", encoding="utf-8")
    assert article_problems(article, None, tmp_path)[1] == []
    article.write_text(FRONT + "缓存让每步快了 12.5 倍。\n", encoding="utf-8")
    (problem,) = article_problems(article, None, tmp_path)[1]
    assert problem.startswith("docs/articles/kv-demo.md: 1 number(s) in its prose and no claims test: create "
                              "tests/figures/test_kv_demo_claims.py with SOURCES = claims.Sources(")
    assert "docs/articles/kv-demo.md:5: 12.5 in 「缓存让每步快了 12.5 倍。」" in problem


def test_a_scaffolded_article_is_checked_with_no_edit(tmp_path: Path) -> None:
    """What ``python -m llmsite new`` writes is an article like the others: found by article_files, and its prose
    (the template's) has no number that would need a claims test before the author writes one."""
    (tmp_path / "data").mkdir()
    for name in ("route.yml", "authors.yml", "tags.yml"):
        shutil.copy(ROOT / "data" / name, tmp_path / "data" / name)
    for folder in ("docs/articles", "code/figures", "tests/code"):
        (tmp_path / folder).mkdir(parents=True)
    request = scaffold.Request(slug="kv-demo", title="演示", summary="一句话", author="guohua", tags=["Transformer"],
                               stage=1, after=None, date=dt.date(2026, 12, 1))
    scaffold.create(request, tmp_path)
    (article,) = article_files(tmp_path / "docs")
    found, problems = article_problems(article, None, tmp_path)
    assert problems == [] and found.numbers == []
    assert figure_module(article, tmp_path) == tmp_path / "code" / "figures" / "kv_demo.py"


if __name__ == "__main__":
    print(table())
