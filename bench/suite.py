"""Where the test suite's time goes: a JUnit XML report (``pytest --junitxml=FILE``) summed by file and by kind.

    python -m bench.suite report.xml            # Markdown tables on stdout
    python -m bench.suite report.xml --top 15   # and the slowest tests
    python -m bench.suite report.xml --cpu cpu.jsonl   # and CPU seconds by file (bench/cputime.py's log)

pytest writes each test's setup, call and teardown into its ``time`` (``junit_duration_report = total``), so a
shared fixture (the run's site build, a trained model) is charged to the first test that asks for it. Under
pytest-xdist the times are each worker's wall time: their sum is the work, not the run's length.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

CLAIMS = "文中数字的复算（claims）"  # tests/figures/test_*_claims.py
# (kind, test file prefixes), first match wins; the claims modules are picked out by name first
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("增量预览（随机编辑序列、真实服务器）", ("tests/site/test_incremental.py", "tests/site/test_serve_recovers.py",
                                         "tests/bench/test_serve_scale.py")),
    ("浏览器（Chromium）", ("tests/browser/", "tests/labs/test_lab_browser.py", "tests/security/test_payload_site.py")),
    ("代码（code/ 的单元测试）", ("tests/code/",)),
    ("站点构建与流水线（图、实验、检查、部署）", ("tests/",)),
)


@dataclass
class Case:
    file: str
    name: str
    seconds: float


def kind_of(file: str) -> str:
    if file.startswith("tests/figures/") and file.endswith("_claims.py"):
        return CLAIMS
    return next((kind for kind, prefixes in KINDS if file.startswith(prefixes)), "其他")


def read(report: Path) -> list[Case]:
    cases = []
    for case in ET.parse(report).getroot().iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.split(".")
        # "tests.site.test_x" or "tests.site.test_x.TestClass": the module path is up to the test_ part
        module = next((i for i in range(len(parts) - 1, -1, -1) if parts[i].startswith("test_")), len(parts) - 1)
        file = "/".join(parts[: module + 1]) + ".py"
        cases.append(Case(file, case.get("name", ""), float(case.get("time", "0") or 0)))
    return cases


def failures(report: Path, limit: int = 2000) -> list[dict[str, str]]:
    """The failed and erroring test cases of a JUnit report: name and the start of the failure's text."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                text = (child.get("message") or "") + "\n" + (child.text or "")
                out.append({"test": f"{case.get('classname', '')}::{case.get('name', '')}", "kind": child.tag,
                            "text": text.strip()[:limit]})
    return out


def table(rows: list[tuple[str, int, float]], total: float, head: str) -> list[str]:
    out = [f"| {head} | 测试数 | 秒 | 占比 |", "| --- | ---: | ---: | ---: |"]
    for label, count, seconds in rows:
        out.append(f"| {label} | {count} | {seconds:.1f} | {100 * seconds / total:.1f}% |")
    return out


def read_cpu(log: Path) -> dict[str, tuple[int, float, float]]:
    """bench/cputime.py's log summed by test file: {file: (tests, CPU seconds, wall seconds)}."""
    by_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        row = by_file[record["nodeid"].split("::", 1)[0]]
        row[0] += 1
        row[1] += record["cpu"]
        row[2] += record["wall"]
    return {file: (int(n), cpu, wall) for file, (n, cpu, wall) in by_file.items()}


def cpu_tables(log: Path) -> list[str]:
    per_file = read_cpu(log)
    total = sum(cpu for _, cpu, _ in per_file.values()) or 1.0
    lines = [f"CPU（测试进程和它的子进程，bench/cputime.py）：共 {total:.0f} s（{total / 60:.1f} 分钟）", ""]
    by_kind: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for file, (n, cpu, _) in per_file.items():
        by_kind[kind_of(file)][0] += n
        by_kind[kind_of(file)][1] += cpu
    kinds = sorted(((k, int(n), cpu) for k, (n, cpu) in by_kind.items()), key=lambda r: -r[2])
    lines += [*table(kinds, total, "类别"), ""]
    lines += ["| 文件 | 测试数 | CPU 秒 | 占比 | 墙钟秒 |", "| --- | ---: | ---: | ---: | ---: |"]
    for file, (n, cpu, wall) in sorted(per_file.items(), key=lambda r: -r[1][1]):
        lines.append(f"| `{file}` | {n} | {cpu:.1f} | {100 * cpu / total:.1f}% | {wall:.1f} |")
    return lines


def page_tables(log: Path, top: int = 15) -> list[str]:
    """tests/conftest.py's ``<LLM_CPU_LOG>.pages`` (the HTML pages each test's browser context loaded): the pages
    loaded most often, and the test files that load the most pages."""
    by_page: Counter[str] = Counter()
    by_file: Counter[str] = Counter()
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_page.update(record["pages"])
        by_file[record["nodeid"].split("::", 1)[0]] += len(record["pages"])
    loads = sum(by_page.values())
    lines = [f"页面载入（浏览器测试打开或即时导航取回的 HTML）：共 {loads} 次，{len(by_page)} 个不同的页面", ""]
    lines += ["| 页面 | 次数 |", "| --- | ---: |"]
    lines += [f"| `{page}` | {n} |" for page, n in by_page.most_common(top)]
    lines += ["", "| 文件 | 页面载入次数 |", "| --- | ---: |"]
    lines += [f"| `{file}` | {n} |" for file, n in by_file.most_common(top)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--top", type=int, default=0, help="also list the N slowest tests")
    parser.add_argument("--cpu", type=Path, help="bench/cputime.py's log of the same run: CPU seconds by file")
    args = parser.parse_args(argv)
    cases = read(args.report)
    if not cases:
        print(f"{args.report}: no test cases", file=sys.stderr)
        return 1
    total = sum(c.seconds for c in cases) or 1.0
    by_file: dict[str, list[Case]] = defaultdict(list)
    by_kind: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_file[c.file].append(c)
        by_kind[kind_of(c.file)].append(c)
    lines = [f"共 {len(cases)} 个测试，各测试时间之和 {total:.1f} s（{total / 60:.1f} 分钟）", ""]
    kinds = sorted(((k, len(v), sum(c.seconds for c in v)) for k, v in by_kind.items()), key=lambda r: -r[2])
    lines += [*table(kinds, total, "类别"), ""]
    files = sorted(((f"`{f}`", len(v), sum(c.seconds for c in v)) for f, v in by_file.items()), key=lambda r: -r[2])
    lines += table(files, total, "文件")
    if args.top:
        lines += ["", "| 最慢的测试 | 秒 |", "| --- | ---: |"]
        for c in sorted(cases, key=lambda c: -c.seconds)[: args.top]:
            lines.append(f"| `{c.file}::{c.name}` | {c.seconds:.1f} |")
    if args.cpu:
        lines += ["", *cpu_tables(args.cpu)]
        pages = args.cpu.with_name(args.cpu.name + ".pages")
        if pages.is_file():
            lines += ["", *page_tables(pages)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
