"""The Content-Security-Policy on every page: only the site's own origin, and nothing the site does violates it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmsite import atomic, csp
from llmsite.content.catalog import load_route
from tests.conftest import BuiltSite, guard_timeouts, lane_pages

CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="(?P<policy>[^"]+)">')
RECORD = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", e => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sourceFile || ""));
});
"""


def _with_labs() -> list[str]:
    """The articles data/route.yml gives labs."""
    route, _ = load_route()
    return [entry.slug for entry in route.entries if entry.labs]


@pytest.fixture(params=["mkdocs", "zensical"])
def any_site(request) -> BuiltSite:
    """The run's MkDocs build, and the same commit built with Zensical (``llmsite/zensical/``): the same policy."""
    return request.getfixturevalue("built_site" if request.param == "mkdocs" else "zensical_site")


def _pages(built_site: BuiltSite) -> list[str]:
    return sorted(p.relative_to(built_site.dir).as_posix() for p in built_site.dir.rglob("*.html"))


def test_every_page_has_the_same_strict_policy(any_site: BuiltSite) -> None:
    built_site = any_site
    policies = {}
    for rel in _pages(built_site):
        text = (built_site.dir / rel).read_text(encoding="utf-8")
        found = CSP.findall(text)
        assert len(found) == 1, f"{rel}: {len(found)} CSP meta tags"
        assert text.index("Content-Security-Policy") < text.index("<script"), f"{rel}: CSP after a script"
        policies[rel] = found[0]
    assert len(set(policies.values())) == 1, "pages disagree on the policy (instant navigation keeps the first one)"
    policy = dict(d.strip().split(" ", 1) for d in next(iter(policies.values())).split(";"))
    assert policy["default-src"] == "'self'"
    for directive in ("script-src", "connect-src", "img-src", "font-src", "style-src", "worker-src"):
        sources = policy[directive].split()
        assert all(s in ("'self'", "data:", "'unsafe-inline'") or s.startswith("'sha256-") for s in sources), (
            directive, sources)
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    assert policy["object-src"] == "'none'"


@pytest.mark.browser
def test_no_page_violates_the_policy(any_site: BuiltSite, browser) -> None:
    built_site, site_server = any_site, any_site.base_url
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.add_init_script(RECORD)
    try:
        pg = context.new_page()
        guard_timeouts(pg)
        checked, every = 0, _pages(built_site)
        for rel in lane_pages(every):  # under --article, the article's pages
            pg.goto(site_server + rel.removesuffix("index.html"))
            pg.wait_for_load_state("load")
            assert pg.evaluate("window.__cspViolations") == [], rel
            checked += 1
        assert len(every) >= 8 and checked >= 1
        # instant navigation keeps the first page's policy: walk from the home page to an article and a lab
        pg.goto(site_server)
        # an article with a lab, whichever the home page's newest cards show (the newest may have none, and then its
        # sidebar shows no lab link; r2: gpt-from-scratch, named here before, is no longer among the five newest)
        with_labs = ", ".join(f"article a.llm-card__title[href$='articles/{slug}/']" for slug in _with_labs())
        pg.locator(with_labs).first.click()
        pg.wait_for_selector("article h1")
        # math renders under the policy. A function, not an expression: Playwright re-evaluates an expression with eval
        # on each poll, which this very policy forbids (an EvalError whenever the first check comes too early)
        pg.wait_for_function("() => document.querySelectorAll('.katex').length > 0")
        pg.locator(".md-nav__link[href*='labs/']").first.click()
        pg.wait_for_load_state("load")
        pg.wait_for_timeout(500)
        assert "labs/" in pg.url
        assert pg.evaluate("window.__cspViolations") == []
    finally:
        context.close()


# ---------------------------------------------------------------- the guessed policy (llmsite.csp.Policy)

PAGES = {
    "index.html": '<html><head><meta charset="utf-8"><script>var a = 1;</script></head><body>首页</body></html>',
    "a/index.html": '<html><head><meta charset="utf-8"><script>var b = 2;</script>'
    '<script type="application/json">{"x": 1}</script></head><body>文章</body></html>',
    "404.html": '<html><head><meta charset="utf-8"></head><body><script>var a = 1;</script></body></html>',
}


def _build(site: Path, store: Path) -> tuple[dict[str, bytes], int]:
    """Write PAGES through a Policy as the plugin does (add each page, finish after the build)."""
    policy = csp.Policy({"extra": {}}, store)
    for rel, html in PAGES.items():
        atomic.write_text(site / rel, policy.add(html))
    rewritten = policy.finish(site)
    return {rel: (site / rel).read_bytes() for rel in PAGES}, rewritten


def test_a_wrong_or_missing_guess_is_corrected_and_a_right_one_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "cache" / "hashes.json"
    first, rewritten = _build(tmp_path / "first", store)  # no guess: every page is rewritten
    assert rewritten == 3
    hashes = csp.inline_script_hashes(PAGES["index.html"]) | csp.inline_script_hashes(PAGES["a/index.html"])
    assert len(hashes) == 2  # the JSON data block is not a script
    for rel, data in first.items():
        found = CSP.findall(data.decode())
        assert len(found) == 1, rel
        assert sorted(found[0].split("script-src ")[1].split(";")[0].split()[1:]) == sorted(hashes), rel
    second, rewritten = _build(tmp_path / "second", store)  # the previous build's hashes: nothing to correct
    assert rewritten == 0 and second == first
    tampered = ["'sha256-stale='", "'unsafe-inline'", '\'sha256-x="><script>alert(1)</script>\'']
    store.write_text(json.dumps(tampered), encoding="utf-8")  # stale, or edited
    guess = csp.Policy({"extra": {}}, store).guess_meta
    scripts = guess.split("script-src ")[1].split(";")[0]
    assert scripts == "'self' 'sha256-stale='" and "<script" not in guess
    third, rewritten = _build(tmp_path / "third", store)
    assert rewritten == 3 and third == first  # only hashes found in this build's pages reach the policy
