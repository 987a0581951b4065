"""Smoke test of the marginal-cost benchmark (bench/marginal.py): the generated article, no build, no timing."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from bench import marginal
from bench.common import Samples, Workspace


def test_generated_article_is_a_valid_article_with_code_a_figure_and_a_lab(tmp_path: Path) -> None:
    from llmsite.content.articles import load_site
    from llmsite.content.catalog import load_route
    from llmsite.figures.registry import MARKER, discover

    ws = Workspace.create(tmp_path / "ws", git=False)
    before = load_route(ws.root / "data" / "route.yml", root=ws.root)[0].stages
    added = marginal.add_article(ws.root)
    assert added["slug"] == marginal.SLUG and (added["stage"], added["after"]) == (len(before), before[-1].slugs[-1])

    site = load_site(root=ws.root)
    assert site.problems == [], "\n".join(str(p) for p in site.problems)
    stages = [s.slugs for s in site.route.stages]
    # appended to the last stage: every other stage is as before (the site's tests pin their ends)
    assert stages == [s.slugs for s in before[:-1]] + [[*before[-1].slugs, marginal.SLUG]]
    entry = next(e for e in site.route.entries if e.slug == marginal.SLUG)
    assert entry.labs == [f"labs/{marginal.LAB}.ipynb"]
    assert (ws.root / "labs" / f"{marginal.LAB}.py").is_file()

    figures = discover(ws.root / "code")
    for name in (marginal.FIGURE, marginal.TARGETS):
        assert figures[name].article == marginal.SLUG and figures[name].module.name == f"{marginal.MODULE}.py"
    assert figures[marginal.TARGETS].data_function  # the predict exercise's explorable figure
    body = (ws.docs / "articles" / f"{marginal.SLUG}.md").read_text(encoding="utf-8")
    assert [m["name"] for m in MARKER.finditer(body)] == [marginal.FIGURE, marginal.TARGETS]
    assert f"code/{marginal.MODULE}.py:main" in body
    assert (ws.root / "code" / f"{marginal.MODULE}.py").is_file()
    assert (ws.root / "tests" / "code" / f"test_{marginal.MODULE}.py").is_file()
    assert "label_smoothing=eps" in (ws.root / "tests" / "code" / f"test_{marginal.MODULE}.py").read_text()


def test_generated_article_passes_the_checks_the_suite_makes_of_an_article(tmp_path: Path) -> None:
    """B's suite is measured only if it is green: the generated article's code tests, exercise answers (recomputed
    independently), claims and claims coverage, and its exercises of every kind, run in a copy that has it. (Its
    build and browser checks are those every article gets; bench runs them as part of B's suite.)"""
    import subprocess
    import sys

    from bench.marginal import add_suite_files

    ws = Workspace.create(tmp_path / "ws", git=False)
    add_suite_files(ws)
    if not (ws.root / "docs" / "articles" / f"{marginal.SLUG}.md").exists():  # in the bench's copy B it is there
        marginal.add_article(ws.root)
    own = [f"tests/code/test_{marginal.MODULE}.py", f"tests/exercises/test_{marginal.MODULE}_answers.py",
           f"tests/figures/test_{marginal.MODULE}_claims.py"]
    site_wide = [f"tests/figures/test_claims_coverage.py::test_every_number_is_asserted_or_exempt[{marginal.SLUG}]",
                 "tests/exercises/test_every_code_article.py",
                 "tests/exercises/test_answers.py::test_every_declared_answer_is_recomputed"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "0", "-p", "no:cacheprovider", *own, *site_wide],
                          cwd=ws.root, capture_output=True, text=True, encoding="utf-8", timeout=600,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLM_TEST_"))})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " failed" not in proc.stdout and " skipped" not in proc.stdout, proc.stdout[-2000:]
    slug = marginal.SLUG
    for node in (f"test_{marginal.MODULE}.py::test_matches_torch_cross_entropy[0.1]",
                 f"test_{marginal.MODULE}_answers.py::test_answer[{slug}-best-gap]",
                 f"test_{marginal.MODULE}_answers.py::test_answer[{slug}-more-smoothing]",
                 f"test_{marginal.MODULE}_claims.py::test_claim_holds[the figure's targets]",
                 f"test_every_number_is_asserted_or_exempt[{slug}]", f"test_ends_with_exercises_of_every_kind[{slug}]"):
        assert f"{node} PASSED" in proc.stdout, (node, proc.stdout[-3000:])


def test_file_differences_put_the_files_whose_cpu_grew_first() -> None:
    a = [{"by_file": {"tests/x.py": {"tests": 2, "seconds": 10.0, "cpu_s": 12.0},
                      "tests/y.py": {"tests": 1, "seconds": 5.0, "cpu_s": 9.0}}}]
    b = [{"by_file": {"tests/x.py": {"tests": 3, "seconds": 14.0, "cpu_s": 13.0},
                      "tests/y.py": {"tests": 1, "seconds": 4.5, "cpu_s": 9.0},
                      "tests/z.py": {"tests": 4, "seconds": 2.0, "cpu_s": 6.0}}}]
    rows = marginal.file_differences(a, b)
    assert [r["file"] for r in rows] == ["tests/z.py", "tests/x.py", "tests/y.py"]
    assert rows[1]["difference_s"] == 4.0 and rows[1]["cpu_difference_s"] == 1.0
    assert (rows[1]["tests_without"], rows[1]["tests_with"]) == (2, 3)
    assert rows[0]["new"] and not rows[1]["new"]


def test_timed_counts_the_cpu_of_the_command_and_its_children_not_its_waiting(tmp_path: Path) -> None:
    import sys

    from bench.common import timed

    # a child that burns 0.3 CPU-seconds inside a grandchild, and one that only sleeps
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    spawn = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}], check=True)"
    busy = timed([sys.executable, "-c", spawn], cwd=tmp_path, env={})
    idle = timed([sys.executable, "-c", "import time; time.sleep(0.3)"], cwd=tmp_path, env={})
    assert busy.cpu >= 0.3
    assert idle.cpu < 0.25 and idle.seconds >= 0.3


