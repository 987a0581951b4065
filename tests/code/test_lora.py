"""code/lora.py：LoRALinear、add_lora、merge_lora，与 Hugging Face peft 的 LoRA 逐项对照。

- 一个 nn.Linear：peft 的 LoRA 层装入我们的 A、B，输出相同（float32 下相差不超过 1e-6）；
- 第一阶段的唐诗 GPT：peft 按 LoraConfig(target_modules=["qkv", "out"]) 加 LoRA，换掉的层、可训练参数的个数
  和我们的一样，装入同样的 A、B 后 logits 相同；
- 合并：我们合并后的输出等于合并前的，权重等于 peft 的 merge_and_unload 合并出的；
- B = 0 时模型和原来逐位相同；训练只改 A、B；带 KV 缓存的生成（code/kv_cache.py）照样可用；
- 输入不对时抛出 ValueError，消息说清楚是哪个参数、怎么改。
peft 只在这个测试文件里导入：网站的构建和 code/ 都不需要它。
"""

from __future__ import annotations

import copy

import pytest
import torch
from gpt_from_scratch import poem_config
from kv_cache import generate
from lora import (
    LoRALinear,
    add_lora,
    lora_layers,
    lora_parameters,
    lora_state_dict,
    merge_lora,
    trainable_parameters,
)
from peft import LoraConfig, get_peft_model  # 只在测试里用：LoRA 的参照实现
from tiny_transformer import TinyTransformer
from torch import nn

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

F64 = torch.float64
VOCAB = 300  # 测试用的小词表：结构和唐诗 GPT 一样（4 层、d_model = 64），只是嵌入小一些，跑得快


class Holder(nn.Module):
    """peft 要一个模型，按名字找目标层：这里只有一个叫 proj 的线性层。"""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.proj = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


def randomize_b(model: nn.Module, seed: int = 1) -> None:
    """假装训练过：B 换成随机数（B = 0 时两边都等于原模型，对照不出什么）。"""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in lora_layers(model).values():
            layer.lora_B.copy_(torch.randn(layer.lora_B.shape, generator=gen, dtype=layer.lora_B.dtype) * 0.5)


def copy_into_peft(ours: nn.Module, theirs: nn.Module) -> int:
    """把我们每层的 A、B 复制进 peft 的同名层（peft 把它们存成 lora_A.default、lora_B.default 两个 nn.Linear）。"""
    named = dict(theirs.named_modules())
    copied = 0
    with torch.no_grad():
        for name, layer in lora_layers(ours).items():
            peft_layer = named[name] if name in named else named[f"base_model.model.{name}"]
            peft_layer.lora_A["default"].weight.copy_(layer.lora_A)
            peft_layer.lora_B["default"].weight.copy_(layer.lora_B)
            assert peft_layer.scaling["default"] == layer.scaling  # alpha / r，两边一样
            copied += 1
    return copied


