"""Front matter schema, data files, route and duplicate titles: one broken input per test."""

from __future__ import annotations

import pytest

from .conftest import ARTICLE, META, SLUG, Repo, line_of


def test_correct_article_passes(repo: Repo) -> None:
    result = repo.check()
    assert result.code == 0, result.out
    n_articles = len([p for p in (repo.root / "docs" / "articles").glob("*.md") if p.name != "index.md"])
    assert f"检查通过：{n_articles} 篇文章，0 个问题" in result.out


def test_repository_content_passes() -> None:
    from llmsite.content.articles import load_site

    problems = load_site().problems
    assert not problems, "\n".join(str(p) for p in problems)


def test_yaml_that_does_not_parse(repo: Repo) -> None:
    meta = META.replace("title: 检查用的示例文章", "title: [没有闭合的括号\nsummary: x")
    repo.article(meta=meta)
    result = repo.check()
    assert result.code == 1
    assert "front matter 不是合法的 YAML" in result.out
    assert result.has(ARTICLE, 3, "front matter 不是合法的 YAML", "检查缩进、冒号后的空格和引号是否成对"), result.out


def test_missing_field(repo: Repo) -> None:
    repo.article(meta=META.replace("description: 一篇用来测试内容检查的短文。\n", ""))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, 1, "front matter 缺少必填字段 description", "在 front matter 中加入 description:")


@pytest.mark.parametrize(
    ("old", "new", "key", "message", "fix"),
    [
        (
            "tags:\n  - PyTorch\n  - 注意力机制\n",
            "tags: PyTorch\n",
            "tags:",
            "tags 应是字符串列表",
            "tags: [Transformer, PyTorch]",
        ),
        ("title: 检查用的示例文章", "title: 123", "title:", "title 应是字符串", "给值加上引号"),
    ],
    ids=["tags-as-string", "title-as-number"],
)
def test_mistyped_field(repo: Repo, old: str, new: str, key: str, message: str, fix: str) -> None:
    text = repo.article(meta=META.replace(old, new))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line_of(text, key), message, fix), result.out


@pytest.mark.parametrize("value", ["2026-13-45", "昨天", "2026/11/25"])
def test_date_that_is_not_a_date(repo: Repo, value: str) -> None:
    text = repo.article(meta=META.replace("date: 2026-11-25", f"date: {value}"))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line_of(text, "date:"), f"date 不是日期：'{value}'", "写成 YYYY-MM-DD"), result.out


def test_unknown_author(repo: Repo) -> None:
    text = repo.article(meta=META.replace("author: guohua", "author: nobody"))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line_of(text, "author:"), "未知作者 nobody", "data/authors.yml"), result.out


def test_unknown_tag(repo: Repo) -> None:
    text = repo.article(meta=META.replace("  - 注意力机制", "  - 量子计算"))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line_of(text, "量子计算"), "标签「量子计算」不在允许列表中", "data/tags.yml"), result.out


def test_duplicate_title(repo: Repo) -> None:
    text = repo.article(meta=META.replace("title: 检查用的示例文章", "title: 提示工程的实用技巧"))
    result = repo.check()
    assert result.code == 1
    line = line_of(text, "title:")
    assert result.has(ARTICLE, line, "与 docs/articles/prompt-engineering.md 重复", "换一个标题"), result.out
    assert result.has("docs/articles/prompt-engineering.md", 2, f"与 {ARTICLE} 重复", "换一个标题"), result.out


def test_article_not_in_route(repo: Repo) -> None:
    repo.route_remove(SLUG)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, 1, "这篇文章不在学习路线中", f"在 data/route.yml 的某个阶段的 articles 下加入 - {SLUG}")


def test_route_entry_without_article(repo: Repo) -> None:
    repo.route_add("no-such-article")
    result = repo.check()
    assert result.code == 1
    line = line_of(repo.read("data/route.yml"), "no-such-article")
    assert result.has(
        "data/route.yml", line, "学习路线中的 no-such-article 没有对应的文章", "创建 docs/articles/no-such-article.md"
    ), result.out


def test_data_file_that_does_not_parse(repo: Repo) -> None:
    repo.write("data/tags.yml", "PyTorch: 代码\n注意力机制: [没有闭合\n")
    result = repo.check()
    assert result.code == 1
    assert "data/tags.yml:" in result.out and "不是合法的 YAML" in result.out


def test_snippet_naming_a_missing_file(repo: Repo) -> None:
    line = repo.append('```python\n--8<-- "code/no_such_file.py:sdpa"\n```')
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line + 1, "代码片段引用的文件不存在：code/no_such_file.py", "检查路径"), result.out


def test_snippet_naming_a_missing_section(repo: Repo) -> None:
    line = repo.append('```python\n--8<-- "code/attention.py:no-such-section"\n```')
    result = repo.check()
    assert result.code == 1
    message = "code/attention.py 中没有名为 no-such-section 的片段"
    assert result.has(ARTICLE, line + 1, message, "[start:名字]"), result.out


def test_file_that_is_not_utf8(repo: Repo) -> None:
    (repo.root / ARTICLE).write_bytes("---\ntitle: 编码\n---\n".encode("gbk"))
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, 1, "文件不是 UTF-8 编码", "UTF-8"), result.out
