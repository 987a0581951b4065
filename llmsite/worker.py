"""Run one of the cached build steps (``python -m llmsite <step>``) for some names in a fresh Python process.

The hooks use it so that the MkDocs process never imports torch or the code
under ``code/``, and an edited module is always loaded fresh.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

from llmsite.paths import ROOT


def run_step(
    step: str, names: list[str], log: logging.Logger, label: str, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """``python -m llmsite <step> --only a --only b``; each output line is logged as ``label: line``.

    It runs in the repository (``paths.ROOT``), so the ``llmsite`` of the site being built is the one imported.

    The script runs in its own process group. After ``timeout`` seconds (a backstop: the
    scripts enforce their own per-item limits) the whole group is killed, so no worker it
    started is left behind, and the result has return code -9 and a message in ``stderr``.
    """
    cmd = [sys.executable, "-m", "llmsite", step] + [arg for n in names for arg in ("--only", n)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", start_new_session=True,
        cwd=ROOT,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = -signal.SIGKILL
        err = (err or "") + f"\npython -m llmsite {step} 运行超过 {timeout:g} 秒，已停止（连同它启动的所有进程）"
    except BaseException:  # Ctrl-C or the build stopping: take the workers down too
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    for line in (out or "").splitlines():
        log.info("%s: %s", label, line.strip())
    return subprocess.CompletedProcess(cmd, code, out, err)


def failure(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.strip() or proc.stdout.strip()
