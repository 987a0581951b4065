"""藏头诗的监督微调（SFT）数据和成功率：全部从第一阶段的唐诗语料里来。

每首五言绝句的四句句首连起来就是它自己的「藏头」。把它写成一条指令，后面接这首诗：

    藏头：春夏秋冬\n春……，夏……。秋……，冬……。\n

前半是提示（prompt），后半是回答（answer）。训练时只在回答的词元上算损失，提示的位置不算（labels 记为 IGNORE）。
训练集、验证集沿用 code/gpt_from_scratch.py 的 split_poems（每 10 首留 1 首）：验证集的诗只用来评估。
语料里有同一首诗的异文，所以验证集的藏头不全是新的：342 组里有 23 组和训练集里某首诗的藏头相同。
成功率：模型按提示写出的诗（贪心解码），四句的句首是否恰好是要求的四个字。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import torch
from gpt_from_scratch import check_poem_list
from kv_cache import KVCache, forward_with_cache, generate
from shapes import check_int, check_tensor, fmt, shape_error
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import Tensor

N_LINES = 4  # 绝句四句
LINE_END = re.compile("[，。]")  # 句末的标点：逗号或句号
IGNORE = -100  # labels 里不算损失的位置（和 PyTorch cross_entropy 的 ignore_index 默认值相同）
POEM_TOKENS = 25  # 生成多少个词元：一首五言绝句 24 个字符，再加结尾的换行


# --8<-- [start:prompt]
def line_heads(poem: str) -> str:
    """一首诗每一句的第一个字连起来，例如「春眠不覺曉，處處聞啼鳥。……」→「春處夜花」。"""
    check_text(poem=poem)
    lines = [line for line in LINE_END.split(poem) if line]
    return "".join(line[0] for line in lines)


def acrostic_prompt(heads: str) -> str:
    """指令：「藏头：」加上要藏的四个字，换行之后模型开始写诗（第一阶段的模型也是从换行写起）。"""
    check_heads(heads)
    return f"藏头：{heads}\n"
# --8<-- [end:prompt]


def usable(poem: str, tok: CharTokenizer) -> bool:
    """这首诗能不能做一条样本：四句，而且四个句首字都在词表里（各是一个词元，句首写对没写对才好判断）。"""
    check_usable_args(poem, tok)
    heads = line_heads(poem)
    return len(heads) == N_LINES and all(c in tok.char_to_id for c in heads)


@dataclass
class SFTData:
    """inputs、labels: (N, T)。labels[i, t] 是看到 inputs[i, :t+1] 之后应当写出的词元，不算损失的位置是 IGNORE。

    prompt_lengths[i] 是第 i 条的提示有几个词元；heads[i] 是它要藏的四个字。各条右边用换行补齐到同样的长度。
    """

    inputs: Tensor
    labels: Tensor
    prompt_lengths: list[int]
    heads: list[str]


# --8<-- [start:sft-data]
def build_sft_data(poems: list[str], tok: CharTokenizer) -> SFTData:
    """每首可用的诗一条样本：提示「藏头：XXXX\\n」+ 回答「诗\\n」。只有回答的词元有标签。"""
    check_sft_data_args(poems, tok)
    newline = tok.encode("\n")[0]
    rows, heads, prompt_lengths = [], [], []
    for poem in poems:
        if not usable(poem, tok):
            continue
        prompt = tok.encode(acrostic_prompt(line_heads(poem)))
        answer = tok.encode(poem + "\n")  # 结尾的换行也要学：它表示「这首诗写完了」
        ids = prompt + answer
        # 第 t 个位置预测第 t+1 个词元：回答的第一个词元 ids[P] 由位置 P-1（提示的最后一个词元）预测
        labels = [IGNORE] * (len(prompt) - 1) + answer
        rows.append((ids[:-1], labels))
        heads.append(line_heads(poem))
        prompt_lengths.append(len(prompt))
    if not rows:
        raise ValueError("poems 里没有一首可用的诗：每首应是四句，句首的字都在词表里")
    T = max(len(x) for x, _ in rows)
    inputs = torch.tensor([x + [newline] * (T - len(x)) for x, _ in rows])  # 右边补换行，补的位置没有标签
    labels = torch.tensor([y + [IGNORE] * (T - len(y)) for _, y in rows])
    return SFTData(inputs, labels, prompt_lengths, heads)


def trim_batch(inputs: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """去掉一批样本右边共同的补齐：截到这批里最后一个有标签的位置为止（因果注意力，前面的输出不变，只是少算一些）。"""
    check_trim_args(inputs, labels)
    T = int((labels != IGNORE).nonzero()[:, 1].max()) + 1
    return inputs[:, :T], labels[:, :T]


def sft_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """只在有标签的位置上求平均的交叉熵：提示和补齐的位置不算。logits (B, T, V)，labels (B, T)。

    float16、bfloat16 的 logits 先换成 float32 再算（混合精度训练也这样算损失），返回 float32。
    """
    check_sft_loss_args(logits, labels)
    keep = labels != IGNORE  # (B, T)：回答的词元
    log_probs = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(dim=-1)
    picked = log_probs.gather(-1, labels.clamp(min=0).long().unsqueeze(-1)).squeeze(-1)  # IGNORE 先换成 0 号，反正不算
    # 不算的位置直接换成 0，不用乘掩码：那里的分数可能是 -inf（比如词表被屏蔽的位置），-inf × 0 是 NaN
    return -torch.where(keep, picked, 0.0).sum() / keep.sum()
# --8<-- [end:sft-data]


# --8<-- [start:success]
def written_heads(text: str) -> str:
    """生成的文字里前四句的句首（到第一个换行为止）；不足四句就少几个字。"""
    check_text(text=text)
    return line_heads(text.split("\n")[0])[:N_LINES]


FORM = re.compile("[\u4e00-\u9fff]{5}，[\u4e00-\u9fff]{5}。[\u4e00-\u9fff]{5}，[\u4e00-\u9fff]{5}。")


def well_formed(text: str) -> bool:
    """格式对不对：到第一个换行为止，恰好是四句、每句五个字，句末依次是「，。，。」（语料里每首诗都是这样）。"""
    check_text(text=text)
    return FORM.fullmatch(text.split("\n")[0]) is not None


def acrostic_ok(heads: str, text: str) -> bool:
    """成功：写出的诗四句的句首恰好是要求的四个字。"""
    check_text(heads=heads, text=text)
    check_heads(heads)
    return written_heads(text) == heads


def head_hits(heads: str, text: str) -> int:
    """四句里有几句的句首对上了（逐句比较；写出的不足四句时，缺的那几句算没对上）。"""
    check_text(heads=heads, text=text)
    check_heads(heads)
    return sum(a == b for a, b in zip(written_heads(text), heads, strict=False))


@torch.no_grad()
def write_acrostics(model: TinyTransformer, tok: CharTokenizer, heads: list[str],
                    max_new_tokens: int = POEM_TOKENS) -> tuple[list[str], Tensor]:
    """每组藏头写一首诗（贪心解码，结果是确定的）。返回 (诗的列表, 句首概率 (N, 4))。

    句首概率：沿着模型自己写出的文字，每一句开头那一步给要求的字的概率（第 k 句开头 = 第 k 个句末标点之后）。
    只数第一个换行之前的句末标点：换行表示这首诗写完了，后面接着写的不算。写出的不足四句时，缺的那几句记为 0。
    """
    check_write_args(model, tok, heads, max_new_tokens)
    prompts = torch.tensor([tok.encode(acrostic_prompt(h)) for h in heads])  # 句首字各一个词元：提示一样长
    out = generate(model, prompts, max_new_tokens)  # code/kv_cache.py：贪心解码，带 KV 缓存
    new = out.tokens[:, prompts.size(1):]  # (N, max_new_tokens)
    probs = out.logits.softmax(dim=-1)  # (N, max_new_tokens, V)
    ends, newline = {tok.char_to_id[c] for c in "，。"}, tok.char_to_id["\n"]
    texts, head_probs = [], torch.zeros(len(heads), N_LINES)
    for i, h in enumerate(heads):
        tokens = new[i].tolist()
        poem = tokens[:tokens.index(newline)] if newline in tokens else tokens  # 到第一个换行为止
        starts = [0] + [t + 1 for t, token in enumerate(poem) if token in ends]
        for k, step in enumerate(starts[:N_LINES]):
            if step < max_new_tokens:
                head_probs[i, k] = probs[i, step, tok.char_to_id[h[k]]]
        texts.append(tok.decode(new[i]).split("\n")[0])
    return texts, head_probs
# --8<-- [end:success]


@dataclass
class ForcedPoem:
    """write_forced_acrostic 的结果。tokens：生成的词元（不含提示）；text：解码后到第一个换行为止；
    forced_steps[k]：第 k 句的句首是第几步写下的；forced_probs[k]：那一步模型自己给这个字的概率。"""

    text: str
    tokens: list[int]
    forced_steps: list[int]
    forced_probs: list[float]


# --8<-- [start:forced]
@torch.no_grad()
def write_forced_acrostic(model: TinyTransformer, tok: CharTokenizer, heads: str,
                          max_new_tokens: int = POEM_TOKENS, prompt_heads: str | None = None) -> ForcedPoem:
    """受约束的贪心解码：每句开头（提示之后、每个「，」「。」之后，直到第四句）不看模型选什么，直接写下藏头的字；
    其余每一步取概率最高的词元。藏头是解码时硬塞进去的，不是模型学会的本领。

    prompt_heads：提示里写的藏头，默认就是 heads（测试用它把强制的字和提示分开）。带 KV 缓存（code/kv_cache.py）。
    """
    check_forced_args(model, tok, heads, max_new_tokens, prompt_heads)
    model.eval()
    prompt = torch.tensor([tok.encode(acrostic_prompt(heads if prompt_heads is None else prompt_heads))])
    head_ids = [tok.char_to_id[c] for c in heads]
    ends = {tok.char_to_id[c] for c in "，。"}
    cache = KVCache.for_model(model, 1)
    logits = forward_with_cache(model, prompt, cache)[0, -1]  # 预填充：整段提示
    tokens: list[int] = []
    steps: list[int] = []
    probs: list[float] = []
    line_start = True  # 第一步就是第一句的开头
    for step in range(max_new_tokens):
        if line_start and len(steps) < N_LINES:  # 句首：强制写藏头的第 k 个字，记下模型自己给它的概率
            token = head_ids[len(steps)]
            steps.append(step)
            probs.append(logits.softmax(-1)[token].item())
        else:
            token = int(logits.argmax())  # 其余：普通的贪心
        tokens.append(token)
        line_start = token in ends
        if step < max_new_tokens - 1:  # 最后一个词元不用再送进模型
            logits = forward_with_cache(model, torch.tensor([[token]]), cache)[0, -1]
    return ForcedPoem(tok.decode(tokens).split("\n")[0], tokens, steps, probs)
# --8<-- [end:forced]


def playground_task(example: str = "春夏秋冬") -> dict:
    """浏览器里的藏头诗演示要知道的事（llmsite/playground/export.py 检查后写进说明文件）：
    提示的模板（从 acrostic_prompt 造出来，不另抄一份）、几个字、写几个词元、句末标点、每句几个字、示例。"""
    check_heads(example)
    prompt = acrostic_prompt(example)
    if prompt.count(example) != 1:
        raise ValueError(f"example「{example}」在提示 {prompt!r} 里出现了不止一次，拼不出模板")
    return {"kind": "acrostic", "template": prompt.replace(example, "{heads}"), "heads": N_LINES,
            "tokens": POEM_TOKENS, "line_ends": "，。", "line_chars": 5,  # 五言：和 FORM 一致
            "example": example}


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def is_hanzi(c: str) -> bool:
    """c 是一个汉字（Unicode 的中日韩统一表意文字或兼容表意文字，含扩展区的生僻字）。"""
    return unicodedata.name(c, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH"))


def check_heads(heads: str) -> None:
    if not isinstance(heads, str) or len(heads) != N_LINES or not all(map(is_hanzi, heads)):
        got = f"{type(heads).__name__} {heads!r}" if not isinstance(heads, str) else repr(heads)
        hint = "；这里只要一组藏头（一个字符串），不是列表" if isinstance(heads, (list, tuple)) else ""
        raise ValueError(f"heads 应是 {N_LINES} 个字的字符串（{N_LINES} 个汉字，每句句首一个，不含标点、空格、字母），"
                         f"收到 {got}{hint}")


def check_text(**texts: object) -> None:
    """每个参数都应是字符串：一首诗、一段生成的文字或要藏的字。"""
    for name, value in texts.items():
        if not isinstance(value, str):
            raise ValueError(f"{name} 应是字符串（str），收到 {type(value).__name__}")


def check_tokenizer(tok: object) -> None:
    if not isinstance(tok, CharTokenizer):
        raise ValueError(f"tok 应为 CharTokenizer（code/tokenizer.py），收到 {type(tok).__name__}")


def check_usable_args(poem: str, tok: CharTokenizer) -> None:
    check_text(poem=poem)
    check_tokenizer(tok)


def check_heads_list(heads: list[str], tok: CharTokenizer) -> None:
    check_tokenizer(tok)
    if not isinstance(heads, list) or not heads:
        hint = f"：只写一组也请放进列表，例如 [{heads!r}]" if isinstance(heads, str) else ""
        raise ValueError(f"heads 应是非空的列表，每项是 {N_LINES} 个字，收到 {heads!r}{hint}")
    for h in heads:
        check_heads(h)
        missing = [c for c in h if c not in tok.char_to_id]
        if missing:
            raise ValueError(f"藏头「{h}」里的 {'、'.join(missing)} 不在词表里：会拆成几个字节词元，"
                             "句首写没写对就不好判断了，请换成词表里的字（语料是繁体字）")


def check_forced_args(model: TinyTransformer, tok: CharTokenizer, heads: str, max_new_tokens: int,
                      prompt_heads: str | None) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如合并了 LoRA 的微调模型），收到 {type(model).__name__}")
    check_heads_list([heads], tok)
    if prompt_heads is not None:
        check_heads_list([prompt_heads], tok)
    for c in "，。\n":
        if c not in tok.char_to_id:
            raise ValueError(f"句末标点和换行（{c!r}）不在词表里：这个分词器不是唐诗语料上建的")
    check_int("max_new_tokens", max_new_tokens, minimum=1)
    P = len(tok.encode(acrostic_prompt(heads if prompt_heads is None else prompt_heads)))
    if P + max_new_tokens - 1 > model.cfg.max_len:
        raise ValueError(f"提示 {P} 个词元再写 {max_new_tokens} 个，超过了模型的上下文 max_len = {model.cfg.max_len}")
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的词表大小 {model.cfg.vocab_size} 和分词器的 {tok.vocab_size} 不符：不是配套的一对")


def check_write_args(model: TinyTransformer, tok: CharTokenizer, heads: list[str], max_new_tokens: int) -> None:
    """每组藏头都要合格；模型、分词器和 max_new_tokens 的检查与 write_forced_acrostic 相同（各组的提示一样长）。"""
    check_heads_list(heads, tok)
    check_forced_args(model, tok, heads[0], max_new_tokens, None)


def check_sft_data_args(poems: list[str], tok: CharTokenizer) -> None:
    check_poem_list(poems)
    check_tokenizer(tok)


def check_token_ids(name: str, t: Tensor) -> None:
    """词元编号（或 labels）是整数张量：int64 以外的整数类型也行（int32、int16……），浮点和 bool 不行。"""
    check_tensor(name, t)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        what = "词元编号" if name == "inputs" else f"词元编号，不算损失的位置为 {IGNORE}"
        raise ValueError(f"{name} 应为整数张量（{what}），收到 dtype={t.dtype}；可以先用 {name}.long() 转换")


def check_trim_args(inputs: Tensor, labels: Tensor) -> None:
    check_token_ids("inputs", inputs)
    check_token_ids("labels", labels)
    if labels.dim() != 2:
        raise shape_error("labels", "(B, T)，二维：一批样本，每条一行", labels.shape,
                          "只有一条样本时先加上批次维：labels[None]")
    if inputs.shape != labels.shape:
        raise shape_error("inputs", f"(B, T) = {fmt(labels.shape)}，与 labels 相同", inputs.shape)
    if not (labels != IGNORE).any():
        raise ValueError(f"labels 里没有一个有标签的位置（全是 IGNORE = {IGNORE}，或一条样本都没有）：不知道截到哪里")


def check_sft_loss_args(logits: Tensor, labels: Tensor) -> None:
    check_tensor("logits", logits)
    check_token_ids("labels", labels)
    if not logits.is_floating_point() or logits.dim() != 3:
        raise shape_error("logits", "(B, T, V) 的浮点张量", logits.shape)
    if tuple(labels.shape) != tuple(logits.shape[:2]):
        raise shape_error("labels", f"(B, T) = {fmt(logits.shape[:2])}，与 logits 的前两维相同", labels.shape)
    if labels.numel() == 0:
        raise shape_error("logits", "(B, T, V)，B 和 T 至少为 1", logits.shape,
                          "一条样本（或一个位置）都没有，平均的损失没有定义")
    if logits.size(-1) == 0:
        raise shape_error("logits", "(B, T, V)，词表大小 V 至少为 1", logits.shape)
    keep = labels != IGNORE
    if not keep.any():
        raise ValueError(f"labels 全是 IGNORE（{IGNORE}）：没有一个位置算损失，平均值没有定义")
    if (labels[keep] < 0).any() or (labels[keep] >= logits.size(-1)).any():
        raise ValueError(f"labels 里的编号应在 0 到 V - 1 = {logits.size(-1) - 1} 之间（或等于 IGNORE = {IGNORE}）")
    scored = logits[keep]  # (算损失的位置数, V)
    if torch.isnan(scored).any() or (scored == float("inf")).any():
        raise ValueError("logits 在算损失的位置上有 NaN 或 +inf：损失会是 NaN。先检查模型的输出"
                         "（例如 float16 下数太大溢出了）")


if __name__ == "__main__":
    from gpt_from_scratch import MIN_COUNT, load_poems, split_poems

    train_text, held_out_text = split_poems(load_poems())
    tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
    poem = held_out_text.splitlines()[0]
    print(f"验证集的第一首：{poem}，句首「{line_heads(poem)}」")
    data = build_sft_data([poem], tok)
    P = data.prompt_lengths[0]
    print(f"提示 {acrostic_prompt(line_heads(poem))!r} 编成 {P} 个词元（「头」和「：」不在词表里，各拆成 3 个字节）")
    answer = poem + "\n"
    print(f"inputs 形状 {tuple(data.inputs.shape)}，有标签的位置 {(data.labels != IGNORE).sum().item()} 个"
          f"（回答：{len(answer)} 个字符连同结尾的换行，编成 {len(tok.encode(answer))} 个词元；"
          "不在词表里的字各拆成 3 个字节）")
    print("第一首自己写回自己，四句句首都对：", acrostic_ok(line_heads(poem), poem))
