"""Exercises in the content checks (``python -m llmsite check``, run by every build) and in the MkDocs adapter (the
checks that need the computed answer, at ``on_page_markdown``): each problem names ``docs/articles/x.md:LINE``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from llmsite.features.exercises import Exercises
from llmsite.features.stale import Focus
from llmsite.problems import BuildStop

from .conftest import Copy
from .test_model import CHOICE, CONCEPT, NUMBER, PREDICT

ARTICLE = "docs/articles/transformer-attention.md"


def append(copy: Copy, *blocks: str) -> int:
    """Add exercise blocks at the end of the attention article; the file line of the first block's fence."""
    text = copy.read(ARTICLE).rstrip("\n") + "\n"
    fence = text.count("\n") + 2
    copy.write(ARTICLE, text + "".join(f"\n```exercise\n{b}```\n" for b in blocks))
    return fence


def check(copy: Copy) -> str:
    proc = copy.llmsite("check", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout


def test_a_malformed_block_stops_the_checks_with_its_line(site_copy: Copy) -> None:
    fence = append(site_copy, NUMBER + "hint: 提示\n")
    out = check(site_copy)
    line = fence + NUMBER.count("\n") + 1
    assert f"{ARTICLE}:{line}: 练习里有未知的键 hint" in out, out
    assert "修改建议：可用的键：" in out


def test_names_are_checked_against_the_declarations_and_the_page(site_copy: Copy) -> None:
    number = NUMBER.replace("answer: causal-row3", "answer: no-such-answer")
    elsewhere = CHOICE.replace("answer: pick-one", "answer: no-such-either").replace("id: pick", "id: pick2")
    not_on_page = PREDICT.replace("figure: dk-explorer", "figure: gpt-attention").replace(
        "answer: guess-one", "answer: dk512-typical-max")
    static = PREDICT.replace("figure: dk-explorer", "figure: rope-relative").replace(
        "answer: guess-one", "answer: dk512-typical-max").replace("id: guess", "id: guess2")
    fence = append(site_copy, number, elsewhere, not_on_page, static)
    out = check(site_copy)
    starts = [fence]
    for block in (number, elsewhere, not_on_page):
        starts.append(starts[-1] + block.count("\n") + 3)

    def line(block_index: int, block: str, key: str) -> int:
        return starts[block_index] + 1 + next(i for i, x in enumerate(block.splitlines()) if x.startswith(key))

    assert f"{ARTICLE}:{line(0, number, 'answer:')}: 练习 row3 的答案 no-such-answer 没有声明" in out, out
    assert "transformer_attention.py 里用 @exercise_answer(\"no-such-answer\")" in out
    assert f"{ARTICLE}:{line(1, elsewhere, 'answer:')}: 练习 pick2 的答案 no-such-either 没有声明" in out
    assert f"{ARTICLE}:{line(2, not_on_page, 'figure:')}: 练习 guess 引用的图 gpt-attention 不在这一页上" in out
    assert f"{ARTICLE}:{line(3, static, 'figure:')}: 练习 guess2 引用的图 rope-relative 不能操作" in out


def test_an_answer_of_another_article_is_refused(site_copy: Copy) -> None:
    site_copy.write("code/figures/decoding.py", site_copy.read("code/figures/decoding.py") + '''

@exercise_answer("decoding-only")
def decoding_only():
    return 1
''')
    site_copy.write("code/figures/decoding.py", "from figkit import exercise_answer\n" + site_copy.read(
        "code/figures/decoding.py"))
    append(site_copy, NUMBER.replace("answer: causal-row3", "answer: decoding-only"))
    assert "它声明在 decoding.py，不是这篇文章的模块" in check(site_copy)


def test_the_real_articles_pass(site_copy: Copy) -> None:
    proc = site_copy.llmsite("check")
    assert proc.stdout.startswith("检查通过"), proc.stdout


# --------------------------------------------------------------------------- the adapter (values from the figure step)


@dataclass
class Spec:
    module_name: str
    data_function: str | None = None

    @property
    def module(self):  # what the adapter reads of a spec: its module's file name
        from pathlib import Path

        return Path("code/figures") / self.module_name


@dataclass
class StubFigures:
    """What ``Exercises`` reads of the figure step: declarations, computed answers, failures."""

    answers: dict[str, object] = field(default_factory=dict)
    enabled: bool = True
    failed_answers: dict[str, str] = field(default_factory=dict)
    skipped_answers: list[str] = field(default_factory=list)  # left out by a focused build (features/stale.py)
    focus: Focus = field(default_factory=Focus)
    answer_specs: dict[str, Spec] = field(default_factory=lambda: {
        n: Spec("x.py") for n in ("causal-row3", "pick-one", "guess-one")})
    specs: dict[str, Spec] = field(default_factory=lambda: {"dk-explorer": Spec("x.py", "data")})


SOURCE = "---\ntitle: t\n---\n\n正文。\n\n<!-- figure: dk-explorer -->\n\n```exercise\n{}```\n"
PAGE = "articles/x.md"


def expand(block: str, answers: dict[str, object], serving: bool = False, **kw: object) -> str:
    source = SOURCE.format(block)
    figures = StubFigures(answers=answers, **kw)  # type: ignore[arg-type]
    markdown = source.split("---\n", 2)[2]
    return Exercises(figures, serving=serving).expand(markdown, PAGE, source)  # type: ignore[arg-type]


def test_the_adapter_renders_with_the_computed_answer() -> None:
    out = expand(NUMBER, {"causal-row3": 0.25})
    assert "```exercise" not in out and 'data-llm-exercise="row3"' in out and "答案：0.250" in out
    assert out.startswith("\n正文。\n\n<!-- figure: dk-explorer -->")  # the rest of the page as it was


def test_a_computed_choice_answer_that_is_no_option_stops_the_build_with_its_line() -> None:
    answer_line = SOURCE.split("\n").index("```exercise") + 1 + 1 + CHOICE.splitlines().index("answer: pick-one")
    with pytest.raises(BuildStop) as err:
        expand(CHOICE, {"pick-one": "丙"})
    assert f"docs/{PAGE}:{answer_line}: 练习 pick 的答案函数 pick-one 返回了 '丙'，不是选项之一" in str(err.value)


def test_under_serve_the_exercise_shows_the_problem_instead() -> None:
    out = expand(CHOICE, {"pick-one": "丙"}, serving=True)
    assert "这个练习有错误" in out and "不是选项之一" in out and "data-llm-exercise" not in out
    out = expand(NUMBER, {}, serving=True, failed_answers={"causal-row3": "ZeroDivisionError <b>"})
    assert "练习答案 causal-row3 计算失败" in out and "ZeroDivisionError &lt;b&gt;" in out


def test_an_answer_a_focused_build_left_out_is_noted_and_does_not_stop_it() -> None:
    """The lane's build from an empty cache computes only its articles' answers: another article's exercise says so
    in its place, under ``mkdocs build`` too (its answer is not wrong, only not computed)."""
    out = expand(NUMBER, {}, skipped_answers=["causal-row3"], focus=Focus(frozenset({"decoding"})))
    assert "llm-skipped" in out and "练习 1 的答案 causal-row3" in out and "decoding" in out
    assert "data-llm-exercise" not in out and "这个练习有错误" not in out


def test_a_changed_answer_changes_the_page_inputs() -> None:
    """The incremental preview re-renders a page when this expansion changes (``SitePlugin.page_inputs``)."""
    assert expand(NUMBER, {"causal-row3": 0.25}) != expand(NUMBER, {"causal-row3": 0.5})
    assert expand(NUMBER, {"causal-row3": 0.25}) == expand(NUMBER, {"causal-row3": 0.25})


def test_without_the_figure_step_the_blocks_stay() -> None:
    assert "```exercise" in expand(NUMBER, {}, enabled=False)


@pytest.mark.parametrize("block", [CONCEPT])
def test_a_concept_question_needs_no_computed_answer(block: str) -> None:
    assert 'data-llm-exercise="idea"' in expand(block, {})
