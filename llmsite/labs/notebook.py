"""A lab as a notebook whose bytes depend only on its content.

Cell ids are derived from the cells' content (``cell_ids``) and consecutive stream outputs are merged
(``merge_streams``: how the kernel happened to batch a cell's prints does not matter). Only ``to_notebook``
imports jupytext, when it is called.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

KERNEL = "python3"


def cell_ids(cells: list[Any]) -> None:
    """Give every cell an id derived from its type and source (the same notebook -> the same ids)."""
    seen: dict[str, int] = {}
    for cell in cells:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        base = hashlib.sha256(f"{cell['cell_type']}\0{source}".encode()).hexdigest()[:16]
        n = seen.get(base, 0)
        seen[base] = n + 1
        cell["id"] = base if n == 0 else f"{base}-{n}"


def merge_streams(outputs: list[Any]) -> list[Any]:
    """Each run of consecutive stream outputs as one stdout output, then one stderr output.

    The kernel flushes stdout and stderr on their own timers, so how a cell's prints are cut into
    outputs, and how the two streams interleave, varies run to run; a plot or other display output
    flushes both first, so the runs between them do not.
    """
    merged: list[Any] = []
    run: dict[str, Any] = {}
    for out in [*outputs, None]:
        if out is not None and out.get("output_type") == "stream":
            if out["name"] in run:
                run[out["name"]]["text"] += out["text"]
            else:
                run[out["name"]] = out
            continue
        merged += [run[name] for name in ("stdout", "stderr") if name in run]
        run = {}
        if out is not None:
            merged.append(out)
    return merged


def to_notebook(source: Path) -> Any:
    """The lab as an (unexecuted) notebook with the python3 kernel and content-derived cell ids."""
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.pop("jupytext", None)  # the downloaded notebook stands on its own
    cell_ids(nb.cells)
    return nb
