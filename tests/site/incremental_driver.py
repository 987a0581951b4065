"""Run inside a copy of the repository (cwd and PYTHONPATH = the copy): drive ``IncrementalSite`` through a
list of edit steps and, after each, compare what it wrote with a clean build of the same tree.

    python tests/site/incremental_driver.py STEPS.json RESULTS.json

The clean build is MkDocs' own ``build()`` in a fresh process, started the way ``mkdocs serve`` starts it
(``serve_reference.py``), so it shares no state with the incremental site. For every step the results list
the update's kind (``pages`` or ``full``), how many pages it re-read and re-wrote, and every output file
that differs from the clean build (none, when the preview is right).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config import load_config

from llmsite.mkdocs.incremental import IncrementalSite

SERVE_URL = "http://127.0.0.1:8000/"
HERE = Path(__file__).resolve().parent


def _front_matter(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def _write_front_matter(path: Path, meta: dict[str, Any], body: str) -> None:
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1000)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")


def apply(op: dict[str, Any]) -> None:
    path = Path(op["path"])
    kind = op["op"]
    if kind == "append":
        path.write_text(path.read_text(encoding="utf-8") + op["text"], encoding="utf-8")
    elif kind == "replace":
        text = path.read_text(encoding="utf-8")
        if op["old"] not in text:
            raise SystemExit(f"{path}: {op['old']!r} not found")
        path.write_text(text.replace(op["old"], op["new"], 1), encoding="utf-8")
    elif kind == "write":
        path.write_text(op["text"], encoding="utf-8")
    elif kind == "delete":
        path.unlink()
    elif kind == "rename":
        path.rename(op["to"])
    elif kind == "meta":
        meta, body = _front_matter(path)
        meta[op["key"]] = op["value"]
        _write_front_matter(path, meta, body)
    elif kind == "stage":  # the articles of one stage of data/route.yml, by the stage's title
        route = yaml.safe_load(path.read_text(encoding="utf-8"))
        for stage in route["stages"]:
            if stage["title"] == op["title"]:
                stage["articles"] = op["articles"]
        path.write_text(yaml.safe_dump(route, allow_unicode=True, sort_keys=False), encoding="utf-8")
    else:
        raise SystemExit(f"unknown op {kind}")


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    steps = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out_path = Path(sys.argv[2])
    work = out_path.parent
    site_dir, ref_dir = work / "incremental-site", work / "clean-site"

    def config() -> Any:
        cfg = load_config(site_dir=str(site_dir))
        cfg.plugins["llmsite"].banner_in_pages = False
        return cfg

    site = IncrementalSite(config, SERVE_URL)
    first = site.full()
    results: list[dict[str, Any]] = [{"step": "start", "kind": first.kind, "rendered": first.rendered}]
    for i, step in enumerate(steps):
        for op in step["ops"]:
            apply(op)
        result = site.update()
        subprocess.run([sys.executable, str(HERE / "serve_reference.py"), str(ref_dir), SERVE_URL], check=True)
        mine, clean = tree(site_dir), tree(ref_dir)
        differ = sorted(k for k in mine.keys() | clean.keys() if mine.get(k) != clean.get(k))
        results.append({"step": i, "what": step["what"], "kind": result.kind, "populated": result.populated,
                        "rendered": result.rendered, "seconds": round(result.seconds, 3), "differ": differ,
                        "pages": len([k for k in clean if k.endswith(".html")])})
        out_path.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
