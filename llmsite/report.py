"""Machine-readable reports of the build's steps, for the benchmark (not for people: they read the log).

When ``LLM_BUILD_REPORT`` names a file, each cached step that did work (figures drawn, labs executed)
appends one JSON line ``{"step": ..., "count": ..., "seconds": ...}`` (and ``"name"`` for one
figure drawn, step ``figure``). The build writes it with
``record`` and the benchmark reads it with ``read``: one format in one place, so rewording a log
message cannot break the benchmark.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENV = "LLM_BUILD_REPORT"


def record(step: str, count: int, seconds: float, name: str | None = None) -> None:
    """Append one report (``name``: the item, for per-item reports such as one figure drawn)."""
    target = os.environ.get(ENV)
    if not target:
        return
    entry: dict[str, Any] = {"step": step, "count": count, "seconds": round(seconds, 3)}
    if name is not None:
        entry["name"] = name
    line = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    with open(target, "a", encoding="utf-8") as out:  # one short line: appends do not interleave
        out.write(line + "\n")


def read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def total(entries: list[dict[str, Any]], step: str) -> tuple[int, float]:
    """(items, seconds) that ``step`` reported, summed; (0, 0.0) when it did no work."""
    found = [e for e in entries if e.get("step") == step]
    return sum(int(e["count"]) for e in found), sum(float(e["seconds"]) for e in found)
