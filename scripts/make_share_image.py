"""Draw the site's default share image (``og:image``): docs/assets/images/share.png.

1200 x 630 PNG: the logo's motif (read from docs/assets/images/logo.svg, so the
two never drift apart), the site name and its description from mkdocs.yml, in
Noto Sans SC (the font the figures use, from the pylopdf-fonts-zh-cn package).

The output is byte-reproducible for pinned matplotlib, font and inputs (no
timestamp or software version in the PNG); tests/site/test_public_basics.py
redraws it and compares bytes, so a change of site name or logo that is not
followed by ``python scripts/make_share_image.py`` fails the tests.
"""

from __future__ import annotations

import argparse
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pylopdf_fonts_zh_cn
import yaml
from matplotlib import patheffects
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyBboxPatch

ROOT = Path(__file__).resolve().parent.parent
LOGO = ROOT / "docs" / "assets" / "images" / "logo.svg"
OUTPUT = ROOT / "docs" / "assets" / "images" / "share.png"
FONT = Path(pylopdf_fonts_zh_cn.__file__).with_name("NotoSansSC-Regular.otf")
WIDTH, HEIGHT, DPI = 1200, 630, 100
INDIGO, WHITE, PALE = "#3f51b5", "#ffffff", "#e8eaf6"
SVG = "{http://www.w3.org/2000/svg}"


class _Config(yaml.SafeLoader):
    """mkdocs.yml with its custom tags: ``!ENV [NAME, default]`` gives the default, others None."""


_Config.add_constructor("!ENV", lambda loader, node: loader.construct_sequence(node)[-1])
_Config.add_multi_constructor("", lambda loader, suffix, node: None)


def site_text(config: Path = ROOT / "mkdocs.yml") -> tuple[str, list[str]]:
    """(site name, tagline lines): the description split at its colon, final full stop dropped."""
    data = yaml.load(config.read_text(encoding="utf-8"), Loader=_Config)
    description = str(data["site_description"]).strip().rstrip("。")
    head, sep, tail = description.partition("：")
    return str(data["site_name"]), ([head, tail] if sep else [description])


def logo_rects(path: Path = LOGO) -> list[dict[str, Any]]:
    """The logo's rectangles with inherited group attributes, in SVG user units."""
    rects = []

    def walk(node: ET.Element, inherited: dict[str, str]) -> None:
        attrs = {**inherited, **{k: v for k, v in node.attrib.items() if k not in ("x", "y", "width", "height")}}
        if node.tag == f"{SVG}rect":
            rects.append({**attrs, **{k: float(node.attrib[k]) for k in ("x", "y", "width", "height")}})
        for child in node:
            walk(child, attrs)

    root = ET.parse(path).getroot()
    walk(root, {})
    return rects


def draw_logo(fig: Any, x0: float, y0: float, size: float) -> None:
    """The logo at pixel position (x0, y0) from the top left, ``size`` pixels wide (SVG viewBox is 64)."""
    ax = fig.add_axes((x0 / WIDTH, 1 - (y0 + size) / HEIGHT, size / WIDTH, size / HEIGHT))
    ax.set_xlim(0, 64)
    ax.set_ylim(64, 0)  # SVG's y axis points down
    ax.set_axis_off()
    scale = size / 64 * 72 / DPI  # SVG units -> points, for line widths
    for r in logo_rects():
        fill = r.get("fill", "none")
        rx = float(r.get("rx", 0))
        ax.add_patch(FancyBboxPatch(
            (r["x"] + rx, r["y"] + rx), r["width"] - 2 * rx, r["height"] - 2 * rx,
            boxstyle=f"round,pad={rx}",
            facecolor="none" if fill == "none" else fill,
            alpha=None if "fill-opacity" not in r else float(r["fill-opacity"]),
            edgecolor=r.get("stroke", "none"),
            linewidth=float(r.get("stroke-width", 0)) * scale,
        ))


def render() -> bytes:
    name, tagline = site_text()
    font = FontProperties(fname=str(FONT))
    fig = plt.figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, facecolor=INDIGO)
    draw_logo(fig, 90, 165, 300)
    bold = [patheffects.withStroke(linewidth=2.2, foreground=WHITE)]  # the font has no bold face
    fig.text(450 / WIDTH, 1 - 250 / HEIGHT, name, fontproperties=font, fontsize=50, color=WHITE,
             va="center", path_effects=bold)
    for i, line in enumerate(tagline):
        fig.text(452 / WIDTH, 1 - (345 + i * 52) / HEIGHT, line, fontproperties=font, fontsize=24, color=PALE,
                 va="center")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor=INDIGO, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    data = render()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(data)
    print(f"{args.output}: {WIDTH}x{HEIGHT}, {len(data) / 1024:.1f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
