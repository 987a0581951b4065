"""The incremental preview (``python -m llmsite serve``) writes what a clean build writes, after any edits.

A scratch copy of the repository gets a stage of synthetic articles (``bench/synth.py``). Random edit sequences
(seeded; ``LLM_INCREMENTAL_SEEDS=1,2,3`` and ``LLM_INCREMENTAL_STEPS=20`` run other and longer sequences) change
article bodies, titles, tags and descriptions, make an article invalid (an unknown author: the preview goes on
without it), change another page's body, a ``code/`` section an article includes and the learning route, and add,
delete and rename articles. After every step the incremental site is compared file by file (every page, the search
index, the sitemap, the feed, figures and lab downloads) with a clean build of the same tree in a fresh process
(``serve_reference.py``): they must be identical. Edits that the page-level path follows must not fall back to a
full build, and a body edit must not re-write the whole site.

The second test serves the copy with ``python -m llmsite serve`` over HTTP: a save is served, a content
problem and a YAML error in mkdocs.yml show as a banner (checked in Chromium) and go away with the fix.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import synth
from tests.conftest import ROOT

KINDS = ("body", "title", "tags", "description", "code", "about", "route", "add", "rename", "delete", "invalid")
# `make test` runs one seed whose steps are every kind of edit once, in that seed's random order (11 steps).
# `make test-long` (CONTRIBUTING.md) runs three seeds of 20 steps: every kind once, then random ones.
# Each step costs a clean reference build in a fresh process, so this is the suite's dial between cost and reach.
SEEDS = [int(s) for s in os.environ.get("LLM_INCREMENTAL_SEEDS", "11").split(",") if s.strip()]
STEPS = max(len(KINDS), int(os.environ.get("LLM_INCREMENTAL_STEPS", len(KINDS))))
SYNTHETIC = 6
CODE = "code/positional_encoding.py"
SECTION = "# --8<-- [start:sinusoidal]\n"  # included by docs/articles/transformer-attention.md
PAGE_LEVEL = {"body", "title", "tags", "description", "code", "about", "invalid"}


def _copy_repo(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ipynb")
    for folder in ("docs", "data", "code", "labs", "llmsite", "scripts", "overrides", "tests", "bench"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    shutil.copy2(ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    cache = Path(os.environ.get("LLM_SITE_CACHE", ROOT / ".cache"))
    if cache.is_dir():
        shutil.copytree(cache, dest / ".cache", symlinks=True)
    return dest


def _env(root: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(root / ".cache"),
            "PYTHONPATH": str(root), "SITE_URL": "http://127.0.0.1:8000/", **extra}


class Plan:
    """Random edit steps over the copy; it tracks the synthetic stage so adds, deletes and renames stay valid."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.root = root
        self.tags = synth.allowed_tags(root)
        route = yaml.safe_load((root / "data" / "route.yml").read_text(encoding="utf-8"))
        stage = next(s for s in route["stages"] if str(s["articles"][0]).startswith(synth.SLUG_PREFIX))
        self.stage_title, self.slugs = stage["title"], list(stage["articles"])
        self.counter = 0
        self.current_tags: dict[str, list[str]] = {}
        self.kinds = list(KINDS)
        self.rng.shuffle(self.kinds)

    def _tags_on_disk(self, slug: str) -> list[str]:
        text = (self.root / self._article(slug)).read_text(encoding="utf-8")
        return list(yaml.safe_load(text.split("---\n")[1]).get("tags") or [])

    def _article(self, slug: str) -> str:
        return f"docs/articles/{slug}.md"

    def _stage(self) -> dict[str, Any]:
        return {"op": "stage", "path": "data/route.yml", "title": self.stage_title, "articles": list(self.slugs)}

    def step(self) -> dict[str, Any]:
        self.counter += 1
        k, rng = self.counter, self.rng
        kind = self.kinds.pop() if self.kinds else rng.choice(["body", "body", "title", "tags", "code", "add"])
        if kind == "delete" and len(self.slugs) <= 3:
            kind = "body"
        slug = rng.choice(self.slugs)
        if kind == "body":
            target = rng.choice([self._article(slug), "docs/articles/transformer-attention.md"])
            ops = [{"op": "append", "path": target, "text": f"\n新加的一段话，这是第 {k} 次修改。\n"}]
        elif kind == "title":
            ops = [{"op": "meta", "path": self._article(slug), "key": "title", "value": f"改过的标题：第 {k} 次修改"}]
        elif kind == "tags":  # a set different from the article's current one
            current = self.current_tags.get(slug) or self._tags_on_disk(slug)
            value = current
            while sorted(value) == sorted(current):
                value = rng.sample(self.tags, k=rng.randint(1, 3))
            self.current_tags[slug] = value
            ops = [{"op": "meta", "path": self._article(slug), "key": "tags", "value": value}]
        elif kind == "description":
            ops = [{"op": "meta", "path": self._article(slug), "key": "description",
                    "value": f"改过的简介，第 {k} 次修改。"}]
        elif kind == "invalid":  # an unknown author: under serve the article leaves the model (banner), and
            # its route neighbours link past it
            ops = [{"op": "meta", "path": self._article(slug), "key": "author", "value": f"nobody-{k}"}]
        elif kind == "code":
            ops = [{"op": "replace", "path": CODE, "old": SECTION, "new": f"{SECTION}# 第 {k} 次修改加的注释\n"}]
        elif kind == "about":
            ops = [{"op": "append", "path": "docs/about.md", "text": f"\n关于本站的补充说明，第 {k} 次修改。\n"}]
        elif kind == "route":
            rng.shuffle(self.slugs)
            ops = [self._stage()]
        elif kind == "add":
            new = synth.article(900 + k, self.tags, seed=k)
            self.current_tags[new.slug] = list(yaml.safe_load(new.text.split("---\n")[1])["tags"])
            self.slugs.insert(rng.randrange(len(self.slugs) + 1), new.slug)
            ops = [{"op": "write", "path": self._article(new.slug), "text": new.text}, self._stage()]
        elif kind == "rename":
            new_slug = f"{slug}-r{k}"
            self.slugs[self.slugs.index(slug)] = new_slug
            self.current_tags[new_slug] = self.current_tags.pop(slug, None) or self._tags_on_disk(slug)
            ops = [{"op": "rename", "path": self._article(slug), "to": self._article(new_slug)}, self._stage()]
        else:  # delete
            self.slugs.remove(slug)
            ops = [{"op": "delete", "path": self._article(slug)}, self._stage()]
        return {"what": kind, "ops": ops}


