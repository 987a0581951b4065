"""字节级 BPE（byte-pair encoding）分词：从 256 个字节出发，一次次把最常相邻的两个词元合成一个新词元。

- 词表的编号 0 到 255 是 256 个字节，所以任何 UTF-8 文本都能编码，不会遇到「未知词元」；
- 训练每一步数一遍「哪两个词元最常挨在一起」，把这一对合并成一个新词元，编号接着往后排。
  合并的先后顺序（merges）就是训练的全部结果。train_bpe_simple 是最直接的写法（每一步从头数），
  train_bpe 只重数变了的地方，快得多，合并的结果完全相同（tests/code/test_bpe.py 核对）；
- 编码（BPE.encode）把文本拆成字节，再按训练时的先后顺序重放这些合并；
- 解码（BPE.decode）把每个词元的字节接起来，按 UTF-8 还原；
- 特殊词元（BPE 的 special_tokens，例如 '<|endoftext|>'）排在合并出的词元后面，不参与合并；
  encode 只在 allowed_special 明确允许时才产生它们，用户文字里出现同样的写法也只当普通文字。

预分词：训练和编码之前，文本先切成段（pretokenize）：连续的文字（汉字、字母、数字）一段，连续的标点、空格、
表情符号一段，每个换行单独一段。合并只在段内发生，所以词元不会跨过标点（没有「，黃」这样的词元），也不会跨过换行：
换行永远是单独的一个词元（编号 10），训练 GPT 时它就是「一首诗结束」的记号。
Hugging Face tokenizers 里同样的切法是
pre_tokenizers.Split(Regex(r"\\n|[\\p{L}\\p{M}\\p{N}]+|[^\\n\\p{L}\\p{M}\\p{N}]+"), "isolated")。

平局：两对出现的次数一样多时，选编号小的一对（先比左边的词元，再比右边的）。字节词元的编号就是字节的值。
Hugging Face tokenizers 的 BpeTrainer 用同样的规则，只是它给 256 个字节排的顺序不同（见 hf_byte_order）；
ties="hf" 时改用它的顺序，训练出的合并与它完全相同（tests/code/test_bpe.py 核对）。

参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import heapq
import math
import numbers
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import groupby, pairwise

from shapes import check_int
from tokenizer import N_BYTES, check_ids, check_text
from torch import Tensor

Pair = tuple[int, int]
TIES = ("bytes", "hf")  # 平局时比较编号用的顺序：字节的值，或 Hugging Face tokenizers 的顺序


# --8<-- [start:pretokenize]
def char_kind(c: str) -> str:
    """字符分三类：换行；文字（字母、汉字、数字和附加在它们上面的符号）；其他（标点、空格、表情符号……）。"""
    check_char(c)
    if c == "\n":
        return "newline"
    return "text" if unicodedata.category(c)[0] in "LMN" else "other"


def pretokenize(text: str) -> list[str]:
    """预分词：同一类的连续字符成一段，每个换行单独一段。

    例如 '春眠，不覺曉。\\n' → ['春眠', '，', '不覺曉', '。', '\\n']。
    """
    check_text("text", text)
    pieces: list[str] = []
    for kind, chars in groupby(text, key=char_kind):
        run = "".join(chars)
        pieces += list(run) if kind == "newline" else [run]
    return pieces
# --8<-- [end:pretokenize]


# --8<-- [start:merge]
def merge_pair(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """把 ids 里每一处相邻的 pair 换成 new_id，从左往右找，重叠时左边的先合：a a a → (aa) a。"""
    pair, new_id = check_merge_args(ids, pair, new_id)
    out: list[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
# --8<-- [end:merge]


def hf_byte_order() -> list[int]:
    """Hugging Face tokenizers 的字节级 BPE 里，256 个字节的编号顺序（第 k 项是编号为 k 的字节）。

    它先把每个字节换成一个看得见的字符（GPT-2 的做法）：! 到 ~、¡ 到 ¬、® 到 ÿ 这 188 个字节就用它们自己，
    其余 68 个（0x00 到 0x20 的控制字符和空格、0x7F 到 0xA0、0xAD）依次换成 U+0100 起的字符；
    词表再按字符的码位排序，所以这 188 个在前，68 个在后。
    """
    visible = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    return visible + [b for b in range(N_BYTES) if b not in visible]


def tie_ranks(ties: str) -> list[int]:
    """平局时比较用的名次：rank[字节] 越小越优先。合并出的词元（编号 ≥ 256）的名次就是它的编号。"""
    check_ties(ties)
    if ties == "bytes":
        return list(range(N_BYTES))
    rank = [0] * N_BYTES
    for position, byte in enumerate(hf_byte_order()):
        rank[byte] = position
    return rank


# --8<-- [start:train_simple]
def train_bpe_simple(text: str, vocab_size: int, min_frequency: int = 2, ties: str = "bytes") -> BPE:
    """最直接的训练：每一步把所有段里相邻的对从头数一遍，合并最常见的一对。结果和 train_bpe 相同，只是慢得多。"""
    check_train_args(text, vocab_size, min_frequency)
    rank = tie_ranks(ties)  # 平局时比较的名次：字节按 ties 的顺序，合并出的词元按编号
    seqs = [list(piece.encode("utf-8")) for piece in pretokenize(text)]  # 每一段，一开始是它的字节
    tokens = [bytes([b]) for b in range(N_BYTES)]  # 编号 → 这个词元的字节
    merges: list[Pair] = []
    while len(tokens) < vocab_size:
        counts = Counter(pair for ids in seqs for pair in pairwise(ids))  # 每一对出现几次，重叠的也算
        if not counts:
            break
        # 次数最多的一对；一样多时选名次小的（先比左边，再比右边）
        best = min(counts, key=lambda p: (-counts[p], *(rank[i] if i < N_BYTES else i for i in p)))
        if counts[best] < min_frequency:
            break
        new_bytes = tokens[best[0]] + tokens[best[1]]
        if new_bytes not in tokens:  # 同一串字节只占一个编号（两种合并拼出同样的字节时，沿用前一个）
            tokens.append(new_bytes)
        seqs = [merge_pair(ids, best, tokens.index(new_bytes)) for ids in seqs]
        merges.append(best)
    return BPE(merges)
# --8<-- [end:train_simple]


# --8<-- [start:train]
def train_bpe(text: str, vocab_size: int, min_frequency: int = 2, ties: str = "bytes") -> BPE:
    """在 text 上训练字节级 BPE，直到词表有 vocab_size 个词元，或最常见的一对也不到 min_frequency 次。

    合并的结果和 train_bpe_simple 完全相同，只是不在每一步把整份语料从头数一遍：一样的段只存一份（记下出现的次数），
    合并一对时只重数含有它的那几段，再用一个堆找出次数最多的一对。
    同一串字节只占一个编号：两种合并拼出同样的字节时，后一次沿用前一次的编号（这时合并比新词元多一条）。
    """
    check_train_args(text, vocab_size, min_frequency)
    byte_rank = tie_ranks(ties)

    def rank(i: int) -> int:
        return byte_rank[i] if i < N_BYTES else i

    def entry(pair: Pair) -> tuple[int, int, int, int, int]:  # 堆顶是次数最多、平局时名次最小的一对
        return (-counts[pair], rank(pair[0]), rank(pair[1]), *pair)

    pieces = Counter(pretokenize(text))  # 每一段 → 出现的次数：一样的段只处理一次
    seqs = [list(piece.encode("utf-8")) for piece in pieces]  # 每一段现在的词元编号，一开始是它的字节
    freqs = list(pieces.values())
    counts: Counter[Pair] = Counter()  # 每一对相邻词元出现的次数（重叠的也算：a a a 里有两对 (a, a)）
    where: defaultdict[Pair, set[int]] = defaultdict(set)  # 每一对出现在哪几段里
    for s, (ids, freq) in enumerate(zip(seqs, freqs, strict=True)):
        for pair in pairwise(ids):
            counts[pair] += freq
            where[pair].add(s)
    heap = [entry(pair) for pair in counts]
    heapq.heapify(heap)

    tokens = [bytes([b]) for b in range(N_BYTES)]  # 编号 → 这个词元的字节
    token_id = {t: i for i, t in enumerate(tokens)}
    merges: list[Pair] = []
    while len(tokens) < vocab_size and heap:
        minus_count, _, _, a, b = heapq.heappop(heap)
        if counts.get((a, b), 0) != -minus_count:
            continue  # 过时的记录：这一对的次数后来变了，新的次数另有一条记录
        if -minus_count < min_frequency:
            break
        new_bytes = tokens[a] + tokens[b]
        new_id = token_id.setdefault(new_bytes, len(tokens))
        if new_id == len(tokens):
            tokens.append(new_bytes)
        merges.append((a, b))
        # 只有含这一对的段会变，只重数这几段：新的每一对减去原来的每一对，就是次数的变化
        changed: set[Pair] = set()
        for s in where.pop((a, b)):
            old = seqs[s]
            new = merge_pair(old, (a, b), new_id)
            if len(new) == len(old):
                continue  # 这一段里的 (a, b) 早被别的合并拆散了
            delta = Counter(pairwise(new))
            delta.subtract(pairwise(old))
            for pair, d in delta.items():
                if d:
                    counts[pair] += d * freqs[s]
                    changed.add(pair)
                    if d > 0:
                        where[pair].add(s)
            seqs[s] = new
        for pair in changed:
            if counts[pair] > 0:
                heapq.heappush(heap, entry(pair))
            else:
                del counts[pair]
    return BPE(merges)
# --8<-- [end:train]


# --8<-- [start:bpe]
class BPE:
    """训练好的字节级 BPE。merges[k] 是第 k 次合并的两个词元的编号；词表完全由它推出来。

    BPE(bpe.merges[:k]) 就是只训练了前 k 步的分词器（训练是贪心的，多训练几步不改变前面的合并）。
    special_tokens 是特殊词元的写法（例如 ['<|endoftext|>']），编号排在所有合并出的词元后面。
    """

    def __init__(self, merges: Sequence[Pair], special_tokens: Sequence[str] = ()) -> None:
        check_merges(merges)
        check_special_tokens(special_tokens)
        self.merges: list[Pair] = []
        self.tokens = [bytes([b]) for b in range(N_BYTES)]  # 编号 → 字节
        token_id = {t: i for i, t in enumerate(self.tokens)}
        self.ranks: dict[Pair, tuple[int, int]] = {}  # 一对 → (第几次合并, 合成的编号)
        for k, pair in enumerate(merges):
            a, b = check_merge(k, pair, self.vocab_size, self.ranks)
            self.merges.append((a, b))
            new_bytes = self.tokens[a] + self.tokens[b]
            new_id = token_id.setdefault(new_bytes, len(self.tokens))
            if new_id == len(self.tokens):
                self.tokens.append(new_bytes)
            self.ranks[(a, b)] = (k, new_id)
        # 特殊词元：不参与合并，编号接在最后；只有 encode 的 allowed_special 能产生它们
        self.special_tokens = {s: len(self.tokens) + k for k, s in enumerate(special_tokens)}
        self.tokens += [s.encode("utf-8") for s in special_tokens]
        self._cache: dict[str, list[int]] = {}  # 编码过的段 → 编号，再遇到时直接取

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, allowed_special: Collection[str] = ()) -> list[int]:
        """文本 → 词元编号：先预分词，每一段拆成 UTF-8 字节，再反复合并「训练时最早合并」的那一对。

        text 里出现特殊词元的写法（如 '<|endoftext|>'）时，默认只当普通文字编码：用户输入的文字造不出特殊词元。
        只有列在 allowed_special 里的（程序自己拼进去的记号），才换成特殊词元的编号。
        """
        check_text("text", text)
        allowed = check_allowed_special(allowed_special, self.special_tokens)
        if allowed:  # 按允许的特殊词元把文本切开：切出的奇数项是特殊词元，偶数项是普通文字
            parts = re.split("(" + "|".join(re.escape(s) for s in sorted(allowed, key=len, reverse=True)) + ")", text)
            return [i for k, part in enumerate(parts)
                    for i in ([self.special_tokens[part]] if k % 2 else self.encode(part))]
        ids: list[int] = []
        for piece in pretokenize(text):
            if piece not in self._cache:
                self._cache[piece] = self._encode_piece(piece)
            ids += self._cache[piece]
        return ids

    def _encode_piece(self, piece: str) -> list[int]:
        ids = list(piece.encode("utf-8"))
        while len(ids) >= 2:
            # 段里所有相邻的对中，训练时最早合并的一对；一对也没学过就结束
            pair = min(pairwise(ids), key=lambda p: self.ranks.get(p, (math.inf,)))
            if pair not in self.ranks:
                break
            ids = merge_pair(ids, pair, self.ranks[pair][1])
        return ids

    def decode(self, ids: Iterable[int] | Tensor) -> str:
        """词元编号 → 文本：每个词元的字节接起来，按 UTF-8 还原。

        任意一串编号拼出的字节不一定是合法的 UTF-8（例如一个汉字只有前两个字节）。不合法的字节换成替换字符 �，
        而不是报错；规则和 Python 的 bytes.decode(errors="replace") 相同：每个「最长的、拼不成字的片段」换一个 �。
        所以「山」的前两个字节 E5 B1 是一个 �，两个单独的续字节 BC BC 是两个 �。
        """
        ids = check_token_ids(ids, self.vocab_size)
        return b"".join(self.tokens[i] for i in ids).decode("utf-8", errors="replace")
# --8<-- [end:bpe]

    def token_text(self, i: int) -> str:
        """一个词元显示成什么：字节能还原成文字就显示文字（换行写成 \\n），不能就写成 <0xE4><0xB8> 的样子。"""
        (i,) = check_ids([i], self.vocab_size)
        try:
            return self.tokens[i].decode("utf-8").replace("\n", "\\n")
        except UnicodeDecodeError:
            return "".join(f"<0x{b:02X}>" for b in self.tokens[i])


# --8<-- [start:measure]
def tokens_per_char(text: str, bpe: BPE) -> float:
    """平均每个字符编成几个词元。字符指 Unicode 字符（len(text)），换行也算一个。"""
    check_text("text", text)
    check_bpe(bpe)
    if not text:
        raise ValueError("text 不能为空：空文本没有字符，算不出每个字符几个词元")
    return len(bpe.encode(text)) / len(text)


def bits_per_char(nats_per_token: float, n_tokens: int, n_chars: int) -> float:
    """把模型在一段文本上的平均损失（每个词元多少奈特，即交叉熵）换算成每个字符多少比特。

    n_tokens 是求平均用到的词元数，n_chars 是这些词元拼成的字符数（len(text)，换行也算）。
    总共 nats_per_token × n_tokens 奈特；除以 ln 2 换成比特，再平均到 n_chars 个字符上。
    词表不同的模型，每个词元装的字数不同，只有按字符（或按字节）算的数才能互相比较。
    """
    nats_per_token = check_nats(nats_per_token)  # 只含一个数的张量、NumPy 的数也行，都换成 Python 的 float
    n_tokens = check_int("n_tokens", n_tokens, minimum=1)
    n_chars = check_int("n_chars", n_chars, minimum=1)
    return nats_per_token * n_tokens / (n_chars * math.log(2))
# --8<-- [end:measure]


def tokens_per_char_prefixes(text: str, bpe: BPE, n_merges: Sequence[int]) -> list[float]:
    """对 n_merges 里的每个 n，算 tokens_per_char(text, BPE(bpe.merges[:n]))，但每一段只编码一次。

    编码时每次合并的都是段里「最早学会」的那一对，合并只会造出含新词元的对，所以一段文字经历的合并，
    编号是一路变大的：只用前 n 次合并时，就停在编号到 n 之前的那一步。记下每一步之后段有多长，就能一次读出所有 n。
    """
    check_text("text", text)
    check_bpe(bpe)
    if not text:
        raise ValueError("text 不能为空：空文本没有字符，算不出每个字符几个词元")
    if isinstance(n_merges, (str, bytes)) or not isinstance(n_merges, Sequence) or not n_merges:
        raise ValueError("n_merges 应为合并次数的列表，例如 [0, 244, 744]")
    for n in n_merges:
        check_int("n_merges 里的合并次数", n, minimum=0)
        if n > len(bpe.merges):
            raise ValueError(f"n_merges 里的 {n} 超过了 bpe 的合并次数 {len(bpe.merges)}")
    if bpe.vocab_size != N_BYTES + len(bpe.merges):
        # 有合并沿用了已有的编号时，上面的「编号一路变大」不一定成立：老老实实地逐个编码
        return [tokens_per_char(text, BPE(bpe.merges[:n])) for n in n_merges]
    totals = [0] * len(n_merges)
    for piece, freq in Counter(pretokenize(text)).items():
        ids = list(piece.encode("utf-8"))
        steps = [(0, len(ids))]  # (用到第几次合并为止, 这时段的长度)
        while len(ids) >= 2:
            pair = min(pairwise(ids), key=lambda p: bpe.ranks.get(p, (math.inf,)))
            if pair not in bpe.ranks:
                break
            k, new_id = bpe.ranks[pair]
            ids = merge_pair(ids, pair, new_id)
            steps.append((k + 1, len(ids)))
        for j, n in enumerate(n_merges):
            totals[j] += freq * next(length for used, length in reversed(steps) if used <= n)
    return [t / len(text) for t in totals]


def char_shares(text: str, bpe: BPE) -> list[float]:
    """每个字符分摊到几个词元：一个词元盖住 k 个字符（哪怕只盖住某个字符的一部分字节），就给这 k 个字符各记 1/k。

    一个汉字拆成 3 个字节词元时记 3；两个字合成一个词元时各记 0.5。加起来等于词元数，平均就是 tokens_per_char。
    """
    check_text("text", text)
    check_bpe(bpe)
    owner = [i for i, c in enumerate(text) for _ in c.encode("utf-8")]  # 每个字节属于第几个字符
    shares = [0.0] * len(text)
    start = 0
    for token in bpe.encode(text):
        end = start + len(bpe.tokens[token])
        covered = sorted(set(owner[start:end]))
        for i in covered:
            shares[i] += 1 / len(covered)
        start = end
    return shares


# ---------- 参数检查：不在文章和实验里展示 ----------


def check_char(c: object) -> None:
    if not isinstance(c, str):
        raise ValueError(f"c 应是一个字符（长度为 1 的字符串），收到 {type(c).__name__}")
    if len(c) != 1:
        raise ValueError(f"c 应是一个字符（长度为 1 的字符串），收到的 {c!r} 有 {len(c)} 个字符；"
                         "整段文本请用 pretokenize(text)")


def check_train_args(text: object, vocab_size: object, min_frequency: object) -> None:
    check_text("text", text)
    check_int("vocab_size", vocab_size, minimum=N_BYTES)
    check_int("min_frequency", min_frequency, minimum=1)


def check_merge_args(ids: object, pair: object, new_id: object) -> tuple[Pair, int]:
    """ids 是整数编号的列表，pair 是两个整数编号 (左, 右)，new_id 是整数；编号都不小于 0。返回 (pair, new_id)。"""
    if not isinstance(ids, list):
        raise ValueError(f"ids 应是整数编号的列表，例如 [97, 98, 99]，收到 {type(ids).__name__}；"
                         "文本先转成编号：list(text.encode('utf-8'))")
    if not set(map(type, ids)) <= {int}:  # 比的是 type 而不是 isinstance：True、False 不算编号
        k, bad = next((k, i) for k, i in enumerate(ids) if type(i) is not int)
        raise ValueError(f"ids 应是整数编号的列表，但 ids[{k}] 是 {bad!r}（{type(bad).__name__}）")
    if ids and min(ids) < 0:
        raise ValueError(f"ids 里的编号不能是负数，收到 {min(ids)}")
    if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not set(map(type, pair)) <= {int} or min(pair) < 0:
        raise ValueError(f"pair 应是两个整数编号 (左, 右)，都不小于 0，例如 (97, 98)，收到 {pair!r}")
    return (pair[0], pair[1]), check_int("new_id", new_id)


def check_ties(ties: object) -> None:
    if ties not in TIES:
        raise ValueError(f"ties 应为 'bytes'（按字节的值比较）或 'hf'（按 Hugging Face tokenizers 的顺序），"
                         f"收到 {ties!r}")


def check_bpe(bpe: object) -> None:
    if not isinstance(bpe, BPE):
        raise ValueError(f"bpe 应为 BPE（用 train_bpe(text, vocab_size) 训练得到），收到 {type(bpe).__name__}")


def check_nats(value: object) -> float:
    """value 是不小于 0 的有限实数（Python 或 NumPy 的数，或只含一个数的张量）。返回 Python 的 float。"""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"nats_per_token 应为一个数，收到形状 {tuple(value.shape)} 的张量；先取平均：loss.mean()")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"nats_per_token 应为不小于 0 的有限数（交叉熵损失，单位是奈特），收到 {value!r}")
    return float(value)


def check_merges(merges: object) -> None:
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Sequence):
        raise ValueError(f"merges 应为 (左, 右) 编号对的列表，例如 [(97, 98)]，收到 {type(merges).__name__}；"
                         "想从文本训练请用 train_bpe(text, vocab_size)")


def check_special_tokens(special: object) -> None:
    """special 是特殊词元写法的列表：每一项是非空的字符串，互不相同。"""
    if isinstance(special, (str, bytes)) or not isinstance(special, Sequence):
        raise ValueError(f"special_tokens 应为字符串的列表，例如 ['<|endoftext|>']，收到 {type(special).__name__}")
    for k, s in enumerate(special):
        if not isinstance(s, str) or not s:
            raise ValueError(f"special_tokens 的每一项应是非空的字符串，第 {k} 项是 {s!r}")
        check_text(f"special_tokens[{k}]", s)
    if len(set(special)) != len(special):
        raise ValueError("special_tokens 里的特殊词元不能重复")


def check_allowed_special(allowed: object, special: dict[str, int]) -> set[str]:
    """allowed 是这个分词器的特殊词元的集合（或列表），返回它的 set。"""
    if isinstance(allowed, str):
        raise ValueError(f"allowed_special 应为特殊词元的集合，只有一个也要写成 {{{allowed!r}}}；"
                         "单独一个字符串会被拆成一个个字符")
    if not isinstance(allowed, Collection):
        raise ValueError(f"allowed_special 应为特殊词元的集合，例如 {{'<|endoftext|>'}}，收到 {type(allowed).__name__}")
    for s in allowed:
        if not isinstance(s, str) or s not in special:
            raise ValueError(f"allowed_special 里的 {s!r} 不是这个分词器的特殊词元；它的特殊词元有 {sorted(special)}")
    return set(allowed)


def check_token_ids(ids: object, vocab_size: int) -> list[int]:
    """ids 是有先后顺序的编号序列（列表、元组、一维整数张量……），每个编号在 0..vocab_size-1 之间。"""
    if isinstance(ids, (AbstractSet, Mapping)):
        raise ValueError(f"ids 应是有先后顺序的编号序列（列表、元组或一维整数张量），收到 {type(ids).__name__}："
                         "集合和字典没有先后顺序")
    if not isinstance(ids, (Tensor, Iterable)):
        hint = f"；只有一个编号也要写成列表：[{ids!r}]" if isinstance(ids, numbers.Integral) else ""
        raise ValueError(f"ids 应为词元编号的序列，例如 [97, 98]，收到 {type(ids).__name__}{hint}")
    return check_ids(ids, vocab_size)


def check_merge(k: int, pair: object, n_tokens: int, seen: dict[Pair, tuple[int, int]]) -> Pair:
    """第 k 次合并是两个编号 (左, 右)，都指向这时已有的 n_tokens 个词元，而且这一对没有合并过。"""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise ValueError(f"merges 的每一项应是两个编号 (左, 右)，第 {k} 项是 {pair!r}")
    a, b = (check_int(f"merges[{k}] 里的编号", i) for i in pair)
    if max(a, b) >= n_tokens:
        raise ValueError(f"merges[{k}] = {(a, b)} 用到了还不存在的词元：这时只有编号 0 到 {n_tokens - 1}")
    if (a, b) in seen:
        raise ValueError(f"merges 里的一对不能出现两次：merges[{k}] = {(a, b)} 和 merges[{seen[a, b][0]}] 相同")
    return a, b


if __name__ == "__main__":
    import time

    from gpt_from_scratch import load_poems, split_poems

    train_text, held_out_text = split_poems(load_poems())
    start = time.perf_counter()
    bpe = train_bpe(train_text, vocab_size=3000)
    seconds = time.perf_counter() - start
    print(f"训练集 {len(train_text):,} 个字符；词表 {bpe.vocab_size}（256 个字节 + {len(bpe.merges)} 次合并），"
          f"训练用时 {seconds:.1f} s")
    print("最早的 8 次合并:", "  ".join(f"{bpe.token_text(a)}+{bpe.token_text(b)}" for a, b in bpe.merges[:8]))
    print("最后的 8 次合并:", "  ".join(f"{bpe.token_text(a)}+{bpe.token_text(b)}" for a, b in bpe.merges[-8:]))
    for size in (256, 500, 1000, 2000, 3000):
        small = BPE(bpe.merges[: size - 256])
        print(f"词表 {size:>4}：验证集每个字符 {tokens_per_char(held_out_text, small):.3f} 个词元")
    poem = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"
    print("一首诗:", " | ".join(bpe.token_text(i) for i in bpe.encode(poem)))
    text = "床前明月光 🌕 café，\n没见过的字：𠀀"
    ids = bpe.encode(text)
    print(f"{text!r} → {len(ids)} 个词元，解码后与原文相同: {bpe.decode(ids) == text}")
    print("只解码「山」的前两个字节:", repr(bpe.decode(list("山".encode())[:2])))
    eot = "<|endoftext|>"
    chat = BPE(bpe.merges, special_tokens=[eot])  # 特殊词元的编号接在最后：3000
    user = "白日" + eot
    print(f"用户文字 {user!r} → {chat.encode(user)}（{eot} 只是普通词元）；"
          f"程序写明允许时 → {chat.encode(user, allowed_special={eot})}")
    print("损失 2.0 奈特/词元、每个字符 1.1 个词元，相当于",
          f"{bits_per_char(2.0, n_tokens=110, n_chars=100):.3f} 比特/字符")
