"""The Content-Security-Policy on every page: only the site's own origin, and nothing the site does violates it."""

from __future__ import annotations

import re

import pytest

from tests.conftest import BuiltSite

CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="(?P<policy>[^"]+)">')
RECORD = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", e => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sourceFile || ""));
});
"""


def _pages(built_site: BuiltSite) -> list[str]:
    return sorted(p.relative_to(built_site.dir).as_posix() for p in built_site.dir.rglob("*.html"))


def test_every_page_has_the_same_strict_policy(built_site: BuiltSite) -> None:
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
def test_no_page_violates_the_policy(built_site: BuiltSite, site_server: str, browser) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.add_init_script(RECORD)
    try:
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        checked = 0
        for rel in _pages(built_site):
            pg.goto(site_server + rel.removesuffix("index.html"))
            pg.wait_for_load_state("load")
            assert pg.evaluate("window.__cspViolations") == [], rel
            checked += 1
        assert checked >= 8
        # instant navigation keeps the first page's policy: walk from the home page to an article and a lab
        pg.goto(site_server)
        pg.locator("article a.llm-card__title").first.click()
        pg.wait_for_selector("article h1")
        pg.wait_for_function("document.querySelectorAll('.katex').length > 0")  # math renders under the policy
        pg.locator(".md-nav__link[href*='labs/']").first.click()
        pg.wait_for_load_state("load")
        pg.wait_for_timeout(500)
        assert "labs/" in pg.url
        assert pg.evaluate("window.__cspViolations") == []
    finally:
        context.close()
