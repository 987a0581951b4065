"""Exercise blocks: every malformed one is refused with ``docs/articles/x.md:LINE`` and a Chinese message.

Each case writes one block into a body that starts on file line 10 (as if after a front matter), so the
opening fence is line 12 and the n-th YAML line is line 12 + n. The expected line is the key, item or
text line that is wrong, not just the block.
"""

from __future__ import annotations

import pytest

from llmsite import exercises
from llmsite.exercises.model import KINDS

PATH = "docs/articles/x.md"
FIRST = 10  # file line of the body's first line
FENCE = FIRST + 2  # the body is "段落。", "", then the fence

NUMBER = """\
id: row3
kind: number
question: |
  第 3 行给第 1 个词元的权重是多少？
answer: causal-row3
tolerance: 0.001
explanation: |
  是 {answer}。
"""
CHOICE = """\
id: pick
kind: choice
question: 哪一个？
options:
  - 甲
  - 乙
answer: pick-one
explanation: 因为。
"""
PREDICT = """\
id: guess
kind: predict
figure: dk-explorer
question: 先猜。
options:
  - 变大
  - 变小
answer: guess-one
explanation: 去图里看。
"""
CONCEPT = """\
id: idea
kind: concept
question: 为什么？
options:
  - text: 对的
    correct: true
    why: 因为对。
  - text: 错的
    why: 因为错。
"""


def body(*blocks: str) -> str:
    return "段落。\n\n" + "\n".join(f"```exercise\n{b.rstrip()}\n```\n" for b in blocks)


def parse(*blocks: str) -> exercises.Parsed:
    return exercises.parse(body(*blocks), FIRST, PATH)


def line_of(block: str, needle: str) -> int:
    """File line of the first YAML line of ``block`` containing ``needle`` (the first block of the body)."""
    index = next(i for i, line in enumerate(block.splitlines()) if needle in line)
    return FENCE + 1 + index


def only_problem(parsed: exercises.Parsed) -> str:
    assert len(parsed.problems) == 1, [str(p) for p in parsed.problems]
    return str(parsed.problems[0])


@pytest.mark.parametrize("block", [NUMBER, CHOICE, PREDICT, CONCEPT], ids=KINDS)
def test_the_four_kinds_parse(block: str) -> None:
    parsed = parse(block)
    assert parsed.problems == []
    (ex,) = parsed.exercises
    assert ex.line == FENCE and ex.line_of("kind") == FENCE + 2


def test_parsed_values() -> None:
    (number, choice, predict, concept) = parse(NUMBER, CHOICE, PREDICT, CONCEPT).exercises
    assert (number.id, number.answer, number.tolerance, number.numeric) == ("row3", "causal-row3", 0.001, True)
    assert number.question == "第 3 行给第 1 个词元的权重是多少？"
    assert [o.text for o in choice.options] == ["甲", "乙"] and not choice.numeric
    assert predict.figure == "dk-explorer" and not predict.numeric
    options = [(o.text, o.correct, o.why) for o in concept.options]
    assert options == [("对的", True, "因为对。"), ("错的", False, "因为错。")]
    assert concept.answer is None


