"""The comparison marker (``<!-- playground: A B C -->``): parsed by the one MARKER, its mistakes stop the build with
file:line, the placeholder names every model's header and the total download, models that do not share vocabulary
and task are refused, and the GRPO article shows the three aligned models side by side."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import pytest

from llmsite.features.playground import Playground, compare_block, labels
from llmsite.playground import pages, registry
from llmsite.problems import BuildStop

NAMES = ("aligned-sft", "aligned-dpo", "aligned-grpo")
KNOWN = (*NAMES, "tang-gpt", "acrostic-gpt")
MARK = "<!-- playground: aligned-sft aligned-dpo aligned-grpo -->"


def test_one_marker_gives_a_use_per_model_with_its_group():
    uses = registry.uses(f"# 标题\n\n{MARK}\n", "docs/x.md", KNOWN)
    assert [(u.name, u.where, u.group) for u in uses] == [(n, "docs/x.md:3", NAMES) for n in NAMES]
    (single,) = registry.uses("<!-- playground: tang-gpt -->\n", "docs/x.md", KNOWN)
    assert single.group == ()
    (match,) = registry.MARKER.finditer(f"a\n{MARK}\n")
    assert registry.names(match) == NAMES
    assert registry.names(next(registry.MARKER.finditer("<!--playground:tang-gpt\t-->"))) == ("tang-gpt",)


@pytest.mark.parametrize("text, line, message", [
    (f"正文\n\n{MARK.replace(' aligned-dpo', ', aligned-dpo')}\n", 3, "标记写错了"),  # a comma
    (f"正文\n  {MARK}\n", 2, "标记写错了"),  # indented
    ("<!-- playground: aligned-sft aligned-dpo aligned-grpo tang-gpt -->\n", 1, "最多并排比较 3 个模型，这里写了 4 个"),
    ("\n<!-- playground: aligned-sft aligned-sft -->\n", 2, "模型 aligned-sft 在同一个比较里写了两次"),
    ("\n\n<!-- playground: aligned-sft aligned-rlhf -->\n", 3, "没有名为 aligned-rlhf 的构建产物"),
    (f"<!-- playground: aligned-dpo -->\n\n{MARK}\n", 3, "模型 aligned-dpo 的演示在这一页已经放过一次"),
])
def test_a_bad_comparison_marker_names_file_and_line(text, line, message):
    with pytest.raises(registry.MarkerError, match=rf"^docs/x\.md:{line}: .*{re.escape(message)}"):
        registry.uses(text, "docs/x.md", KNOWN)


def test_column_titles_drop_the_common_words():
    assert labels(NAMES) == ["SFT", "DPO", "GRPO"]
    assert labels(["tang-gpt", "acrostic-gpt"]) == ["TANG-GPT", "ACROSTIC-GPT"]
    assert labels(["a-b-x", "a-b-y"]) == ["X", "Y"]
    assert labels(["a-b", "a-b-c"]) == ["B", "B-C"]  # a name never loses its last word


def header(name: str, params: int = 7, chars=("春", "夏"), task=None) -> dict:
    task = {"kind": "acrostic", "heads": 4} if task is None else task
    return {"params": params, "vocab": {"bytes": 256, "chars": list(chars)},
            "weights": {"bytes": 2 * params, "file": f"{name}.0123456789ab.bin"}, **({"task": task} if task else {})}


def test_the_placeholder_names_each_header_and_the_total_download():
    out = compare_block(NAMES, [header(n, 10 + i) for i, n in enumerate(NAMES)], "articles/grpo/")
    outer = re.match(r'<div class="llm-pg llm-pg--compare" id="pg-aligned-sft--aligned-dpo--aligned-grpo" ([^>]*)>',
                     out)
    assert outer and " hidden" in outer.group(0)
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', outer.group(1)))
    assert attrs["data-llm-playground"] == " ".join(NAMES) and attrs["data-llm-compare"] == "3"
    assert attrs["data-llm-bytes"] == str(2 * (10 + 11 + 12))
    children = re.findall(r'<div data-llm-model="([^"]+)" data-llm-label="([^"]+)" data-llm-header="([^"]+)" '
                          r'data-llm-bytes="(\d+)" data-llm-params="(\d+)" hidden></div>', out)
    assert children == [(n, lab, f"../../playground/{n}.json", str(2 * (10 + i)), str(10 + i))
                        for i, (n, lab) in enumerate(zip(NAMES, ["SFT", "DPO", "GRPO"], strict=True))]
    assert html.unescape(out) == out, "nothing in it needs escaping"


def test_models_without_the_same_vocabulary_and_task_are_refused():
    with pytest.raises(ValueError, match="aligned-dpo 的和 aligned-sft 的不同"):
        compare_block(NAMES, [header("a"), header("b", chars=("春", "秋")), header("c")], "x/")
    with pytest.raises(ValueError, match="aligned-grpo 的和 aligned-sft 的不同"):
        compare_block(NAMES, [header("a"), header("b"), header("c", task={"kind": "acrostic", "heads": 5})], "x/")
    with pytest.raises(ValueError, match="aligned-sft 没有 task"):
        compare_block(NAMES, [header("a", task={}), header("b"), header("c")], "x/")


def test_expand_puts_the_comparison_in_the_page_and_stops_on_a_mismatch():
    page = SimpleNamespace(file=SimpleNamespace(src_uri="articles/y.md"), url="articles/y/")
    plugin = Playground(serving=False)
    plugin.headers = {n: header(n) for n in NAMES}
    out = plugin.expand(f"正文\n\n{MARK}\n\n后文\n", page)
    assert out.startswith("正文\n\n<div class=\"llm-pg llm-pg--compare\"") and out.endswith("\n\n后文\n")
    assert out.count("data-llm-header=") == 3
    plugin.headers["aligned-grpo"] = header("c", chars=("冬",))
    with pytest.raises(BuildStop, match=r"^docs/articles/y\.md: 并排比较的模型要用同一个词表和任务"):
        plugin.expand(f"{MARK}\n", page)
    plugin.failed = {"aligned-dpo": "训练失败了"}
    assert "模型演示 aligned-dpo 导出失败" in plugin.expand(f"{MARK}\n", page)


def test_the_grpo_article_marks_the_aligned_models():
    used = pages.marked()
    for name in NAMES:
        places = [(u.where.split(":")[0], u.group) for u in used.get(name, [])]
        assert places == [("docs/articles/grpo.md", NAMES)], used
