"""Front matter and data-file strings are plain text: markup is rejected with ``file:line`` and a fix.

Each payload goes into each field of a scratch copy of the content, one at a time, and
``check_content.py`` must report it at the right line, exit 1 and leave every file as it was.
"""

from __future__ import annotations

import pytest

from tests.checks.conftest import ARTICLE, META, Repo
from tests.security.payloads import ACCEPTED, REJECTED

# (field, file, how to put the payload there, line the problem is reported on)
_QUOTE = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"})


def _yaml(value: str) -> str:
    """A double-quoted YAML scalar holding ``value`` exactly (control characters escaped)."""
    body = value.translate(_QUOTE)
    body = "".join(ch if ch.isprintable() or ch == " " else f"\\u{ord(ch):04x}" for ch in body)
    return f'"{body}"'


def _put(repo: Repo, field: str, value: str) -> tuple[str, int]:
    """Write ``value`` into ``field``; return (file, line) where the problem must be reported."""
    if field == "title":
        repo.article(meta=META.replace("title: 检查用的示例文章", f"title: {_yaml(value)}"))
        return ARTICLE, 2
    if field == "description":
        repo.article(meta=META.replace("description: 一篇用来测试内容检查的短文。", f"description: {_yaml(value)}"))
        return ARTICLE, 3
    if field == "author name":
        text = repo.read("data/authors.yml")
        repo.write("data/authors.yml", text + f"\nmallory:\n  name: {_yaml(value)}\n")
        repo.article(meta=META.replace("author: guohua", "author: mallory"))
        return "data/authors.yml", text.count("\n") + 2
    if field == "author bio":
        text = repo.read("data/authors.yml")
        repo.write("data/authors.yml", text + f"\nmallory:\n  name: 马洛里\n  bio: {_yaml(value)}\n")
        return "data/authors.yml", text.count("\n") + 2
    if field == "tag":
        text = repo.read("data/tags.yml")
        repo.write("data/tags.yml", text.rstrip("\n") + f"\n{_yaml(value)}: 测试用的标签\n")
        return "data/tags.yml", text.rstrip("\n").count("\n") + 2
    if field == "stage title":
        text = repo.read("data/route.yml")
        assert "  - title: 第四阶段：用好大模型\n" in text
        repo.write("data/route.yml", text.replace("  - title: 第四阶段：用好大模型\n", f"  - title: {_yaml(value)}\n"))
        lines = repo.read("data/route.yml").splitlines()
        return "data/route.yml", next(i for i, row in enumerate(lines, 1) if row.startswith('  - title: "'))
    raise AssertionError(field)


FIELDS = ["title", "description", "author name", "author bio", "tag", "stage title"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", sorted(REJECTED))
def test_markup_is_rejected_with_file_and_line(repo: Repo, field: str, name: str) -> None:
    value = REJECTED[name]
    path, line = _put(repo, field, value)
    before = repo.snapshot()
    result = repo.check()
    assert result.code == 1, f"{field} = {value!r} was accepted:\n{result.out}"
    hits = [row for row in result.out.splitlines() if row.startswith(f"{path}:{line}: ")]
    assert hits, f"no problem reported at {path}:{line} for {field} = {value!r}:\n{result.out}"
    assert "修改建议：" in result.out
    assert "Traceback" not in result.out
    assert repo.snapshot() == before, "the check must not modify any file"


@pytest.mark.parametrize("field", ["title", "description", "author name", "stage title"])
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_prose_with_special_characters_is_accepted(repo: Repo, field: str, name: str) -> None:
    value = ACCEPTED[name]
    _put(repo, field, value)
    result = repo.check()
    assert result.code == 0, f"{field} = {value!r} was rejected:\n{result.out}"
