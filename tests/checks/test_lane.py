"""Lanes (llmsite/lane, ``python -m llmsite lane``, ``make test-article``): which tests an article's lane runs, which
articles a set of changed files calls for, and that the lane restricts the suite's own tests to the article.

Two layers:

- a made-up repository (three articles: ``alpha`` includes ``code/shared.py`` and ``code/alpha_only.py`` and has a
  lab; ``beta``'s figures import ``shared``; ``gamma`` has no code) where every expected answer follows from how the
  files were written here;
- the real repository, where expectations are recomputed from the sources with plain regular expressions and YAML,
  not with the lane's own readers; and a freshly scaffolded article run through its whole lane (slow).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import tests.conftest as suite
from llmsite.lane import changes, graph, report, run, select
from tests.conftest import ROOT

# --------------------------------------------------------------------------- a made-up repository

FRONT = "---\ntitle: {title}\ndescription: 示例\nauthor: {author}\ndate: 2026-12-01\ntags:\n  - {tag}\n---\n\n"
FILES = {
    "docs/articles/alpha.md": FRONT.format(title="甲", author="guohua", tag="PyTorch") + (
        "## 代码\n\n```python\n--8<-- \"code/shared.py:main\"\n```\n\n"
        "```python\n--8<-- \"code/alpha_only.py:main\"\n```\n\n<!-- figure: alpha-fig -->\n"),
    "docs/articles/beta.md": (FRONT.format(title="乙", author="guohua", tag="PyTorch")
                              + "## 图\n\n<!-- figure: beta-fig -->\n"),
    "docs/articles/gamma.md": FRONT.format(title="丙", author="newbie", tag="新标签") + "## 只有文字\n\n没有代码。\n",
    "docs/articles/index.md": "# 文章\n",
    "data/route.yml": ("stages:\n  - title: 一\n    summary: 一\n    articles:\n"
                       "      - slug: alpha\n        labs: [labs/alpha_lab.ipynb]\n      - beta\n      - gamma\n"),
    "data/authors.yml": "guohua:\n  name: guohua\n  bio: 甲\nnewbie:\n  name: 新人\n  bio: 乙\n",
    "data/tags.yml": "PyTorch: 代码\n新标签: 新的\n",
    "code/helper.py": "SCALE = 2\n",
    "code/shared.py": ("from helper import SCALE\n\n\n# --8<-- [start:main]\ndef shared(x):\n"
                       "    return SCALE * x\n# --8<-- [end:main]\n"),
    "code/alpha_only.py": "# --8<-- [start:main]\ndef alpha(x):\n    return x\n# --8<-- [end:main]\n",
    "code/unused.py": "VALUE = 1\n",
    "code/figures/alpha.py": ("from figkit import figure\nfrom alpha_only import alpha\n\n\n"
                              "@figure(\"alpha-fig\", article=\"alpha\", title=\"甲\", caption=\"甲图\")\n"
                              "def alpha_fig():\n    return alpha(1)\n"),
    "code/figures/beta.py": ("from figkit import exercise_answer, figure\nfrom shared import shared\n\n\n"
                             "@figure(\"beta-fig\", article=\"beta\", title=\"乙\", caption=\"乙图\")\n"
                             "def beta_fig():\n    return shared(1)\n\n\n"
                             "@exercise_answer(\"beta-answer\")\ndef beta_answer():\n    return shared(2)\n"),
    "code/figkit.py": "def figure(*a, **k):\n    return lambda f: f\n\n\nexercise_answer = figure\n",
    "labs/alpha_lab.py": "# %% [markdown]\n# # 动手实验：甲\n\n# %%\nimport alpha_only\n",
    "tests/code/test_shared.py": "from shared import shared\n",
    "tests/code/test_alpha_only.py": "from alpha_only import alpha\n",
    "tests/code/test_helper.py": "from helper import SCALE\n",
    "tests/code/test_both_modules.py": "from alpha_only import alpha\nfrom shared import shared\n",
    "tests/code/test_mixed_imports.py": "from helper import SCALE\nfrom shared import shared\n",  # helper: not shown
    "tests/figures/claims.py": "TOLERANCE = 1\n",
    "tests/figures/test_beta_claims.py": ("from pathlib import Path\n\nfrom . import claims\n\n"
                                          "ARTICLE = Path('docs') / 'articles' / 'beta.md'\n"),
    "tests/figures/test_alpha_sums.py": "ARTICLE = 'docs/articles/alpha.md'\n",  # not a claims test by its name
    "tests/browser/test_accessibility.py": "def test_pages():\n    pass\n",
    "tests/labs/test_real_labs.py": "def test_labs():\n    pass\n",
    "tests/site/test_machinery.py": "ARTICLE = 'docs/articles/alpha.md'\n",  # names alpha, but no lane runs it
}


@pytest.fixture(scope="module")
def made_up(tmp_path_factory: pytest.TempPathFactory) -> graph.SiteGraph:
    root = tmp_path_factory.mktemp("lane-repo")
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return graph.load(root)


def lane(site: graph.SiteGraph, slug: str) -> set[str]:
    return {chosen.path.relative_to(site.root).as_posix() for chosen in select.tests_for(site, slug)}


def test_the_graph_reads_each_article_from_its_declarations(made_up: graph.SiteGraph) -> None:
    alpha, beta, gamma = (made_up.articles[s] for s in ("alpha", "beta", "gamma"))
    names = lambda paths: {p.relative_to(made_up.root).as_posix() for p in paths}  # noqa: E731
    assert names(alpha.included_modules) == {"code/shared.py", "code/alpha_only.py"}
    assert (alpha.figures, alpha.labs, alpha.pages) == (("alpha-fig",), ("alpha_lab",),
                                                        ("articles/alpha/", "labs/alpha_lab/"))
    assert names(alpha.modules) == {"code/shared.py", "code/helper.py", "code/alpha_only.py", "code/figkit.py",
                                    "code/figures/alpha.py"}
    assert (beta.figures, beta.answers, beta.included_modules) == (("beta-fig",), ("beta-answer",), ())
    # through its figures, not its text
    assert names(beta.modules) == {"code/shared.py", "code/helper.py", "code/figkit.py", "code/figures/beta.py"}
    assert (gamma.modules, gamma.labs, gamma.figures) == ((), (), ())


def test_a_lane_runs_the_tests_of_what_its_article_includes_and_names(made_up: graph.SiteGraph) -> None:
    assert lane(made_up, "alpha") == {
        "tests/code/test_shared.py", "tests/code/test_alpha_only.py", "tests/code/test_both_modules.py",
        "tests/browser/test_accessibility.py", "tests/labs/test_real_labs.py",
    }
    # beta's figures import shared, but beta does not show it: its lane tests its own figures' claims
    assert lane(made_up, "beta") == {"tests/figures/test_beta_claims.py", "tests/browser/test_accessibility.py"}
    assert lane(made_up, "gamma") == {"tests/browser/test_accessibility.py"}


def test_a_module_used_by_two_articles_selects_both(made_up: graph.SiteGraph) -> None:
    def chosen(*paths: str) -> list[str]:
        selection = changes.articles_for_changes(paths, made_up)
        assert not selection.whole_suite and not selection.outside, selection
        return selection.slugs()

    assert chosen("code/shared.py") == ["alpha", "beta"]  # alpha includes it, beta's figures import it
    assert chosen("code/helper.py") == ["alpha", "beta"]  # imported by shared: followed through imports
    assert chosen("code/alpha_only.py") == ["alpha"]
    assert chosen("labs/alpha_lab.py") == ["alpha"]
    assert chosen("code/figures/beta.py") == ["beta"]
    assert chosen("docs/articles/gamma.md") == ["gamma"]
    assert chosen("tests/figures/test_beta_claims.py") == ["beta"]
    assert chosen("tests/figures/claims.py") == ["beta"]  # a helper the claims test imports
    assert chosen("docs/articles/gamma.md", "code/alpha_only.py") == ["alpha", "gamma"]


@pytest.mark.parametrize(("path", "why"), [
    ("llmsite/tex.py", "llmsite/"), ("overrides/main.html", "overrides/"), ("mkdocs.yml", "mkdocs.yml"),
    ("data/route.yml", "学习路线"), ("docs/assets/javascripts/exercises.js", "docs/assets/"),
    ("tests/conftest.py", "tests/conftest.py"),
    ("code/unused.py", "不知道哪篇文章用到它"), ("docs/articles/deleted.md", "删除或改名"),
    ("code/gone.py", "被删除的文件"),
])
def test_what_every_page_is_made_of_selects_the_whole_suite_and_says_why(made_up: graph.SiteGraph, path: str,
                                                                        why: str) -> None:
    selection = changes.articles_for_changes([path, "docs/articles/gamma.md"], made_up)
    assert selection.whole_suite
    [(where, reason)] = selection.everything
    assert where == path and why in reason
    assert any(line.startswith(f"{path}：") and "全套测试" in line for line in selection.explain())


def test_every_helper_the_shared_harness_imports_or_runs_selects_the_whole_suite(made_up: graph.SiteGraph) -> None:
    """tests/conftest.py imports some modules of tests/ and runs others (``-m tests.x``) in every lane: a change to one
    of them reaches every article, as a change to conftest.py does."""
    text = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    helpers = sorted(f"{name.replace('.', '/')}.py" for name in names
                     if re.fullmatch(r"tests(\.\w+)+", name) and (ROOT / f"{name.replace('.', '/')}.py").is_file())
    assert {"tests/scheduling.py", "tests/without_mkdocs.py"} <= set(helpers), helpers
    for path in helpers:
        assert changes.articles_for_changes([path], made_up).whole_suite, path


ROUTE_WITHOUT_GAMMA = ("stages:\n  - title: 一\n    summary: 一\n    articles:\n"
                      "      - slug: alpha\n        labs: [labs/alpha_lab.ipynb]\n      - beta\n")


def test_a_new_article_in_the_route_touches_itself_and_its_neighbour_only(made_up: graph.SiteGraph) -> None:
    before = {"data/route.yml": ROUTE_WITHOUT_GAMMA}.get
    selection = changes.articles_for_changes(["data/route.yml", "docs/articles/gamma.md"], made_up, before)
    # gamma is new; beta gains a next article; alpha keeps its place, its neighbour and its lab
    assert (selection.slugs(), selection.everything) == (["beta", "gamma"], [])
    renamed = FILES["data/route.yml"].replace("title: 一", "title: 第一阶段")
    assert changes.articles_for_changes(["data/route.yml"], made_up, {"data/route.yml": renamed}.get).whole_suite
    assert changes.articles_for_changes(["data/route.yml"], made_up).whole_suite  # the old version unknown
    no_lab = FILES["data/route.yml"].replace("        labs: [labs/alpha_lab.ipynb]\n", "")
    assert changes.articles_for_changes(["data/route.yml"], made_up, {"data/route.yml": no_lab}.get).slugs() \
        == ["alpha"]


def test_a_new_author_or_tag_touches_the_articles_that_use_it(made_up: graph.SiteGraph) -> None:
    old_authors = "guohua:\n  name: guohua\n  bio: 甲\n"
    selection = changes.articles_for_changes(["data/authors.yml"], made_up, {"data/authors.yml": old_authors}.get)
    assert (selection.slugs(), selection.everything) == (["gamma"], [])
    other_bio = old_authors.replace("bio: 甲", "bio: 丁") + "newbie:\n  name: 新人\n  bio: 乙\n"
    assert changes.articles_for_changes(["data/authors.yml"], made_up, {"data/authors.yml": other_bio}.get).whole_suite
    selection = changes.articles_for_changes(["data/tags.yml"], made_up, {"data/tags.yml": "PyTorch: 代码\n"}.get)
    assert selection.slugs() == ["gamma"]
    unused = "PyTorch: 代码\n新标签: 新的\n"
    (made_up.root / "data" / "tags.yml").write_text(unused + "没人用: 还没有文章\n", encoding="utf-8")
    try:
        selection = changes.articles_for_changes(["data/tags.yml"], made_up, {"data/tags.yml": unused}.get)
    finally:
        (made_up.root / "data" / "tags.yml").write_text(unused, encoding="utf-8")
    assert (selection.slugs(), selection.everything, selection.outside) == ([], [], ["data/tags.yml"])


def test_files_no_article_depends_on_select_no_lane(made_up: graph.SiteGraph) -> None:
    paths = ["docs/about.md", "docs/articles/index.md", "tests/site/test_machinery.py", "bench/run.py", "README.md"]
    selection = changes.articles_for_changes(paths, made_up)
    assert (selection.slugs(), selection.everything, selection.outside) == ([], [], paths)


# --------------------------------------------------------------------------- which tests of a chosen file stay

_LAB = "alpha_lab"


def _names_the_lab() -> None:
    print(_LAB)


def _opens_beta() -> None:
    print("#fig-beta-fig .llm-ix__stats", "articles/beta/")


def _names_nothing() -> None:
    print("desktop", 1280)


def _ignore(*names: str):
    return lambda function: function


@_ignore("alpha_lab", "beta-answer")
def _decorated_only() -> None:
    print("no names in here")


@pytest.mark.parametrize(("params", "function", "alpha", "beta"), [
    ({}, _names_the_lab, True, False),  # a module-level constant the body names
    ({}, _opens_beta, False, True),  # a figure's id and a page inside longer strings
    ({}, _names_nothing, True, True),  # about the whole file
    ({}, _decorated_only, True, True),  # decorators (parametrize lists) do not count
    ({"name": "alpha_lab"}, _opens_beta, True, False),  # a parameter decides before the body
    ({"path": Path("/x/docs/articles/beta.md")}, _names_nothing, False, True),
    ({"viewport": "phone", "scheme": "dark"}, _opens_beta, False, True),
])
def test_a_test_that_names_only_other_articles_is_left_out(made_up: graph.SiteGraph, params, function, alpha,
                                                           beta) -> None:
    assert select.keeps(made_up, {"alpha"}, params, function) is alpha
    assert select.keeps(made_up, {"beta"}, params, function) is beta
    assert select.keeps(made_up, {"alpha", "beta"}, params, function) is (alpha or beta)


def test_lane_pages_keeps_the_articles_pages_and_skips_an_empty_part(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = ["", "articles/", "articles/decoding/", "articles/gpt-from-scratch/", "labs/decoding_lab/",
             "labs/gpt_lab/", "articles/decoding/index.html"]
    monkeypatch.setattr(suite, "LANE", [])
    assert suite.lane_pages(pages) == pages and suite.lane_pages(pages, slice(1, None, 3)) == pages[1::3]
    monkeypatch.setattr(suite, "LANE", ["decoding"])
    assert suite.lane_pages(pages) == ["articles/decoding/", "labs/decoding_lab/", "articles/decoding/index.html"]
    assert suite.lane_pages(pages, slice(1, None, 3)) == ["labs/decoding_lab/"]
    with pytest.raises(pytest.skip.Exception):
        suite.lane_pages(pages, slice(3, None, 3))
    with pytest.raises(pytest.skip.Exception):
        suite.lane_pages(["", "articles/transformer-block/"])


# --------------------------------------------------------------------------- the real repository


def _md(slug: str) -> str:
    return (ROOT / "docs" / "articles" / f"{slug}.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def real() -> graph.SiteGraph:
    return graph.load(ROOT)


def test_every_article_has_a_lane_with_its_pages_axe_and_csp(real: graph.SiteGraph) -> None:
    on_disk = sorted(p.stem for p in (ROOT / "docs" / "articles").glob("*.md") if p.name != "index.md")
    assert sorted(real.articles) == on_disk
    for slug in on_disk:
        chosen = lane(real, slug)
        assert {"tests/browser/test_accessibility.py", "tests/security/test_csp.py"} <= chosen, slug


def test_each_lane_runs_the_tests_of_the_modules_its_article_includes(real: graph.SiteGraph) -> None:
    include = re.compile(r"""^\s*-+8<-+\s+["']code/(\w+)\.py:""", re.M)
    seen = 0
    for slug in real.articles:
        for module in set(include.findall(_md(slug))):
            test = f"tests/code/test_{module}.py"
            if (ROOT / test).is_file():
                assert test in lane(real, slug), (slug, test)
                seen += 1
    assert seen >= 10


