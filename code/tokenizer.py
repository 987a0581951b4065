"""字符级分词器，带字节回退：任何 UTF-8 文本都能编码，解码后一个字符都不差。

词表分两段：
- 编号 0 到 255：256 个字节。词表里没有的字符（生僻字、表情符号、别的文字）拆成它的 UTF-8 字节，
  每个字节一个词元，这叫字节回退（byte fallback）；
- 编号 256 起：训练语料里出现得够多的字符，每个字符一个词元，按出现次数从多到少排列。

所以编码永远不会遇到「未知词元」，解码时把连续的字节词元拼起来按 UTF-8 还原即可。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch
from shapes import check_int
from torch import Tensor

N_BYTES = 256  # 字节词元占用编号 0..255


# --8<-- [start:tokenizer]
class CharTokenizer:
    """一个字符一个词元；词表里没有的字符退回到它的 UTF-8 字节。"""

    def __init__(self, chars: Sequence[str]) -> None:
        check_chars(chars)  # 每一项都是单个字符，且互不重复
        self.chars = list(chars)
        self.char_to_id = {c: N_BYTES + i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text: str, min_count: int = 2) -> CharTokenizer:
        """从语料建词表：出现至少 min_count 次的字符各占一个编号，按次数从多到少（次数相同按码位）。"""
        check_text("text", text)
        check_int("min_count", min_count, minimum=1)
        counts = Counter(text)
        kept = [c for c, n in counts.items() if n >= min_count]
        return cls(sorted(kept, key=lambda c: (-counts[c], ord(c))))

    @property
    def vocab_size(self) -> int:
        return N_BYTES + len(self.chars)

    def encode(self, text: str) -> list[int]:
        """文本 → 词元编号。认识的字符取它的编号，不认识的拆成 UTF-8 字节（每个字节的值就是编号）。"""
        check_text("text", text)
        ids: list[int] = []
        for c in text:
            if c in self.char_to_id:
                ids.append(self.char_to_id[c])
            else:
                ids.extend(c.encode("utf-8"))  # 1 到 4 个字节，各是 0..255 的整数
        return ids

    def decode(self, ids: Iterable[int] | Tensor) -> str:
        """词元编号 → 文本。连续的字节词元先攒起来，再一起按 UTF-8 还原。

        模型生成的字节可能拼不成合法的 UTF-8（例如只生成了一个汉字的前两个字节），
        这样的字节显示成替换字符 �，而不是报错。
        """
        ids = check_ids(ids, self.vocab_size)
        out: list[str] = []
        pending = bytearray()  # 还没还原的字节
        for i in ids:
            if i < N_BYTES:
                pending.append(i)
                continue
            if pending:
                out.append(pending.decode("utf-8", errors="replace"))
                pending.clear()
            out.append(self.chars[i - N_BYTES])
        if pending:
            out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)
# --8<-- [end:tokenizer]

    def token_text(self, i: int) -> str:
        """一个词元显示成什么：字符词元就是那个字符，字节词元写成 <0xE4> 的样子。"""
        (i,) = check_ids([i], self.vocab_size)
        return f"<0x{i:02X}>" if i < N_BYTES else self.chars[i - N_BYTES]


# ---------- 参数检查：不在文章和实验里展示 ----------


def check_text(name: str, text: object) -> None:
    """text 是能用 UTF-8 表示的 str（单独的代理项，如 '\\ud800'，不是合法的 Unicode 字符）。"""
    if not isinstance(text, str):
        raise ValueError(f"{name} 应为 str，收到 {type(text).__name__}；bytes 请先用 .decode('utf-8') 转成文本")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = text[e.start]
        raise ValueError(f"{name} 的第 {e.start} 个字符 U+{ord(bad):04X} 是单独的代理项，不能用 UTF-8 表示") from None


def check_chars(chars: object) -> None:
    if isinstance(chars, str) or not isinstance(chars, Sequence):
        raise ValueError("chars 应为字符的列表，例如 ['，', '。', '山']；想从语料建词表请用 CharTokenizer.train(text)")
    for i, c in enumerate(chars):
        if not isinstance(c, str) or len(c) != 1:
            raise ValueError(f"chars 的每一项应是单个字符，第 {i} 项是 {c!r}")
        check_text(f"chars[{i}]", c)
    if len(set(chars)) != len(chars):
        dup = next(c for c in chars if list(chars).count(c) > 1)
        raise ValueError(f"chars 里的字符不能重复，{dup!r} 出现了不止一次")


def check_ids(ids: object, vocab_size: int) -> list[int]:
    """ids 是整数序列或一维整数张量，每个编号在 0..vocab_size-1 之间。返回 Python 整数的列表。"""
    if isinstance(ids, Tensor):
        if ids.dim() != 1 or ids.is_floating_point() or ids.dtype == torch.bool:
            raise ValueError(f"ids 为张量时应是一维整数张量，收到形状 {tuple(ids.shape)}、dtype={ids.dtype}；"
                             "一批序列请逐行解码：[tok.decode(row) for row in ids]")
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)):
        raise ValueError(f"ids 应为词元编号的序列，收到 {type(ids).__name__}")
    if isinstance(ids, (set, frozenset, dict)) or not isinstance(ids, Iterable):
        raise ValueError(f"ids 应为有顺序的词元编号序列（列表或一维张量），收到 {type(ids).__name__}；"
                         "一个编号也要放进列表，例如 tok.decode([5])")
    out = [check_int("ids 里的编号", i) for i in ids]
    bad = [i for i in out if i >= vocab_size]
    if bad:
        raise ValueError(f"ids 里的编号应在 0 到 vocab_size - 1 = {vocab_size - 1} 之间，收到 {bad[0]}")
    return out


if __name__ == "__main__":
    corpus = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。\n" * 2
    tok = CharTokenizer.train(corpus)
    print(f"词表：{N_BYTES} 个字节词元 + {len(tok.chars)} 个字符词元 = {tok.vocab_size}")
    text = "黃河入海流，🙂 多了一个表情和 café"
    ids = tok.encode(text)
    print("编码:", ids)
    print("逐个词元:", " ".join(tok.token_text(i) for i in ids))
    print("解码后与原文相同:", tok.decode(ids) == text)
    print("只解码一个汉字的前两个字节:", tok.decode(list("海".encode())[:2]))