# (name, block, expected message fragment, needle locating the expected line; None: the opening fence)
MALFORMED = [
    ("unknown key", NUMBER + "hint: 提示\n", "未知的键 hint", "hint:"),
    ("key of another kind", CONCEPT + "answer: x\n", "kind: concept 的练习不用 answer", "answer:"),
    ("tolerance on a choice", CHOICE + "tolerance: 0.1\n", "kind: choice 的练习不用 tolerance", "tolerance:"),
    ("missing question", NUMBER.replace("question: |\n  第 3 行给第 1 个词元的权重是多少？\n", ""),
     "练习缺少 question", None),
    ("empty question", NUMBER.replace("  第 3 行给第 1 个词元的权重是多少？\n", ""), "练习缺少 question", "question:"),
    ("missing kind", NUMBER.replace("kind: number\n", ""), "练习缺少 kind", None),
    ("unknown kind", NUMBER.replace("kind: number", "kind: essay"), "未知的练习类型 kind: essay", "kind:"),
    ("missing id", NUMBER.replace("id: row3\n", ""), "练习缺少 id", None),
    ("bad id", NUMBER.replace("id: row3", "id: Row 3"), "练习的 id 不合法", "id:"),
    ("missing answer", NUMBER.replace("answer: causal-row3\n", ""), "练习缺少 answer", None),
    ("answer not a name", NUMBER.replace("answer: causal-row3", "answer: 42"), "answer 应是一个名字", "answer:"),
    ("missing explanation", NUMBER.replace("explanation: |\n  是 {answer}。\n", ""), "练习缺少 explanation", None),
    ("string tolerance", NUMBER.replace("tolerance: 0.001", "tolerance: '0.001'"), "tolerance 应是不小于 0 的数",
     "tolerance:"),
    ("negative tolerance", NUMBER.replace("tolerance: 0.001", "tolerance: -1"), "tolerance 应是不小于 0 的数",
     "tolerance:"),
    ("nan tolerance", NUMBER.replace("tolerance: 0.001", "tolerance: .nan"), "tolerance 应是不小于 0 的数",
     "tolerance:"),
    ("boolean tolerance", NUMBER.replace("tolerance: 0.001", "tolerance: true"), "tolerance 应是不小于 0 的数",
     "tolerance:"),
    ("html in a question", NUMBER.replace("  第 3 行给第 1 个词元的权重是多少？\n",
                                          "  第一行。\n  第二行 <img src=x onerror=alert(1)>。\n"),
     "question 里不能写 HTML 标签", "第二行"),
    ("a comment in an explanation", NUMBER.replace("  是 {answer}。", "  是 {answer}。<!-- 注释 -->"),
     "explanation 里不能写 HTML 标签", "<!--"),
    ("a tag inside math", NUMBER.replace("  是 {answer}。", "  当 $a<b$ 时是 {answer}。"),
     "explanation 里不能写 HTML 标签", "$a<b$"),
    ("a closing tag", CHOICE.replace("  - 乙", "  - 乙</li>"), "第 2 个选项里不能写 HTML 标签", "乙</li>"),
    ("javascript url", NUMBER.replace("  是 {answer}。", "  见[这里](javascript:alert(1))。"),
     "javascript:", "javascript"),
    ("zero-width character", NUMBER.replace("  是 {answer}。", "  是\u200b {answer}。"), "不可见字符", "是\u200b"),
    ("bidi override", CHOICE.replace("  - 甲", "  - 甲\u202e乙"), "不可见字符", "甲\u202e"),
    ("heading in an explanation", NUMBER.replace("  是 {answer}。", "  ## 小标题\n  是 {answer}。"),
     "不能写标题", "## 小标题"),
    ("code block in a question", NUMBER.replace("  第 3 行给第 1 个词元的权重是多少？\n",
                                                "  看代码：\n  ~~~python\n  x = 1\n  ~~~\n"),
     "不能写代码块", "~~~python"),
    ("placeholder in a question", NUMBER.replace("第 3 行给第 1 个词元的权重", "{answer} 是多少"),
     "question 里不能用 {answer}", "{answer} 是多少"),
    ("placeholder in a concept", CONCEPT + "explanation: 是 {answer}。\n", "explanation 里不能用 {answer}",
     "explanation:"),
    ("question not text", NUMBER.replace("question: |\n  第 3 行给第 1 个词元的权重是多少？", "question: [1, 2]"),
     "question 应是文字", "question:"),
    ("too long", NUMBER.replace("第 3 行给第 1 个词元的权重是多少？", "长" * 1600), "question 太长", "question:"),
    ("duplicate key", NUMBER + "id: again\n", "键 id 写了两次", "id: again"),
    ("options not a list", CHOICE.replace("  - 甲\n  - 乙\n", "  甲: 乙\n"), "options 应是列表", "options:"),
    ("one option only", CHOICE.replace("  - 乙\n", ""), "options 应有 2 到 8 项", "options:"),
    ("duplicate option", CHOICE.replace("  - 乙", "  - 甲"), "第 2 个选项和前面的选项重复", "  - 甲"),
    ("option not text", CHOICE.replace("  - 乙", "  - {a: 1}"), "第 2 个选项应是一行文字", "{a: 1}"),
    ("option over two lines", CHOICE.replace("  - 乙", "  - |\n    乙\n    丙"), "第 2 个选项应是一行文字", "  - |"),
    ("missing options", CHOICE.replace("options:\n  - 甲\n  - 乙\n", ""), "练习缺少 options", None),
    ("predict without figure", PREDICT.replace("figure: dk-explorer\n", ""), "练习缺少 figure", None),
    ("predict with options and tolerance", PREDICT + "tolerance: 0.1\n", "有 options 的 predict 题不用 tolerance",
     "tolerance:"),
    ("concept with two correct", CONCEPT.replace("    why: 因为错。", "    why: 因为错。\n    correct: true"),
     "恰好有一个选项写 correct: true，现在有 2 个", "options:"),
    ("concept with none correct", CONCEPT.replace("    correct: true\n", ""), "现在有 0 个", "options:"),
    ("concept option without why", CONCEPT.replace("    why: 因为错。\n", ""), "第 2 个选项缺少 why", "- text: 错的"),
    ("concept option unknown key", CONCEPT.replace("    why: 因为错。", "    why: 因为错。\n    hint: 提示"),
     "第 2 个选项里有未知的键 hint", "hint:"),
    ("concept option a string", CONCEPT.replace("  - text: 错的\n    why: 因为错。", "  - 错的"),
     "概念题的第 2 个选项应写成 text、why", "  - 错的"),
    ("concept correct not a boolean", CONCEPT.replace("correct: true", "correct: 对"),
     "第 1 个选项的 correct 应是 true 或 false", "correct:"),
    ("not a mapping", "- 甲\n- 乙\n", "练习块里应是「键: 值」的映射", None),
    ("yaml syntax", NUMBER.replace("tolerance: 0.001", "tolerance: [0.001"), "练习块不是合法的 YAML", "explanation:"),
]


