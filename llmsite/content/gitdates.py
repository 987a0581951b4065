"""Last-commit dates of every file under a folder, from one ``git log`` call."""

from __future__ import annotations

import subprocess
from pathlib import Path


def last_commit_dates(repo: Path, folder: str) -> dict[str, str]:
    """{path relative to ``repo``: 'YYYY-MM-DD'}; empty without git or history."""
    try:
        proc = subprocess.run(
            ["git", "log", "--format=%x00%cs", "--name-only", "--no-renames", "--", folder],
            cwd=repo, capture_output=True, text=True, encoding="utf-8", timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    if proc.returncode != 0:
        return {}
    dates: dict[str, str] = {}
    current = ""
    for line in proc.stdout.splitlines():
        if line.startswith("\x00"):
            current = line[1:].strip()
        elif line.strip() and current:
            dates.setdefault(line.strip(), current)  # newest commit comes first
    return dates