def test_the_table_shows_the_build_and_the_suite() -> None:
    from bench.common import Samples

    cold = {**marginal._difference(Samples([70.0, 74.0]), Samples([90.0, 93.0])), "budget_s": 45.0,
            "figure_step_difference_s": 8.0, "labs_step_difference_s": 6.0, "new_figure_draw_s": 3.0}
    rows = marginal.file_differences([{"by_file": {"tests/x.py": {"tests": 2, "seconds": 10.0}}}],
                                     [{"by_file": {"tests/x.py": {"tests": 3, "seconds": 14.0}}}])
    wall = marginal._difference(Samples([900.0]), Samples([950.0]))
    cpu = marginal._difference(Samples([1700.0]), Samples([1742.0]))
    results = {"cold": cold, "suite": {**wall, "work": wall, "cpu": cpu, "tests_without": 2, "tests_with": 3,
                                       "files": rows, "budget_s": 60.0}}
    assert cold["paired_differences_s"] == [20.0, 19.0] and cold["paired_difference_s"] == 19.5
    text = marginal.render(results)
    assert "1700 → 1742，多 +42" in text
    assert "+19.5 s" in text and "+50.0 s" in text and "`tests/x.py`" in text and "2 → 3" in text
    assert "没有测" in marginal.render({"cold": cold, "suite": {"skipped": "no --marginal-suite"}})


def test_timed_together_gives_each_job_its_own_cpu_output_and_exit_code(tmp_path: Path) -> None:
    import sys

    from bench.common import Job, timed_together

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    spawn = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}], check=True); print('busy')"
    jobs = [Job([sys.executable, "-c", spawn], tmp_path, {}, tmp_path / "busy.log"),
            Job([sys.executable, "-c", "import sys, time; time.sleep(0.3); print('idle'); sys.exit(3)"], tmp_path, {},
                tmp_path / "idle.log")]
    busy, idle = timed_together(jobs, timeout=120)
    assert busy.cpu >= 0.3 and busy.returncode == 0 and busy.output.strip() == "busy"
    assert idle.cpu < 0.25 and idle.seconds >= 0.3 and idle.returncode == 3 and idle.output.strip() == "idle"


