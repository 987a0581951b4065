"""Checks of the article body: HTML, images, links, figures, typography."""

from __future__ import annotations

import pytest

from .conftest import ARTICLE, Repo


@pytest.mark.parametrize(
    ("snippet", "message", "fix"),
    [
        ("<script>alert(1)</script>", "不允许使用 HTML 标签 <script>", "不能嵌入脚本"),
        ('<iframe src="https://example.com/"></iframe>', "不允许使用 HTML 标签 <iframe>", "改成普通链接"),
        ("<style>body { color: red }</style>", "不允许使用 HTML 标签 <style>", "extra.css"),
        (
            '<img src="../assets/authors/guohua.svg" alt="头像" onerror="alert(1)">',
            "不允许使用事件属性 onerror=",
            "删去 onerror= 属性",
        ),
        ('<p onclick="go()">点这里</p>', "不允许使用事件属性 onclick=", "删去 onclick= 属性"),
        ('[学习路线](../route.md){ onmouseover="x()" }', "不允许使用事件属性 onmouseover=", "删去"),
        ('<a href="javascript:alert(1)">点这里</a>', "不允许使用 javascript: 网址", "相对链接"),
    ],
    ids=["script", "iframe", "style", "onerror", "onclick", "attr-list-handler", "javascript-url"],
)
def test_raw_html_is_rejected(repo: Repo, snippet: str, message: str, fix: str) -> None:
    line = repo.append(snippet)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, message, fix), result.out


def test_html_in_code_and_comments_is_ignored(repo: Repo) -> None:
    repo.append(
        "```html\n<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n```\n\n"
        "~~~\n<iframe src=x></iframe>\n~~~\n\n"
        "行内代码 `<script>` 与 `onerror=` 只是文字。\n\n"
        "<!-- <script>注释里的不算</script> -->\n\n"
        '!!! note "示例"\n\n    ```html\n    <style>p {}</style>\n    ```\n'
    )
    result = repo.check()
    assert result.code == 0, result.out


@pytest.mark.parametrize(
    ("snippet", "message", "fix"),
    [
        ("![](../assets/authors/guohua.svg)", "图片缺少替代文字（alt）", "替代文字"),
        ("![  ](../assets/authors/guohua.svg)", "图片缺少替代文字（alt）", "替代文字"),
        ('<img src="../assets/authors/guohua.svg">', "<img> 缺少替代文字", 'alt="'),
        ('<img src="../assets/authors/guohua.svg" alt="">', "<img> 缺少替代文字", 'alt="'),
        ("![示意图](https://example.com/a.png)", "图片引用了外部网址：https://example.com/a.png", "docs/assets/"),
        ('<img src="//cdn.example.com/a.png" alt="示意图">', "<img> 的 src 引用了外部网址", "其他网站"),
        (
            "![示意图][远程图]\n\n[远程图]: http://example.com/b.png",
            "图片引用了外部网址：http://example.com/b.png",
            "docs/assets/",
        ),
    ],
    ids=["empty-alt", "blank-alt", "img-no-alt", "img-empty-alt", "external-md", "external-img", "external-ref"],
)
def test_bad_images(repo: Repo, snippet: str, message: str, fix: str) -> None:
    line = repo.append(snippet)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, message, fix), result.out


def test_good_images_and_external_links_pass(repo: Repo) -> None:
    repo.append(
        "![作者头像](../assets/authors/guohua.svg)\n\n"
        '<img src="../assets/authors/guohua.svg" alt="作者头像">\n\n'
        "外部链接可以用，例如 [PyTorch 文档](https://pytorch.org/docs/) 和 <https://example.com/>。"
    )
    result = repo.check()
    assert result.code == 0, result.out


@pytest.mark.parametrize(
    ("snippet", "message", "fix"),
    [
        ("见[下一篇](no-such-page.md)。", "链接的页面不存在：no-such-page.md", "docs/articles/"),
        ("见[路线](../rout.md)。", "链接的页面不存在：../rout.md", "是不是想写 ../route.md？"),
        ("见[本页](#不存在的小节)。", "锚点 #不存在的小节 在本页中不存在", "#第一节"),
        (
            "见[另一篇](transformer-attention.md#为什么缩放)。",
            "锚点 #为什么缩放 在 docs/articles/transformer-attention.md 中不存在",
            "是不是想写 为什么要缩放？",
        ),
        ("见[代码](../../code/attention.py)。", "链接指向 docs/ 之外", "--8<--"),
        ("见[路线](../route/)。", "链接要指向 .md 文件，而不是网页地址：../route/", "写成 ../route.md"),
        ("见[文章](./)。", "链接要指向 .md 文件", "写成 index.md"),
        ("[坏链接](javascript:alert(1))", "不允许的链接", "网址或站内页面"),
    ],
    ids=[
        "missing-page",
        "typo-page",
        "missing-anchor-same-page",
        "missing-anchor-other-page",
        "outside-docs",
        "page-url",
        "directory-url",
        "javascript",
    ],
)
def test_bad_links(repo: Repo, snippet: str, message: str, fix: str) -> None:
    line = repo.append(snippet)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, message, fix), result.out


def test_good_anchors_pass(repo: Repo) -> None:
    repo.append(
        "## 自定义锚点 { #my-anchor }\n\n"
        "见[自定义](#my-anchor)、[英文标题](#hello-world)、[关于](../about.md#参与贡献)、"
        "[标签](../tags.md#tag:pytorch)、[路线阶段](../route.md#第一阶段transformer-基础)。\n\n"
        "## Hello World\n\n"
        "`[代码里的链接](nope.md)` 不检查。\n"
    )
    result = repo.check()
    assert result.code == 0, result.out