def test_a_lane_runs_the_tests_of_the_module_that_trains_its_playground_models(real: graph.SiteGraph) -> None:
    # read from the page's marker and the module's BUILD_ARTIFACTS literal, not from the graph under test
    marker = re.compile(r"<!--\s*playground:\s*([\w\s-]+?)\s*-->")
    trained_by: dict[str, str] = {}
    for path in (ROOT / "code").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["BUILD_ARTIFACTS"]:
                trained_by.update(dict.fromkeys(ast.literal_eval(node.value), path.stem))
    seen = 0
    for slug in real.articles:
        for found in marker.findall(_md(slug)):
            for name in found.split():
                test = f"tests/code/test_{trained_by[name]}.py"
                if (ROOT / test).is_file():
                    assert test in lane(real, slug), (slug, name, test)
                    seen += 1
    assert seen >= 4  # the Tang poem GPT twice, the acrostic model, the three aligned models


def test_an_articles_models_are_those_its_page_shows_and_its_labs_train(real: graph.SiteGraph) -> None:
    """What a lane trains from an empty cache (``Article.artifacts``), checked against what the sources say without
    the graph: the playground markers of the page, the models the labs train in an empty folder
    (``tests/labs/test_real_labs.py``'s ``TRAINS``), and the articles whose code reaches no model at all."""
    from tests.labs.test_real_labs import TRAINS

    marker = re.compile(r"<!--\s*playground:\s*([\w\s-]+?)\s*-->")
    for slug, art in real.articles.items():
        shown = {name for found in marker.findall(_md(slug)) for name in found.split()}
        assert shown <= set(art.artifacts), slug
        for lab in art.labs:
            if lab in TRAINS:
                assert TRAINS[lab][0] in art.artifacts, (slug, lab)
    assert real.articles["transformer-attention"].artifacts == ("tiny-transformer",)
    assert real.articles["transformer-block"].artifacts == ()
    assert real.articles["prompt-engineering"].artifacts == ()


