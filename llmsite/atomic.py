"""Atomic file writes: a temporary file in the same folder, then one rename.

Readers (a web server, ``mkdocs serve``, git) see the old file or the new one,
never half of one. The result has ordinary permissions (umask applied), not
``mkstemp``'s 0600.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class FileExists(FileExistsError):
    pass


def write_bytes(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` atomically; with ``exclusive`` refuse to replace a file."""
    if exclusive and path.exists():
        raise FileExists(f"{path} 已存在")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        if exclusive:
            os.link(tmp, path)  # fails if someone created the file meanwhile
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except FileExistsError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FileExists(f"{path} 已存在") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, *, exclusive: bool = False) -> None:
    write_bytes(path, text.encode("utf-8"), exclusive=exclusive)
