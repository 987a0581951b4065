"""The scaffold, tried the way a new contributor would use it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("code", "docs", "data", "labs", "llmsite", "scripts", "overrides", "tests", "mkdocs.yml", "pyproject.toml")
ARGS = [
    "--slug", "speculative-decoding", "--title", "投机解码：让生成快起来",
    "--summary", "用小模型先猜几个词、大模型一次核对，讲清它为什么能让生成更快。",
    "--author", "guohua", "--tags", "Transformer,PyTorch", "--stage", "1",
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dest = tmp_path / "repo"
    dest.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for part in PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        else:
            shutil.copy2(src, dest / part)
    (dest / "node_modules").symlink_to(ROOT / "node_modules")
    return dest


def scaffold(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmsite", "new", *args], cwd=repo, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=60,
    )


def snapshot(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and "node_modules" not in p.parts and "__pycache__" not in p.parts}


def test_creates_article_module_test_and_route_entry(repo: Path) -> None:
    proc = scaffold(repo, *ARGS, "--after", "transformer-attention")
    assert proc.returncode == 0, proc.stderr
    assert (repo / "docs/articles/speculative-decoding.md").is_file()
    assert (repo / "code/speculative_decoding.py").is_file()
    assert (repo / "code/figures/speculative_decoding.py").is_file()  # the article's figure and exercise answers
    assert (repo / "tests/code/test_speculative_decoding.py").is_file()
    assert (repo / "tests/exercises/test_speculative_decoding_answers.py").is_file()  # their independent recomputation
    from llmsite.content.catalog import load_route

    route, problems = load_route(repo / "data/route.yml", root=repo)
    order = [entry.slug for entry in route.entries]
    assert not problems
    assert order.index("speculative-decoding") == order.index("transformer-attention") + 1
    # comments of the route file are kept
    assert "唯一来源" in (repo / "data/route.yml").read_text(encoding="utf-8")


def test_generated_module_runs_and_its_test_passes(repo: Path) -> None:
    assert scaffold(repo, *ARGS).returncode == 0
    run = subprocess.run(
        [sys.executable, "code/speculative_decoding.py"], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0 and run.stdout.strip()
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/code/test_speculative_decoding.py"],
        cwd=repo, capture_output=True, text=True, timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout


@pytest.mark.parametrize("slug", ["abc-tokenizer", "speculative-decoding", "x" * 20 + "-" + "y" * 29])
def test_generated_python_is_ruff_clean(repo: Path, slug: str) -> None:
    """make test runs ruff over the repository: a fresh scaffold must pass it, whatever the slug's length or where its
    module sorts against figkit (bpe-tokenizer's imports and a 123-character line once failed it)."""
    args = list(ARGS)
    args[args.index("--slug") + 1] = slug
    args[args.index("--title") + 1] = f"新文章 {slug}"
    assert scaffold(repo, *args).returncode == 0
    module = slug.replace("-", "_")
    files = [f"code/{module}.py", f"code/figures/{module}.py", f"tests/code/test_{module}.py",
             f"tests/exercises/test_{module}_answers.py"]
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *files], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_generated_article_passes_the_content_checks(repo: Path) -> None:
    assert scaffold(repo, *ARGS).returncode == 0
    check = subprocess.run([sys.executable, "-m", "llmsite", "check"], cwd=repo, capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_generated_article_builds_strict_and_is_listed(repo: Path, repo_cache: Path) -> None:
    assert scaffold(repo, *ARGS).returncode == 0
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", LLM_SITE_CACHE=str(repo_cache))
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "site"], cwd=repo,
                           capture_output=True, text=True, timeout=600, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "WARNING" not in build.stderr
    site = repo / "site"
    assert (site / "articles/speculative-decoding/index.html").is_file()
    page = (site / "articles/speculative-decoding/index.html").read_text(encoding="utf-8")
    assert page.count("data-llm-exercise=") == 4, "the template's four exercises, one of each kind"
    for kind in ("number", "choice", "predict", "concept"):
        assert f"llm-ex--{kind}" in page
    for page in ("articles/index.html", "route/index.html", "tags/index.html"):
        assert "投机解码：让生成快起来" in (site / page).read_text(encoding="utf-8"), page


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--slug", "transformer-attention"), "已被使用"),
        (("--slug", "KV_Cache"), "不合法"),
        (("--slug", "x" * 51), "太长：51 个字符，最多 50 个"),
        (("--tags", "不存在的标签"), "不在允许列表"),
        (("--author", "nobody"), "未知作者"),
        (("--stage", "9"), "阶段编号"),
    ],
)
def test_bad_requests_fail_clearly_and_touch_nothing(repo: Path, change: tuple[str, str], message: str) -> None:
    args = list(ARGS)
    args[args.index(change[0]) + 1] = change[1]
    before = snapshot(repo)
    proc = scaffold(repo, *args)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert snapshot(repo) == before
