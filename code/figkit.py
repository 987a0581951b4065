"""全站共用的绘图工具：字体、尺寸、配色和输出格式都在这里统一。

文章里的图、动手实验里的图都通过它来画，所以看起来像同一个网站的一部分：
- 中文字体：随 requirements.txt 安装的 Noto Sans SC（OFL 许可），按文件路径注册；
- 两套配色：light 对应 Material 的浅色模式，dark 对应深色模式（slate）；
- 输出 SVG，去掉日期等元数据并固定哈希盐，同样的输入得到逐字节相同的文件。
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # 构建时没有屏幕

import matplotlib.pyplot as plt
from matplotlib import font_manager

try:  # 随 requirements.txt 安装的中文字体包
    import pylopdf_fonts_zh_cn
except ImportError:  # 例如在仓库外运行下载的 Notebook，只装了 torch、numpy、matplotlib
    pylopdf_fonts_zh_cn = None

# 没装字体包时，按顺序找系统里已有的中文字体（Linux、Windows、macOS 上常见的几种）
SYSTEM_CJK_FONTS = ("Noto Sans SC", "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei",
                    "WenQuanYi Zen Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC", "Hiragino Sans GB")


def _system_cjk_font() -> str:
    installed = {f.name for f in font_manager.fontManager.ttflist}
    for name in SYSTEM_CJK_FONTS:
        if name in installed:
            return name
    import warnings

    warnings.warn("没有找到中文字体，图里的中文会显示成方框；pip install pylopdf-fonts-zh-cn 可以解决", stacklevel=2)
    return "DejaVu Sans"


if pylopdf_fonts_zh_cn is not None:
    FONT_PATH: Path | None = Path(pylopdf_fonts_zh_cn.__file__).with_name("NotoSansSC-Regular.otf")
    font_manager.fontManager.addfont(str(FONT_PATH))
    FONT_NAME = font_manager.FontProperties(fname=str(FONT_PATH)).get_name()
else:
    FONT_PATH = None
    FONT_NAME = _system_cjk_font()

# 尺寸（英寸）：宽图占满正文栏，方图用于单张热力图
SIZES = {"wide": (8.0, 3.4), "square": (4.6, 4.2), "tall": (8.0, 4.8)}

THEMES: dict[str, dict[str, Any]] = {
    "light": {
        "fg": "#1f2430",
        "muted": "#5f6673",
        "grid": "#d8dbe2",
        "colors": ["#3f51b5", "#e8603c", "#2a9d8f", "#b5179e", "#8a6d00", "#5c677d"],
        "cmap": "viridis",
    },
    "dark": {
        "fg": "#e3e5ec",
        "muted": "#a9afbc",
        "grid": "#3b4152",
        "colors": ["#8c9eff", "#ff8a65", "#4dd0c1", "#f48fb1", "#ffd54f", "#b0bec5"],
        "cmap": "magma",
    },
}


def rc_params(theme: str) -> dict[str, Any]:
    """某套配色下的 matplotlib 参数。背景透明，图片嵌在页面里与主题背景融为一体。"""
    t = THEMES[theme]
    return {
        "font.family": [FONT_NAME, "DejaVu Sans"],  # 中文字体放在第一位
        "mathtext.fontset": "custom",  # $…$ 中的中文也用 Noto Sans SC
        "mathtext.rm": FONT_NAME,
        "mathtext.it": FONT_NAME,  # Noto Sans SC 没有斜体，公式变量用正体
        "mathtext.bf": FONT_NAME,
        "mathtext.sf": FONT_NAME,
        "mathtext.tt": FONT_NAME,
        "mathtext.cal": FONT_NAME,
        "mathtext.fallback": "cm",  # 中文字体里没有的数学符号（如积分号）用 Computer Modern
        # 注意：custom 字体集没有可伸缩的根号，图中的 √ 直接写字符「√」，不要用 \sqrt
        "axes.unicode_minus": False,  # Noto Sans SC 里的减号字形更统一
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "figure.dpi": 100,
        "savefig.dpi": 200,  # 热力图等位图部分按 2 倍分辨率嵌入，高分屏上也清晰
        "figure.facecolor": "none",
        "axes.facecolor": "none",
        "savefig.facecolor": "none",
        "savefig.transparent": True,
        "text.color": t["fg"],
        "axes.labelcolor": t["fg"],
        "axes.edgecolor": t["muted"],
        "axes.titlecolor": t["fg"],
        "xtick.color": t["muted"],
        "ytick.color": t["muted"],
        "xtick.labelcolor": t["fg"],
        "ytick.labelcolor": t["fg"],
        "grid.color": t["grid"],
        "axes.grid": False,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=t["colors"]),
        "image.cmap": t["cmap"],
        "legend.frameon": False,
        "lines.linewidth": 1.8,
        "lines.markersize": 5,
        "svg.fonttype": "path",  # 文字转成路径：读者电脑上没有中文字体也能显示
        "svg.hashsalt": "llm-study-platform",  # 固定 SVG 里的 id，保证逐字节可复现
        "figure.constrained_layout.use": True,
    }


@contextmanager
def theme(name: str) -> Iterator[dict[str, Any]]:
    """在一套配色下作图：with theme("dark") as t: ..."""
    with matplotlib.rc_context(rc_params(name)):
        yield THEMES[name]


def new_figure(ncols: int = 1, nrows: int = 1, size: str = "wide", **kwargs: Any) -> tuple[Any, Any]:
    """按全站统一的尺寸新建一张图。"""
    return plt.subplots(nrows, ncols, figsize=SIZES[size], **kwargs)


def heatmap(ax: Any, matrix: Any, xlabels: Sequence[str] | None = None, ylabels: Sequence[str] | None = None,
            vmin: float | None = 0.0, vmax: float | None = None, colorbar: bool = True) -> Any:
    """画一张带刻度标签的热力图（注意力权重等）。"""
    image = ax.imshow(matrix, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto")
    if xlabels is not None:
        ax.set_xticks(range(len(xlabels)), labels=list(xlabels))
    if ylabels is not None:
        ax.set_yticks(range(len(ylabels)), labels=list(ylabels))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.85)
    return image


def plain_log_axis(ax: Any, axis: str = "x", ticks: Sequence[float] | None = None, base: float = 2) -> None:
    """对数坐标轴，但刻度写成普通数字（4、8、16……），比 2² 这种写法好读，也画得更快。"""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    if ticks is not None:
        target.set_ticks(list(ticks))
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(NullFormatter())


# 手机上插图按 SVG 的原尺寸显示、可以横向滚动（docs/assets/stylesheets/extra.css）。
# 原尺寸下最小的字不应小于正文的小字号：Material 表格等小字是 0.64rem，手机上 12.8 px。
MIN_TEXT_PX = 12.8


def smallest_text_pt(fig: Any) -> float | None:
    """图里看得见的文字中最小的字号（磅）；没有文字时为 None。"""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) if sizes else None


def _enlarge_svg(path: Path, factor: float) -> None:
    """把 SVG 的显示尺寸（width、height）放大 factor 倍；viewBox 不变，所以内容等比例放大。"""
    import re

    text = path.read_text(encoding="utf-8")

    def scale(match: re.Match[str]) -> str:
        return f'{match.group(1)}="{float(match.group(2)) * factor:.1f}pt"'

    head, sep, rest = text.partition("<metadata>")
    head = re.sub(r'\b(width|height)="([0-9.]+)pt"', scale, head, count=2)
    path.write_text(head + sep + rest, encoding="utf-8")


def save(fig: Any, path: str | Path) -> None:
    """把图保存为 SVG（或 PNG），去掉日期等会变化的元数据，然后关闭它。

    SVG 里最小的字按原尺寸显示时不到 MIN_TEXT_PX 的，把整张图的显示尺寸等比例放大到刚好够；
    宽屏上图总是缩放到正文栏宽，不受影响。"""
    path = Path(path)
    fmt = path.suffix.lstrip(".")
    metadata = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}
    smallest = smallest_text_pt(fig)
    fig.savefig(path, format=fmt, metadata=metadata)
    plt.close(fig)
    if fmt == "svg" and smallest is not None and smallest * 4 / 3 < MIN_TEXT_PX:
        _enlarge_svg(path, MIN_TEXT_PX / (smallest * 4 / 3))



def draw_all(namespace: dict[str, Any], out: str | Path = "/tmp/llm-figures") -> list[Path]:
    """单独运行某个 code/figures/*.py 时用：把这个文件里用 @figure 声明的每张图画成浅色 SVG，存到 out。

    和构建时一样只用一个线程，结果才能逐字节重现。返回写出的文件。"""
    import torch

    torch.set_num_threads(1)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fn in list(namespace.values()):
        if callable(fn) and hasattr(fn, "figure_name"):
            path = folder / f"{fn.figure_name}.svg"
            with theme("light"):
                save(fn(), path)
            print("已保存", path)
            written.append(path)
    return written

def figure(
    name: str, *, article: str, title: str, caption: str, data: Sequence[str] = (), timeout: float = 120
) -> Callable[..., Any]:
    """声明一张构建时生成的图。

    name    图的名字，文章里用 <!-- figure: name --> 引用；
    article 用到它的文章（docs/articles/<article>.md）；
    title   图片的替代文字（alt）；caption 图下的说明，告诉读者看哪里；
    data    它读取的数据文件（相对仓库根目录），改动后图会重画；
    timeout 画这张图（浅色、深色两版）最多用多少秒，超时构建会停下并指出这张图。

    构建（python -m llmsite figures）不导入代码就能读出这些声明（只解析语法树），
    所以参数必须直接写成字符串字面量。被装饰的函数不带参数，返回一个 matplotlib 图。
    想让读者在网页上操作这张图，再用 @figure_data 声明它的数据（见下）。
    """

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.figure_name = name  # type: ignore[attr-defined]
        return fn

    return mark


def figure_data(name: str, *, view: str) -> Callable[..., Any]:
    """声明图 name 的交互数据：网页上可以指一指、点一点、拖一拖的版本用的数字。

    view 是画法：
    - "heatmap"：热力图，指向（点按、用方向键选）一个格子，旁边读出行、列和数值，按钮切换视图；
    - "bars"：柱状图，滑块和按钮切换视图，旁边列出几个统计量。

    和 @figure 写在同一个文件里，函数不带参数，返回一个字典（张量、数组会变成列表，
    小数保留 4 位）。字段见 llmsite/figures/interactive.py 开头，例子见
    code/figures/transformer_attention.py 的 attention_weights_data。构建时它和图一起缓存，
    放进页面；docs/assets/javascripts/figures.js 据此画出交互图。没有 JavaScript（打印、
    订阅、搜索引擎）时显示的仍是静态的 SVG，所以静态图要能独立说明问题。
    """

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.figure_data_of = name  # type: ignore[attr-defined]
        fn.figure_view = view  # type: ignore[attr-defined]
        return fn

    return mark


def exercise_answer(name: str, *, data: Sequence[str] = ()) -> Callable[..., Any]:
    """声明一道练习的答案：由这里的代码在构建时算出，而不是手写在文章里。

    name 是答案的名字，文章的练习块里写 answer: name 引用它（练习的写法见 CONTRIBUTING.md 的「练习」一节）；
    data 是它读取的数据文件（相对仓库根目录），改动后答案会重算。

    写在 code/figures/<文章 slug 把 - 换成 _>.py 里，和这篇文章的图放在一起；函数不带参数，
    返回一个整数、小数或字符串（选择题返回正确选项的文字，要和文章里的选项一字不差）。
    构建（python -m llmsite figures）像对待图一样只读语法树找到它，按它用到的定义、数据和库版本
    缓存结果，只在这些变了时重算；参数必须直接写成字面量。
    """

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.exercise_answer_name = name  # type: ignore[attr-defined]
        return fn

    return mark


def article_values(fn: Callable[..., Any]) -> Callable[..., Any]:
    """声明文章里写的、由训练或评估算出的数：函数不带参数，返回 {名字: 文中显示的文字}。

    文章里在数该出现的地方写 {{ value:名字 }}（正文、表格、图注里都行），构建时换成这个函数这次算出的文字，
    所以页面上的数总是这台机器、这次构建算出来的，不会和图、练习对不上。文字自己决定保留几位，例如 f"{x:.1f}"；
    单位（%、个百分点）写在文章里。每个 code/figures/<文章 slug 把 - 换成 _>.py 至多一个这样的函数；
    构建像对待练习答案一样只读语法树找到它，按它用到的定义和构建产物缓存结果。
    """
    fn.article_values = True  # type: ignore[attr-defined]
    return fn
