"""The interactive views of the Transformer-block article's ``prenorm-gradient`` and the decoding article's
``decoding-temperature`` (``@figure_data``, view "bars"): the data as the page receives it (checked, rounded by
``interactive.dump``), recomputed without the figure modules' data functions.

The block's gradients are rebuilt with ``test_block_claims``' recipe (the stack from ``make_stack``, the final
LayerNorm and the gradient written out there, not ``block_depth.last_layer_gradient``); the decoding probabilities
with ``test_decoding_answers``' softmax and token-by-token top-p (not ``code/sampling.py``). What the two exercises'
explanations say about the figures is checked too, and so is that each predict exercise points at its figure.
"""

from __future__ import annotations

import importlib.util
import json
import math
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from llmsite import exercises
from llmsite.content import frontmatter
from llmsite.figures import interactive, registry
from tests.conftest import BuiltSite
from tests.exercises.test_decoding_answers import LOGITS, WORDS, P, probs, top_p_keep

from .test_block_claims import final_std, last_block_gradient

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "code" / "figures"
ROUNDING = 10 ** -interactive.DIGITS  # dump keeps DIGITS decimals


@cache
def figure_module(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_{stem}_figures_under_test", FIGURES / f"{stem}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page_data(site: Path, figure: str) -> dict:
    """What the page fetches: the run's build wrote it (the data function's value through interactive.dump:
    checked and rounded), so the 64-layer stacks are not run a second time here. Each test names its figure, so an
    article's lane keeps only the tests of its own figures (the lane's build draws only those)."""
    return json.loads((site / "figures" / f"{figure}.data.json").read_text(encoding="utf-8"))


def stats(view: dict) -> dict[str, float]:
    return {s["label"]: s["value"] for s in view["stats"]}


def test_both_figures_are_declared_interactive_bars() -> None:
    specs = registry.discover(ROOT / "code")
    for name, where in (("prenorm-gradient", "transformer_block.py"), ("decoding-temperature", "decoding.py")):
        assert specs[name].view == "bars" and specs[name].data_where.startswith(f"code/figures/{where}:"), name


# --------------------------------------------------------------------------- prenorm-gradient

DEPTHS = [1, 2, 4, 8, 16, 32, 64]  # the static figure's depths and the exercise's 64


@cache
def gradient(layout: str, n: int) -> float:
    return last_block_gradient(layout, n)


def test_prenorm_gradient_views_are_recomputed(built_site: BuiltSite) -> None:
    data = page_data(built_site.dir, "prenorm-gradient")
    assert data["controls"][0]["options"] == DEPTHS and data["controls"][0]["kind"] == "slider"
    pre1, std1 = gradient("pre", 1), final_std("pre", 1)
    assert data["reference"]["value"] == pytest.approx(pre1, abs=ROUNDING)
    assert data["ymax"] >= max(max(v["values"]) for v in data["views"])  # no bar is cut off
    for view in data["views"]:
        n = DEPTHS[view["at"][0]]
        post, pre, std = gradient("post", n), gradient("pre", n), final_std("pre", n)
        assert view["values"] == pytest.approx([post, pre], abs=ROUNDING), n
        s = stats(view)
        assert s["Post-LN 的梯度范数"] == pytest.approx(post, abs=ROUNDING)
        assert s["Pre-LN 的梯度范数"] == pytest.approx(pre, abs=ROUNDING)
        assert s["Pre-LN：是叠 1 层时的"] == pytest.approx(pre / pre1, abs=ROUNDING)
        assert s["照 1/√L 应是叠 1 层时的"] == pytest.approx(1 / math.sqrt(n), abs=ROUNDING)
        assert s["Pre-LN 残差流的标准差（末尾归一化之前）"] == pytest.approx(std, abs=ROUNDING)
        assert s["叠 1 层时的标准差 ÷ 这个标准差"] == pytest.approx(std1 / std, abs=ROUNDING)


def test_prenorm_gradient_explanation() -> None:
    """「每一档层数下，…几倍和…都相差不到 0.1，「照 1/√L 应是」的那一行却掉得快得多；左边 Post-LN 的柱子则不随层数
    变矮」, and the static figure's depths are the slider's first six."""
    assert DEPTHS[:-1] == figure_module("transformer_block").STACK_SIZES
    pre1, post1, std1 = gradient("pre", 1), gradient("post", 1), final_std("pre", 1)
    for n in DEPTHS:
        ratio = gradient("pre", n) / pre1
        assert abs(ratio - std1 / final_std("pre", n)) < 0.1, n
        assert 1 / math.sqrt(n) <= ratio, n
        assert gradient("post", n) > 0.95 * post1, n


# --------------------------------------------------------------------------- decoding-temperature


def kept_probs(temperature: float, top_p: bool) -> list[float]:
    p = probs(LOGITS, temperature)
    if not top_p:
        return p
    keep = top_p_keep(p, P)
    total = math.fsum(q for q, k in zip(p, keep, strict=True) if k)
    return [q / total if k else 0.0 for q, k in zip(p, keep, strict=True)]


def test_decoding_temperature_views_are_recomputed(built_site: BuiltSite) -> None:
    data = page_data(built_site.dir, "decoding-temperature")
    slider, truncation = data["controls"]
    temperatures = [float(t) for t in slider["options"]]
    assert {0.5, 1.0, 2.0} <= set(temperatures)  # the static figure's left panel
    assert temperatures[slider.get("initial", 0)] == 1.0
    assert truncation["options"][1] == "top-p（p = 0.9）" and P == 0.9
    assert data["x_name"].startswith("、".join(WORDS))
    for view in data["views"]:
        t, top_p = temperatures[view["at"][0]], view["at"][1] == 1
        expected = kept_probs(t, top_p)
        assert view["values"] == pytest.approx(expected, abs=ROUNDING), (t, top_p)
        before = probs(LOGITS, t)
        kept = [q > 0 for q in expected]
        s = stats(view)
        assert s["「好」的概率"] == pytest.approx(expected[0], abs=ROUNDING)
        assert s["「好」「不错」在截断前的概率之和"] == pytest.approx(before[0] + before[1], abs=ROUNDING)
        assert s["能抽到的候选词"] == sum(kept)
        assert s["留下的词在截断前的概率之和"] == pytest.approx(
            math.fsum(q for q, k in zip(before, kept, strict=True) if k), abs=ROUNDING)


def test_the_exercise_can_be_read_off_the_figure(built_site: BuiltSite) -> None:
    """At temperature 0.5 with top-p on, the first zero bar is the dropped word the exercise asks for, and the
    number of words left changes with the temperature (「看「能抽到的候选词」怎样随温度变多变少」)."""
    data = page_data(built_site.dir, "decoding-temperature")
    temperatures = [float(t) for t in data["controls"][0]["options"]]
    views = {(temperatures[v["at"][0]], v["at"][1]): v for v in data["views"]}
    values = views[(0.5, 1)]["values"]
    first_zero = WORDS[next(i for i, v in enumerate(values) if v == 0)]
    p = probs(LOGITS, 0.5)
    dropped = [i for i, keep in enumerate(top_p_keep(p, P)) if not keep]
    assert first_zero == WORDS[max(dropped, key=lambda i: p[i])]
    counts = [stats(views[(t, 1)])["能抽到的候选词"] for t in temperatures]
    assert counts == sorted(counts) and counts[0] < counts[-1]


# --------------------------------------------------------------------------- the predict exercises


@pytest.mark.parametrize(("article", "ex_id", "figure"), [
    ("transformer-block", "prenorm-gradient-64", "prenorm-gradient"),
    ("decoding", "top-p-first-dropped", "decoding-temperature"),
])
def test_the_predict_exercise_points_at_the_figure(article: str, ex_id: str, figure: str) -> None:
    path = ROOT / "docs" / "articles" / f"{article}.md"
    fm = frontmatter.split(path.read_text(encoding="utf-8"))
    parsed = exercises.parse(fm.body, fm.body_line, str(path))
    assert not parsed.problems, parsed.problems
    (ex,) = [e for e in parsed.exercises if e.id == ex_id]
    assert (ex.kind, ex.figure, ex.answer) == ("predict", figure, ex_id)
    assert f"<!-- figure: {figure} -->" in fm.body
