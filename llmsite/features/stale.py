"""The out-of-date items of a build step (figures and answers, labs, playground models): which ones to compute, and
what a failure does.

- ``Focus``: a build of some articles only, named by ``LLM_SITE_ONLY=slug[,slug...]`` (the lane's build,
  ``tests/conftest.py``, so that a contributor's first ``make test-article`` from an empty cache computes only what
  the article is made of). Out-of-date items of other articles are not computed, and where one goes its page says
  so (``note``); cached items are used as always, so with a warm cache the focused site is the whole site. Unset,
  every item is computed.
- ``compute``: one step's computation of its stale items, in its subprocess. ``mkdocs build`` stops on a failure;
  under serve the error is logged and returned, and the pages show it until a save fixes it.
"""

from __future__ import annotations

import html
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from llmsite.paths import DOCS
from llmsite.problems import BuildStop

ENV = "LLM_SITE_ONLY"
_ARTICLE_SOURCE = re.compile(r"^docs/articles/(?P<slug>[^/]+)\.md(?::\d+)?$")


def article_of_source(where: str) -> str | None:
    """The article a ``docs/articles/<slug>.md[:line]`` location belongs to; None for any other page."""
    match = _ARTICLE_SOURCE.match(where)
    return match["slug"] if match else None


@dataclass(frozen=True)
class Focus:
    slugs: frozenset[str] = frozenset()  # empty: the whole site

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Focus:
        raw = (os.environ if environ is None else environ).get(ENV, "")
        slugs = frozenset(s.strip() for s in raw.split(",") if s.strip())
        missing = sorted(s for s in slugs if not (DOCS / "articles" / f"{s}.md").is_file())
        if missing:
            raise BuildStop(f"环境变量 {ENV} 里的 {'、'.join(missing)} 不是文章（docs/articles/<名字>.md 不存在）。"
                            f"改成文章的名字，用逗号分开；要构建整个网站就去掉这个变量")
        return cls(slugs)

    @property
    def whole(self) -> bool:
        return not self.slugs

    def has(self, articles: Iterable[str | None]) -> bool:
        """Whether an item used by these articles is computed in this build."""
        return self.whole or any(a in self.slugs for a in articles)

    def split(self, stale: list[str],
              articles_of: Callable[[str], Iterable[str | None]]) -> tuple[list[str], list[str]]:
        """The stale items to compute, and those left out (they belong to other articles only)."""
        computed = [name for name in stale if self.has(articles_of(name))]
        return computed, [name for name in stale if name not in computed]

    def note(self, what: str) -> str:
        """What the page shows where a left-out item goes."""
        only = "、".join(sorted(self.slugs))
        return (f'<div class="admonition note llm-skipped"><p class="admonition-title">这次构建没有生成它</p>'
                f"<p>{html.escape(what)}：这次只构建了文章 {html.escape(only)} 用到的东西"
                f"（环境变量 {ENV}，车道 <code>make test-article</code> 从空缓存开始时这样做）。"
                f"完整构建会生成它。</p></div>")

    def report(self, log: logging.Logger, what: str, names: list[str]) -> None:
        if names:
            log.info("只构建 %s（%s）：跳过 %d 个过期的%s：%s", "、".join(sorted(self.slugs)), ENV, len(names), what,
                     "、".join(names))


def compute(step: Callable[[], None], serving: bool, log: logging.Logger, preview_hint: str) -> str | None:
    """Run ``step`` (the computation of the stale items); the error message when it failed under serve, else None.
    A build stops (the ``BuildStop`` goes on)."""
    try:
        step()
    except BuildStop as exc:
        if not serving:
            raise
        log.error("%s\n（预览继续运行：%s）", exc, preview_hint)
        return str(exc)
    return None
