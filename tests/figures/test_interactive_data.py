"""Interactive figure data (@figure_data): declaration, checks, serialisation, where the page finds it, and
byte-identical data from two clean builds."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch

from llmsite.figures import cache, interactive, registry

from .conftest import Repo, make_repo

INTERACTIVE = {"attention-weights": "heatmap", "multi-head-weights": "heatmap", "dk-explorer": "bars"}


def _heatmap(**extra) -> dict:
    data = {
        "controls": [{"label": "掩码", "options": ["不加掩码", "因果掩码"]}],
        "views": [{"at": [0], "title": "a", "values": [[0.5, 0.5], [0.25, 0.75]]},
                  {"at": [1], "title": "b", "values": [[1.0, 0.0], [0.25, 0.75]], "causal": True}],
        "rows": ["x1", "x2"], "cols": ["x1", "x2"], "row_name": "查询", "col_name": "键", "value_name": "权重",
        "vmin": 0, "vmax": 1,
    }
    data.update(extra)
    return data


# --------------------------------------------------------------------------- declarations


def test_the_attention_article_declares_its_three_interactive_figures() -> None:
    specs = registry.discover()
    declared = {n: s.view for n, s in specs.items()
                if s.data_function and s.data_where.startswith("code/figures/transformer_attention.py:")}
    assert declared == INTERACTIVE


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('@figure_data("nope", view="heatmap")\ndef d():\n    return {}\n', "找不到同名的图"),
        ('@figure_data("a", view="pie")\ndef d():\n    return {}\n', "view 应是 'heatmap' 或 'bars'"),
        ('@figure_data("a")\ndef d():\n    return {}\n', "view 应是"),
        ('@figure_data("a", view="bars", colour="red")\ndef d():\n    return {}\n', "不认识参数 colour"),
        ('@figure_data("a", view="bars")\ndef d():\n    return {}\n\n'
         '@figure_data("a", view="bars")\ndef e():\n    return {}\n', "已在第"),
    ],
    ids=["unknown figure", "unknown view", "no view", "unknown argument", "twice"],
)
def test_bad_data_declarations_are_refused_with_file_and_line(tmp_path: Path, source: str, message: str) -> None:
    module = tmp_path / "probe.py"
    module.write_text('@figure("a", article="x", title="t", caption="c")\ndef a():\n    pass\n\n' + source,
                      encoding="utf-8")
    with pytest.raises(registry.DeclarationError, match=re.escape(message)) as info:
        registry.parse_module(module)
    assert "probe.py:" in str(info.value)


def test_the_data_function_is_part_of_the_cache_key(repo: Repo) -> None:
    code = repo.root / "code"
    before = {n: cache.key_for(s, code, repo.root) for n, s in registry.discover(code).items()}
    assert "declaration" in before["dk-explorer"].inputs
    assert "dk_explorer_data" in before["dk-explorer"].inputs["declaration"]
    assert len(json.loads(before["rope-relative"].inputs["declaration"])) == 6  # plain figures keep their keys
    # the data's module is a dependency: a figure reading a trained model through its data function keeps the artifact
    assert any(k.startswith("artifact:") for k in before["multi-head-weights"].inputs)


# --------------------------------------------------------------------------- checks and serialisation


def test_dump_rounds_sorts_and_converts_tensors() -> None:
    data = _heatmap(views=[
        {"at": [0], "title": "a", "values": torch.tensor([[1 / 3, -1e-9], [0.123456, 0.5]], dtype=torch.float64)},
        {"at": [1], "title": "b", "values": [[1.0, 0.0], [0.25, 0.75]]},
    ])
    raw = interactive.dump("heatmap", data)
    value = json.loads(raw)
    assert value["views"][0]["values"] == [[0.3333, 0.0], [0.1235, 0.5]]
    assert "-0.0" not in raw.decode()
    assert raw.decode() == json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert value["view"] == "heatmap"
    assert interactive.dump("heatmap", data) == raw


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_heatmap(views=[{"at": [0], "title": "a", "values": [[0.5, 0.5], [0.25, 0.75]]}]),
         "没有对应的视图"),
        (_heatmap(views=[{"at": [0], "title": "a", "values": [[0.5, 0.5]]},
                         {"at": [1], "title": "b", "values": [[1.0, 0.0], [0.25, 0.75]]}]), "2 × 2"),
        (_heatmap(views=[{"at": [0], "title": "a", "values": [[math.nan, 0.5], [0.25, 0.75]]},
                         {"at": [1], "title": "b", "values": [[1.0, 0.0], [0.25, 0.75]]}]), "有限的数"),
        (_heatmap(vmin=1, vmax=0), "vmin < vmax"),
        (_heatmap(controls=[{"label": "掩码", "options": ["只有一项"]}]), "至少两项"),
        (_heatmap(controls=[{"label": "掩码", "options": ["a", "b"], "kind": "dial"}]), "buttons 或 slider"),
        (_heatmap(dividers=[5]), "dividers"),
        ([1, 2], "应返回一个字典"),
        ({"controls": [], "views": [{"at": [], "title": "t", "values": [0.1, "x"]}], "x_name": "x", "y_name": "y",
          "ymax": 1}, "数的列表"),
    ],
    ids=["missing view", "wrong shape", "nan", "vmin", "one option", "control kind", "divider", "not a dict",
         "bars values"],
)
def test_data_that_does_not_fit_its_view_is_refused(data: object, message: str) -> None:
    view = "bars" if isinstance(data, dict) and "x_name" in data else "heatmap"
    with pytest.raises(interactive.DataError, match=re.escape(message)):
        interactive.dump(view, data)


def test_the_figure_names_its_data_relative_to_the_page() -> None:
    from llmsite.features import figures as hook

    specs = registry.discover()
    markup = hook.figure_markdown(specs["dk-explorer"], "articles/transformer-attention.md",
                                  "articles/transformer-attention/")
    assert 'data-llm-view="bars" data-llm-data="../../figures/dk-explorer.data.json"' in markup
    assert "data-llm" not in hook.figure_markdown(specs["rope-relative"], "articles/transformer-attention.md",
                                                  "articles/transformer-attention/")
    assert hook.data_uri(specs["dk-explorer"]) == "figures/dk-explorer.data.json"
    # without the page's URL (the benchmark's variants): the one MkDocs gives it with directory URLs
    assert markup == hook.figure_markdown(specs["dk-explorer"], "articles/transformer-attention.md")
    home = hook.figure_markdown(specs["dk-explorer"], "index.md")
    assert 'data-llm-data="figures/dk-explorer.data.json"' in home


# --------------------------------------------------------------------------- the pipeline


def _data_files(repo: Repo) -> dict[str, bytes]:
    return {p.parent.parent.name: p.read_bytes() for p in sorted(repo.cache.glob("*/*/data.json"))}


def test_two_clean_builds_give_byte_identical_figure_data(tmp_path: Path, clean_build) -> None:
    """Drawn cold here, and cold by the run's second build (from an empty cache, in another process): same bytes."""
    only = [arg for name in INTERACTIVE for arg in ("--only", name)]
    first = make_repo(tmp_path / "one")
    first.run(*only)
    data = _data_files(first)
    assert set(data) == set(INTERACTIVE)
    cold = sorted((clean_build.cache / "figures").glob("*/*/data.json"))
    second = {p.parent.parent.name: p.read_bytes() for p in cold if p.parent.parent.name in INTERACTIVE}
    assert data == second
    for name, raw in data.items():
        value = json.loads(raw)
        assert value["view"] == INTERACTIVE[name]
        assert raw == json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(), name
        decimals = [len(m) for m in re.findall(r"\d\.(\d+)", raw.decode())]
        assert max(decimals) <= interactive.DIGITS, name


def test_bad_data_stops_the_build_naming_the_function(repo: Repo) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    text = module.read_text(encoding="utf-8")
    text = text.replace('        "vmin": 0, "vmax": 1,\n    }\n', '        "vmin": 1, "vmax": 0,\n    }\n', 1)
    module.write_text(text, encoding="utf-8")
    line = registry.discover(repo.root / "code")["attention-weights"].data_line
    proc = repo.run("--only", "attention-weights", check=False)
    assert proc.returncode == 1
    assert "attention_weights_data" in proc.stderr and f"transformer_attention.py:{line}" in proc.stderr, proc.stderr
    assert "vmin < vmax" in proc.stderr
    assert not list(repo.cache.glob("attention-weights/*"))  # nothing half-written
