"""Numbers computed into an article (``@article_values`` -> ``{{ value:name }}``): declared, validated, replaced.

The declaration is read like an exercise answer's (AST only) and planned under ``values-<article>``; what the function
returns is checked before it is cached (``answers.stated``); the build replaces each marker with its text and stops,
naming the article's file and line, on a name the function does not return. The claims tests read the same values
(``tests/figures/claims.py``), and ``tests/site/test_built_html.py`` finds them in the built pages."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from llmsite.features.figures import Figures
from llmsite.figures import answers, registry
from llmsite.problems import BuildStop

from .conftest import Copy

MODULE = "code/figures/sample_values.py"
SAMPLE = '''"""文中的数的测试模块。"""

from attention import causal_mask
from figkit import article_values


@article_values
def stated():
    return {"ones": str(int(causal_mask(4).sum())), "share": f"{100 / 3:.1f}"}
'''


def declare(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "figures" / "x_y.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text("from figkit import article_values\n\n" + source, encoding="utf-8")
    return path


def test_the_declaration_is_planned_under_the_article(tmp_path: Path) -> None:
    declare(tmp_path, "@article_values\ndef f():\n    return {}\n")
    (spec,) = registry.discover_values(tmp_path).values()
    assert (spec.article, spec.name, spec.function, spec.line, spec.kind) == ("x-y", "values-x-y", "f", 4, "values")
    assert registry.discover_answers(tmp_path) == {}, "an article's values are not an exercise answer"


@pytest.mark.parametrize(("source", "message"), [
    ("@article_values\ndef f(x):\n    return {}\n", "函数 f 不能带参数"),
    ("@article_values(3)\ndef f():\n    return {}\n", "@article_values 不带参数"),
    ("@article_values\ndef f():\n    return {}\n\n\n@article_values\ndef g():\n    return {}\n", "一个文件只能有一个"),
])
def test_a_bad_declaration_names_its_line(tmp_path: Path, source: str, message: str) -> None:
    path = declare(tmp_path, source)
    last = max(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.startswith("def "))
    with pytest.raises(registry.DeclarationError) as err:
        registry.discover_values(tmp_path)
    assert f"x_y.py:{last}: " in str(err.value) and message in str(err.value), str(err.value)


@pytest.mark.parametrize(("value", "message"), [
    ([1], "应返回一个非空字典"),
    ({}, "应返回一个非空字典"),
    ({"Bad_Name": "1"}, "名字 'Bad_Name' 不合法"),
    ({"loss": 4.65}, "loss 的值是 float"),
    ({"loss": "<b>4.65</b>"}, "loss 的值 '<b>4.65</b>' 不能放进文中"),
    ({"loss": "**4.65**"}, "不能放进文中"),
    ({"loss": "$x$"}, "不能放进文中"),
    ({"loss": "{{ value:loss }}"}, "不能放进文中"),
    ({"loss": "4.65\n"}, "不能放进文中"),
    ({"loss": "9" * 41}, "至多 40 个字符"),
])
def test_what_cannot_go_into_the_page_is_refused(value: object, message: str) -> None:
    with pytest.raises(answers.AnswerError, match=message.replace("*", r"\*").replace("$", r"\$")):
        answers.stated(value)


def test_numbers_and_their_punctuation_are_kept() -> None:
    given = {"b": "−0.53", "a": "12,553", "c": "41.0%–42.5%", "d": "约 3 倍"}
    assert answers.stated(given) == dict(sorted(given.items()))


def page(src_uri: str, text: str) -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri, content_string=text))


def figures_with(values: dict[str, str] | None, article: str = "x-y") -> Figures:
    figures = Figures(serving=False)
    spec = registry.AnswerSpec(registry.values_name(article), Path("code/figures/x_y.py"), "stated", 7, (), "values")
    figures.answer_specs = {spec.name: spec}
    if values is not None:
        figures.values = {article: values}
    return figures


def test_markers_are_replaced_and_nothing_else_is() -> None:
    text = "损失是 {{ value:loss }}，命中 {{value:hits}}%。\n\n```python\nx = {'a': {'b': 1}}\n```\n"
    out = figures_with({"loss": "4.651", "hits": "41.1"}).expand(text, page("articles/x-y.md", text))
    assert out == "损失是 4.651，命中 41.1%。\n\n```python\nx = {'a': {'b': 1}}\n```\n"


def test_an_unknown_name_stops_the_build_at_its_line() -> None:
    text = "第一行\n\n损失是 {{ value:los }}。\n"
    with pytest.raises(BuildStop) as err:
        figures_with({"loss": "4.651"}).expand(text, page("articles/x-y.md", text))
    message = str(err.value)
    assert message.startswith("docs/articles/x-y.md:3: ") and "没有返回 los（" in message and "loss" in message, message


def test_a_marker_without_a_function_stops_the_build() -> None:
    text = "损失是 {{ value:loss }}。\n"
    figures = figures_with({"loss": "1"}, article="other")
    with pytest.raises(BuildStop, match=r"^docs/articles/x-y\.md:1: .*code/figures/x_y\.py 里没有 @article_values"):
        figures.expand(text, page("articles/x-y.md", text))


def test_a_preview_shows_where_a_value_is_missing() -> None:
    text = "损失是 {{ value:loss }}。"
    figures = figures_with(None)
    figures.skipped_answers = ["values-x-y"]
    assert figures.expand(text, page("articles/x-y.md", text)) == "损失是 〔loss：本次预览未计算〕。"
    figures.skipped_answers, figures.failed_answers = [], {"values-x-y": "boom"}
    assert figures.expand(text, page("articles/x-y.md", text)) == "损失是 〔loss：计算失败〕。"


def test_values_are_computed_in_the_figure_step_and_cached(code_copy: Copy) -> None:
    code_copy.write(MODULE, SAMPLE)
    code_copy.llmsite("figures", "--only", "values-sample-values")
    (entry,) = (code_copy.answers / "values-sample-values").iterdir()
    stored = (entry / answers.FILE).read_text(encoding="utf-8")
    # the causal mask of 4 positions marks the 4 * 3 / 2 = 6 above the diagonal; 100 / 3 to one decimal
    assert stored == '{"name":"values-sample-values","value":{"ones":"6","share":"33.3"}}\n', stored
    again = code_copy.llmsite("figures", "--only", "values-sample-values")
    assert "来自缓存" in again.stdout, again.stdout


def test_a_value_that_cannot_go_into_the_page_names_its_function(code_copy: Copy) -> None:
    code_copy.write(MODULE, SAMPLE.replace('f"{100 / 3:.1f}"', '"<i>33</i>"'))
    result = code_copy.llmsite("figures", "--only", "values-sample-values", check=False)
    assert result.returncode == 1
    assert "文中的数计算失败：函数 stated（code/figures/sample_values.py:8）" in result.stderr, result.stderr
    assert "share 的值 '<i>33</i>' 不能放进文中" in result.stderr, result.stderr
    assert not (code_copy.answers / "values-sample-values").exists()
