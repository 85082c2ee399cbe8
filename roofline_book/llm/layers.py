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
    ZERO,
    Cost,
    FlashTile,
    attention,
    gelu,
    mla_attention,
    residual_add,
    rmsnorm,
    rope,
    swiglu,
)
from ..ops.attn import attention_keys
from ..ops.pointwise import GELU_FLOPS_PER_ELEMENT, elementwise
from .config import ModelConfig
from .quantization import Precisions

#: 一层怎样分成 kernel。``"serving"``：推理引擎（vLLM）的一步：gate 与 up 投影合成一个 GEMM，
#: RoPE 并入 QKV 投影或 attention（只计它省不掉的部分：不计），新的 key 与 value 复制进 KV cache，
#: attention 按 flash 式 kernel 的必需流量计。``"eager"``：Hugging Face 建模代码逐模块运行的前向：
#: RoPE、gate 投影与 up 投影各是一个 kernel，没有 KV cache，attention 的实现可选。
LAYER_KERNELS = ("serving", "eager")

#: 一步的新 token 数不超过它时，MLA 按 absorbed 形式（FlashMLA）运行 attention，否则按 expanded
#: 形式（先把 latent 展开成每个 head 的 key 与 value）。推理引擎（vLLM、SGLang）对 decode 与
#: speculative 验证步用前者，对 prefill 用后者。
MLA_ABSORB_MAX_NEW = 8

#: MLA 的两种算法。
MLA_FORMS = ("absorbed", "expanded")


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


def _matrices(prefix: str, name: str, config: ModelConfig, width: int, eager: bool) -> list:
    """一个 MLP（宽 ``width``）的各矩阵，``(id, name, k, n)``，按运行顺序。"""
    h = config.hidden
    if eager:
        ups = [(f"{prefix}_up_projection", f"{name} up projection", h, width)]
        if config.gated:
            ups.insert(0, (f"{prefix}_gate_projection", f"{name} gate projection", h, width))
        return [*ups, (f"{prefix}_down_projection", f"{name} down projection", width, h)]
    gated = (2 if config.gated else 1) * width
    up = f"{name} up (gate, up)" if config.gated and name == "MLP" else f"{name} up"
    return [(f"{prefix}_up", up, h, gated), (f"{prefix}_down", f"{name} down", width, h)]


def _mlp(config: ModelConfig, layer: int, tokens: int, p: Precisions, eager: bool) -> list[Op]:
    """MLP 的各投影（MoE 时先是 router 与 shared expert），激活函数放在 up 与 down 之间。

    MoE 的 MLP 读取一步所用到的 :func:`expected_experts` 个 expert 的权重：``linear`` 只读一个
    expert 的，多出的部分加在各矩阵的行上，累计取整，使各行之和等于整体取整后的值（即
    ``step_traffic`` 所计）。shared expert 每个 token 都经过，是一个宽 ``shared_experts x ffn``
    的普通 MLP。
    """
    h, f, k = config.hidden, config.ffn, config.experts_per_token
    if not config.moe_layer(layer):
        width = config.dense_ffn or f  # dense_ffn is set only beside experts
        plain = _matrices("mlp", "MLP", config, width, eager)
        return _run(config, plain, tokens, 1, width, 1.0, p, "activation")
    ops = [Op("router", "router", linear(tokens, h, config.experts, p))]
    if config.shared_experts:
        width = config.shared_experts * f
        shared = _matrices("shared_expert", "shared expert", config, width, eager)
        ops += _run(config, shared, tokens, 1, width, 1.0, p, "shared_activation")
    routed = _matrices("experts", "experts", config, f, eager)
    touched = expected_experts(config.experts, k, tokens)
    return ops + _run(config, routed, tokens, k, f, touched, p, "activation")