def test_every_model_a_lanes_tests_read_from_the_environment_is_trained_for_that_lane(real: graph.SiteGraph) -> None:
    """A test that reads ``os.environ["LLM_ARTIFACT_<NAME>"]`` (not the ``trained_artifacts`` mapping, which trains a
    missing model when asked) needs the model trained before it starts: in a lane from an empty cache only the
    lane's articles' models and their upstream are (``tests/conftest.py``). So each such name must be one of them."""
    from llmsite import artifacts

    declared = artifacts.discover()
    read = re.compile(r"""os\.environ\[["']LLM_ARTIFACT_([A-Z0-9_]+)["']\]""")
    seen = 0
    for slug, art in real.articles.items():
        trained = set(art.artifacts)
        for name in art.artifacts:
            trained |= {a.name for a in artifacts.upstream(declared[name])}
        env_names = {declared[name].env.removeprefix("LLM_ARTIFACT_"): name for name in trained}
        for chosen in select.tests_for(real, slug):
            for env in read.findall(chosen.path.read_text(encoding="utf-8")):
                assert env in env_names, (slug, chosen.path.name, f"LLM_ARTIFACT_{env}")
                seen += 1
    assert seen >= 5  # the claims tests of the LoRA, evaluation, DPO and GRPO articles


def test_each_claims_test_runs_in_the_lane_of_the_article_it_names_and_no_other(real: graph.SiteGraph) -> None:
    files = sorted((ROOT / "tests" / "figures").glob("test_*_claims.py"))
    assert len(files) >= 8
    for path in files:
        named = set(re.findall(r"""["']([a-z0-9-]+)\.md["']""", path.read_text(encoding="utf-8")))
        [slug] = named & set(real.articles)
        name = f"tests/figures/{path.name}"
        assert [s for s in real.articles if name in lane(real, s)] == [slug], name


