"""bench/suite.py's page-load tables, read from tests/conftest.py's ``<LLM_CPU_LOG>.pages`` log."""

from __future__ import annotations

import json
from pathlib import Path

from bench import suite


def test_pages_are_counted_by_page_and_by_file(tmp_path: Path) -> None:
    log = tmp_path / "cpu.jsonl.pages"
    records = [
        {"nodeid": "tests/browser/test_a.py::test_one", "pages": ["/s/articles/x/", "/s/articles/x/", "/s/"]},
        {"nodeid": "tests/browser/test_a.py::test_two[light]", "pages": ["/s/articles/x/"]},
        {"nodeid": "tests/browser/test_b.py::test_three", "pages": ["/s/"]},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    lines = suite.page_tables(log)
    assert lines[0].startswith("页面载入") and "共 5 次，2 个不同的页面" in lines[0]
    assert lines.index("| `/s/articles/x/` | 3 |") < lines.index("| `/s/` | 2 |")
    assert "| `tests/browser/test_a.py` | 4 |" in lines and "| `tests/browser/test_b.py` | 1 |" in lines
