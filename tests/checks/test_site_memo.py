"""``load_site(memo=...)``: a later call returns the Site a fresh call returns, after each kind of edit.

Each test loads the scratch repository once with a memo (filling it), edits one thing, then compares the
memo's second answer with a call without memo, field by field, and checks that the edit shows in the answer
(so a memo that kept serving the first result fails). The last tests pin the speed contract: an unchanged
article is not checked again.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from llmsite.content import articles
from llmsite.content.articles import Site, load_site
from llmsite.content.memo import ArticleMemo

from .conftest import ARTICLE, SLUG, Repo

TARGET = "docs/articles/transformer-attention.md"  # the sample links to its heading 为什么要缩放


def same_as_fresh(root: Path, memo: ArticleMemo) -> Site:
    """The memo's answer, after asserting it equals a fresh call's in every article field and every problem."""
    got = load_site(root=root, memo=memo)
    want = load_site(root=root)
    assert list(got.articles) == list(want.articles)  # route order
    for slug, article in want.articles.items():
        assert dataclasses.asdict(got.articles[slug]) == dataclasses.asdict(article), slug
    assert got.problems == want.problems  # same problems in the same order
    return got


def messages(site: Site, path: str) -> list[str]:
    return [p.message for p in site.problems if p.path == path]


@pytest.fixture
def memo(repo: Repo) -> ArticleMemo:
    m = ArticleMemo()
    first = load_site(root=repo.root, memo=m)
    assert SLUG in first.articles and not first.problems, first.problems
    assert m.misses == len(first.articles) and len(m) == len(first.articles)
    return m


def test_unchanged(repo: Repo, memo: ArticleMemo) -> None:
    site = same_as_fresh(repo.root, memo)
    assert memo.hits == len(site.articles) and memo.misses == 0
    assert site.articles[SLUG].prev and site.articles[SLUG].stage == site.articles["prompt-engineering"].stage


def test_windows_line_ends_are_remembered_too(repo: Repo, memo: ArticleMemo) -> None:
    repo.write(ARTICLE, repo.read(ARTICLE).replace("\n", "\r\n"))
    same_as_fresh(repo.root, memo)
    assert memo.misses == 1
    site = same_as_fresh(repo.root, memo)
    assert memo.misses == 0 and memo.hits == len(site.articles)


def test_file_that_is_not_utf8(repo: Repo, memo: ArticleMemo) -> None:
    good = (repo.root / ARTICLE).read_bytes()
    (repo.root / ARTICLE).write_bytes(good.decode("utf-8").encode("gb18030"))
    for _ in range(2):  # reported on every call, not remembered as an article without problems
        site = same_as_fresh(repo.root, memo)
        assert any("不是 UTF-8 编码" in m for m in messages(site, ARTICLE)), site.problems
    (repo.root / ARTICLE).write_bytes(good)
    assert not same_as_fresh(repo.root, memo).problems


def test_returned_articles_are_copies(repo: Repo, memo: ArticleMemo) -> None:
    site = load_site(root=repo.root, memo=memo)
    site.articles[SLUG].tags.append("改掉")
    site.articles[SLUG].title = "改掉"
    again = same_as_fresh(repo.root, memo)
    assert again.articles[SLUG].tags == ["PyTorch", "注意力机制"]
    assert again.articles[SLUG].title == "检查用的示例文章"


def test_body_edit(repo: Repo, memo: ArticleMemo) -> None:
    before = load_site(root=repo.root, memo=memo).articles[SLUG].readtime
    line = repo.append("用PyTorch写几行。\n\n" + "很长的一段正文，" * 400)
    site = same_as_fresh(repo.root, memo)
    assert [p.line for p in site.problems if p.path == ARTICLE] == [line]
    assert any(m.startswith("排版规则 A") for m in messages(site, ARTICLE))
    repo.write(ARTICLE, repo.read(ARTICLE).replace("用PyTorch写", "用 PyTorch 写"))
    site = same_as_fresh(repo.root, memo)
    assert not site.problems and site.articles[SLUG].readtime > before


def test_edit_of_same_size_and_same_mtime(repo: Repo, memo: ArticleMemo) -> None:
    file = repo.root / ARTICLE
    stat = file.stat()
    text = repo.read(ARTICLE)
    assert "正文第一段" in text
    repo.write(ARTICLE, text.replace("正文第一段", "正文第二段"))  # same length in bytes
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file.stat().st_size == stat.st_size and file.stat().st_mtime_ns == stat.st_mtime_ns
    repo.write(ARTICLE, repo.read(ARTICLE).replace("正文第二段，用 PyTorch", "正文第二段，用PyTorch"))
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    site = same_as_fresh(repo.root, memo)
    assert any(m.startswith("排版规则 A") for m in messages(site, ARTICLE))


def test_front_matter_edit(repo: Repo, memo: ArticleMemo) -> None:
    meta = repo.read(ARTICLE).split("---\n")[1]
    meta = meta.replace("检查用的示例文章", "改过标题的示例文章").replace("2026-11-25", "2026-11-27")
    meta = meta.replace("  - 注意力机制\n", "")
    repo.article(meta=meta)
    site = same_as_fresh(repo.root, memo)
    a = site.articles[SLUG]
    assert (a.title, a.date.isoformat(), a.tags) == ("改过标题的示例文章", "2026-11-27", ["PyTorch"])
    # a title equal to another article's: the duplicate check sees the remembered other article's title
    other = load_site(root=repo.root).articles["decoding"].title
    repo.article(meta=meta.replace("改过标题的示例文章", other))
    site = same_as_fresh(repo.root, memo)
    assert any("重复" in m for m in messages(site, "docs/articles/decoding.md"))


def test_link_target_heading_edit_breaks_anchor(repo: Repo, memo: ArticleMemo) -> None:
    text = repo.read(TARGET)
    assert "### 为什么要缩放\n" in text
    repo.write(TARGET, text.replace("### 为什么要缩放\n", "### 缩放的原因\n"))
    site = same_as_fresh(repo.root, memo)
    assert any(m.startswith("锚点 #为什么要缩放") for m in messages(site, ARTICLE)), site.problems
    repo.write(TARGET, text)
    assert not same_as_fresh(repo.root, memo).problems


def test_snippet_file_edit(repo: Repo, memo: ArticleMemo) -> None:
    code = repo.read("code/attention.py")
    before = load_site(root=repo.root, memo=memo).articles[SLUG].readtime
    repo.write("code/attention.py", code.replace("[start:sdpa]", "[start:sdpa2]").replace("[end:sdpa]", "[end:sdpa2]"))
    site = same_as_fresh(repo.root, memo)
    assert any("没有名为 sdpa 的片段" in m for m in messages(site, ARTICLE)), site.problems
    longer = "\n".join(f"    # 注释 {i}：多写一些说明文字，让阅读时间变长" for i in range(300))
    repo.write("code/attention.py", code.replace("# --8<-- [end:sdpa]", longer + "\n# --8<-- [end:sdpa]"))
    site = same_as_fresh(repo.root, memo)
    assert site.articles[SLUG].readtime > before


def test_tags_file_edit(repo: Repo, memo: ArticleMemo) -> None:
    tags = repo.read("data/tags.yml")
    lines = [line for line in tags.splitlines(keepends=True) if "注意力机制" not in line]
    assert len(lines) < len(tags.splitlines())
    repo.write("data/tags.yml", "".join(lines))
    site = same_as_fresh(repo.root, memo)
    assert any("注意力机制" in m for m in messages(site, ARTICLE)), site.problems
    assert SLUG not in site.articles


def test_files_added_and_removed(repo: Repo, memo: ArticleMemo) -> None:
    meta = repo.read(ARTICLE).split("---\n")[1].replace("检查用的示例文章", "第二篇示例文章")
    repo.article(meta=meta, body="第二篇的正文，链接到[示例](checks-sample.md#第一节)。\n", slug="second-sample")
    repo.route_add("second-sample")
    site = same_as_fresh(repo.root, memo)
    assert site.articles[SLUG].next == "second-sample" and "second-sample" in site.articles
    # the sample's link target disappears: its link is now broken although the sample did not change
    shutil.move(repo.root / TARGET, repo.root / "moved.md")
    site = same_as_fresh(repo.root, memo)
    assert any("链接的页面不存在" in m for m in messages(site, ARTICLE)), site.problems
    (repo.root / "docs/articles/second-sample.md").unlink()
    repo.route_remove("second-sample")
    shutil.move(repo.root / "moved.md", repo.root / TARGET)
    site = same_as_fresh(repo.root, memo)
    assert "second-sample" not in site.articles and not site.problems
    assert len(memo) == len(site.articles)  # the removed file's entry is forgotten


def test_figure_declaration_problems_follow_the_first_article_with_markers(repo: Repo, memo: ArticleMemo) -> None:
    """Declaration problems are reported once, on the first article with markers: not a per-article result."""
    repo.write(
        "code/figures/zz_duplicate.py",
        'from figkit import figure\n\n\n@figure("decoding-temperature", article="decoding", title="重复的图", '
        'caption="重复声明的图。")\ndef duplicate():\n    pass\n',
    )

    def declaration_problems(site: Site) -> list[str]:
        return [p.path for p in site.problems if "已在" in p.message]

    site = same_as_fresh(repo.root, memo)
    assert declaration_problems(site) == ["code/figures/zz_duplicate.py"], site.problems
    same_as_fresh(repo.root, memo)  # every article has been through the memo with these declarations
    # decoding.md (the first article with markers) loses its markers: the next one must meet the problem now
    text = repo.read("docs/articles/decoding.md")
    repo.write("docs/articles/decoding.md", text.replace("<!-- figure:", "<!-- 图:"))
    site = same_as_fresh(repo.root, memo)
    assert declaration_problems(site) == ["code/figures/zz_duplicate.py"], site.problems


def test_unchanged_articles_are_not_checked_again(repo: Repo, memo: ArticleMemo, monkeypatch) -> None:
    calls: list[str] = []
    real = articles.check_document

    def counting(doc, ctx):  # type: ignore[no-untyped-def]
        calls.append(doc.path)
        return real(doc, ctx)

    monkeypatch.setattr(articles, "check_document", counting)
    load_site(root=repo.root, memo=memo)
    assert calls == []
    repo.append("多写一段。")
    load_site(root=repo.root, memo=memo)
    assert calls == [ARTICLE]
    load_site(root=repo.root)  # without memo every article is checked, as before
    assert len(calls) == 1 + len(articles.article_files(repo.root / "docs"))


def test_snippet_file_edit_rechecks_only_the_articles_that_include_it(repo: Repo, memo: ArticleMemo,
                                                                     monkeypatch) -> None:
    calls: list[str] = []
    real = articles.check_document
    monkeypatch.setattr(articles, "check_document", lambda doc, ctx: calls.append(doc.path) or real(doc, ctx))
    includers = [
        f"docs/articles/{f.name}" for f in articles.article_files(repo.root / "docs")
        if '--8<-- "code/attention.py' in f.read_text(encoding="utf-8")
    ]
    assert ARTICLE in includers
    repo.write("code/attention.py", repo.read("code/attention.py") + "\n# 文件末尾加的一行注释\n")
    load_site(root=repo.root, memo=memo)
    assert sorted(calls) == sorted(includers)


def test_stored_memo_is_used_by_the_next_process_and_dropped_for_other_code(
    repo: Repo, memo: ArticleMemo, tmp_path: Path, monkeypatch
) -> None:
    from llmsite.content import memo as memo_module

    memo.store(tmp_path)
    restored = ArticleMemo.restore(tmp_path)
    assert len(restored) == len(memo)
    repo.write(ARTICLE, repo.read(ARTICLE) + "\n从上一次构建接着检查。\n")
    site = same_as_fresh(repo.root, restored)
    assert restored.misses == 1 and restored.hits == len(site.articles) - 1
    assert "从上一次构建接着检查" in (repo.root / ARTICLE).read_text(encoding="utf-8")
    # other code (a changed check) must not reuse what this code computed
    monkeypatch.setattr(memo_module, "_package_version", lambda: "another-version")
    assert len(ArticleMemo.restore(tmp_path)) == 0
    (tmp_path / next(tmp_path.glob("articles-*.pickle")).name).write_bytes(b"damaged")
    monkeypatch.undo()
    assert len(ArticleMemo.restore(tmp_path)) == 0  # a damaged file gives an empty memo, not an error