def tang_gpt(dtype: torch.dtype = torch.float32, seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(poem_config(VOCAB)).to(dtype).eval()


def lora_twins(base: nn.Module, r: int, seed: int = 1) -> tuple[nn.Module, nn.Module]:
    """同一个基座的两份拷贝：一份加我们的 LoRA，一份加 peft 的；B 换成随机数，再复制进 peft，两边参数一样。"""
    ours = copy.deepcopy(base)
    replaced = add_lora(ours, ("qkv", "out"), r=r, alpha=8)
    assert replaced == [f"blocks.{i}.attn.{n}" for i in range(4) for n in ("qkv", "out")]
    randomize_b(ours, seed=seed)
    theirs = get_peft_model(copy.deepcopy(base), LoraConfig(r=r, lora_alpha=8, target_modules=["qkv", "out"],
                                                            lora_dropout=0.0))
    assert copy_into_peft(ours, theirs) == 8
    return ours, theirs


# --------------------------------------------------------------------------- one layer


def test_fresh_lora_changes_nothing_and_trains_only_a_and_b() -> None:
    torch.manual_seed(0)
    base = nn.Linear(24, 40)
    layer = LoRALinear(base, r=4, alpha=8)
    x = torch.randn(3, 7, 24)
    assert torch.equal(layer(x), base(x))  # B = 0：旁路输出恰好是 0
    assert torch.count_nonzero(layer.lora_B) == 0 and torch.count_nonzero(layer.lora_A) == layer.lora_A.numel()
    assert layer.scaling == 2.0
    trainable = {name for name, p in layer.named_parameters() if p.requires_grad}
    assert trainable == {"lora_A", "lora_B"}
    assert (layer.lora_A.shape, layer.lora_B.shape) == ((4, 24), (40, 4))
    assert trainable_parameters(layer) == lora_parameters(24, 40, 4) == 4 * (24 + 40)
    assert layer.weight is base.weight and layer.bias is base.bias  # 别的代码读 weight 时看到的还是原来的层


def test_one_linear_matches_peft() -> None:
    torch.manual_seed(0)
    base = nn.Linear(24, 40)
    ours = LoRALinear(copy.deepcopy(base), r=4, alpha=8)
    randomize_b(Holder(ours))
    theirs = get_peft_model(Holder(copy.deepcopy(base)),
                            LoraConfig(r=4, lora_alpha=8, target_modules=["proj"], lora_dropout=0.0))
    assert copy_into_peft(Holder(ours), theirs.base_model.model) == 1
    x = torch.randn(5, 9, 24)
    with torch.no_grad():
        a, b = ours(x), theirs(x)
    assert (a - base(x)).abs().max() > 0.1  # 旁路确实起了作用
    assert (a - b).abs().max().item() <= 1e-6


# --------------------------------------------------------------------------- the stage-1 Tang GPT


@pytest.mark.parametrize("r", [1, 4, 8])
def test_tang_gpt_with_lora_matches_peft(r: int) -> None:
    """同一个模型，两边各按名字加 LoRA：换掉的层、可训练参数、装入同样的 A、B 后的 logits 都一样。"""
    base = tang_gpt(F64)
    ours, theirs = lora_twins(base, r, seed=r)
    n_theirs = sum(p.numel() for p in theirs.parameters() if p.requires_grad)
    assert trainable_parameters(ours) == n_theirs == 4 * (lora_parameters(64, 192, r) + lora_parameters(64, 64, r))
    tokens = torch.randint(0, VOCAB, (3, 40), generator=torch.Generator().manual_seed(r))
    with torch.no_grad():
        a, b, plain = ours(tokens), theirs(tokens), base(tokens)
    assert (a - plain).abs().max() > 0.1
    assert (a - b).abs().max().item() <= 1e-12  # float64：文章说「最大的差小于 10^-12」


def test_float32_model_matches_peft_too() -> None:
    ours, theirs = lora_twins(tang_gpt(), 4)
    tokens = torch.randint(0, VOCAB, (2, 30), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert (ours(tokens) - theirs(tokens)).abs().max().item() <= 1e-5


@pytest.mark.parametrize("dtype, tol", [(F64, 1e-12), (torch.float32, 1e-5)])
def test_merge_keeps_the_outputs_and_matches_peft(dtype: torch.dtype, tol: float) -> None:
    base = tang_gpt(dtype)
    ours, theirs = lora_twins(base, 4)
    tokens = torch.randint(0, VOCAB, (2, 40), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        before = ours(tokens)
        merged = merge_lora(ours)
        after = merged(tokens)
        theirs_merged = theirs.merge_and_unload()
        peft_after = theirs_merged(tokens)
    assert (after - before).abs().max().item() <= tol
    assert (after - peft_after).abs().max().item() <= tol
    assert not lora_layers(merged)  # 合并之后一个 LoRALinear 也不剩
    assert merged.state_dict().keys() == base.state_dict().keys()  # 结构和原模型一样：可以照原样存、照原样读
    mine, peft_state = merged.state_dict(), theirs_merged.state_dict()
    for key in mine:
        assert (mine[key] - peft_state[key]).abs().max().item() <= tol, key


def test_merged_weight_is_w_plus_scaled_ba() -> None:
    torch.manual_seed(0)
    base = nn.Linear(16, 8, bias=False).double()
    layer = LoRALinear(copy.deepcopy(base), r=2, alpha=6)
    randomize_b(nn.Sequential(layer))
    merged = merge_lora(nn.Sequential(layer))[0]
    assert isinstance(merged, nn.Linear) and merged.bias is None
    expected = base.weight + 3.0 * layer.lora_B @ layer.lora_A
    assert torch.allclose(merged.weight, expected, atol=1e-12)
    assert torch.linalg.matrix_rank(layer.delta_weight()).item() <= 2  # 增量的秩至多是 r


def test_training_moves_only_the_lora_parameters() -> None:
    base = tang_gpt()
    model = copy.deepcopy(base)
    add_lora(model, ("qkv", "out"), r=4, alpha=8)
    frozen_before = {k: v.clone() for k, v in model.state_dict().items() if "lora_" not in k}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    tokens = torch.randint(0, VOCAB, (4, 20), generator=torch.Generator().manual_seed(0))
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
    loss.backward()
    # B = 0 时 A 的梯度是 0（它乘在 B 后面），B 的梯度不是：训练从 B 开始动
    first = lora_layers(model)["blocks.0.attn.qkv"]
    assert first.lora_A.grad.abs().max() == 0 and first.lora_B.grad.abs().max() > 0
    opt.step()
    for key, value in model.state_dict().items():
        if "lora_" not in key:
            assert torch.equal(value, frozen_before[key]), key
    assert lora_state_dict(model).keys() == {f"blocks.{i}.attn.{n}.lora_{m}" for i in range(4)
                                            for n in ("qkv", "out") for m in "AB"}


def test_cached_generation_works_through_lora_layers() -> None:
    """code/kv_cache.py 的带缓存前向直接调用 attn.qkv、attn.out：换成 LoRALinear 后和不带缓存的结果一样。"""
    model = tang_gpt()
    add_lora(model, ("qkv", "out"), r=4, alpha=8)
    randomize_b(model)
    prompt = torch.randint(0, VOCAB, (3, 6), generator=torch.Generator().manual_seed(0))
    a = generate(model, prompt, 10, use_cache=True)
    b = generate(model, prompt, 10, use_cache=False)
    assert torch.equal(a.tokens, b.tokens)
    assert (a.logits - b.logits).abs().max() < 1e-4


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, fragment", [
    (lambda m: add_lora(m, ("q_proj",), r=4, alpha=8), "没有名为 q_proj"),
    (lambda m: add_lora(m, "qkv", r=4, alpha=8), "放进列表"),
    (lambda m: add_lora(m, ("ln",), r=4, alpha=8), "不是 nn.Linear"),
    (lambda m: add_lora(m, ("qkv",), r=0, alpha=8), "r 应为不小于 1"),
    (lambda m: add_lora(m, ("qkv",), r=65, alpha=8), "min\\(d_in, d_out\\)"),
    (lambda m: add_lora(m, ("qkv",), r=4, alpha=-1.0), "alpha"),
    (lambda m: add_lora(m, ("qkv",), r=4, alpha=float("nan")), "alpha"),
    (lambda m: add_lora(nn.Module(), ("qkv",), r=4, alpha=8), "没有线性层"),
    (lambda m: add_lora("model", ("qkv",), r=4, alpha=8), "nn.Module"),
    (lambda m: LoRALinear(nn.Conv1d(4, 4, 1), r=1, alpha=1), "nn.Linear"),
    (lambda m: merge_lora(None), "nn.Module"),
    # 以下是新加的检查：以前 lora_parameters(64, 64, 100) 返回 12800（LoRALinear 却不接受这个秩），
    # merge_lora 对单独一层什么也不做、原样返回 LoRALinear，add_lora 对单独一层报「没有名为 weight 的层」
    (lambda m: lora_parameters(64, 64, 100), "r = 100 超过了 min\\(d_in, d_out\\) = 64"),
    (lambda m: lora_parameters(64, 192, 65), "min\\(d_in, d_out\\) = 64"),
    (lambda m: lora_parameters(64.0, 64, 2), "d_in 应为整数"),
    (lambda m: merge_lora(LoRALinear(nn.Linear(4, 4), r=2, alpha=4)), "本身就是一个 LoRALinear"),
    (lambda m: add_lora(nn.Linear(4, 4), ("weight",), r=2, alpha=4), "本身就是一个 nn.Linear"),
])
def test_wrong_arguments_raise_value_error(call, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        call(tang_gpt())


def test_adding_twice_and_wrong_inputs_raise_value_error() -> None:
    model = tang_gpt()
    add_lora(model, ("qkv",), r=2, alpha=4)
    with pytest.raises(ValueError, match="两次"):
        add_lora(model, ("qkv",), r=2, alpha=4)
    layer = lora_layers(model)["blocks.0.attn.qkv"]
    with pytest.raises(ValueError, match="已经是 LoRALinear"):
        LoRALinear(layer, r=2, alpha=4)
    with pytest.raises(ValueError, match="d_in = 64"):
        layer(torch.randn(2, 5, 32))
    with pytest.raises(ValueError, match="浮点"):
        layer(torch.ones(2, 5, 64, dtype=torch.long))
    with pytest.raises(ValueError, match="dtype"):
        layer(torch.randn(2, 5, 64, dtype=F64))


def test_merged_layers_stay_frozen_like_their_base() -> None:
    """K2：合并出的 nn.Linear 照抄基座层的 requires_grad。以前它们是新建的层，默认可训练：
    合并后 trainable_parameters 是 66,560（8 个 qkv、out 层连偏置），既不是 0 也不是全部参数。"""
    model = tang_gpt()
    add_lora(model, ("qkv", "out"), r=4, alpha=8)
    randomize_b(model)
    merge_lora(model)
    assert not lora_layers(model)
    assert trainable_parameters(model) == 0
    assert all(not p.requires_grad for p in model.parameters())
    model.requires_grad_(True)  # 要接着全参数微调，照 docstring 说的打开
    assert trainable_parameters(model) == sum(p.numel() for p in tang_gpt().parameters())


def test_merge_copies_requires_grad_of_a_trainable_base() -> None:
    """基座层要是又被打开训练了（LoRALinear 默认冻住它），合并出的层也可训练；偏置单独照抄。"""
    layer = LoRALinear(nn.Linear(6, 5), r=2, alpha=4)
    layer.base.weight.requires_grad_(True)
    merged = merge_lora(nn.Sequential(layer))[0]
    assert merged.weight.requires_grad and not merged.bias.requires_grad


def test_lora_parameters_agrees_with_the_layers_it_counts() -> None:
    """lora_parameters 接受的秩，LoRALinear 也接受，而且数出来一样多；最大的秩是 min(d_in, d_out)。"""
    for d_in, d_out, r in ((64, 192, 64), (64, 64, 1), (3, 5, 3)):
        layer = LoRALinear(nn.Linear(d_in, d_out), r=r, alpha=1)
        assert lora_parameters(d_in, d_out, r) == trainable_parameters(layer)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_layers_work(dtype) -> None:
    """float16、bfloat16 的层：旁路和基座层用同一种精度，B = 0 时输出和基座层一样；空的一批也行。"""
    base = nn.Linear(8, 6).to(dtype)
    layer = LoRALinear(base, r=2, alpha=4)
    x = torch.randn(3, 8).to(dtype)
    with torch.no_grad():
        assert layer(x).dtype == dtype and torch.equal(layer(x), base(x))
        assert layer(torch.empty(0, 8, dtype=dtype)).shape == (0, 6)
