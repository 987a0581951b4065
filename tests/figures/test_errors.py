"""Bad figure code fails loudly, with names, and leaves nothing half-written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from .conftest import Repo, declared, declared_names, status_lines

BROKEN = '''

@figure("broken-figure", article="transformer-attention", title="会出错的图", caption="测试用")
def broken_figure():
    raise RuntimeError("故意抛出的错误")
'''

NO_CJK_FONT = '''

@figure("tofu-figure", article="transformer-attention", title="缺字的图", caption="测试用")
def tofu_figure():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("注意力", family="DejaVu Sans")
    return fig
'''

HUGE = '''

@figure("huge-figure", article="transformer-attention", title="太大的图", caption="测试用")
def huge_figure():
    import numpy as np

    fig, ax = new_figure()
    ax.scatter(np.random.rand(20000), np.random.rand(20000), s=1)
    return fig
'''


def add_figure(repo: Repo, source: str) -> None:
    module = repo.root / "code" / "figures" / "transformer_attention.py"
    text = module.read_text(encoding="utf-8")
    head, sep, tail = text.rpartition('\nif __name__ == "__main__":')
    module.write_text(head + source + sep + tail, encoding="utf-8")


def test_a_raising_figure_names_figure_module_article_and_traceback(repo: Repo) -> None:
    add_figure(repo, BROKEN)
    # The broken figure's module and its other figures, in the order they are declared (random data, about a second
    # each): drawing every figure of the site here (56 CPU seconds in r1 of round eleven) would add nothing.
    module = "code/figures/transformer_attention.py"
    names = [name for name, files in declared_names(repo).items() if module in files]
    assert names[-1] == "broken-figure" and len(names) > 3, names
    only = [arg for name in names for arg in ("--only", name)]
    proc = repo.run(*only, check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert "broken-figure" in err
    assert "code/figures/transformer_attention.py" in err
    assert "docs/articles/transformer-attention.md" in err
    assert "Traceback" in err and "故意抛出的错误" in err
    # figures before it were built and kept; nothing partial of the broken one
    states = status_lines(proc.stdout)
    assert states and set(states.values()) == {"生成"}
    assert not (repo.cache / "broken-figure").exists() or not any((repo.cache / "broken-figure").iterdir())
    assert not list(repo.cache.glob(".tmp-*"))
    rerun = repo.run(*only, check=False)
    assert status_lines(rerun.stdout) == dict.fromkeys(states, "缓存")  # every figure drawn before the failure was kept


def test_missing_cjk_glyphs_fail_the_figure(repo: Repo) -> None:
    add_figure(repo, NO_CJK_FONT)
    proc = repo.run("--only", "tofu-figure", check=False)
    assert proc.returncode != 0
    assert "tofu-figure" in proc.stderr and "缺字" in proc.stderr


def test_a_figure_over_150_kb_fails(repo: Repo) -> None:
    add_figure(repo, HUGE)
    proc = repo.run("--only", "huge-figure", check=False)
    assert proc.returncode != 0
    assert "huge-figure" in proc.stderr and "150 KB" in proc.stderr
    assert not (repo.cache / "huge-figure").exists() or not any((repo.cache / "huge-figure").iterdir())


def test_duplicate_and_malformed_declarations_are_rejected(repo: Repo) -> None:
    add_figure(repo, BROKEN.replace("broken-figure", "rope-relative"))
    proc = repo.run("--list", check=False)
    assert proc.returncode != 0 and "rope-relative" in proc.stderr and "已在" in proc.stderr


def test_non_literal_declaration_is_rejected(repo: Repo) -> None:
    add_figure(repo, BROKEN.replace('caption="测试用"', "caption=CAPTION"))
    proc = repo.run("--list", check=False)
    assert proc.returncode != 0 and "字面量" in proc.stderr


def test_an_article_embedding_an_undeclared_figure_fails_naming_the_article() -> None:
    from llmsite.features.figures import Figures
    from llmsite.figures import registry
    from llmsite.problems import BuildStop

    figures = Figures(serving=False)
    figures.specs = registry.discover()
    page = SimpleNamespace(file=SimpleNamespace(src_uri="articles/some-article.md"), url="articles/some-article/")
    with pytest.raises(BuildStop) as info:
        figures.expand("正文\n\n<!-- figure: nobody-declared-this -->\n", page)
    assert "docs/articles/some-article.md" in str(info.value)
    assert "nobody-declared-this" in str(info.value)
    ok = figures.expand("<!-- figure: rope-relative -->\n", page)
    assert "rope-relative.light.svg#only-light" in ok and "rope-relative.dark.svg#only-dark" in ok


def test_list_reports_dependencies(repo: Repo) -> None:
    deps = declared(repo)
    assert "code/multi_head_attention.py" in deps["multi-head-weights"]
    assert "code/attention.py" in deps["multi-head-weights"]  # through multi_head_attention
    assert "code/positional_encoding.py" not in deps["attention-weights"]