def test_labs_run_in_the_lanes_of_the_articles_the_route_gives_labs(real: graph.SiteGraph) -> None:
    route = yaml.safe_load((ROOT / "data" / "route.yml").read_text(encoding="utf-8"))
    with_labs = {item["slug"] for stage in route["stages"] for item in stage["articles"]
                 if isinstance(item, dict) and item.get("labs")}
    assert with_labs
    for slug in real.articles:
        assert ("tests/labs/test_real_labs.py" in lane(real, slug)) is (slug in with_labs), slug


def test_real_modules_included_by_two_articles_select_both(real: graph.SiteGraph) -> None:
    include = re.compile(r"""^\s*-+8<-+\s+["'](code/\w+\.py):""", re.M)
    by_module: dict[str, set[str]] = {}
    for slug in real.articles:
        for module in include.findall(_md(slug)):
            by_module.setdefault(module, set()).add(slug)
    shared = {m: s for m, s in by_module.items() if len(s) >= 2}
    assert shared, "no module is included by two articles any more: pick another example"
    for module, slugs in shared.items():
        selection = changes.articles_for_changes([module], real)
        assert slugs <= set(selection.slugs()) and not selection.whole_suite, (module, selection)
    for slug in real.articles:
        assert changes.articles_for_changes([f"docs/articles/{slug}.md"], real).slugs() == [slug]
    selection = changes.articles_for_changes(["overrides/partials/content.html", "docs/articles/decoding.md"], real)
    assert selection.whole_suite and "模板" in selection.everything[0][1]