def _run(
    config: ModelConfig,
    matrices: list,
    tokens: int,
    k: int,
    width: int,
    touched: float,
    p: Precisions,
    act_id: str,
) -> list[Op]:
    ops = []
    extra_before, weights = 0, 0
    for i, (op_id, name, a, b) in enumerate(matrices):
        weights += p.weight_bytes(a * b)
        extra = round((touched - 1) * weights)
        cost = linear(tokens * k, a, b, p) + Cost(0, extra - extra_before, 0, 0)
        extra_before = extra
        if i == len(matrices) - 1:  # the activation runs between the ups and the down
            act_name, act = _activation(config, tokens * k * width, p.activations)
            if act_id != "activation":
                act_name = act_name.replace("activation", "shared expert activation")
            ops.append(Op(act_id, act_name, act))
        ops.append(Op(op_id, name, cost))
    return ops


def _mla(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    p: Precisions,
    form: str,
    eager: bool,
    causal: bool,
) -> list[Op]:
    """MLA 的 attention 部分，从压缩投影到输出投影之前。

    压缩：一个 GEMM 把 hidden 投影成压缩的 query（``q_lora_rank``）、latent（``kv_lora_rank``）
    与共用的 RoPE key（``rope_head_dim``）；两个小 norm；query 展开成每个 head 的 ``head_dim``。
    cache 只写 latent 与 RoPE key。absorbed：query 的内容部分乘上 key 的展开矩阵（W_UK）变到
    latent 空间，attention 直接对 latent cache 做（:func:`roofline_book.ops.mla_attention`，
    ``kv_heads=1``），输出再乘 value 的展开矩阵（W_UV）。expanded：先把看到的每个 key 的 latent
    展开成每个 head 的 key 与 value（``kv_b_proj``），再做普通的 attention。
    """
    c, a = config, p.activations
    assert c.kv_lora_rank is not None
    h, heads, r, rope = c.hidden, c.heads, c.kv_lora_rank, c.rope_head_dim
    nope, tokens = c.d - rope, batch * new
    qr = c.q_lora_rank
    s_a = bytes_per_element(a)
    down = (qr if qr is not None else c.q_dim) + r + rope
    ops = [Op("qkv_down", "QKV down projection (MLA)", linear(tokens, h, down, p))]
    norms = rmsnorm(tokens, r, a) + (rmsnorm(tokens, qr, a) if qr is not None else Cost(0, 0, 0, 0))
    ops.append(Op("latent_norm", "latent norm", norms))
    if qr is not None:
        ops.append(Op("q_up", "query up projection", linear(tokens, qr, c.q_dim, p)))
    if eager:
        ops.append(Op("rope", "rotary embedding (RoPE)", rope_cost(tokens, heads, rope, a)))
    else:
        cached = tokens * (r + rope)
        write = Cost(0, cached * s_a, cached * bytes_per_element(p.kv), 1)
        ops.append(Op("kv_cache_write", "KV cache write", write))
    if form == "absorbed":
        w_uk = p.weight_bytes(heads * nope * r)
        absorb_q = Cost(
            2 * tokens * heads * nope * r,
            s_a * tokens * heads * nope + w_uk,
            s_a * tokens * heads * r,
        )
        attn = mla_attention(
            batch, heads, new, context, r + rope, r, a,
            kv_heads=1, value_in_key=True, kv_dtype=p.kv, causal=causal,
        )  # fmt: skip
        w_uv = p.weight_bytes(heads * r * c.vd)
        absorb_v = Cost(
            2 * tokens * heads * r * c.vd,
            s_a * tokens * heads * r + w_uv,
            s_a * tokens * heads * c.vd,
        )
        return ops + [
            Op("q_absorb", "query absorb (W_UK)", absorb_q),
            Op("attention", "attention (MLA, absorbed)", attn),
            Op("v_absorb", "value absorb (W_UV)", absorb_v),
        ]
    keys = attention_keys(new, context)
    up = linear(batch * keys, r, heads * (nope + c.vd), p)
    attn = mla_attention(batch, heads, new, context, c.d, c.vd, a, causal=causal)
    return ops + [
        Op("kv_up", "KV up projection", up),
        Op("attention", "attention (MLA, expanded)", attn),
    ]