@pytest.mark.parametrize(("block", "message", "needle"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_a_malformed_block_is_refused_with_its_line(block: str, message: str, needle: str | None) -> None:
    parsed = parse(block)
    expected = FENCE if needle is None else last_line_of(block, needle)
    found = [str(p) for p in parsed.problems]
    assert len(found) == 1 and found[0].startswith(f"{PATH}:{expected}: ") and message in found[0], (expected, found)
    assert parsed.exercises == [] and parsed.by_block == [None]


def last_line_of(block: str, needle: str) -> int:
    """File line of the last YAML line of ``block`` containing ``needle``."""
    index = max(i for i, line in enumerate(block.splitlines()) if needle in line)
    return FENCE + 1 + index


def test_the_yaml_error_names_the_line_where_the_parser_stopped() -> None:
    block = NUMBER.replace("tolerance: 0.001", "tolerance: [0.001")
    problem = only_problem(parse(block))
    assert "练习块不是合法的 YAML" in problem


def test_duplicate_ids_on_a_page() -> None:
    parsed = parse(NUMBER, CHOICE.replace("id: pick", "id: row3"))
    second_id = FENCE + NUMBER.count("\n") + 4  # closing fence, blank line, second fence, then its id: line
    message = only_problem(parsed)
    assert message.startswith(f"{PATH}:{second_id}: 练习 id row3 在第 {FENCE + 1} 行用过了"), message
    assert [e.id for e in parsed.exercises] == ["row3"] and parsed.by_block[1] is None


def test_an_unclosed_block() -> None:
    text = "段落。\n\n```exercise\n" + NUMBER
    message = only_problem(exercises.parse(text, FIRST, PATH))
    assert message.startswith(f"{PATH}:{FENCE}: 练习块没有结束")


@pytest.mark.parametrize("fence", ["  ```exercise", "``` exercise", "~~~exercise", "```exercise title=x",
                                   "```{.exercise}"])
def test_a_fence_that_looks_like_an_exercise_is_reported(fence: str) -> None:
    text = f"段落。\n\n{fence}\n{NUMBER}```\n"
    message = only_problem(exercises.parse(text, FIRST, PATH))
    assert message.startswith(f"{PATH}:{FENCE}: 练习块的开头格式不对"), message


def test_an_exercise_shown_inside_another_code_block_is_only_an_example() -> None:
    text = f"段落。\n\n````markdown\n```exercise\n{NUMBER}```\n````\n\n```exercise\n{CHOICE}```\n"
    parsed = exercises.parse(text, FIRST, PATH)
    assert parsed.problems == [] and [e.id for e in parsed.exercises] == ["pick"]
    assert parsed.exercises[0].line == FIRST + text.split("\n").index("```exercise", 4)


# --------------------------------------------------------------------------- names the exercises use

ANSWERS = {"causal-row3": "x.py", "pick-one": "x.py", "guess-one": "x.py", "elsewhere": "y.py"}


def references(*blocks: str, markers: set[str] | None = None, interactive: set[str] | None = None) -> list[str]:
    parsed = parse(*blocks)
    assert parsed.problems == []
    return [str(p) for p in exercises.check_references(
        parsed.exercises, PATH, module="x.py", answers=ANSWERS,
        markers={"dk-explorer"} if markers is None else markers,
        interactive={"dk-explorer"} if interactive is None else interactive,
    )]


def test_names_that_exist_pass() -> None:
    assert references(NUMBER, CHOICE, PREDICT, CONCEPT) == []


def test_an_unknown_answer_function() -> None:
    (message,) = references(NUMBER.replace("answer: causal-row3", "answer: nope"))
    assert message.startswith(f"{PATH}:{line_of(NUMBER, 'answer:')}: 练习 row3 的答案 nope 没有声明")
    assert '@exercise_answer("nope")' in message and "causal-row3" in message


def test_an_answer_of_another_article() -> None:
    (message,) = references(NUMBER.replace("answer: causal-row3", "answer: elsewhere"))
    assert "它声明在 y.py，不是这篇文章的模块" in message


def test_a_figure_that_is_not_on_the_page() -> None:
    (message,) = references(PREDICT, markers=set())
    assert message.startswith(f"{PATH}:{line_of(PREDICT, 'figure:')}: 练习 guess 引用的图 dk-explorer 不在这一页上")


def test_a_figure_that_cannot_be_explored() -> None:
    (message,) = references(PREDICT, interactive=set())
    assert "不能操作（没有 @figure_data）" in message


# --------------------------------------------------------------------------- the computed value


def value_problems(block: str, value: object) -> list[str]:
    (ex,) = parse(block).exercises
    return [str(p) for p in exercises.check_value(ex, value, PATH)]


def test_a_choice_answer_must_be_exactly_one_option() -> None:
    assert value_problems(CHOICE, "乙") == []
    (message,) = value_problems(CHOICE, "丙")
    expected = f"{PATH}:{line_of(CHOICE, 'answer:')}: 练习 pick 的答案函数 pick-one 返回了 '丙'，不是选项之一"
    assert message.startswith(expected)
    assert "'甲'、'乙'" in message
    assert value_problems(CHOICE, 2)  # a number is not an option either


def test_a_predict_answer_with_options_is_an_option() -> None:
    assert value_problems(PREDICT, "变小") == []
    assert "不是选项之一" in value_problems(PREDICT, "不变")[0]


def test_a_number_question_needs_a_number() -> None:
    assert value_problems(NUMBER, 0.25) == [] and value_problems(NUMBER, 3) == []
    assert "却返回了文字" in value_problems(NUMBER, "0.25")[0]


def test_a_float_answer_needs_a_tolerance() -> None:
    block = NUMBER.replace("tolerance: 0.001\n", "")
    assert value_problems(block, 37248) == []
    (message,) = value_problems(block, 0.25)
    assert "要写正的 tolerance" in message and message.startswith(f"{PATH}:{FENCE}: ")
    (message,) = value_problems(block.replace("answer:", "tolerance: 0\nanswer:"), 0.25)
    assert message.startswith(f"{PATH}:{line_of(block, 'answer:')}: ")  # the tolerance line, now where answer was


def test_an_answer_that_was_not_computed() -> None:
    assert "没有算出来" in value_problems(NUMBER, None)[0]


def test_a_concept_question_has_no_computed_value() -> None:
    assert value_problems(CONCEPT, None) == []
