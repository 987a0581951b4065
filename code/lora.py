"""LoRA（低秩适配）：冻住预训练的线性层，只训练旁边一条低秩的小路。

一个 nn.Linear 算 y = x Wᵀ + b。LoRA（Hu 等，2021，arXiv:2106.09685）不改 W，而是在旁边加两个小矩阵
A (r, d_in) 和 B (d_out, r)，输出变成

    y = x Wᵀ + b + (alpha / r) · x Aᵀ Bᵀ

训练时 W、b 不动，只更新 A、B：每层的可训练参数从 d_out × d_in 降到 r × (d_in + d_out)。
A 随机初始化、B 初始化为 0，所以刚加上时旁路的输出是 0，模型和原来一模一样。
训练完可以把 (alpha / r) · B A 直接加进 W（merge_lora），推理时和普通的线性层一样快。

模型不另写：add_lora 把任意模型里指定名字的 nn.Linear 换成 LoRALinear，例如第一阶段的
TinyTransformer（code/tiny_transformer.py）每层注意力的 qkv 和 out。
tests/code/test_lora.py 把同一层交给 Hugging Face peft 的 LoRA，核对输出和合并的结果。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from shapes import check_float, check_int, check_positive, check_same_dtype, shape_error
from torch import Tensor, nn


# --8<-- [start:lora-linear]
class LoRALinear(nn.Module):
    """y = base(x) + (alpha / r) · x Aᵀ Bᵀ。base 的权重和偏置冻住，只训练 lora_A (r, d_in) 和 lora_B (d_out, r)。"""

    def __init__(self, base: nn.Linear, r: int, alpha: float) -> None:
        super().__init__()
        check_lora_args(base, r, alpha)  # 见文件末尾
        self.base = base
        self.base.requires_grad_(False)  # 冻住：预训练的 W 和 b 不再更新
        self.r, self.alpha = r, alpha
        self.scaling = alpha / r
        w = base.weight
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=w.dtype, device=w.device))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=w.dtype, device=w.device))
        # A 和 nn.Linear 的默认初始化一样（均匀分布，peft 也这样做）；B 全是 0：一开始旁路输出 0，模型不变
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., d_in)，返回 (..., d_out)。"""
        check_lora_input(self, x)
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling  # 先降到 r 维，再升回 d_out

    def delta_weight(self) -> Tensor:
        """旁路等效的权重增量 (alpha / r) · B A，形状 (d_out, d_in)，和 base.weight 一样；秩至多为 r。"""
        return self.scaling * (self.lora_B @ self.lora_A)
# --8<-- [end:lora-linear]

    # 让 LoRALinear 在别的代码眼里仍像一个 nn.Linear（例如检查输入时读 weight.dtype）
    @property
    def weight(self) -> Tensor:
        return self.base.weight

    @property
    def bias(self) -> Tensor | None:
        return self.base.bias

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    def extra_repr(self) -> str:
        return f"r={self.r}, alpha={self.alpha:g}, scaling={self.scaling:g}"


# --8<-- [start:add-lora]
def add_lora(model: nn.Module, targets: Sequence[str], r: int, alpha: float) -> list[str]:
    """把 model 里名字（最后一段）在 targets 中的每个 nn.Linear 换成 LoRALinear，并冻住其余所有参数。

    例如 targets=("qkv", "out") 会换掉每层注意力的 blocks.0.attn.qkv、blocks.0.attn.out……
    就地修改 model，返回换掉的层的完整名字。之后 requires_grad 为 True 的只有各层的 lora_A、lora_B。
    """
    check_add_args(model, targets, r, alpha)  # 见文件末尾：每个名字都要找得到，而且是 nn.Linear
    model.requires_grad_(False)  # 先冻住全部参数：词嵌入、LayerNorm、前馈网络、输出层……
    replaced = []
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            if name in targets:
                setattr(parent, name, LoRALinear(child, r, alpha))  # 新建的 lora_A、lora_B 默认可训练
                replaced.append(f"{parent_name}.{name}" if parent_name else name)
    return replaced