def test_figure_marker(repo: Repo) -> None:
    line = repo.append("<!-- figure: attention-weights -->\n\n<!-- figure: no-such-figure -->")
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line + 2, "未声明的图 no-such-figure", '@figure("no-such-figure"'), result.out
    assert result.count() == 1, result.out


@pytest.mark.parametrize("marker", ["    <!-- figure: attention-weights -->", "<!-- figure attention-weights -->"])
def test_malformed_figure_marker(repo: Repo, marker: str) -> None:
    line = repo.append(marker)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, "图标记的格式不对", "顶格写成 <!-- figure: 名字 -->"), result.out


@pytest.mark.parametrize(
    ("snippet", "rule", "excerpt", "fix"),
    [
        (
            "我们用PyTorch写代码。",
            "排版规则 A",
            "用PyTorch写",
            "在「用」和「PyTorch」之间、「PyTorch」和「写」之间加一个空格",
        ),
        ("一共有3个头。", "排版规则 A", "有3个", "加一个空格"),
        ("原理见[Transformer 架构](../route.md)。", "排版规则 A", "见[Transformer", "在「见」和「Transformer」之间"),
        ("这是一个问题,对吧。", "排版规则 B", "题,对", "改成全角的「，」"),
        ("为什么要缩放?", "排版规则 B", "放?", "改成全角的「？」"),
        ("词元(token)是什么。", "排版规则 B", "元(", "改成全角的「（」"),
        ("注意:这里不同。", "排版规则 B", "意:这", "改成全角的「：」"),
        ("这里多了空格 ，不对。", "排版规则 C", "格 ，", "删去全角标点前后的空格"),
        ("这样也不对。 后面的字", "排版规则 C", "。 后", "删去全角标点前后的空格"),
        ("太好了！！", "排版规则 D", "！！", "只保留一个「！」"),
        ("写完了。。", "排版规则 D", "。。", "只保留一个「。」"),
    ],
    ids=[
        "A-latin",
        "A-digit",
        "A-link-text",
        "B-comma",
        "B-question",
        "B-paren",
        "B-colon",
        "C-before",
        "C-after",
        "D-exclamation",
        "D-period",
    ],
)
def test_typography(repo: Repo, snippet: str, rule: str, excerpt: str, fix: str) -> None:
    line = repo.append(snippet)
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, f"{rule}", fix), result.out
    assert excerpt in result.out, result.out


def test_typography_leaves_code_math_urls_and_latin_text_alone(repo: Repo) -> None:
    repo.append(
        '```python\nprint("中文,English混排")  # 代码里随便写\n```\n\n'
        "行内代码 `x=1,中文` 不检查，公式 $a,b$ 与 $$\\text{汉字}x$$ 也不检查。\n\n"
        "English text, with commas; colons: and (parentheses) is fine, e.g. a, b.\n\n"
        "网址 <https://example.com/中文,路径> 不检查。\n\n"
        "<!-- 注释里的中文,English 不检查 -->\n\n"
        "省略号……和破折号——都可以连用。\n\n"
        "| 版本 | 说明 |\n| --- | --- |\n| v1 | 初始版本 |\n"
    )
    result = repo.check()
    assert result.code == 0, result.out


def test_several_problems_in_one_file_are_all_reported(repo: Repo) -> None:
    meta = "title: 提示工程的实用技巧\nauthor: nobody\ndate: 昨天\ntags: [量子计算]\n"
    repo.article(meta=meta)
    repo.append("<script>x()</script>\n\n![](../assets/authors/guohua.svg)\n\n见[坏链接](nope.md)。\n\n用PyTorch写。。")
    result = repo.check()
    assert result.code == 1
    expected = [
        "缺少必填字段 description",
        "与 docs/articles/prompt-engineering.md 重复",
        "未知作者 nobody",
        "date 不是日期",
        "标签「量子计算」不在允许列表中",
        "<script>",
        "图片缺少替代文字",
        "链接的页面不存在：nope.md",
        "排版规则 A",
        "排版规则 D",
    ]
    missing = [e for e in expected if e not in result.out]
    assert not missing, f"not reported: {missing}\n{result.out}"
    assert result.count() >= len(expected)
    assert f"发现 {result.count()} 个问题" in result.out


def test_paths_narrow_the_report(repo: Repo) -> None:
    repo.append("用PyTorch写。")
    assert repo.check("docs/articles/prompt-engineering.md").code == 0
    assert repo.check(ARTICLE).code == 1


def test_value_marker_needs_an_article_values_function(repo: Repo) -> None:
    """A computed number ({{ value:name }}) in an article whose figure module has no @article_values function."""
    line = repo.append("损失是 {{ value:sft-loss }}。")
    result = repo.check()
    assert result.code == 1
    module = f"code/figures/{ARTICLE.split('/')[-1][:-3].replace('-', '_')}.py"
    assert result.has(ARTICLE, line, f"{{{{ value:sft-loss }}}} 要一个计算出的数，可 {module} 里没有 @article_values",
                      "@article_values"), result.out
    assert result.count() == 1, result.out


@pytest.mark.parametrize("marker", ["{{ value:SFT_loss }}", "{{value sft-loss}}", "{{ Value: sft-loss }}"])
def test_malformed_value_marker(repo: Repo, marker: str) -> None:
    line = repo.append(f"损失是 {marker}。")
    result = repo.check()
    assert result.code == 1
    assert result.has(ARTICLE, line, "算出的数的标记格式不对", "写成 {{ value:名字 }}"), result.out
