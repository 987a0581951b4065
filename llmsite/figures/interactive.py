"""The data of a figure's interactive view (``@figure_data``): checked, rounded, serialised.

A figure may have, next to its drawing, a function that returns the numbers behind it as plain
Python data (dicts, lists, strings, numbers; tensors and arrays are turned into lists). The runner
calls it once per build, checks it against the view's shape (``check``) and writes it into the
figure's cache entry as ``data.json`` (``dump``): keys sorted, floats rounded to ``DIGITS``
decimals, no spaces, so two clean builds give the same bytes. The hook serves it as
``figures/<name>.data.json`` and names it in the figure's ``data-llm-data`` attribute, where
``docs/assets/javascripts/figures.js`` finds and fetches it. Without JavaScript nothing fetches it
and the static SVG is what shows.

The shapes (``views`` lists every combination of the controls' options exactly once)::

    {"controls": [{"label": "掩码", "options": ["不加掩码", "因果掩码"], "kind": "buttons", "initial": 0}],
     "note": "optional text above the view",
     "views": [{"at": [0], "title": "...", "values": ...}, ...],
     # heatmap: values is rows x cols; a view may set "causal": true (cells right of the diagonal are masked)
     "rows": [...], "cols": [...], "ticks": [...] (optional short axis labels), "row_name": "查询",
     "col_name": "键", "value_name": "权重", "vmin": 0, "vmax": 1, "dividers": [9] (optional)
     # bars: values is one list; "stats": [{"label": ..., "value": ..., "digits": 3, "suffix": ""}] per view
     "x_name": "...", "y_name": "...", "ymax": 1, "reference": {"value": 0.0156, "label": "..."} (optional)}
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

DIGITS = 4  # decimals kept for every float; the page shows weights with 3
MAX_BYTES = 64 * 1024  # one figure's data.json; the article's budget is 40 KB gzip for the script and all its data
CONTROL_KINDS = ("buttons", "slider")


class DataError(ValueError):
    """The data does not fit its view; the message says where and what is expected."""


def plain(value: Any, where: str = "数据") -> Any:
    """JSON-ready data: tensors and arrays become lists, floats are rounded to DIGITS decimals."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # torch.Tensor, numpy arrays and numpy / torch scalars
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(f"{where} 是 {value}：交互数据里只能有有限的数")
        rounded = round(value, DIGITS)
        return 0.0 if rounded == 0 else rounded  # no -0.0
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise DataError(f"{where} 的键 {key!r} 不是字符串")
            out[key] = plain(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise DataError(f"{where} 的类型是 {type(value).__name__}：只能是字典、列表、字符串、数、张量或数组")


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise DataError(message)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_index(x: Any, size: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < size


def _strings(data: dict, key: str, length: int | None = None) -> list[str]:
    items = data.get(key)
    _need(isinstance(items, list) and all(isinstance(s, str) for s in items),
          f"{key} 应是字符串列表")
    if length is not None:
        _need(len(items) == length, f"{key} 应有 {length} 项，现在有 {len(items)} 项")
    return items


def _text(data: dict, key: str, required: bool = True) -> None:
    if key in data or required:
        _need(isinstance(data.get(key), str) and data[key].strip() != "", f"{key} 应是非空字符串")


def _check_controls(data: dict) -> list[int]:
    controls = data.get("controls")
    _need(isinstance(controls, list), "controls 应是列表（没有控件时写 []）")
    sizes = []
    for i, control in enumerate(controls):
        where = f"controls[{i}]"
        _need(isinstance(control, dict), f"{where} 应是字典")
        _need(isinstance(control.get("label"), str) and control["label"].strip() != "", f"{where}.label 应是非空字符串")
        options = control.get("options")
        _need(isinstance(options, list) and len(options) >= 2 and all(isinstance(o, (str, int)) for o in options),
              f"{where}.options 应是至少两项的列表（字符串或整数）")
        kind = control.get("kind", "buttons")
        _need(kind in CONTROL_KINDS, f"{where}.kind 应是 {' 或 '.join(CONTROL_KINDS)}，现在是 {kind!r}")
        initial = control.get("initial", 0)
        _need(isinstance(initial, int) and not isinstance(initial, bool) and 0 <= initial < len(options),
              f"{where}.initial 应是 0 到 {len(options) - 1} 之间的整数")
        sizes.append(len(options))
    return sizes


def _check_views(data: dict, sizes: list[int]) -> list[dict]:
    views = data.get("views")
    _need(isinstance(views, list) and views, "views 应是非空列表")
    seen = set()
    for i, view in enumerate(views):
        _need(isinstance(view, dict), f"views[{i}] 应是字典")
        at = view.get("at")
        _need(isinstance(at, list) and len(at) == len(sizes)
              and all(_is_index(a, n) for a, n in zip(at, sizes, strict=True)),
              f"views[{i}].at 应是 {len(sizes)} 个下标的列表（每个控件选中的是第几项），现在是 {at!r}")
        _need(tuple(at) not in seen, f"views[{i}].at = {at} 重复了")
        seen.add(tuple(at))
        _need(isinstance(view.get("title"), str) and view["title"].strip() != "", f"views[{i}].title 应是非空字符串")
    missing = [list(c) for c in itertools.product(*(range(n) for n in sizes)) if c not in seen]
    _need(not missing, f"控件的这些组合没有对应的视图（views 里缺少 at = {missing[:3]}）")
    return views


def _check_heatmap(data: dict, views: list[dict]) -> None:
    rows = _strings(data, "rows")
    cols = _strings(data, "cols")
    _need(rows and cols, "rows 和 cols 不能为空")
    if "ticks" in data:
        _need(len(rows) == len(cols), "有 ticks 时 rows 和 cols 一样长（两个轴共用一组刻度）")
        _strings(data, "ticks", len(rows))
    for key in ("row_name", "col_name", "value_name"):
        _text(data, key)
    _need(_is_number(data.get("vmin")) and _is_number(data.get("vmax")) and data["vmin"] < data["vmax"],
          "vmin、vmax 应是数，且 vmin < vmax")
    dividers = data.get("dividers", [])
    _need(isinstance(dividers, list) and all(isinstance(d, int) and 0 < d < len(rows) for d in dividers),
          f"dividers 应是 1 到 {len(rows) - 1} 之间的整数列表")
    for i, view in enumerate(views):
        values = view.get("values")
        _need(isinstance(values, list) and len(values) == len(rows)
              and all(isinstance(r, list) and len(r) == len(cols) and all(map(_is_number, r)) for r in values),
              f"views[{i}].values 应是 {len(rows)} × {len(cols)} 的数表（rows × cols）")
        _need(isinstance(view.get("causal", False), bool), f"views[{i}].causal 应是 true 或 false")


def _check_bars(data: dict, views: list[dict]) -> None:
    for key in ("x_name", "y_name"):
        _text(data, key)
    _need(_is_number(data.get("ymax")) and data["ymax"] > 0, "ymax 应是正数")
    if "reference" in data:
        ref = data["reference"]
        _need(isinstance(ref, dict) and _is_number(ref.get("value")) and isinstance(ref.get("label"), str),
              "reference 应是 {\"value\": 数, \"label\": 文字}")
    length = None
    for i, view in enumerate(views):
        values = view.get("values")
        _need(isinstance(values, list) and values and all(map(_is_number, values)), f"views[{i}].values 应是数的列表")
        length = len(values) if length is None else length
        _need(len(values) == length, f"views[{i}].values 有 {len(values)} 项，其他视图有 {length} 项")
        stats = view.get("stats", [])
        _need(isinstance(stats, list), f"views[{i}].stats 应是列表")
        for j, stat in enumerate(stats):
            _need(isinstance(stat, dict) and isinstance(stat.get("label"), str) and _is_number(stat.get("value"))
                  and isinstance(stat.get("digits", 3), int) and 0 <= stat.get("digits", 3) <= DIGITS,
                  f"views[{i}].stats[{j}] 应是 {{\"label\": 文字, \"value\": 数, \"digits\": 0 到 {DIGITS}}}")


def check(view: str, data: Any) -> None:
    """Raise DataError unless ``data`` (already ``plain``) fits the view ``view``."""
    _need(isinstance(data, dict), f"@figure_data 的函数应返回一个字典，现在返回的是 {type(data).__name__}")
    _text(data, "note", required=False)
    sizes = _check_controls(data)
    views = _check_views(data, sizes)
    {"heatmap": _check_heatmap, "bars": _check_bars}[view](data, views)


def dump(view: str, data: Any) -> bytes:
    """The bytes of ``data.json``: checked, rounded, keys sorted, compact UTF-8."""
    value = plain(data)
    check(view, value)
    value = {"view": view, **value}
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()