def rope_cost(tokens: int, heads: int, width: int, dtype: str) -> Cost:
    """MLA 的 RoPE：每个 head 的 query 的 RoPE 段（宽 ``width``）与一份共用的 RoPE key。"""
    return rope(tokens, heads, width, dtype, kv_heads=1)


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
    mla: str | None = None,
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

    MLA 模型（:attr:`~roofline_book.llm.shape.ModelConfig.mla`）的 attention 按 ``mla``
    （:data:`MLA_FORMS`）运行；None 时新 token 不超过 :data:`MLA_ABSORB_MAX_NEW` 个用
    ``"absorbed"``，否则用 ``"expanded"``。MoE 模型最前面的 ``dense_layers`` 层用 dense MLP，
    其余层先过 shared expert 再过 routed expert。

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
    if mla is not None:
        mla = _validate.choice("mla", mla, MLA_FORMS)
    eager = kernels == "eager"
    tokens, h, a = batch * new, config.hidden, p.activations
    norm = " (RMSNorm)" if eager else ""
    ops = [Op("attention_norm", f"attention norm{norm}", rmsnorm(tokens, h, a))]
    if config.mla:
        if eager and attention_impl != "flash":
            raise InvalidArgument(
                "attention_impl", f"must be 'flash' for an MLA model; got {attention_impl!r}"
            )
        form = mla or ("absorbed" if new <= MLA_ABSORB_MAX_NEW else "expanded")
        ops += _mla(config, batch, new, context, p, form, eager, causal)
    else:
        if mla is not None:
            raise InvalidArgument("mla", f"is an option of MLA models; {config.key} is not one")
        window = config.window(layer)
        ops += _gqa(config, batch, new, context, p, eager, attention_impl, causal, window, tile)
        if eager:  # the flash kernel's tile from the SRAM it may use
            ops[-1] = _eager_attention(
                config, batch, new, context, p, attention_impl, causal, window, sram_bytes, tile
            )
    ops += [
        Op("output_projection", "output projection", linear(tokens, config.o_dim, h, p)),
        Op("residual_add", "residual add", residual_add(tokens * h, a)),
        Op("mlp_norm", f"MLP norm{norm}", rmsnorm(tokens, h, a)),
        *_mlp(config, layer, tokens, p, eager),
        Op("mlp_residual_add", "residual add (MLP)", residual_add(tokens * h, a)),
    ]
    return ops


def _gqa(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    p: Precisions,
    eager: bool,
    attention_impl: str,
    causal: bool,
    window: int | None,
    tile: FlashTile | None,
) -> list[Op]:
    """GQA（含 MHA、MQA）的 QKV 投影、RoPE 或 KV cache 写入、attention。"""
    c, a, tokens = config, p.activations, batch * new
    kv_width = c.kv_elements  # one key and one value per KV head
    ops = [Op("qkv_projection", "QKV projection", linear(tokens, c.hidden, c.q_dim + kv_width, p))]
    if eager:
        q_and_k = rope(tokens, c.heads, c.d, a, kv_heads=c.kv_heads)
        ops.append(Op("rope", "rotary embedding (RoPE)", q_and_k))
        return [*ops, Op("attention", "attention", ZERO)]  # replaced by the caller
    new_kv = tokens * kv_width
    kv = Cost(0, new_kv * bytes_per_element(a), new_kv * bytes_per_element(p.kv), 1)
    ops.append(Op("kv_cache_write", "KV cache write", kv))
    # one block holds every new query, so nothing is read twice; the softmax at the
    # activations' rate: the floor of any kernel, not one kernel's schedule
    attn = attention(
        batch,
        c.heads,
        new,
        context,
        c.d,
        a,
        causal=causal,
        tile=FlashTile(new),
        kv_heads=c.kv_heads,
        window=window,
        kv_dtype=p.kv,
    )
    return [*ops, Op("attention", "attention", dataclasses.replace(attn, fp32_vector_slots=0))]


def _eager_attention(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    p: Precisions,
    attention_impl: str,
    causal: bool,
    window: int | None,
    sram_bytes: int,
    tile: FlashTile | None,
) -> Op:
    attn = attention(
        batch,
        config.heads,
        new,
        context,
        config.d,
        p.activations,
        impl=attention_impl,
        causal=causal,
        sram_bytes=sram_bytes,
        tile=tile,
        kv_heads=config.kv_heads,
        window=window,
        kv_dtype=p.kv,
    )
    return Op("attention", f"attention ({attention_impl})", attn)
