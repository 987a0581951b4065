"""Rendering: numbers formatted deterministically, every value escaped for its context, hostile text refused
or shown as text (never markup), and the Markdown (math included) processed by the site's own extensions."""

from __future__ import annotations

import html
import html.parser
import json
import random
import re

import markdown
import pytest

from llmsite import exercises
from llmsite.exercises.render import decimals, format_value, number_hint
from tests.conftest import ROOT
from tests.security.payloads import ACCEPTED, REJECTED

from .test_model import CHOICE, CONCEPT, FIRST, NUMBER, PATH, PREDICT, parse


def test_decimals_follow_the_tolerance() -> None:
    assert [decimals(t) for t in (0.001, 0.005, 0.002, 0.05, 0.5, 1, 5, 1e-5)] == [3, 3, 3, 2, 1, 0, 0, 5]


@pytest.mark.parametrize(("value", "tolerance", "shown"), [
    (0.25, 0.005, "0.250"), (1 / 3, 0.001, "0.333"), (2 / 3, 0.05, "0.67"), (16.2, 1.0, "16"),
    (-0.0001, 0.001, "0.000"), (37248, None, "37,248"), (1024, None, "1024"), (-12345, 0, "-12,345"),
    ("q 在位置 0，k 在位置 2", None, "q 在位置 0，k 在位置 2"),
])
def test_format_value(value: object, tolerance: float | None, shown: str) -> None:
    assert format_value(value, tolerance) == shown


def test_the_shown_answer_is_always_accepted() -> None:
    """A reader who types the answer as the page shows it is right, whatever the value and tolerance."""
    rng = random.Random(0)
    for _ in range(2000):
        value = rng.uniform(-1000, 1000) * 10 ** rng.randint(-4, 0)
        tolerance = rng.choice([0.5, 0.1, 0.05, 0.01, 0.005, 0.002, 0.001, 1e-4])
        shown = float(format_value(value, tolerance).replace(",", ""))
        assert abs(shown - value) <= tolerance, (value, tolerance, shown)


def test_the_hint_says_what_is_accepted() -> None:
    number, = parse(NUMBER).exercises
    assert number_hint(number, 0.25) == "填小数或分数，例如 0.6 或 3/5；和答案相差不超过 0.001 算对。"
    # the example never gives the answer away
    assert "0.6" not in number_hint(number, 0.6) and "3/8" in number_hint(number, 0.6)
    assert "1,024" not in number_hint(parse(NUMBER.replace("tolerance: 0.001\n", "")).exercises[0], 1024)
    exact, = parse(NUMBER.replace("tolerance: 0.001\n", "")).exercises
    assert number_hint(exact, 37248) == "填一个整数（可以带千位分隔符，例如 1,024），要完全一致才算对。"
    guess, = parse(PREDICT.replace("options:\n  - 变大\n  - 变小\n", "tolerance: 0.00001\n")).exercises
    assert "相差不超过 0.00001 算猜中" in number_hint(guess, 0.5)


# --------------------------------------------------------------------------- through Python-Markdown


@pytest.fixture(scope="module")
def to_html():
    """Python-Markdown with the site's extensions (mkdocs.yml), as MkDocs runs it on a page."""
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))

    def convert(text: str) -> str:
        md = markdown.Markdown(extensions=config["markdown_extensions"], extension_configs=config["mdx_configs"])
        return md.convert(text)

    return convert


