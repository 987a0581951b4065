"""What one stage of the learning route adds to a cold build (``--only stage-growth [--stage N]``).

Two copies of the repository: as it is, and without the stage's articles (their pages, their labs, their figure
modules ``code/figures/<slug_>.py``, and the stage's entry in ``data/route.yml``). Each is built with
``mkdocs build --strict`` from an empty cache (trained artifacts, figures, labs), interleaved, and the difference of
the medians is what the stage costs a cold build. Issue 47's budget: the third stage adds at most 3 minutes.

The copy without the stage must pass the site's own checks (``python -m llmsite check``); if another article links
to one of the removed ones, that is reported and nothing is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .common import BenchError, Samples, Workspace, load_average, log, rotate

DEFAULT_STAGE = 3
DEFAULT_REPEATS = 1


@dataclass
class StageContext:
    tmp: Path
    stage: int = DEFAULT_STAGE
    repeats: int = DEFAULT_REPEATS


def remove_stage(root: Path, stage: int) -> dict[str, Any]:
    """Take stage ``stage`` (1-based, as the route page numbers them) out of the tree at ``root``."""
    path = root / "data" / "route.yml"
    route = yaml.safe_load(path.read_text(encoding="utf-8"))
    stages = route.get("stages") or []
    if not 1 <= stage <= len(stages):
        raise BenchError(f"data/route.yml has {len(stages)} stages; there is no stage {stage}")
    removed = stages.pop(stage - 1)
    slugs, files = [], []
    for entry in removed.get("articles") or []:
        slug = entry if isinstance(entry, str) else entry["slug"]
        labs = [] if isinstance(entry, str) else entry.get("labs") or []
        slugs.append(slug)
        candidates = [f"docs/articles/{slug}.md", f"code/figures/{slug.replace('-', '_')}.py"]
        candidates += [f"labs/{Path(lab).stem}.py" for lab in labs]
        for name in candidates:
            if (root / name).is_file():
                (root / name).unlink()
                files.append(name)
    path.write_text(yaml.safe_dump(route, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return {"title": removed.get("title", ""), "articles": slugs, "removed_files": files}


def run(ctx: StageContext) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average(), "stage": ctx.stage}
    full = Workspace.create(ctx.tmp / "stage-with")
    without = Workspace.create(ctx.tmp / "stage-without", git=False)
    out.update(remove_stage(without.root, ctx.stage))
    without.commit(f"bench: without stage {ctx.stage}")
    checked = without.python("-m", "llmsite", "check", check=False)
    if checked.returncode != 0:
        raise BenchError(f"the copy without stage {ctx.stage} fails the site's checks:\n{checked.output[-3000:]}")
    total = {"with": Samples(), "without": Samples()}
    cpu = {"with": Samples(), "without": Samples()}  # the build and every process it waited for
    computed = {"with": Samples(), "without": Samples()}  # the figure step (training included) and the lab step
    for i in range(ctx.repeats):
        for which in rotate(["without", "with"], i):
            ws = full if which == "with" else without
            ws.clear_cache()
            r = ws.mkdocs_build()
            (_, figures), (_, labs) = r.figures_built, r.labs_executed
            total[which].add(r.seconds)
            cpu[which].add(r.cpu)
            computed[which].add(figures + labs)
            log(f"stage-growth: {which} stage {ctx.stage} #{i + 1}: {r.seconds:.1f} s "
                f"(figure step {figures:.1f} s, labs {labs:.1f} s)")
    for which in total:
        out[f"cold_{which}"] = total[which].as_dict()
        out[f"cold_{which}_cpu"] = cpu[which].as_dict()
        out[f"cold_{which}_computed"] = computed[which].as_dict()
    out["growth_s"] = total["with"].median - total["without"].median
    out["growth_cpu_s"] = cpu["with"].median - cpu["without"].median
    out["load_average_end"] = load_average()
    return out