def _collect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=300)


def test_under_article_the_suites_own_tests_keep_only_that_articles_labs(real: graph.SiteGraph) -> None:
    files = ["tests/labs/test_real_labs.py", "tests/labs/test_lab_browser.py",
             "tests/exercises/test_every_code_article.py"]
    every = set(_collect(*files).stdout.split())
    proc = _collect("--article=decoding", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = {line for line in proc.stdout.split() if "::" in line}
    labs = {m for line in every for m in re.findall(r"\[(\w+_lab)\]", line)}
    assert "decoding_lab" in labs and len(labs) >= 5
    for line in every:
        if "::" not in line:
            continue
        named_labs = set(re.findall(r"\[(\w+_lab)\]", line))
        if named_labs:  # parametrized by a lab: kept exactly when it is the decoding article's
            assert (line in kept) is (named_labs == {"decoding_lab"}), line
    assert "tests/labs/test_real_labs.py::test_downloaded_notebook_runs_in_an_empty_folder[decoding_lab]" in kept
    assert "tests/exercises/test_every_code_article.py::test_ends_with_exercises_of_every_kind[decoding]" in kept
    assert not [line for line in kept if "test_ends_with_exercises_of_every_kind[" in line and "[decoding]" not in line]


def test_an_unknown_article_is_refused_with_the_known_ones() -> None:
    proc = _collect("--article=no-such-article", "tests/security/test_csp.py")
    assert proc.returncode == 4 and "no-such-article" in proc.stderr and "transformer-attention" in proc.stderr
    cli = subprocess.run([sys.executable, "-m", "llmsite", "lane", "no-such-article"], cwd=ROOT,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert cli.returncode == 2 and "no-such-article" in cli.stderr and "decoding" in cli.stderr


def test_changed_files_come_from_git_with_both_sides_of_a_rename(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t"})

    git("init", "-q")
    (tmp_path / "a.md").write_text("甲\n" * 20, encoding="utf-8")
    (tmp_path / "b.py").write_text("x = 1\n", encoding="utf-8")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    git("mv", "a.md", "c.md")
    (tmp_path / "b.py").write_text("x = 2\n", encoding="utf-8")
    git("commit", "-q", "-am", "two")
    assert sorted(changes.changed_files("HEAD~1..HEAD", tmp_path)) == ["a.md", "b.py", "c.md"]
    base = changes.base_of("HEAD~1...HEAD", tmp_path)
    assert changes.base_of("HEAD~1..HEAD", tmp_path) == "HEAD~1"
    assert changes.file_at(base, tmp_path)("b.py") == "x = 1\n"
    assert changes.file_at(base, tmp_path)("c.md") is None  # not there before the change
    with pytest.raises(ValueError, match="git diff"):
        changes.changed_files("no-such-revision..HEAD", tmp_path)


def test_the_report_places_a_failure_at_its_line_and_the_lane_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("def check(x):\n    assert x == 2, 'docs/articles/a.md:7: 应是 2'\n",
                                        encoding="utf-8")
    (tmp_path / "test_one.py").write_text(
        "from helper import check\n\n\ndef test_ok():\n    check(2)\n\n\ndef test_bad():\n    check(3)\n",
        encoding="utf-8")
    target = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p",
                           "llmsite.lane.report", "--rootdir", str(tmp_path), "-c", os.devnull, "test_one.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "LLM_LANE_REPORT": str(target), "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    outcome = json.loads(target.read_text(encoding="utf-8"))
    assert (outcome["passed"], outcome["failed"]) == (1, 1)
    [failure] = outcome["failures"]
    assert (failure["file"], failure["line"]) == ("helper.py", 2)  # where it raised, not where the test starts
    assert "docs/articles/a.md:7: 应是 2" in failure["message"]
    lines = "\n".join(run.describe_failures(outcome["failures"], ["a"]))
    assert "helper.py:2: test_one.py::test_bad" in lines
    assert "pytest -n 0 -p no:cacheprovider --article=a test_one.py::test_bad" in lines


# --------------------------------------------------------------------------- a new article passes its lane

PARTS = ("code", "docs", "data", "labs", "llmsite", "scripts", "overrides", "tests", "mkdocs.yml", "pyproject.toml")
NEW = ["--slug", "lane-sample", "--title", "车道示例：新文章的检查", "--author", "guohua", "--tags", "PyTorch",
       "--summary", "脚手架刚生成的文章，用来检查它的车道。", "--stage", "1"]


@pytest.mark.slow
def test_an_article_the_scaffold_just_made_passes_its_lane(tmp_path: Path, repo_cache: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for part in PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, repo / part, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(src, repo / part)
    made = subprocess.run([sys.executable, "-m", "llmsite", "new", *NEW], cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert made.returncode == 0, made.stderr
    # From empty caches, as on a contributor's fresh clone: the lane's builds compute only this article's figures,
    # answers and lab (features/stale.py), and no model is trained, since the article uses none.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLM_TEST_", "LLM_ARTIFACT_"))}
    empty = tmp_path / "empty-cache"
    env.update(LLM_SITE_CACHE=str(empty), LLM_ARTIFACT_CACHE=str(empty / "artifacts"), NO_MKDOCS_2_WARNING="1")
    listed = subprocess.run([sys.executable, "-m", "llmsite", "lane", "lane-sample", "--list"], cwd=repo,
                            capture_output=True, text=True, encoding="utf-8", timeout=120, env=env)
    assert listed.returncode == 0, listed.stderr
    for expected in ("tests/code/test_lane_sample.py", "tests/browser/test_accessibility.py",
                     "tests/figures/test_claims_coverage.py",
                     "tests/security/test_csp.py", "tests/exercises/test_every_code_article.py",
                     "tests/exercises/test_lane_sample_answers.py", "tests/exercises/test_answers.py",
                     "tests/browser/test_every_exercise.py", "tests/browser/test_every_explorable_figure.py"):
        assert expected in listed.stdout, listed.stdout
    lane_run = subprocess.run([sys.executable, "-m", "llmsite", "lane", "lane-sample", "--workers", "0", "--", "-v"],
                              cwd=repo, capture_output=True, text=True, encoding="utf-8", timeout=1200, env=env)
    out = lane_run.stdout + lane_run.stderr
    assert lane_run.returncode == 0, out[-6000:]
    assert "车道 lane-sample 通过" in out and "，0 项失败" in out, out[-3000:]
    for node in ("tests/code/test_lane_sample.py::test_matches_torch_softmax",
                 "tests/exercises/test_every_code_article.py::test_ends_with_exercises_of_every_kind[lane-sample]",
                 "tests/browser/test_accessibility.py::test_no_serious_accessibility_violations[phone-dark-pages1of3]",
                 "tests/browser/test_accessibility.py::test_figure_alt_text_carries_the_caption",
                 "tests/security/test_csp.py::test_no_page_violates_the_policy[mkdocs]",
                 "tests/exercises/test_lane_sample_answers.py::test_answer[lane-sample-top-weight]",
                 "tests/exercises/test_answers.py::test_every_declared_answer_is_recomputed",
                 "tests/figures/test_claims_coverage.py::test_every_number_is_asserted_or_exempt[lane-sample]",
                 "tests/browser/test_every_exercise.py::"
                 "test_each_exercise_accepts_its_answer_and_rejects_a_wrong_one[lane-sample]",
                 "tests/browser/test_every_explorable_figure.py::"
                 "test_each_explorable_figure_comes_alive_and_answers_its_controls[lane-sample]"):
        assert f"{node} PASSED" in out, (node, out[-3000:])
    for other in ("test_ends_with_exercises_of_every_kind[decoding]", "test_every_number_is_asserted_or_exempt[grpo]"):
        assert other not in out, f"another article's test ran: {other}"
    assert re.search(r"figures: 重新生成 [1-9]\d* 张图", out), out[-3000:]
    trained = sorted(p.name for p in (empty / "artifacts").rglob("*.pt"))
    assert trained == [], f"the lane of an article that uses no model trained {trained}"
    drawn = {p.name for p in (empty / "figures").iterdir()}
    assert drawn and all(name.startswith("lane-sample") for name in drawn), drawn


def test_a_long_failure_message_keeps_its_first_and_last_lines_without_colours() -> None:
    message = "\x1b[31mAssertionError\x1b[39m: 运行失败\n" + "\n".join(f"第 {i} 行" for i in range(30)) \
        + "\n\x1b[31mModuleNotFoundError\x1b[39m: No module named 'x'"
    [failure] = run.describe_failures([{"nodeid": "t.py::test", "when": "call", "file": "t.py", "line": 3,
                                        "message": message}], ["decoding"])[2:]
    assert "\x1b[" not in failure
    assert "AssertionError: 运行失败" in failure and "ModuleNotFoundError: No module named 'x'" in failure
    assert "第 5 行" not in failure and "省略 24 行" in failure  # 32 lines: 3 + 24 + 5


def test_the_lane_says_what_its_build_recomputed() -> None:
    output = "\n".join([
        "INFO    -  figures: [缓存] attention-weights          0.00 s",
        "INFO    -  figures: [产物] tang-gpt                  98.44 s  (code/gpt_from_scratch.py: train_poem_gpt)",
        "INFO    -  figures: 重新生成 11 张图，用时 210.5 s",
        "INFO    -  labs: [缓存] gpt_lab                    0.00 s",
        "INFO    -  labs: 执行了 5 个实验，用时 37.0 s",
        "INFO    -  Documentation built in 259.96 seconds",
    ])
    assert report.build_summary(output) == [
        "figures: [产物] tang-gpt                  98.44 s  (code/gpt_from_scratch.py: train_poem_gpt)",
        "figures: 重新生成 11 张图，用时 210.5 s", "labs: 执行了 5 个实验，用时 37.0 s",
        "Documentation built in 259.96 seconds"]


def test_a_changed_module_brings_its_own_tests_into_the_lanes(real: graph.SiteGraph) -> None:
    """figkit.py (every figure's style) is only imported by figure modules: no lane chose its tests before."""
    figkit = ROOT / "tests" / "code" / "test_figkit.py"
    paths = ["code/figkit.py", "code/figkit.py", "code/figures/attention.py", "docs/articles/transformer-attention.md",
             "code/no_such_module.py"]
    assert changes.own_tests(paths, ROOT) == [figkit]
    plain = run.chosen_tests(real, ["transformer-attention"])
    assert figkit not in [c.path for c in plain]
    widened = run.chosen_tests(real, ["transformer-attention"], also=[figkit, plain[0].path])
    assert widened[:len(plain)] == plain, "the lane's own choices and reasons come first, unchanged"
    assert widened[len(plain):] == [select.Chosen(figkit, "改动的模块自己的测试")]


def test_the_pull_request_lanes_run_the_changed_modules_own_tests(monkeypatch: pytest.MonkeyPatch,
                                                                   real: graph.SiteGraph) -> None:
    from llmsite.cli import lane as cli

    ran: dict = {}
    monkeypatch.setattr(cli, "load", lambda root=None: real)
    monkeypatch.setattr(changes, "changed_files", lambda revisions, root: ["code/figkit.py"])
    monkeypatch.setattr(changes, "base_of", lambda revisions, root: "base")
    monkeypatch.setattr(changes, "file_at", lambda base, root: lambda path: None)
    monkeypatch.setattr(run, "run", lambda graph, slugs, workers, extra, also=None: ran.update(slugs=slugs, also=also)
                        or 0)
    assert cli.main(["--changed", "main...HEAD", "--run"]) == 0
    assert ran["also"] == [ROOT / "tests" / "code" / "test_figkit.py"]
    assert "transformer-attention" in ran["slugs"], "figkit.py is used by the articles' figures"
