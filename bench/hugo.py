"""A minimal Hugo site on the same Markdown, for scale (Debian's ``hugo`` package).

Minimal layouts: a base template, a single page (title, table of contents,
content, previous / next in the section) and a list page. No navigation tree
and no search index: Hugo's number is a floor for "Markdown to HTML pages".
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .common import Run, timed

CONFIG = """\
baseURL = "http://127.0.0.1/"
languageCode = "zh-cn"
title = "大模型学习交流平台（Hugo 对照）"
hasCJKLanguage = true
[markup.goldmark.renderer]
  unsafe = true
[markup.tableOfContents]
  startLevel = 2
  endLevel = 3
"""

LAYOUTS = {
    "_default/baseof.html": """\
<!DOCTYPE html>
<html lang="zh-CN">
<head><meta charset="utf-8"><title>{{ .Title }} - {{ site.Title }}</title>
<meta name="description" content="{{ .Description }}"></head>
<body><header><a href="{{ "/" | relURL }}">{{ site.Title }}</a></header>
<main>{{ block "main" . }}{{ end }}</main></body>
</html>
""",
    "_default/single.html": """\
{{ define "main" }}<article><h1>{{ .Title }}</h1>
<p>{{ .Date.Format "2006-01-02" }} · {{ range .Params.tags }}<span>{{ . }}</span> {{ end }}</p>
<nav>{{ .TableOfContents }}</nav>
{{ .Content }}
<footer>{{ with .PrevInSection }}<a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}
{{ with .NextInSection }}<a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}</footer>
</article>{{ end }}
""",
    "_default/list.html": """\
{{ define "main" }}<h1>{{ .Title }}</h1>{{ .Content }}
<ul>{{ range .Paginator.Pages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ .Description }}</li>{{ end }}</ul>
{{ end }}
""",
}


def available() -> bool:
    return shutil.which("hugo") is not None


def write_site(docs: Path, dest: Path) -> int:
    """Hugo sources in ``dest`` from the articles of ``docs``; returns the number of articles."""
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "content" / "articles").mkdir(parents=True)
    (dest / "hugo.toml").write_text(CONFIG, encoding="utf-8")
    for name, text in LAYOUTS.items():
        path = dest / "layouts" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (dest / "content" / "_index.md").write_text("---\ntitle: 首页\n---\n\n用中文把大模型讲清楚。\n", encoding="utf-8")
    (dest / "content" / "articles" / "_index.md").write_text("---\ntitle: 文章列表\n---\n", encoding="utf-8")
    count = 0
    for path in sorted((docs / "articles").glob("*.md")):
        if path.name == "index.md":
            continue
        shutil.copy2(path, dest / "content" / "articles" / path.name)
        count += 1
    return count


def build(src: Path, out: Path, env: dict[str, str]) -> Run:
    if out.exists():
        shutil.rmtree(out)
    return timed(["hugo", "--quiet", "--source", str(src), "--destination", str(out)], cwd=src, env=env)
