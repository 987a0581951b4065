"""Create a new article with its code module, its test and its place in the route.

    python -m llmsite new                     # asks for each field
    python -m llmsite new --slug kv-cache --title "KV 缓存" \
        --summary "一句话摘要" --author guohua --tags Transformer,PyTorch \
        --stage 1 --after transformer-attention

Creates docs/articles/<slug>.md, code/<slug_with_underscores>.py, its figures and exercise answers
code/figures/<slug_with_underscores>.py, tests/code/test_<slug_with_underscores>.py and the independent
recomputation of its exercise answers tests/exercises/test_<slug_with_underscores>_answers.py, and adds the
slug to data/route.yml.
Never overwrites an existing file; every file is written atomically.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path

from llmsite import atomic
from llmsite.content.articles import SLUG
from llmsite.content.catalog import load_authors, load_route, load_tags
from llmsite.paths import ROOT

TEMPLATES = Path(__file__).resolve().parent / "templates"


class ScaffoldError(ValueError):
    pass


@dataclass
class Request:
    slug: str
    title: str
    summary: str
    author: str
    tags: list[str]
    stage: int  # 1-based
    after: str | None
    date: dt.date

    @property
    def module(self) -> str:
        return self.slug.replace("-", "_")


SLUG_MAX = 50


def validate(req: Request, root: Path) -> None:
    problems = []
    if not SLUG.match(req.slug):
        problems.append(f"slug「{req.slug}」不合法：只用小写字母、数字和连字符，例如 kv-cache")
    elif len(req.slug) > SLUG_MAX:  # the generated Python names it on one line, which ruff keeps within 120 columns
        problems.append(f"slug「{req.slug}」太长：{len(req.slug)} 个字符，最多 {SLUG_MAX} 个")
    if (root / "docs" / "articles" / f"{req.slug}.md").exists():
        problems.append(f"slug「{req.slug}」已被使用：docs/articles/{req.slug}.md 已存在")
    for path in (root / "code" / f"{req.module}.py", root / "code" / "figures" / f"{req.module}.py",
                 root / "tests" / "code" / f"test_{req.module}.py"):
        if path.exists():
            problems.append(f"{path.relative_to(root)} 已存在，换一个 slug")
    if not req.title.strip():
        problems.append("标题不能为空")
    if not req.summary.strip() or "\n" in req.summary:
        problems.append("摘要应是非空的一行")
    authors, _ = load_authors(root / "data" / "authors.yml")
    if req.author not in authors:
        problems.append(f"未知作者「{req.author}」：先在 data/authors.yml 中登记（已有：{'、'.join(authors)}）")
    tags, _ = load_tags(root / "data" / "tags.yml")
    unknown = [t for t in req.tags if t not in tags]
    if not req.tags:
        problems.append("至少需要一个标签")
    if unknown:
        problems.append(f"标签不在允许列表中：{'、'.join(unknown)}（可用：{'、'.join(tags)}）")
    route, _ = load_route(root / "data" / "route.yml")
    if not 1 <= req.stage <= len(route.stages):
        problems.append(f"阶段编号应在 1 到 {len(route.stages)} 之间")
    elif req.after and req.after not in route.stages[req.stage - 1].slugs:
        problems.append(f"第 {req.stage} 阶段中没有文章「{req.after}」，无法放在它后面")
    if problems:
        raise ScaffoldError("\n".join(problems))


def route_with(req: Request, text: str, route_stage_slugs: list[str]) -> str:
    """data/route.yml with the new slug inserted; comments and layout are kept."""
    lines = text.splitlines(keepends=True)
    stage_starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("- title:")]
    start = stage_starts[req.stage - 1]
    end = stage_starts[req.stage] if req.stage < len(stage_starts) else len(lines)
    block = lines[start:end]
    anchor = req.after or (route_stage_slugs[-1] if route_stage_slugs else None)
    insert_at, indent = None, None
    for offset, line in enumerate(block):
        stripped = line.strip()
        if stripped == "articles:" or stripped == "articles: []":
            insert_at = offset + 1
            indent = " " * (len(line) - len(line.lstrip()) + 2)
            if stripped == "articles: []":
                block[offset] = line.replace("articles: []", "articles:")
        elif anchor and stripped.startswith("- ") and stripped[2:].split("#")[0].strip() in (anchor, f"slug: {anchor}"):
            indent = line[: len(line) - len(line.lstrip())]
            insert_at = offset + 1
            # skip the nested lines of a mapping entry (labs: ...)
            while insert_at < len(block) and len(block[insert_at]) - len(block[insert_at].lstrip()) > len(indent) \
                    and block[insert_at].strip():
                insert_at += 1
    if insert_at is None or indent is None:
        raise ScaffoldError(f"在 data/route.yml 第 {req.stage} 阶段中找不到 articles: 列表")
    block.insert(insert_at, f"{indent}- {req.slug}\n")
    return "".join(lines[:start] + block + lines[end:])


def create(req: Request, root: Path = ROOT) -> list[Path]:
    validate(req, root)
    fields = {
        "title": req.title.strip(),
        "summary": req.summary.strip(),
        "author": req.author,
        "date": req.date.isoformat(),
        "tags": "\n".join(f"  - {t}" for t in req.tags),
        "module": req.module,
        "slug": req.slug,
        # sorted by module name, as ruff's isort rule wants whatever the slug ("bpe-tokenizer" sorts before figkit)
        "figure_imports": "\n".join(sorted([
            "from figkit import exercise_answer, figure, figure_data, new_figure",
            f"from {req.module} import main_idea",
        ], key=lambda line: line.split()[1])),
    }
    route_file = root / "data" / "route.yml"
    route, _ = load_route(route_file)
    new_route = route_with(req, route_file.read_text(encoding="utf-8"), route.stages[req.stage - 1].slugs)
    article = (TEMPLATES / "article.md").read_text(encoding="utf-8").format(**fields)
    module = (TEMPLATES / "module.py.txt").read_text(encoding="utf-8").format(**fields)
    figures = (TEMPLATES / "figures_module.py.txt").read_text(encoding="utf-8").format(**fields)
    test = (TEMPLATES / "test_module.py.txt").read_text(encoding="utf-8").format(**fields)
    answers = (TEMPLATES / "test_answers.py.txt").read_text(encoding="utf-8").format(**fields)
    created = [
        root / "docs" / "articles" / f"{req.slug}.md",
        root / "code" / f"{req.module}.py",
        root / "code" / "figures" / f"{req.module}.py",
        root / "tests" / "code" / f"test_{req.module}.py",
        root / "tests" / "exercises" / f"test_{req.module}_answers.py",
    ]
    for path, content in zip(created, (article, module, figures, test, answers), strict=True):
        try:
            atomic.write_text(path, content, exclusive=True)
        except atomic.FileExists as exc:
            raise ScaffoldError(str(exc)) from exc
    atomic.write_text(route_file, new_route)
    check, _ = load_route(route_file)
    if req.slug not in check.stages[req.stage - 1].slugs:  # pragma: no cover - defensive
        raise ScaffoldError("写入 data/route.yml 后没有找到新文章，请手动检查该文件")
    return [*created, route_file]


def ask(prompt: str, default: str = "") -> str:
    suffix = f"（默认：{default}）" if default else ""
    value = input(f"{prompt}{suffix}：").strip()
    return value or default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmsite new", description="新建一篇文章（文章、配套代码、图和练习答案、测试，并加入学习路线）"
    )
    parser.add_argument("--slug", help="网址中的名字，小写字母、数字和连字符，例如 kv-cache")
    parser.add_argument("--title", help="文章标题")
    parser.add_argument("--summary", help="一句话摘要")
    parser.add_argument("--author", help="作者 ID（data/authors.yml 中的键）")
    parser.add_argument("--tags", help="标签，用逗号分隔（取自 data/tags.yml）")
    parser.add_argument("--stage", type=int, help="放在学习路线的第几阶段（从 1 开始）")
    parser.add_argument("--after", help="放在该阶段中哪篇文章之后（默认放在阶段末尾）")
    parser.add_argument("--date", help="发布日期 YYYY-MM-DD（默认今天）")
    args = parser.parse_args(argv)

    interactive = sys.stdin.isatty()
    route, _ = load_route(ROOT / "data" / "route.yml")

    def value(name: str, prompt: str, default: str = "") -> str:
        current = getattr(args, name)
        if current is not None:
            return str(current)
        if not interactive:
            raise ScaffoldError(f"缺少参数 --{name}")
        return ask(prompt, default)

    try:
        if interactive and args.stage is None:
            for i, stage in enumerate(route.stages, 1):
                print(f"  {i}. {stage.title}：{'、'.join(stage.slugs) or '（空）'}")
        req = Request(
            slug=value("slug", "slug（网址中的名字，例如 kv-cache）"),
            title=value("title", "标题"),
            summary=value("summary", "一句话摘要"),
            author=value("author", "作者 ID", "guohua"),
            tags=[t.strip() for t in value("tags", "标签（逗号分隔）").replace("，", ",").split(",") if t.strip()],
            stage=int(value("stage", "放在第几阶段", str(len(route.stages)))),
            after=args.after or (ask("放在哪篇之后（回车表示末尾）") or None if interactive else None),
            date=dt.date.fromisoformat(args.date) if args.date else dt.date.today(),
        )
        created = create(req)
    except (ScaffoldError, ValueError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print("已创建：")
    for path in created:
        print(f"  {path.relative_to(ROOT)}")
    print("下一步：编辑文章和代码，运行 make check 与 make test，用 make serve 预览。")
    return 0


if __name__ == "__main__":
    sys.exit(main())
