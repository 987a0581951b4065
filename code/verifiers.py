"""验证器：用程序检查一首藏头诗写得对不对，不看损失。

第二阶段的微调用损失衡量模型，可损失低不等于诗写得好。这里的每个验证器只回答一个能由程序判断的问题：

- 格式：是不是四句、每句五个字、句末依次是「，。，。」（直接用 code/acrostic.py 的 well_formed）；
- 藏头：四句的句首有几句是要求的字（code/acrostic.py 的 head_hits）；
- 押韵：第二句和第四句的最后一个字在不在同一个韵部。韵部按今天的普通话读音（pypinyin 给出的韵母）分成
  十三辙。唐人押的是中古音（后来整理成平水韵），有些字的读音变了，所以唐诗原作也有不少过不了这一关：
  这个验证器是一个有偏差的近似，它的偏差要先量出来再用；
- 多样：一批诗里不同的诗、不同的字各占多少（模型只会写同一首诗时，这两个数会很低）。

比率都带 Wilson 置信区间（wilson_interval）：在几百首诗上量出的比例本身有抽样误差；两个比例之差的标准误用
difference_error。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

from acrostic import N_LINES, check_heads, check_text, head_hits, well_formed

# --8<-- [start:rhyme]
# 十三辙：北方曲艺、戏曲押韵用的十三个韵部，按今天的韵母分（pypinyin 的严格写法：ü 写作 v，「春」的韵母是 uen）。
# 它比《中华新韵》的十八部宽：e 和 o、eng 和 ong、i 和 ü 都在同一部，唐诗原作按它押韵的更多
RHYME_GROUPS: dict[str, tuple[str, ...]] = {
    "发花": ("a", "ia", "ua"), "梭波": ("o", "e", "uo"), "乜斜": ("ie", "ve", "ê"),
    "一七": ("i", "v", "-i", "er"), "姑苏": ("u",), "怀来": ("ai", "uai"), "灰堆": ("ei", "uei"),
    "遥条": ("ao", "iao"), "油求": ("ou", "iou"), "言前": ("an", "ian", "uan", "van"),
    "人辰": ("en", "in", "uen", "vn"), "江阳": ("ang", "iang", "uang"),
    "中东": ("eng", "ing", "ueng", "ong", "iong"),
}
GROUP_OF_FINAL = {final: group for group, finals in RHYME_GROUPS.items() for final in finals}
BUZZING = {"zh", "ch", "sh", "r", "z", "c", "s"}  # 这些声母后面的 i 是「舌尖元音」（知、时、词），记作 -i


@cache
def rhyme_group(char: str) -> str | None:
    """一个汉字今天读音的韵部（多音字取最常用的读音）；不是汉字或查不到读音时返回 None。"""
    check_char(char)
    from pypinyin import Style, pinyin  # 只在用到押韵时才载入读音词典

    initial = pinyin(char, style=Style.INITIALS, strict=True, errors=lambda _: [""])[0][0]
    final = pinyin(char, style=Style.FINALS, strict=True, errors=lambda _: [""])[0][0]
    if final == "i" and initial in BUZZING:
        final = "-i"
    return GROUP_OF_FINAL.get(final)


def line_ends(text: str) -> list[str]:
    """第一个换行之前每一句的最后一个字（「，」「。」前面的那个字）。"""
    check_text(text=text)
    poem = text.split("\n")[0]
    return [poem[i - 1] for i, c in enumerate(poem) if c in "，。" and i > 0]


def rhymes(text: str) -> bool:
    """押韵：格式对，而且第二句和第四句的最后一个字在同一个韵部（查不到韵部的字算不押）。"""
    if not well_formed(text):
        return False
    ends = line_ends(text)
    group = rhyme_group(ends[1])
    return group is not None and group == rhyme_group(ends[3])
# --8<-- [end:rhyme]


# --8<-- [start:verdict]
@dataclass(frozen=True)
class Verdict:
    """一首诗过了哪几关。heads 是对上的句首数（0 到 4）。"""

    form: bool
    heads: int
    rhyme: bool

    @property
    def all_heads(self) -> bool:
        return self.heads == N_LINES


def verify(heads: str, text: str) -> Verdict:
    """用三个验证器检查按藏头 heads 写出的诗 text（到第一个换行为止）。"""
    check_heads(heads)
    check_text(text=text)
    return Verdict(form=well_formed(text), heads=head_hits(heads, text), rhyme=rhymes(text))
# --8<-- [end:verdict]


# --8<-- [start:diversity]
def distinct_share(texts: Sequence[str]) -> float:
    """一批诗里互不相同的诗占多少：每首都不同是 1，全是同一首是 1/N。"""
    check_texts(texts)
    return len(set(texts)) / len(texts)


def char_diversity(texts: Sequence[str]) -> float:
    """一批诗里出现过的不同汉字数，除以汉字总数：翻来覆去用同几个字时很低。"""
    check_texts(texts)
    chars = [c for t in texts for c in t if "\u4e00" <= c <= "\u9fff"]
    if not chars:
        raise ValueError("texts 里一个汉字也没有，算不出用字的多样性")
    return len(set(chars)) / len(chars)
# --8<-- [end:diversity]


# --8<-- [start:wilson]
def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """比例 successes/n 的 Wilson 置信区间，默认 95%。

    比「p ± z·标准误」好：p 接近 0 或 1、n 不大时，它也不会越出 [0, 1]，也不会缩成一个点。"""
    check_count(successes, n)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence 应在 0 和 1 之间（例如 0.95），收到 {confidence!r}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)  # 95% 时约 1.96
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)
# --8<-- [end:wilson]


def difference_error(a: tuple[int, int], b: tuple[int, int]) -> float:
    """两个比例之差 b − a 的标准误；a、b 各是 (successes, n)，来自两批互不相关的采样，所以两个方差相加。

    比较训练前后、两次训练的成绩时用：差不到约 1.96 个标准误（95%），就分不出哪个高。"""
    check_pair("a", a)
    check_pair("b", b)
    return math.sqrt(sum(k / n * (1 - k / n) / n for k, n in (a, b)))


# ------------------------------------------------------------------ 参数检查


def check_char(char: object) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise ValueError(f"char 应为一个字符的 str，收到 {char!r}")


def check_texts(texts: object) -> None:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"texts 应为诗的列表（list[str]），收到 {type(texts).__name__}；一首诗也要放进列表：[text]")
    if not texts:
        raise ValueError("texts 是空列表：至少要有一首诗")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"texts[{i}] 应为 str，收到 {type(t).__name__}")


def check_pair(name: str, pair: object) -> None:
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ValueError(f"{name} 应为 (successes, n) 两个整数的元组，收到 {pair!r}")
    check_count(*pair)


def check_count(successes: object, n: object) -> None:
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} 应为整数，收到 {value!r}")
    if n <= 0:
        raise ValueError(f"n 应为正整数（样本数），收到 {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes 应在 0 到 n = {n} 之间，收到 {successes}")


if __name__ == "__main__":
    from gpt_from_scratch import load_poems

    poems = load_poems()
    rhymed = sum(rhymes(p) for p in poems)
    low, high = wilson_interval(rhymed, len(poems))
    print(f"语料里 {len(poems)} 首五言绝句，按今天的读音第二、四句押韵的有 {rhymed} 首"
          f"（{rhymed / len(poems):.1%}，95% 区间 {low:.1%}–{high:.1%}）")
    print("「春眠不覺曉」一首：", verify("春處夜花", "春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。"))
