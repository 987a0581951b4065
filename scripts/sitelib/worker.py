"""Run one of the build scripts for some names in a fresh Python process.

The hooks use it so that the MkDocs process never imports torch or the code
under ``code/``, and an edited module is always loaded fresh.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path


def run_script(script: Path, names: list[str], log: logging.Logger, label: str) -> subprocess.CompletedProcess:
    """``python script --only a --only b``; each output line is logged as ``label: line``."""
    cmd = [sys.executable, str(script)] + [arg for n in names for arg in ("--only", n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
    for line in proc.stdout.splitlines():
        log.info("%s: %s", label, line.strip())
    return proc


def failure(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.strip() or proc.stdout.strip()