@pytest.fixture(scope="module")
def synthetic_repo(tmp_path_factory: pytest.TempPathFactory, repo_cache: Path) -> Path:
    root = _copy_repo(tmp_path_factory.mktemp("incremental") / "repo")
    synth.add_articles(root, SYNTHETIC, seed=7)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_random_edits_match_a_clean_build(synthetic_repo: Path, tmp_path: Path, seed: int) -> None:
    root = tmp_path / "repo"
    shutil.copytree(synthetic_repo, root, symlinks=True)
    plan = Plan(root, seed)
    steps = [plan.step() for _ in range(STEPS)]
    assert {s["what"] for s in steps} == set(KINDS), "every kind of edit runs at least once"
    (tmp_path / "steps.json").write_text(json.dumps(steps, ensure_ascii=False, indent=1), encoding="utf-8")
    results_path = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "tests/site/incremental_driver.py", str(tmp_path / "steps.json"),
                           str(results_path)], cwd=root, env=_env(root), capture_output=True, text=True,
                          timeout=1800, check=False)
    assert proc.returncode == 0, f"seed {seed}: driver failed\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert len(results) == STEPS + 1
    summary = "\n".join(f"  {r['step']}: {r.get('what', '')} -> {r['kind']} ({r.get('populated')} read, "
                        f"{r['rendered']} written) differ={r.get('differ', [])[:5]}" for r in results)
    stage = SYNTHETIC + 2  # the synthetic stage's articles (adds may make it longer)
    for r in results[1:]:
        assert r["differ"] == [], f"seed {seed}: step {r['step']} ({r['what']}) differs from a clean build\n{summary}"
        if r["what"] in PAGE_LEVEL:
            assert r["kind"] == "pages", f"seed {seed}: a {r['what']} edit rebuilt the whole site\n{summary}"
            assert r["rendered"] < r["pages"], f"seed {seed}: {r['what']} re-wrote every page\n{summary}"
        if r["what"] == "body":  # the page, and the listings when its reading time changed
            assert 1 <= r["populated"] <= 6 and r["rendered"] <= 6, summary
        if r["what"] == "title":  # the listings and tags page, the stage's sidebars, previous / next
            assert r["rendered"] <= stage + 6, summary
        if r["what"] in {"route", "add", "rename", "delete"}:
            assert r["kind"] == "full", summary


