"""bench/restyle.py's reading of a trace: which changes each large style recalculation was for (no browser)."""

from __future__ import annotations

import pytest

from bench import restyle

MAIN, OTHER = (1, 10), (2, 20)


def _event(name: str, ts: int, thread=MAIN, **extra) -> dict:
    return {"name": name, "ts": ts, "pid": thread[0], "tid": thread[1], **extra}


def _recalc(ts: int, us: int, elements: int, thread=MAIN, stack=None) -> dict:
    args = {"elementCount": elements, "beginData": {"stackTrace": stack or []}}
    return _event("UpdateLayoutTree", ts, thread, ph="X", dur=us, args=args)


def _changed(ts: int, node: str, **data) -> dict:
    return _event(restyle.SCHEDULED, ts, args={"data": {"nodeName": node, **data}})


def _subtree(ts: int, node: str, selectors: list[str]) -> dict:
    data = {"nodeName": node, "reason": "Invalidation set invalidates subtree",
            "selectors": [{"selector": s} for s in selectors]}
    return _event(restyle.APPLIED, ts, args={"data": data})


def test_each_large_recalculation_gets_the_changes_since_the_one_before() -> None:
    events = [
        _recalc(1_000, 5_000, 100),  # the first event of the page: time 0
        _changed(2_000, "LINK", changedAttribute="href"),
        _changed(2_100, "LINK", changedAttribute="href"),
        _recalc(3_000, 60_000, 7_000, stack=[{"functionName": "gr", "url": "", "lineNumber": 1}]),
        _changed(70_000, "P", changedClass="x"),
        _recalc(71_000, 1_000, 3),  # small: its causes are dropped with it
        _subtree(80_000, "ARTICLE", [".md-typeset table:not([class]) + *"]),
        _event(restyle.MARKED, 80_100, args={"data": {"nodeName": "ARTICLE", "reason": "Related style rule"}}),
        _event(restyle.MARKED, 80_200, args={"data": {"nodeName": "P", "reason": "Node was inserted into tree"}}),
        _recalc(90_000, 30_000, 6_500),
        _recalc(95_000, 90_000, 9_000, thread=OTHER),  # another thread (a worker): not the page's
        _recalc(96_000, 1_000, 1, thread=OTHER),
    ]
    found = restyle.restyles(events, min_ms=20)
    assert [(r.at_ms, r.ms, r.elements, r.forced_by) for r in found] == [(2.0, 60.0, 7_000, "gr"),
                                                                      (89.0, 30.0, 6_500, "")]
    assert found[0].causes == {"LINK: href changed": 2}
    assert found[1].causes == {"ARTICLE: whole subtree invalidated": 1, "P: Node was inserted into tree": 1}
    assert found[1].selectors == {".md-typeset table:not([class]) + *": 1}


def test_a_trace_without_style_work_is_an_error() -> None:
    with pytest.raises(ValueError, match="no style recalculation"):
        restyle.restyles([_changed(1, "P", changedClass="x")], min_ms=1)
