"""figkit.draw_all: the driver every code/figures/*.py runs when started on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
import sys
sys.path.insert(0, {code!r})
from figkit import draw_all, figure, new_figure


@figure("tiny-line", article="x", title="t", caption="c")
def tiny_line():
    fig, ax = new_figure()
    ax.plot([0, 1, 2], [2, 0, 1])
    return fig


def not_a_figure():
    raise AssertionError("only @figure functions are drawn")


written = draw_all(globals(), {out!r})
print("WRITTEN", [p.name for p in written])
'''


def test_draw_all_draws_each_declared_figure_once(tmp_path: Path) -> None:
    script = SCRIPT.format(code=str(ROOT / "code"), out=str(tmp_path / "out"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "WRITTEN ['tiny-line.svg']" in proc.stdout
    svg = (tmp_path / "out" / "tiny-line.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_every_figure_module_uses_the_shared_driver() -> None:
    for module in sorted((ROOT / "code" / "figures").glob("*.py")):
        text = module.read_text(encoding="utf-8")
        driver = 'if __name__ == "__main__":\n    from figkit import draw_all\n\n    draw_all(globals())\n'
        assert driver in text, module
