"""How this project starts headless Chromium (Debian's, driven by Playwright).

Playwright's own browser download does not work here, so the executable is
given explicitly; the flags keep it from reaching any host by itself.
"""

from __future__ import annotations

import os

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def executable() -> str:
    return os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