# --------------------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return str(resp.read().decode("utf-8", "replace"))
    except OSError:
        return ""


def _wait(url: str, check: Any, timeout: float, what: str, log: Path) -> str:
    end = time.monotonic() + timeout
    body = ""
    while time.monotonic() < end:
        body = _get(url)
        if body and check(body):
            return body
        time.sleep(0.2)
    raise AssertionError(f"{what} not served within {timeout:.0f} s\n{log.read_text(errors='replace')[-3000:]}")


@pytest.mark.slow
def test_llmsite_serve_serves_saves_and_shows_problems(synthetic_repo: Path, tmp_path: Path, browser) -> None:
    root = tmp_path / "repo"
    shutil.copytree(synthetic_repo, root, symlinks=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    log = tmp_path / "serve.log"
    slug = sorted(p.stem for p in (root / "docs" / "articles").glob(f"{synth.SLUG_PREFIX}-*.md"))[0]
    article = root / "docs" / "articles" / f"{slug}.md"
    url = f"{base}articles/{slug}/"
    with log.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "llmsite", "serve", "--dev-addr", f"127.0.0.1:{port}"],
                                cwd=root, env=_env(root, SITE_URL=base), stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        _wait(url, lambda b: "<h1" in b, 600, "the first build", log)
        good = article.read_text(encoding="utf-8")

        # a save is served, with MkDocs' live-reload script, and only the page-level path ran
        article.write_text(good + "\n保存以后马上能看到的一句话。\n", encoding="utf-8")
        body = _wait(url, lambda b: "保存以后马上能看到的一句话" in b, 120, "the edited article", log)
        assert "livereload(" in body and "data-llm-build-problems" not in body
        assert "增量构建" in log.read_text(encoding="utf-8")

        # a typography slip: shown, as a warning, on every page, with file:line; the text is still served
        article.write_text(good + "\n编辑标记123的说明。\n", encoding="utf-8")
        body = _wait(url, lambda b: "data-llm-build-problems" in b, 120, "the banner", log)
        assert f"docs/articles/{slug}.md:" in body and "排版" in body
        assert "data-llm-build-problems" in _get(base + "about/")
        page = browser.new_page()
        try:
            page.goto(url, wait_until="load")
            banner = page.locator("[data-llm-build-problems]")
            assert banner.is_visible() and "1 个排版提醒" in banner.inner_text()
        finally:
            page.close()

        assert "编辑标记123的说明" in body  # the preview goes on with the new text
        article.write_text(good, encoding="utf-8")
        _wait(url, lambda b: "data-llm-build-problems" not in b, 120, "the page without a banner", log)

        # a YAML error in mkdocs.yml: the last good site stays up, with the banner naming mkdocs.yml
        config = root / "mkdocs.yml"
        good_config = config.read_text(encoding="utf-8")
        config.write_text(good_config.replace("site_name: ", "site_name: [未闭合\n", 1), encoding="utf-8")
        body = _wait(url, lambda b: "mkdocs.yml:" in b, 120, "the YAML error banner", log)
        assert "配置文件无法读取" in body and "保存以后马上能看到的一句话" not in body
        config.write_text(good_config, encoding="utf-8")
        _wait(url, lambda b: "data-llm-build-problems" not in b, 600, "the page without a banner", log)
        assert proc.poll() is None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