class Tree(html.parser.HTMLParser):
    """Elements (with attributes) and text of a fragment."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def tags(self) -> set[str]:
        return {t for t, _ in self.elements}

    def attrs(self) -> set[str]:
        return {a for _, attrs in self.elements for a in attrs}

    def all_text(self) -> str:
        return "".join(self.text)


SITE_TAGS = {"div", "p", "form", "label", "input", "button", "details", "summary", "strong", "em", "code", "a", "ol",
             "li", "span"}
SITE_ATTRS = {"class", "id", "data-llm-exercise", "data-llm-check", "hidden", "aria-labelledby", "aria-describedby",
              "aria-live", "role", "type", "for", "autocomplete", "spellcheck", "href"}


def rendered(block: str, value: object, to_html) -> tuple[str, Tree]:
    (ex,) = parse(block).exercises
    assert exercises.check_value(ex, value, PATH) == []
    out = to_html(exercises.render(ex, 1, value))
    return out, Tree(out)


def test_a_number_exercise_as_html(to_html) -> None:
    out, tree = rendered(NUMBER.replace("  是 {answer}。", "  是 {answer}，即 $1/4$。"), 0.25, to_html)
    (box,) = [a for t, a in tree.elements if "data-llm-exercise" in a]
    assert box["data-llm-exercise"] == "row3" and box["id"] == "ex-row3"
    assert json.loads(box["data-llm-check"]) == {"kind": "number", "answer": 0.25, "tolerance": 0.001,
                                                 "display": "0.250", "verb": "答对"}
    assert ("form", {"class": "llm-ex__form", "hidden": "hidden", "aria-labelledby": "ex-row3-q"}) in tree.elements
    assert any(t == "p" and a.get("aria-live") == "polite" and a.get("role") == "status" for t, a in tree.elements)
    assert "答案：0.250" in tree.all_text() and "是 0.250，即" in tree.all_text()
    assert '<span class="arithmatex">' in out  # math goes to the site's math pipeline like everywhere else
    assert tree.tags() <= SITE_TAGS and tree.attrs() <= SITE_ATTRS


def test_choice_predict_and_concept_as_html(to_html) -> None:
    _, choice = rendered(CHOICE, "乙", to_html)
    assert json.loads(next(a for _, a in choice.elements if "data-llm-check" in a)["data-llm-check"])["answer"] == 1
    assert "A. 甲" in choice.all_text() and "答案：B. 乙" in choice.all_text()
    _, predict = rendered(PREDICT, "变小", to_html)
    assert ("a", {"class": "llm-ex__figure", "href": "#fig-dk-explorer"}) in predict.elements
    assert "去图里看看" in predict.all_text()
    assert json.loads(next(a for _, a in predict.elements if "data-llm-check" in a)["data-llm-check"])["verb"] == "猜中"
    _, concept = rendered(CONCEPT, None, to_html)
    text = concept.all_text()
    assert "A. 对的（正确）" in text and "因为对。" in text and "B. 错的（不对）" in text and "因为错。" in text


def test_the_same_exercise_renders_to_the_same_bytes() -> None:
    (ex,) = parse(NUMBER).exercises
    assert exercises.render(ex, 1, 1 / 3) == exercises.render(ex, 1, 1 / 3)


def test_replacing_blocks_keeps_the_rest_of_the_page() -> None:
    body = f"前。\n\n```exercise\n{NUMBER}```\n\n中。\n\n```exercise\n{CHOICE}```\n\n后。\n"
    out = exercises.replace_blocks(body, ["<甲>", "<乙>"])
    assert out == "前。\n\n<甲>\n\n中。\n\n<乙>\n\n后。\n"
    with pytest.raises(ValueError):
        exercises.replace_blocks(body, ["<甲>"])


# --------------------------------------------------------------------------- hostile text

INJECTED_TAGS = {"img", "script", "svg", "mask", "t", "iframe", "title"}
INJECTED_ATTRS = {"onerror", "onload", "onmouseover", "onfocus", "autofocus", "data-x", "data-y", "src"}


def hostile(question: str = "问题", option: str = "乙", why: str = "因为错。", explanation: str = "解释。") -> str:
    def scalar(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar

    return (f"id: hostile\nkind: concept\nquestion: {scalar(question)}\nexplanation: {scalar(explanation)}\n"
            f"options:\n  - text: 甲\n    correct: true\n    why: 因为对。\n"
            f"  - text: {scalar(option)}\n    why: {scalar(why)}\n")


# "<" right before a letter, "/", "!" or "?" would be HTML to Python-Markdown: refused (BERT 的 <mask>)
TAG_LIKE = re.compile(r"<\s*[A-Za-z/!?]")
SHOWN_AS_TEXT = {name: value for name, value in ACCEPTED.items() if not TAG_LIKE.search(value)}
REFUSED = {**{name: value for name, value in ACCEPTED.items() if TAG_LIKE.search(value)},
           **{name: value for name, value in REJECTED.items()
              if name not in ("entity", "numeric-entity", "newline", "very-long")}}


@pytest.mark.parametrize("field", ["question", "option", "why", "explanation"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_markup_and_hidden_characters_are_refused_with_the_line(name: str, field: str) -> None:
    value = REFUSED[name]
    parsed = exercises.parse(f"```exercise\n{hostile(**{field: value})}```\n", FIRST, PATH)
    assert parsed.exercises == [], f"{name} in {field} was accepted"
    (problem,) = parsed.problems
    keys = {"question": "question:", "option": f"text: {json.dumps(value, ensure_ascii=False)}",
            "why": f"why: {json.dumps(value, ensure_ascii=False)}", "explanation": "explanation:"}
    line = FIRST + 1 + hostile(**{field: value}).splitlines().index(
        next(x for x in hostile(**{field: value}).splitlines() if x.strip().startswith(keys[field].strip())
             or keys[field] in x))
    assert str(problem).startswith(f"{PATH}:{line}: "), str(problem)


PROSE = {**SHOWN_AS_TEXT, "entity": REJECTED["entity"], "numeric-entity": REJECTED["numeric-entity"],
         "newline": REJECTED["newline"]}
# An option is one line: a value with a line break there is refused instead (tested in test_model), so that pair
# is not among the cases.
PROSE_CASES = [(name, field) for field in ("question", "option", "why", "explanation") for name in sorted(PROSE)
               if not (field == "option" and "\n" in PROSE[name])]


@pytest.mark.parametrize(("name", "field"), PROSE_CASES)
def test_prose_with_special_characters_never_becomes_markup(name: str, field: str, to_html) -> None:
    value = PROSE[name]
    parsed = exercises.parse(f"```exercise\n{hostile(**{field: value})}```\n", FIRST, PATH)
    assert parsed.problems == [], [str(p) for p in parsed.problems]
    out = to_html(exercises.render(parsed.exercises[0], 1, None))
    tree = Tree(out)
    assert not tree.tags() & INJECTED_TAGS, (tree.tags(), out)
    assert not tree.attrs() & INJECTED_ATTRS, (tree.attrs(), out)
    assert tree.tags() <= SITE_TAGS | {"span", "math", "semantics", "mrow", "annotation", "mi", "mo", "mn"}
    for _, attrs in tree.elements:
        if "data-llm-check" in attrs:
            json.loads(attrs["data-llm-check"])  # still JSON after the HTML parser decoded the attribute
    if "XSS" in value and field != "option":  # Markdown may format it, but its words reach the page as text
        assert "XSS" in html.unescape(tree.all_text())