def test_timed_together_kills_a_late_job_with_its_children(tmp_path: Path) -> None:
    from bench.common import BenchError, Job, timed_together

    # the job starts a grandchild, prints both pids and sleeps for an hour (a shell: it starts in milliseconds)
    log = tmp_path / "late.log"
    with pytest.raises(BenchError, match="timed out after"):
        timed_together([Job(["sh", "-c", "sleep 3600 & echo $$ $!; sleep 3600"], tmp_path, {}, log)], timeout=5)
    pids = [int(p) for p in log.read_text().split()]
    assert len(pids) == 2

    # SIGKILL is delivered when the process next runs: on a loaded machine that is not at once. Wait for each one's
    # end (a pidfd turns readable when its process has ended); without the kill they would live for an hour.
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # ended and reaped already
        try:
            assert select.select([fd], [], [], 60)[0], f"process {pid} still runs 60 s after the timeout"
        finally:
            os.close(fd)


def test_unrelated_files_are_other_modules_tests_with_as_many_tests() -> None:
    rows = marginal.file_differences(
        [{"by_file": {"tests/code/test_a.py": {"tests": 2, "seconds": 1.0, "cpu_s": 10.0},
                      "tests/code/test_b.py": {"tests": 2, "seconds": 1.0, "cpu_s": 5.0},
                      "tests/exercises/test_c_answers.py": {"tests": 1, "seconds": 1.0, "cpu_s": 20.0},
                      "tests/site/test_pages.py": {"tests": 9, "seconds": 1.0, "cpu_s": 100.0}}}],
        [{"by_file": {"tests/code/test_a.py": {"tests": 2, "seconds": 1.0, "cpu_s": 11.0},
                      "tests/code/test_b.py": {"tests": 3, "seconds": 1.0, "cpu_s": 9.0},
                      "tests/exercises/test_c_answers.py": {"tests": 1, "seconds": 1.0, "cpu_s": 21.0},
                      "tests/site/test_pages.py": {"tests": 9, "seconds": 1.0, "cpu_s": 130.0},
                      f"tests/code/test_{marginal.MODULE}.py": {"tests": 6, "seconds": 1.0, "cpu_s": 4.0},
                      f"tests/exercises/test_{marginal.MODULE}_answers.py": {"tests": 3, "seconds": 1.0,
                                                                            "cpu_s": 2.5}}}])
    u = marginal.unrelated(rows)
    # test_b gained a test and test_pages is not a code or exercise test: neither shows noise alone
    assert (u["files"], u["without_cpu_s"], u["with_cpu_s"]) == (2, 30.0, 32.0)
    assert u["new_files_cpu_s"] == 6.5
    text = marginal.render({"suite": {**marginal._difference(Samples([900.0]), Samples([950.0])),
                                      "work": marginal._difference(Samples([1.0]), Samples([1.0])),
                                      "unrelated": u, "tests_without": 4, "tests_with": 6, "files": rows,
                                      "budget_s": 60.0}})
    assert "无关的 2 个文件（噪声） | 6 CPU 秒 / 30 → 32（1.067×）" in text


def test_failures_keeps_what_failed_from_a_junit_report(tmp_path: Path) -> None:
    from bench.suite import failures

    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase classname="tests.a.test_x" name="test_ok" time="1"/>'
                      '<testcase classname="tests.a.test_x" name="test_bad[1]" time="2">'
                      '<failure message="assert 1 == 2">long traceback</failure></testcase>'
                      '<testcase classname="tests.b.test_y" name="test_err" time="0"><error message="boom"/>'
                      '</testcase></testsuite></testsuites>', encoding="utf-8")
    found = failures(report)
    assert [(f["test"], f["kind"]) for f in found] == [("tests.a.test_x::test_bad[1]", "failure"),
                                                       ("tests.b.test_y::test_err", "error")]
    assert found[0]["text"] == "assert 1 == 2\nlong traceback"
