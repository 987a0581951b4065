"""Which stale artifact to start first: the one the longest remaining chain of trainings waits on.

From an empty cache the build computes over a dozen artifacts on two cores (``artifacts._compute_as_ready``). When a
core frees up and several artifacts are ready, the order matters: the GRPO article's lane started the three DPO parts
(declared in ``dpo_train.py``) before ``lora-finetune`` (``lora_train.py``, later in file-name order), although the
chain ``lora-finetune -> model-comparison -> grpo-runs`` is the longest; the last training ended 94 s later than
with this order (+409 s against +315 s, issue 46).

So a free core goes to the ready artifact with the longest *remaining path*: its own seconds plus the longest
remaining path among the stale artifacts that read it (critical path first). Ties keep the order of the stale
list (what the caller asked for, then its upstream), as before.

The seconds are hints, ``artifact_seconds.json`` next to this file: each artifact's time on one core, the ``[产物]``
lines that ``python -m llmsite artifacts`` prints when it computes from an empty cache. An artifact without a hint
(a new one) counts ``DEFAULT_SECONDS``. Only the order depends on the hints, never a result: each artifact trains in
its own single-threaded process, so its bits are the same whatever runs beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from llmsite.paths import rel

HINTS = Path(__file__).with_name("artifact_seconds.json")
DEFAULT_SECONDS = 60.0


class HintError(ValueError):
    pass


@cache
def hints(path: Path = HINTS) -> dict[str, float]:
    """{artifact name: seconds} from ``path``; a file that is not an object of positive numbers is an error naming it.
    Names no artifact has are kept (the suite's ``test_artifact_order.py`` finds them): a stale hint must not stop a
    build."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as exc:
        raise HintError(f"{rel(path)}:{exc.lineno}: 不是合法的 JSON：{exc.msg}") from exc
    if not isinstance(data, dict):
        raise HintError(f"{rel(path)}:1: 应是一个对象 {{\"产物名\": 秒数, ...}}")
    for name, seconds in data.items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise HintError(f"{rel(path)}:{_line_of(path, name)}: 产物 {name} 的秒数 {seconds!r} 应是正数")
    return {str(name): float(seconds) for name, seconds in data.items()}


def _line_of(path: Path, name: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if json.dumps(name, ensure_ascii=False) in line:
            return number
    return 1


def remaining(needs: Mapping[str, Iterable[str]], seconds: Mapping[str, float]) -> dict[str, float]:
    """Each artifact's remaining path: its seconds (``DEFAULT_SECONDS`` without a hint) plus the largest remaining
    path among the artifacts of ``needs`` that need it. ``needs``: name -> the names it waits for (acyclic; a cycle
    is reported by the scheduler, here it only stops the walk)."""
    readers: dict[str, list[str]] = {name: [] for name in needs}
    for name, ups in needs.items():
        for up in ups:
            readers.setdefault(up, []).append(name)
    out: dict[str, float] = {}
    walking: set[str] = set()

    def path(name: str) -> float:
        if name not in out:
            if name in walking:
                return 0.0
            walking.add(name)
            after = max((path(r) for r in readers.get(name, [])), default=0.0)
            walking.discard(name)
            out[name] = seconds.get(name, DEFAULT_SECONDS) + after
        return out[name]

    for name in needs:
        path(name)
    return out


def first_to_start(ready: list[str], rank: Mapping[str, float]) -> list[str]:
    """``ready`` with the longest remaining path first; equal ones keep the order they came in."""
    return sorted(ready, key=lambda name: -rank.get(name, 0.0))
