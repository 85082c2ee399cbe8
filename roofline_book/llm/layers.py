"""一个 decoder 层的算子：给定模型、batch 与上下文，每个 kernel 一项，带稳定标识与代价。

prefill 与 decode（:mod:`roofline_book.llm.inference`）和一个 block 的前向
（:mod:`roofline_book.llm.block`）都取自 :func:`layer_ops`；模型的形状来自
:mod:`roofline_book.llm.config`，attention 的代价来自 :func:`roofline_book.ops.attention`。

Examples
--------
>>> from roofline_book.llm.config import model
>>> [op.id for op in layer_ops(model("llama-2-7b"), 1, 1, 4096)][:4]
['attention_norm', 'qkv_projection', 'kv_cache_write', 'attention']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import bytes_per_element
from ..ops import (
    ATTENTION_IMPLS,
    DEFAULT_SRAM_BYTES,
    Cost,
    FlashTile,
    attention,
    gelu,
    residual_add,
    rmsnorm,
    rope,
    swiglu,
)
from ..ops.pointwise import GELU_FLOPS_PER_ELEMENT, elementwise
from .config import ModelConfig
from .quantization import Precisions

#: 一层怎样分成 kernel。``"serving"``：推理引擎（vLLM）的一步：gate 与 up 投影合成一个 GEMM，
#: RoPE 并入 QKV 投影或 attention（只计它省不掉的部分：不计），新的 key 与 value 复制进 KV cache，
#: attention 按 flash 式 kernel 的必需流量计。``"eager"``：Hugging Face 建模代码逐模块运行的前向：
#: RoPE、gate 投影与 up 投影各是一个 kernel，没有 KV cache，attention 的实现可选。
LAYER_KERNELS = ("serving", "eager")


@dataclass(frozen=True)
class Op:
    """一层中的一个算子：稳定标识（命令行 ``--json`` 的 ``id``）、显示用的名字和代价。

    拆包时是 ``(name, cost)``，即 :func:`roofline_book.present.tables.cost_table` 所收的对，
    所以 ``dict(layer_ops(...))`` 按名字索引代价。
    """

    id: str
    name: str
    cost: Cost

    def __iter__(self) -> Iterator[Any]:  # (name, cost): a str, then a Cost
        return iter((self.name, self.cost))


def linear(tokens: int, k: int, n: int, p: Precisions, *, table: bool = False) -> Cost:
    """``(tokens x k) @ (k x n)``：激活的精度为 ``p.activations``，权重的精度为 ``p.weights``。

    ``table``：权重是 LM head，按 ``p.table_precision`` 存放。
    """
    a = bytes_per_element(p.activations)
    w = p.table_bytes(k * n) if table else p.weight_bytes(k * n)
    return Cost(2 * tokens * k * n, a * tokens * k + w, a * tokens * n)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """``tokens`` 个 token 各随机选 ``per_token`` 个 expert 时，一步会用到的不同 expert 的个数。

    均匀路由下，一个 expert 不被某个 token 选中的概率是 ``1 - k/E``，所以要读
    ``E (1 - (1 - k/E)^tokens)`` 个 expert。

    Examples
    --------
    >>> round(expected_experts(8, 2, 1), 3), round(expected_experts(8, 2, 16), 2)
    (2.0, 7.92)
    """
    experts = _validate.size("experts", experts)
    per_token = _validate.size("per_token", per_token)
    tokens = _validate.size("tokens", tokens)
    if per_token > experts:
        raise InvalidArgument("per_token", f"({per_token}) must be <= experts ({experts})")
    return experts * (1 - (1 - per_token / experts) ** tokens)


def _activation(config: ModelConfig, numel: int, dtype: str) -> tuple[str, Cost]:
    if not config.gated:
        return "activation (GELU)", gelu(numel, dtype)
    if config.activation == "silu":
        return "activation (SwiGLU)", swiglu(numel, dtype)
    # GeGLU: gelu(gate) * up, the tanh form of GELU and one product, two inputs and one output
    cost = elementwise(
        numel,
        dtype,
        inputs=2,
        outputs=1,
        flops_per_element=GELU_FLOPS_PER_ELEMENT + 1,
        special_per_element=1,
    )
    return "activation (GeGLU)", cost


def check_step(batch: int, new: int, context: int) -> tuple[int, int, int]:
    """检查一步的 ``batch``、``new``、``context``（``new <= context``），返回它们。"""
    batch = _validate.size("batch", batch)
    new = _validate.size("new", new)
    context = _validate.size("context", context)
    if new > context:
        raise InvalidArgument("new", f"({new}) must be <= context ({context})")
    return batch, new, context


def _mlp(config: ModelConfig, tokens: int, p: Precisions, eager: bool) -> list[Op]:
    """MLP 的各投影（MoE 时先是 router），激活函数放在 up 与 down 之间。

    MoE 的 MLP 读取一步所用到的 :func:`expected_experts` 个 expert 的权重：``linear`` 只读一个
    expert 的，多出的部分加在各矩阵的行上，累计取整，使各行之和等于整体取整后的值（即
    ``step_traffic`` 所计）。
    """
    h, f, k = config.hidden, config.ffn, config.experts_per_token
    moe = config.experts > 1
    ops = [Op("router", "router", linear(tokens, h, config.experts, p))] if moe else []
    # (id, name, k, n) of each matrix, in the order the layer runs them
    if eager:
        what = "experts" if moe else "MLP"
        ups = [("up_projection", "up projection", h, f)]
        if config.gated:
            ups.insert(0, ("gate_projection", "gate projection", h, f))
        down = ("down_projection", "down projection", f, h)
        matrices = [(f"{what.lower()}_{i}", f"{what} {n}", a, b) for i, n, a, b in (*ups, down)]
    elif moe:
        width = (2 if config.gated else 1) * f
        matrices = [("experts_up", "experts up", h, width), ("experts_down", "experts down", f, h)]
    else:
        width = (2 if config.gated else 1) * f
        up_name = "MLP up (gate, up)" if config.gated else "MLP up"
        matrices = [("mlp_up", up_name, h, width), ("mlp_down", "MLP down", f, h)]
    touched = expected_experts(config.experts, k, tokens) if moe else 1.0
    extra_before, weights = 0, 0
    for i, (op_id, name, a, b) in enumerate(matrices):
        weights += p.weight_bytes(a * b)
        extra = round((touched - 1) * weights)
        cost = linear(tokens * k, a, b, p) + Cost(0, extra - extra_before, 0, 0)
        extra_before = extra
        if i == len(matrices) - 1:  # the activation runs between the ups and the down
            act_name, act = _activation(config, tokens * k * f, p.activations)
            ops.append(Op("activation", act_name, act))
        ops.append(Op(op_id, name, cost))
    return ops


def layer_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    layer: int = 0,
    kernels: str = "serving",
    attention_impl: str = "flash",
    causal: bool = True,
    sram_bytes: int = DEFAULT_SRAM_BYTES,
    tile: FlashTile | None = None,
) -> list[Op]:
    """一个 decoder 层处理 ``batch`` 条序列、每条 ``new`` 个 token，对照 ``context`` 个 key。

    ``context`` 是这一步要 attend 的 token 数：缓存的加上 ``new`` 个新的。prefill 是 ``new =
    context = prompt``；一步 decode 是 ``new = 1``，``context`` 为缓存的 token 数加上这个新 token；
    一次训练或一个 block 的前向是 ``new = context = seq``。模型既有 local（sliding-window）层又有
    global 层时，``layer`` （从 0 数起）选其中一种；local 层的 attention 只看窗口内的 key。

    ``kernels`` （:data:`LAYER_KERNELS`）选一层怎样分成 kernel。``"serving"``：新的 key 和 value
    随 QKV 投影的输出一起产生，再复制进 cache（按激活的精度读、按 cache 的精度写），这是一个单独的
    kernel（``"KV cache write"``，即 vLLM 的 ``reshape_and_cache``）；attention 是一个 flash 式的
    kernel，一块装下这一步全部的 query，只计必需流量（有某个 query 看到的缓存 key 与 value 各读一
    次，按 ``precisions.kv``），softmax 按激活精度的速率计，所以它是任何 kernel 的下界。
    ``"eager"``：RoPE 单独成一行，gate 与 up 投影各是一个 GEMM，attention 按 ``attention_impl``、
    ``causal``、``sram_bytes`` 与 ``tile`` 取 :func:`roofline_book.ops.attention`。MoE 的 MLP 读取
    一步所用到的 :func:`expected_experts` 个 expert 的权重。

    Examples
    --------
    >>> from roofline_book.llm.config import model
    >>> ops = dict(layer_ops(model("llama-2-7b"), 1, 1, 4096))
    >>> ops["attention"].bytes_read     # the whole cache of one layer: 2 x 4096 x 4096 x 2
    67117056
    >>> ops = dict(layer_ops(model("mistral-7b"), 1, 1, 8192))
    >>> ops["attention"].bytes_read     # its 4096-token window: 2 x 4096 x 1024 x 2, and q
    16785408
    >>> [op.name for op in layer_ops(model("llama-2-7b"), 1, 8, 8, kernels="eager")][7:9]
    ['MLP gate projection', 'MLP up projection']
    """
    if not isinstance(config, ModelConfig):
        raise InvalidArgumentType("config", f"must be a ModelConfig, got {type(config).__name__}")
    p = precisions or Precisions()
    batch, new, context = check_step(batch, new, context)
    kernels = _validate.choice("kernels", kernels, LAYER_KERNELS)
    attention_impl = _validate.choice("attention_impl", attention_impl, ATTENTION_IMPLS)
    eager = kernels == "eager"
    window = config.window(layer)
    tokens, h, a, kv_dim = batch * new, config.hidden, p.activations, config.kv_dim
    heads, d, kv_heads = config.heads, config.d, config.kv_heads
    if eager:
        attn = attention(
            batch,
            heads,
            new,
            context,
            d,
            a,
            impl=attention_impl,
            causal=causal,
            sram_bytes=sram_bytes,
            tile=tile,
            kv_heads=kv_heads,
            window=window,
            kv_dtype=p.kv,
        )
        attn_op = Op("attention", f"attention ({attention_impl})", attn)
    else:
        # one block holds every new query, so nothing is read twice; the softmax at the
        # activations' rate: the floor of any kernel, not one kernel's schedule
        attn = attention(
            batch,
            heads,
            new,
            context,
            d,
            a,
            causal=causal,
            tile=FlashTile(new),
            kv_heads=kv_heads,
            window=window,
            kv_dtype=p.kv,
        )
        attn_op = Op("attention", "attention", dataclasses.replace(attn, fp32_vector_slots=0))
    norm = " (RMSNorm)" if eager else ""
    ops = [
        Op("attention_norm", f"attention norm{norm}", rmsnorm(tokens, h, a)),
        Op("qkv_projection", "QKV projection", linear(tokens, h, config.q_dim + 2 * kv_dim, p)),
    ]
    if eager:
        q_and_k = rope(tokens, heads, d, a, kv_heads=kv_heads)
        ops.append(Op("rope", "rotary embedding (RoPE)", q_and_k))
    else:
        new_kv = batch * new * 2 * kv_dim
        kv = Cost(0, new_kv * bytes_per_element(a), new_kv * bytes_per_element(p.kv), 1)
        ops.append(Op("kv_cache_write", "KV cache write", kv))
    ops += [
        attn_op,
        Op("output_projection", "output projection", linear(tokens, config.q_dim, h, p)),
        Op("residual_add", "residual add", residual_add(tokens * h, a)),
        Op("mlp_norm", f"MLP norm{norm}", rmsnorm(tokens, h, a)),
        *_mlp(config, tokens, p, eager),
        Op("mlp_residual_add", "residual add (MLP)", residual_add(tokens * h, a)),
    ]
    return ops
