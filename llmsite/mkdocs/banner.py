"""Under ``mkdocs serve``: the build's problems shown on every page, where the contributor looks.

A content problem (front matter, data files, links, typography, ...), a figure that fails or a lab
whose cell raises does not stop the preview: the rest of the site is built and served, and every page
carries a banner with ``file:line``, the message and the fix. It goes away with the next good save
(the live-reload script reloads the page). ``mkdocs build`` and CI still stop on the same problems.
Typography rules are warnings here (writing with autosave trips them mid-sentence); everything else is
an error. Every value is escaped: the messages quote contributors' text.
"""

from __future__ import annotations

import html
import re

from llmsite.problems import Problem

_CONTAINER = re.compile(r'<div class="md-container"[^>]*data-md-component="container"[^>]*>')
_BODY = re.compile(r"<body\b[^>]*>", re.I)


def is_warning(problem: Problem) -> bool:
    """Typography slips are warnings under serve (shown, not blocking)."""
    return problem.message.startswith("排版规则")


class Banner:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(self.problems) | set(problems))

    def html(self) -> str:
        if not self.problems:
            return ""
        errors = sum(not is_warning(p) for p in self.problems)
        warnings = len(self.problems) - errors
        counts = "、".join(part for part in (f"{errors} 个错误" if errors else "",
                                               f"{warnings} 个排版提醒" if warnings else "") if part)
        items = []
        for p in self.problems:
            kind = "warning" if is_warning(p) else "error"
            fix = f'<br><span class="llm-build-problems__fix">修改建议：{html.escape(p.fix)}</span>' if p.fix else ""
            items.append(
                f'<li class="llm-build-problems__{kind}"><code>{html.escape(p.path)}:{p.line}</code> '
                f'<span class="llm-build-problems__message">{html.escape(p.message)}</span>{fix}</li>'
            )
        return (
            '<div class="llm-build-problems" role="alert" data-llm-build-problems>'
            f'<p class="llm-build-problems__title">本地预览发现 {counts}（<code>mkdocs build</code> 和 CI 会因此失败；'
            "改好并保存后这里会自动消失）</p>"
            f'<ul>{"".join(items)}</ul></div>'
        )

    def inject(self, output: str) -> str:
        """The page with the banner at the top of its content container (kept by instant navigation)."""
        banner = self.html()
        if not banner:
            return output
        m = _CONTAINER.search(output) or _BODY.search(output)
        if m is None:
            return output
        return output[: m.end()] + banner + output[m.end() :]
