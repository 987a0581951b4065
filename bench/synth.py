"""Synthetic Chinese articles for the scaling benchmark.

Text is composed from a seeded vocabulary and sentence templates (no real text
is copied): about 2,500 汉字 an article, with a fenced code block, an inline
``$...$`` and a display ``$$...$$`` formula and two ``##`` headings. The front
matter and the typography follow the project's checks (``llmsite.content.checks``),
so the project's own validation passes: Latin words and numbers are set off
by spaces, punctuation next to 汉字 is full-width.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

HANZI = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
TARGET_HANZI = 2500
STAGE_SIZE = 50
SLUG_PREFIX = "bench"

# --------------------------------------------------------------------------- vocabulary


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


TECH_NOUNS = _words(
    "模型 参数 梯度 损失函数 注意力 向量 矩阵 张量 序列 词元 嵌入 训练集 验证集 学习率 优化器 批次 "
    "隐藏层 激活函数 归一化 残差连接 解码器 编码器 权重 偏置 概率分布 温度 采样 上下文 提示词 数据集 "
    "标注 推理 显存 吞吐量 延迟 分词器 词表 位置编码 前馈网络 多头注意力 交叉熵 正则化 过拟合 泛化能力 "
    "微调 预训练 检索 知识库 评测指标 基线 超参数 收敛速度 数值稳定性 计算图 反向传播 初始化 量化 蒸馏 "
    "剪枝 对齐 奖励模型 偏好数据 指令 输出格式 长文本 上下文窗口 掩码 查询 键 值 投影矩阵 缩放系数 "
    "热力图 学习曲线 检查点 日志 随机种子 特征 表示空间 语义 相似度"
)
PLAIN_NOUNS = _words(
    "问题 方法 思路 直觉 细节 现象 结论 例子 步骤 代价 效果 规律 原因 角度 经验 工具 流程 笔记 图表 曲线 "
    "表格 代码 函数 接口 假设 前提 边界 目标 约束 权衡 取舍 习惯 误区 线索 证据 直觉判断 小实验 对照组 "
    "记录"
)
PEOPLE = _words("读者 初学者 工程师 研究者 同学 团队 作者 评审者")
VERBS = _words(
    "观察 计算 比较 调整 理解 解释 实现 验证 分析 记录 复现 优化 拆解 推导 估计 衡量 设计 改进 测试 讨论 "
    "总结 检查 训练 评估 部署 监控 归纳 梳理 追踪 确认"
)
ADJS = _words("稳定 简单 关键 常见 直观 复杂 有效 清楚 合理 明显 细微 重要 朴素 灵活 严格 宽松 紧凑 稀疏 平滑 陡峭")
ADVS = _words("通常 往往 一般来说 事实上 换句话说 实际上 很多时候 在实践中 严格来说 粗略地说")
CHANGE = _words("变大 变小 趋于平稳 来回振荡 迅速下降 缓慢上升 失去作用 变得更稳定")
LATIN = _words("GPU CPU PyTorch Transformer softmax batch token API JSON Adam LayerNorm RoPE")
UNITS = _words("秒 毫秒 层 个 步 轮 倍 维")

INLINE_MATH = (r"d_k", r"\sqrt{d_k}", r"x_t", r"W_q", r"\alpha", r"p_i", r"\lambda", r"h_t", r"\theta", r"N")
DISPLAY_MATH = (
    r"\mathcal{L}=-\sum_{t=1}^{T}\log p_\theta(x_t\mid x_{<t})",
    r"\operatorname{softmax}(z)_i=\frac{e^{z_i}}{\sum_{j} e^{z_j}}",
    r"\theta_{k+1}=\theta_k-\eta\,\nabla_\theta\mathcal{L}(\theta_k)",
    r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)=d_k",
    r"y=\operatorname{LayerNorm}\bigl(x+\operatorname{FFN}(x)\bigr)",
)

TEMPLATES = (
    "{adv}，{tn}会随着{tn2}的变化而{change}。",
    "如果{tn}不够{adj}，{tn2}就很难{verb}清楚。",
    "我们可以先{verb}{tn}，再{verb2}{tn2}，最后把结果和{pn}放在一起看。",
    "在 {latin} 上{verb}{tn}时，一次大约需要 {num} {unit}。",
    "{tn}和{tn2}之间的关系，决定了{pn}是否{adj}。",
    "很多{people}第一次接触{tn}时，都会问：{tn2}到底从哪里来？",
    "用一个{adj}的{pn}来说明：假设{tn}有 {num} {unit}，{tn2}就会{change}。",
    "这一步常被一笔带过，但它直接影响{tn}的{pn}。",
    "换一个角度看，{tn}只是手段，真正要{verb}的是{tn2}。",
    "把{tn}写成公式，其中 ${math}$ 表示{tn2}的大小。",
    "{people}在{verb}{tn}时，最容易忽略的是{pn}。",
    "实验里把{tn}调到原来的 {num} 倍，{tn2}明显{change}。",
    "这并不是说{tn}不重要，而是{tn2}更值得先{verb}。",
    "为了让{tn}保持{adj}，通常会配合{tn2}一起使用。",
    "回到前面的{pn}，{tn}的作用其实是限制{tn2}的范围。",
    "{adv}，{people}会先画出{tn}的{pn}，再决定下一步怎么{verb}。",
    "如果用 {latin} 来{verb}{tn}，代码只需要几行。",
    "读到这里，不妨停下来{verb}一下{tn}和{tn2}的区别。",
)
HEADINGS = (
    "{tn}从哪里来",
    "为什么要{verb}{tn}",
    "{tn}与{tn2}的关系",
    "动手{verb}{tn}",
    "常见的{pn}",
    "{tn}的{adj}做法",
)


@dataclass(frozen=True)
class Synthetic:
    slug: str
    title: str
    text: str
    hanzi: int


def hanzi_count(text: str) -> int:
    return len(HANZI.findall(text))


class _Writer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def slots(self) -> dict[str, str]:
        r = self.rng
        tn, tn2 = r.sample(TECH_NOUNS, 2)
        verb, verb2 = r.sample(VERBS, 2)
        return {
            "tn": tn,
            "tn2": tn2,
            "pn": r.choice(PLAIN_NOUNS),
            "people": r.choice(PEOPLE),
            "verb": verb,
            "verb2": verb2,
            "adj": r.choice(ADJS),
            "adv": r.choice(ADVS),
            "change": r.choice(CHANGE),
            "latin": r.choice(LATIN),
            "num": str(r.choice((2, 3, 4, 8, 12, 16, 32, 64, 128, 512, 1024))),
            "unit": r.choice(UNITS),
            "math": r.choice(INLINE_MATH),
        }

    def sentence(self) -> str:
        return self.rng.choice(TEMPLATES).format(**self.slots())

    def paragraph(self) -> str:
        return "".join(self.sentence() for _ in range(self.rng.randint(4, 7)))

    def heading(self, used: set[str]) -> str:
        while True:
            text = self.rng.choice(HEADINGS).format(**self.slots())
            if text not in used:
                used.add(text)
                return text

    def code(self, n: int) -> str:
        r = self.rng
        name = r.choice(("scaled_scores", "masked_softmax", "running_mean", "clip_update", "mix_tokens"))
        scale = r.choice((0.5, 0.125, 2.0, 1e-3))
        comment = f"{r.choice(TECH_NOUNS)}：先{r.choice(VERBS)}，再{r.choice(VERBS)}"
        return "\n".join(
            [
                "```python",
                "import torch",
                "",
                "",
                f"def {name}_{n}(x: torch.Tensor, scale: float = {scale}) -> torch.Tensor:",
                f'    """{comment}。"""',
                "    y = x * scale  # 逐元素缩放",
                "    y = y - y.amax(dim=-1, keepdim=True)  # 数值稳定",
                "    return torch.softmax(y, dim=-1)",
                "```",
            ]
        )


def article(n: int, tags: list[str], *, seed: int = 0, author: str = "guohua") -> Synthetic:
    """The ``n``-th synthetic article (deterministic for a given seed)."""
    rng = random.Random(f"{seed}-{n}")
    w = _Writer(rng)
    slug = f"{SLUG_PREFIX}-{n:04d}"
    s = w.slots()
    title = f"{s['tn']}与{s['tn2']}：{s['adj']}的{s['pn']}笔记（第 {n} 篇）"
    description = f"从{s['pn']}出发，{s['verb']}{s['tn']}和{s['tn2']}，并用一小段 PyTorch 代码{s['verb2']}它们。"
    date = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(0, 1000))
    chosen = rng.sample(tags, k=min(len(tags), rng.randint(1, 3)))
    used: set[str] = set()
    body: list[str] = []
    # Paragraphs up to the target, split into an intro and two sections.
    paragraphs: list[str] = []
    while sum(hanzi_count(p) for p in paragraphs) < TARGET_HANZI:
        paragraphs.append(w.paragraph())
    a, b = max(1, len(paragraphs) // 4), max(2, (len(paragraphs) * 5) // 8)
    parts = [paragraphs[:a], paragraphs[a:b], paragraphs[b:] or [w.paragraph()]]
    body += parts[0]
    if n % 3 == 0:
        body.append("完整的阅读顺序见[学习路线](../route.md)，这一篇可以放在任何阶段之后读。")
    body += [f"## {w.heading(used)}", *parts[1][:2], w.code(n), *parts[1][2:]]
    formula = rng.choice(DISPLAY_MATH)
    body += [f"## {w.heading(used)}", parts[2][0], f"$$\n{formula}\n$$", *parts[2][1:]]
    meta = {
        "title": title,
        "description": description,
        "author": author,
        "date": date,
        "tags": chosen,
    }
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1000)
    text = f"---\n{front}---\n\n" + "\n\n".join(body) + "\n"
    return Synthetic(slug, title, text, hanzi_count("\n".join(body)))


def allowed_tags(root: Path) -> list[str]:
    data = yaml.safe_load((root / "data" / "tags.yml").read_text(encoding="utf-8")) or {}
    return [str(k) for k in data]


def add_articles(root: Path, count: int, *, seed: int = 0) -> list[Synthetic]:
    """Write ``count`` synthetic articles into ``root``/docs/articles and new stages of data/route.yml."""
    tags = allowed_tags(root)
    out = [article(i, tags, seed=seed) for i in range(1, count + 1)]
    folder = root / "docs" / "articles"
    for a in out:
        (folder / f"{a.slug}.md").write_text(a.text, encoding="utf-8")
    route_file = root / "data" / "route.yml"
    route = yaml.safe_load(route_file.read_text(encoding="utf-8")) or {}
    stages = route.setdefault("stages", [])
    for k in range(0, count, STAGE_SIZE):
        chunk = out[k : k + STAGE_SIZE]
        stages.append(
            {
                "title": f"扩展阶段 {k // STAGE_SIZE + 1}：合成文章",
                "summary": "基准测试生成的合成文章，用来测量构建时间随文章数的变化。",
                "articles": [a.slug for a in chunk],
            }
        )
    route_file.write_text(
        "# 基准测试改写过的学习路线（临时副本）\n" + yaml.safe_dump(route, allow_unicode=True, sort_keys=False),
        encoding="utf-8",
    )
    return out
