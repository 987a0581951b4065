"""A focused build (``LLM_SITE_ONLY``, ``llmsite/features/stale.py``): the lane's build from an empty cache computes
only what its articles are made of, says what it left out, and still passes ``--strict``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmsite.features.stale import ENV, Focus, article_of_source, compute
from llmsite.problems import BuildStop
from tests.conftest import ROOT

OTHER = "transformer-attention"  # its stale figure, answer and lab are left out
FOCUSED = "transformer-block"  # its stale figure is drawn


def test_unset_means_the_whole_site() -> None:
    focus = Focus.from_env({})
    assert focus.whole
    assert focus.split(["a", "b"], lambda name: [None]) == (["a", "b"], [])


def test_the_variable_lists_articles_separated_by_commas() -> None:
    focus = Focus.from_env({ENV: f" {FOCUSED}, ,{OTHER}"})
    assert focus.slugs == {FOCUSED, OTHER}
    assert focus.split(["mine", "theirs", "page"], {"mine": [FOCUSED], "theirs": ["decoding"], "page": [None]}.get) \
        == (["mine"], ["theirs", "page"])
    assert focus.has(["decoding", OTHER]), "an item two articles use is computed when one of them is focused"


def test_a_name_that_is_no_article_stops_the_build() -> None:
    with pytest.raises(BuildStop) as caught:
        Focus.from_env({ENV: f"{FOCUSED},no-such-article"})
    assert "no-such-article 不是文章" in str(caught.value) and FOCUSED not in str(caught.value)


def test_the_article_of_a_marker_location() -> None:
    assert article_of_source("docs/articles/decoding.md:12") == "decoding"
    assert article_of_source("docs/articles/decoding.md") == "decoding"
    assert article_of_source("docs/index.md:3") is None
    assert article_of_source("docs/articles/x/y.md:3") is None


def test_the_note_escapes_what_it_names() -> None:
    note = Focus(frozenset({FOCUSED})).note("图 <b>x</b>")
    assert "&lt;b&gt;x&lt;/b&gt;" in note and "<b>" not in note and FOCUSED in note


def test_a_failure_stops_a_build_and_is_returned_under_serve() -> None:
    import logging

    def fail() -> None:
        raise BuildStop("坏了")

    log = logging.getLogger("test-focused-build")
    with pytest.raises(BuildStop):
        compute(fail, serving=False, log=log, preview_hint="改好")
    assert compute(fail, serving=True, log=log, preview_hint="改好") == "坏了"
    assert compute(lambda: None, serving=True, log=log, preview_hint="改好") is None


@pytest.mark.slow
def test_a_focused_build_computes_only_its_articles_stale_items(tmp_path: Path, repo_cache: Path) -> None:
    """In a copy with the run's cache, one figure, one answer and one lab of ``OTHER`` and one figure of ``FOCUSED``
    are taken out of the cache. Built with ``LLM_SITE_ONLY=FOCUSED``: the strict build passes, ``FOCUSED``'s figure
    is drawn again, ``OTHER``'s three are not computed and their places say so; the playground models (their export
    cache is not copied, and no page of ``FOCUSED`` shows one) are left out too."""
    copy = tmp_path / "repo"
    for part in ("code", "llmsite", "data", "docs", "labs", "scripts", "overrides"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    if (ROOT / "node_modules").exists():
        (copy / "node_modules").symlink_to(ROOT / "node_modules")
    cache = copy / ".cache"
    for kind in ("figures", "answers", "labs", "artifacts", "deps"):
        if (repo_cache / kind).is_dir():
            shutil.copytree(repo_cache / kind, cache / kind, symlinks=True)
    taken = {"figures": ["softmax-saturation", "residual-depth"], "answers": ["mha-params-96"],
             "labs": ["attention_lab"]}
    for kind, names in taken.items():
        for name in names:
            assert (cache / kind / name).is_dir(), f"the run's cache has no {kind}/{name}"
            shutil.rmtree(cache / kind / name)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LLM_ARTIFACT_")}
    env.update({ENV: FOCUSED, "LLM_SITE_CACHE": str(cache), "LLM_ARTIFACT_CACHE": str(cache / "artifacts"),
                "NO_MKDOCS_2_WARNING": "1"})
    site = copy / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=copy, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert f"只构建 {FOCUSED}（{ENV}）：跳过 1 个过期的图：softmax-saturation" in output
    assert "跳过 1 个过期的练习答案：mha-params-96" in output
    assert "跳过 1 个过期的实验：attention_lab" in output
    assert "个过期的模型演示" in output
    assert (cache / "figures" / "residual-depth").is_dir(), "the focused article's figure is drawn again"
    for kind, names in taken.items():
        for name in names:
            if name != "residual-depth":
                assert not (cache / kind / name).exists(), f"{kind}/{name} of another article was computed"
    assert (site / "figures" / "residual-depth.light.svg").is_file()
    assert not (site / "figures" / "softmax-saturation.light.svg").exists()
    other = (site / "articles" / OTHER / "index.html").read_text(encoding="utf-8")
    assert other.count("llm-skipped") == 2, "one note for the figure, one for the exercise"
    assert "图 softmax-saturation：这次只构建了文章 transformer-block 用到的东西" in other
    assert "练习 2 的答案 mha-params-96" in other
    assert "attention-weights.light.svg" in other, "a figure still cached is shown as always"
    lab = (site / "labs" / "attention_lab" / "index.html").read_text(encoding="utf-8")
    assert "动手实验 attention_lab：这次只构建了文章" in lab
    assert not (site / "labs" / "attention_lab" / "attention_lab.ipynb").exists()
    assert (site / "labs" / "attention_heads_lab" / "attention_heads_lab.ipynb").is_file()
    focused = (site / "articles" / FOCUSED / "index.html").read_text(encoding="utf-8")
    assert "llm-skipped" not in focused
    playground = (site / "articles" / "gpt-from-scratch" / "index.html").read_text(encoding="utf-8")
    assert "模型演示 tang-gpt：这次只构建了文章" in playground
