"""The exercises in the built site (the run's strict build), and a build that stops on a computed answer that fits
no option. The values on the page are compared with the independent recomputations of ``test_answers``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from .conftest import ROOT, Copy, make_copy
from .test_answers import RECOMPUTED

SLUG = "transformer-attention"
IDS = ["causal-uniform-row4", "mha-params-96", "rope-same-score", "dk512-typical-max", "heads-and-params"]


@pytest.fixture(scope="module")
def article(built_site) -> BeautifulSoup:
    text = (built_site.dir / "articles" / SLUG / "index.html").read_text(encoding="utf-8")
    return BeautifulSoup(text, "html.parser")


def test_the_article_ends_with_its_exercises(article: BeautifulSoup) -> None:
    content = article.select_one("article.md-content__inner")
    assert content is not None
    h2 = [h for h in content.find_all("h2") if h.get("id") != "__comments"]
    assert h2[-1].get("id") == "练习"
    boxes = content.select("[data-llm-exercise]")
    assert [b["data-llm-exercise"] for b in boxes] == IDS
    assert all(b.find_previous("h2") is h2[-1] for b in boxes)
    kinds = [b["class"][1] for b in boxes]
    assert kinds == ["llm-ex--number", "llm-ex--number", "llm-ex--choice", "llm-ex--predict", "llm-ex--concept"]
    for box in boxes:
        assert box["id"] == "ex-" + box["data-llm-exercise"]
        form = box.select_one("form.llm-ex__form")
        assert form is not None and form.has_attr("hidden"), "without JS the form stays hidden"
        status = box.select_one(".llm-ex__result")
        assert status["role"] == "status" and status["aria-live"] == "polite"
        details = box.select_one("details.llm-ex__answer")
        assert details.summary.get_text(strip=True) == "答案与解析"
        assert details.get_text(strip=True).startswith("答案与解析答案：")
        json.loads(box["data-llm-check"])


def check_data(box) -> dict:
    return json.loads(box["data-llm-check"])


def test_the_answers_on_the_page_are_the_recomputed_ones(article: BeautifulSoup) -> None:
    boxes = {b["data-llm-exercise"]: b for b in article.select("[data-llm-exercise]")}
    for exercise, answer in (("causal-uniform-row4", "causal-uniform-row4"), ("mha-params-96", "mha-params-96")):
        data = check_data(boxes[exercise])
        assert abs(data["answer"] - RECOMPUTED[answer]()) <= data["tolerance"], data
    assert check_data(boxes["mha-params-96"])["display"] == f"{RECOMPUTED['mha-params-96']():,}"
    for exercise in ("rope-same-score", "dk512-typical-max"):
        data = check_data(boxes[exercise])
        items = boxes[exercise].select(".llm-ex__options > li")
        options = [li.get_text(" ", strip=True).split(". ", 1)[1] for li in items]
        assert options[data["answer"]] == RECOMPUTED[exercise](), (options, data)
        assert data["display"] == "ABCD"[data["answer"]]
    concept = boxes["heads-and-params"]
    correct = concept.select(".llm-ex__why.is-correct")
    assert len(correct) == 1 and check_data(concept)["answer"] == concept.select(".llm-ex__why").index(correct[0])
    assert len(concept.select(".llm-ex__why")) == len(concept.select(".llm-ex__options > li")) == 4


def test_the_predict_exercise_points_to_an_explorable_figure_on_the_page(article: BeautifulSoup) -> None:
    link = article.select_one("#ex-dk512-typical-max a.llm-ex__figure")
    assert link is not None and link.get_text() == "去图里看看" and link["href"] == "#fig-dk-explorer"
    figure = article.select_one("#fig-dk-explorer")
    assert figure is not None and figure.has_attr("data-llm-data")


def test_math_in_exercises_goes_through_the_site_math(article: BeautifulSoup) -> None:
    question = article.select_one("#ex-rope-same-score-q")
    assert question is not None and question.select(".arithmatex"), "inline math in a question is math on the page"


def test_the_scripts_and_styles_are_small_and_linked(article: BeautifulSoup, built_site) -> None:
    import gzip

    scripts = [s.get("src", "") for s in article.find_all("script")]
    styles = [s.get("href", "") for s in article.find_all("link", rel="stylesheet")]
    assert any(s.endswith("assets/javascripts/exercises.js") for s in scripts), scripts
    assert any(s.endswith("assets/stylesheets/site.css") for s in styles), styles
    js = (built_site.dir / "assets" / "javascripts" / "exercises.js").read_bytes()
    css = (built_site.dir / "assets" / "stylesheets" / "exercises.css").read_bytes()
    assert css in (built_site.dir / "assets" / "stylesheets" / "site.css").read_bytes(), "in the page's one sheet"
    assert len(gzip.compress(js, 9)) <= 3 * 1024 and len(gzip.compress(css, 9)) <= 1536
    assert b"innerHTML" not in js and b"eval(" not in js  # DOM built from nodes, no HTML parsing of page data


@pytest.mark.slow
def test_a_computed_answer_that_fits_no_option_stops_the_build(tmp_path: Path, repo_cache: Path) -> None:
    copy: Copy = make_copy(tmp_path / "repo", ("code", "llmsite", "data", "docs", "labs", "scripts", "overrides",
                                                 "mkdocs.yml"))
    if (ROOT / "node_modules").exists():
        (copy.root / "node_modules").symlink_to(ROOT / "node_modules")
    for kind in ("figures", "answers", "labs", "artifacts", "deps"):
        if (repo_cache / kind).is_dir():
            shutil.copytree(repo_cache / kind, copy.root / ".cache" / kind, symlinks=True)
    article = f"docs/articles/{SLUG}.md"
    text = copy.read(article)
    assert "  - q 在位置 0，k 在位置 2\n" in text
    copy.write(article, text.replace("  - q 在位置 0，k 在位置 2\n", "  - q 在位置 1，k 在位置 3\n"))
    answer_line = next(i for i, line in enumerate(copy.read(article).splitlines(), 1)
                       if line == "answer: rope-same-score")
    env = {**copy.env(), "LLM_SITE_CACHE": str(copy.root / ".cache"),
           "LLM_ARTIFACT_CACHE": str(copy.root / ".cache" / "artifacts")}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(copy.root / "site")],
                          cwd=copy.root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert (f"{article}:{answer_line}: 练习 rope-same-score 的答案函数 rope-same-score 返回了 "
            "'q 在位置 0，k 在位置 2'，不是选项之一") in output, output
    assert "修改建议：答案函数要返回正确选项的文字" in output
