"""python -m llmsite pdf: the learning route as one PDF, printed from the built site (llmsite/pdf.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llmsite import paths
from llmsite.pdf import PdfError, build

DEFAULT_OUT = "downloads/llm-route.pdf"  # inside the site: published with it, linked from the route page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmsite pdf", description="把学习路线打印成一个 PDF（先构建网站）")
    parser.add_argument("--site", type=Path, default=paths.ROOT / "site", help="构建好的网站目录（默认 site/）")
    parser.add_argument("--out", type=Path, help=f"PDF 写到哪里（默认 <site>/{DEFAULT_OUT}）")
    parser.add_argument("--site-url", default=os.environ.get("SITE_URL", "https://llm-study-cn.github.io/llm-study-platform/"),
                        help="文章的在线地址的前缀（默认取环境变量 SITE_URL）")
    args = parser.parse_args(argv)
    out = args.out or args.site / DEFAULT_OUT
    try:
        pages = build(args.site, out, args.site_url.rstrip("/") + "/")
    except PdfError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1
    print(f"已写出 {out}（{out.stat().st_size / 1048576:.1f} MB，{len(pages)} 篇文章）")
    return 0
