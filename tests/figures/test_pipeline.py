"""The figure script end to end, on throwaway copies of the repository."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from llmsite.figures import registry

from .conftest import Repo, declared, declared_names, edit_definition, make_repo, status_lines

MAX_BYTES = 150 * 1024


def test_cold_build_makes_every_declared_figure_in_both_themes(built_repo: Repo, clean_build) -> None:
    # the cache was filled from empty, every figure drawn ("生成"), none read
    drawn = re.search(r"共 (\d+) 张图：(\d+) 张重新生成，0 张来自缓存", clean_build.output)
    assert drawn and drawn[1] == drawn[2], clean_build.output[-2000:]
    names = set(declared(built_repo))
    assert int(drawn[1]) == len(names)
    assert len(names) >= 7
    files = built_repo.outputs()
    assert set(files) == {f"{n}/{t}.svg" for n in names for t in ("light", "dark")}
    # no staging leftovers
    assert not list(built_repo.cache.glob(".tmp-*"))


def test_second_run_is_all_cached_and_never_imports_torch(built_repo: Repo, tmp_path: Path) -> None:
    # A fake torch / matplotlib that explode on import: a warm run must not touch them.
    for name in ("torch", "matplotlib"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('{name} imported on a warm run')\n")
    proc = built_repo.run(env={"PYTHONPATH": str(tmp_path)})
    states = status_lines(proc.stdout)
    assert states and set(states.values()) == {"缓存"}, proc.stdout
    assert set(states) == set(declared(built_repo))


def test_each_output_is_small_and_svg(built_repo: Repo) -> None:
    for name, data in built_repo.outputs().items():
        assert data.startswith(b"<?xml") and b"<svg" in data[:400], name
        assert len(data) <= MAX_BYTES, f"{name}: {len(data)} bytes"


def test_light_and_dark_variants_differ_in_colour(built_repo: Repo) -> None:
    files = built_repo.outputs()
    for name in {k.split("/")[0] for k in files}:
        assert files[f"{name}/light.svg"] != files[f"{name}/dark.svg"], name


def test_chinese_glyphs_come_from_the_cjk_font(built_repo: Repo) -> None:
    # Text is stored as glyph paths with ids "<font>-<glyph index>"; glyph 0 is
    # .notdef, the box drawn for a missing character.
    svg = built_repo.outputs()["attention-weights/light.svg"].decode()
    glyphs = set(re.findall(r'<path id="([A-Za-z-]+)-([0-9a-f]+)"', svg))
    assert glyphs, "text should be embedded as glyph paths"
    assert {font for font, _ in glyphs} == {"NotoSansSC-Regular"}
    assert all(index != "0" for _, index in glyphs)
    # at least one distinct glyph per distinct 汉字 on the figure's labels
    hanzi = set("我今天读了一篇注意力笔记不加掩码因果被关注的词元键查询")
    assert len(glyphs) >= len(hanzi)


# The function changed is in a library module that a figure module imports, and no trained model uses it: changing
# one that a model's training reaches (positional_encoding.apply_rope, before) retrained llama-vs-gpt here twice,
# once edited and once restored (62 and 58 CPU s of a run, r15), to check nothing this test asserts.
def test_a_comment_rebuilds_nothing_and_a_changed_function_only_its_figures(built_repo: Repo) -> None:
    module = built_repo.root / "code" / "llama.py"
    original = module.read_text(encoding="utf-8")
    try:
        module.write_text(original + "\n# 一处无关紧要的修改\n", encoding="utf-8")
        assert set(status_lines(built_repo.run().stdout).values()) == {"缓存"}
        edit_definition(module, "rope_scores")
        states = status_lines(built_repo.run().stdout)
        uses = declared_names(built_repo)
        users = {n for n, d in uses.items() if "rope_scores" in d.get("code/llama.py", [])}
        assert users, "some figure must use rope_scores"
        assert {n for n, s in states.items() if s == "生成"} == users
        assert {n for n, s in states.items() if s == "缓存"} == set(states) - users
    finally:
        module.write_text(original, encoding="utf-8")


def test_force_redraws_what_it_is_given_to_the_same_bytes(built_repo: Repo) -> None:
    """A forced run draws its figures again in a new process, on two workers, ignoring the cache: the same bytes as
    the cold build that filled it, light and dark. It redraws one article's figures (the attention article's:
    random data, seconds in all). That every figure of the site comes out the same when drawn twice from nothing
    is checked on all of them by ``tests/site/test_reproducible.py`` (the run's two cold builds, byte for byte);
    redrawing all of them here a third time (127 s of a loaded run, r17) would check nothing more."""
    specs = registry.discover(built_repo.root / "code")
    chosen = sorted(n for n in declared(built_repo) if specs[n].module.name == "transformer_attention.py")
    assert len(chosen) >= 4, chosen
    before = built_repo.outputs()
    states = status_lines(built_repo.run("--force", *[a for n in chosen for a in ("--only", n)]).stdout)
    assert states == dict.fromkeys(chosen, "生成")
    after = built_repo.outputs()
    assert after == before, sorted(k for k in after if after[k] != before.get(k))
    assert {k.split("/")[0] for k in after} >= set(chosen)


def test_only_builds_one_and_rejects_unknown_names(built_repo: Repo) -> None:
    states = status_lines(built_repo.run("--only", "rope-relative", "--force").stdout)
    assert states == {"rope-relative": "生成"}
    proc = built_repo.run("--only", "no-such-figure", check=False)
    assert proc.returncode != 0 and "no-such-figure" in proc.stderr


def test_progress_lines_have_seconds_and_a_total(built_repo: Repo) -> None:
    out = built_repo.run().stdout
    assert re.search(r"\[缓存\] \S+\s+\d+\.\d\d s", out)
    assert re.search(r"共 \d+ 张图：\d+ 张重新生成，\d+ 张来自缓存，用时 \d+\.\d\d s", out)


def test_png_output_is_reproducible_too(tmp_path: Path) -> None:
    script = (
        "import sys; sys.path[:0] = ['code', 'code/figures']\n"
        "import figkit, transformer_attention as ta, torch\n"
        "for i in range(2):\n"
        "    torch.manual_seed(0)\n"
        "    with figkit.theme('light'):\n"
        f"        figkit.save(ta.attention_weights(), r'{tmp_path}/a%d.png' % i)\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True, timeout=120)
    assert (tmp_path / "a0.png").read_bytes() == (tmp_path / "a1.png").read_bytes()


def test_killing_the_script_midway_leaves_a_consistent_cache(built_repo: Repo, tmp_path: Path) -> None:
    # A copy whose cache lacks four figures: the run draws those (two workers), and is killed after the first.
    # The four are the first of the attention article's (random data, no trained model, 0.4-1.8 s each here):
    # the first four by name were the BPE figures, 13 s of training tokenizers on an idle machine, 137 s in a run.
    repo = make_repo(tmp_path / "repo")
    shutil.copytree(built_repo.cache, repo.cache)
    specs = registry.discover(repo.root / "code")
    missing = sorted(n for n in declared(repo) if specs[n].module.name == "transformer_attention.py")[:4]
    assert len(missing) == 4, missing
    for name in missing:
        shutil.rmtree(repo.cache / name)
    env = {k: v for k, v in os.environ.items() if k != "LLM_SITE_CACHE"}
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "llmsite", "figures"],
        cwd=repo.root, stdout=subprocess.PIPE, text=True, env=env,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first figure drawn is done: kill while the others are drawn
    while first and "[生成]" not in first:  # cached figures (and cached build artifacts) are listed first
        assert "[缓存]" in first or "[产物]" in first or not first.strip(), first
        first = proc.stdout.readline()
    assert "[生成]" in first, first
    time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # every committed entry is complete (a figure with an interactive view also has its data)
    interactive = {name for name, spec in registry.discover(repo.root / "code").items() if spec.data_function}
    for entry in repo.cache.glob("*/*"):
        if entry.name.startswith(".tmp-") or entry.parent.name.startswith(".tmp-"):
            continue
        data = {"data.json"} if entry.parent.name in interactive else set()
        assert {p.name for p in entry.iterdir()} == {"light.svg", "dark.svg", "inputs.json"} | data, entry
    # the next run completes, cleans the leftovers and draws only what is missing
    states = status_lines(repo.run().stdout)
    drawn = {n for n, s in states.items() if s == "生成"}
    assert drawn and drawn < set(missing), (drawn, missing)
    assert not list(repo.cache.glob(".tmp-*"))
    assert set(repo.outputs()) == {f"{n}/{t}.svg" for n in declared(repo) for t in ("light", "dark")}