def merge_lora(model: nn.Module) -> nn.Module:
    """把每个 LoRALinear 换回普通的 nn.Linear，权重取 W + (alpha / r) · B A。就地修改并返回 model。

    合并之后模型里没有 LoRA 了：推理时和原来的结构一样，一次矩阵乘法，不多花时间。
    合并出的层和它的基座层一样冻着（requires_grad 照抄基座层的）：整个模型这时没有要训练的参数，
    要接着做全参数微调，先 model.requires_grad_(True)。
    """
    check_merge_args(model)  # 见文件末尾：model 本身不能就是一个 LoRALinear（它换不掉自己）
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, LoRALinear):
                base = child.base
                merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                                   dtype=base.weight.dtype, device=base.weight.device)
                with torch.no_grad():
                    merged.weight.copy_(base.weight + child.delta_weight())
                    if base.bias is not None:
                        merged.bias.copy_(base.bias)
                merged.weight.requires_grad_(base.weight.requires_grad)  # 新建的层默认可训练：照基座层改回来
                if base.bias is not None:
                    merged.bias.requires_grad_(base.bias.requires_grad)
                setattr(parent, name, merged)
    return model
# --8<-- [end:add-lora]


# --8<-- [start:count]
def trainable_parameters(model: nn.Module) -> int:
    """requires_grad 为 True 的参数个数：优化器真正要更新、要存一份动量的那些数。"""
    check_model(model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def lora_parameters(d_in: int, d_out: int, r: int) -> int:
    """一个 d_in → d_out 的线性层加秩为 r 的 LoRA：A 有 r × d_in 个数，B 有 d_out × r 个。"""
    check_count_args(d_in, d_out, r)  # 和 LoRALinear 一样：r 不能超过 min(d_in, d_out)
    return r * (d_in + d_out)
# --8<-- [end:count]


def lora_layers(model: nn.Module) -> dict[str, LoRALinear]:
    """model 里所有的 LoRALinear：{完整名字: 层}。"""
    check_model(model)
    return {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    """只取 LoRA 的参数（各层的 lora_A、lora_B）：存下来的就是微调学到的全部东西，比整个模型小得多。"""
    return {f"{name}.{p}": getattr(layer, p).detach().clone()
            for name, layer in lora_layers(model).items() for p in ("lora_A", "lora_B")}


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def check_model(model: object) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model 应为 nn.Module（例如 code/tiny_transformer.py 的 TinyTransformer），"
                         f"收到 {type(model).__name__}")


def check_rank_alpha(r: int, alpha: float) -> None:
    check_int("r", r, minimum=1)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise ValueError(f"alpha 应为有限的正数（缩放系数是 alpha / r），收到 {alpha!r}")
    check_positive("alpha", alpha)


def check_lora_args(base: object, r: int, alpha: float) -> None:
    """base 是普通的 nn.Linear（不能再套一层 LoRA），r 是正整数且不超过 min(d_in, d_out)，alpha 是正数。"""
    if isinstance(base, LoRALinear):
        raise ValueError("base 已经是 LoRALinear：同一层不要加两次 LoRA；要换秩，先 merge_lora 或重新从原模型开始")
    if not isinstance(base, nn.Linear):
        raise ValueError(f"base 应为 nn.Linear，收到 {type(base).__name__}：LoRA 加在线性层上")
    check_rank_alpha(r, alpha)
    check_rank_fits(r, base.in_features, base.out_features)
    check_float("base.weight", base.weight)


def check_rank_fits(r: int, d_in: int, d_out: int) -> None:
    if r > min(d_in, d_out):
        raise ValueError(f"r = {r} 超过了 min(d_in, d_out) = {min(d_in, d_out)}（这一层是 {d_in} → {d_out}）："
                         "秩更大也不会更有表达力，参数却比原来的矩阵还多")


def check_count_args(d_in: int, d_out: int, r: int) -> None:
    for name, value in (("d_in", d_in), ("d_out", d_out), ("r", r)):
        check_int(name, value, minimum=1)
    check_rank_fits(r, d_in, d_out)


def check_merge_args(model: object) -> None:
    check_model(model)
    if isinstance(model, LoRALinear):
        raise ValueError("model 本身就是一个 LoRALinear：merge_lora 把模型里的 LoRALinear 子层换成 nn.Linear，"
                         "换不掉模型自己。单独一层请先包起来：merge_lora(nn.Sequential(layer))[0]")


def check_lora_input(layer: LoRALinear, x: Tensor) -> None:
    """x 是浮点张量，最后一维等于 d_in，dtype 和参数相同。"""
    check_float("x", x)
    if x.dim() == 0 or x.size(-1) != layer.in_features:
        raise shape_error("x", f"(..., d_in)，其中 d_in = {layer.in_features}", x.shape,
                          "最后一维是每个向量的长度，应与这一层的输入维度相同")
    check_same_dtype("x", x, "LoRA 的参数", layer.lora_A.dtype)


def check_add_args(model: nn.Module, targets: Sequence[str], r: int, alpha: float) -> None:
    """targets 是非空的名字列表；每个名字在 model 里至少找到一个层，而且找到的都是 nn.Linear。"""
    check_model(model)
    if isinstance(model, nn.Linear):
        raise ValueError("model 本身就是一个 nn.Linear：add_lora 按名字替换模型里的子层，换不掉模型自己。"
                         "单独一层请直接用 LoRALinear(layer, r, alpha)")
    if isinstance(targets, str) or not isinstance(targets, Sequence) or not targets \
            or not all(isinstance(t, str) and t for t in targets):
        raise ValueError(f"targets 应是层名的列表，例如 ('qkv', 'out')，收到 {targets!r}"
                         + ("：一个字符串也请放进列表里" if isinstance(targets, str) else ""))
    check_rank_alpha(r, alpha)
    found: dict[str, list[str]] = {t: [] for t in targets}
    linear_names = set()
    for full_name, module in model.named_modules():
        last = full_name.rsplit(".", 1)[-1]
        if isinstance(module, nn.Linear):
            linear_names.add(last)
        if last in found:
            found[last].append(full_name)
            if isinstance(module, LoRALinear):
                raise ValueError(f"{full_name} 已经加过 LoRA：不要对同一个模型调用两次 add_lora")
            if not isinstance(module, nn.Linear):
                raise ValueError(f"{full_name} 是 {type(module).__name__}，不是 nn.Linear：LoRA 只加在线性层上")
            check_lora_args(module, r, alpha)  # 例如 r 超过这一层的维度
    missing = [t for t, names in found.items() if not names]
    if missing:
        raise ValueError(f"model 里没有名为 {'、'.join(missing)} 的层；这个模型的线性层叫 "
                         f"{'、'.join(sorted(linear_names)) or '（没有线性层）'}")


if __name__ == "__main__":
    torch.manual_seed(0)
    base = nn.Linear(64, 192)
    layer = LoRALinear(base, r=4, alpha=8)
    x = torch.randn(2, 5, 64)
    with torch.no_grad():
        same = torch.equal(layer(x), base(x))
    print(f"刚加上 LoRA（B = 0）时输出和原来的层相同：{same}")
    print(f"原来的层 {base.in_features} → {base.out_features}：{base.weight.numel():,} 个权重；"
          f"r = 4 的 LoRA 只训练 {lora_parameters(64, 192, 4):,} 个数")
    with torch.no_grad():
        layer.lora_B.normal_()  # 假装训练过
        merged = merge_lora(nn.Sequential(layer))[0]
        print(f"合并后是 {type(merged).__name__}，和合并前的最大差 {(merged(x) - layer(x)).abs().max().item():.1e}")
    try:
        add_lora(nn.Sequential(nn.Linear(4, 4)), targets=("qkv",), r=2, alpha=4)
    except ValueError as e:
        print("找不到要加 LoRA 的层：", e)
