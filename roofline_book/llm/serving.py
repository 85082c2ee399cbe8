"""serving 引擎要决定的事：内存里放得下多少条序列，speculative decoding 能快多少。

:func:`max_batch` 像 vLLM 那样确定 KV cache 的大小：设备内存减去权重与激活峰值；
:func:`speculative_speedup` 是计入 draft 模型代价之后 speculative decoding 在 walltime 上的收益。
它们所依据的单步下界在 :mod:`roofline_book.llm.inference` 中。
"""

from __future__ import annotations

import math

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware
from ..dtypes import bytes_per_element
from .config import ModelConfig
from .config import model as model  # the examples' models
from .inference import kv_cache_bytes, weight_bytes
from .quantization import Precisions

#: serving 引擎不使用的设备内存比例。vLLM 的 ``gpu_memory_utilization`` 默认为 0.9，vLLM 先从
#: 这 0.9 中减去权重、profile 得到的激活峰值和非 torch 的分配，再确定 KV cache 的大小
#: （:func:`max_batch` 用 :func:`activation_peak` 代替第二项）。
MEMORY_RESERVE = 0.1

#: :func:`activation_peak` 估计其激活峰值的那次 forward pass 的 token 数
#: （vLLM profile 一次 ``max_num_batched_tokens`` 个 token 的 forward pass）。
PROFILE_TOKENS = 8192

#: 那次 forward pass 同时保存其 FP32 logits 的序列条数。
PROFILE_SEQUENCES = 256


def activation_peak(
    config: ModelConfig,
    precisions: Precisions | None = None,
    *,
    tokens: int = PROFILE_TOKENS,
    sequences: int = PROFILE_SEQUENCES,
) -> int:
    """一次 ``tokens`` 个 token 的 forward pass 的激活峰值估计（byte）。

    一层中占用最大的时刻在 MLP：residual stream（``tokens x hidden``）、gate 与 up 投影的输出
    （门控 MLP 为 ``tokens x k x 2 ffn``，每个 token ``k`` 个 expert）和激活函数的输出
    （``tokens x k x ffn``）同时存在，都按激活的精度计。再加上 ``sequences`` 条序列的 FP32 logits。
    这里没有计入 vLLM 还会减去的部分：CUDA graph 的内存和非 torch 的分配（CUDA context、NCCL、
    cuBLAS workspace），所以它留给 KV cache 的空间只会偏大。

    Examples
    --------
    >>> activation_peak(model("llama-3-8b")) == 2 * 8192 * (4096 + 3 * 14336) + 256 * 128256 * 4
    True
    """
    p = precisions or Precisions()
    tokens = _validate.size("tokens", tokens)
    sequences = _validate.size("sequences", sequences)
    c, a = config, bytes_per_element(p.activations)
    mlp = ((3 if c.gated else 2) * c.ffn) * c.experts_per_token
    return a * tokens * (c.hidden + mlp) + 4 * sequences * c.vocab


def max_batch(
    config: ModelConfig,
    device: Hardware,
    context: int,
    precisions: Precisions | None = None,
    *,
    reserve: float = MEMORY_RESERVE,
    activations: int | None = None,
) -> int:
    """权重之外还放得下 KV cache 的、长度为 ``context`` 个 token 的序列的最大条数。

    vLLM 的规则：从 ``(1 - reserve) x capacity`` （``gpu_memory_utilization``）中先减去权重与
    激活峰值，其余放 KV cache::

        floor(((1 - reserve) x capacity - weights - activations) / kv_cache_bytes(context))

    ``activations`` 默认为 :func:`activation_peak`。连权重都放不下时为 0。``context`` 超出模型的
    上下文窗口（``config.max_context``）时抛出 :class:`ValueError`，与 ``infer --context`` 一样。

    Examples
    --------
    >>> from dataclasses import replace
    >>> from roofline_book.devices.catalog import hardware
    >>> gpu = replace(hardware("h100-sxm"), memory_capacity=80e9)
    >>> m = model("llama-2-7b")
    >>> max_batch(m, gpu, 4096, activations=0)   # (72e9 - 13.48e9) / 2.15e9 = 27.3
    27
    >>> max_batch(m, gpu, 10**7)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: context (10000000) is beyond llama-2-7b's context window (4096)
    """
    p = precisions or Precisions()
    if device.memory_capacity is None:
        raise InvalidArgument(
            "device", f"must have a memory capacity; {device.key} has none published"
        )
    context = _validate.size("context", context)
    if context > config.max_context:  # as infer --context refuses it
        raise InvalidArgument(
            "context", f"({context}) is beyond {config.key}'s context window ({config.max_context})"
        )
    reserve = _validate.non_negative("reserve", reserve)
    if reserve >= 1:
        raise InvalidArgument("reserve", f"must be below 1, got {reserve}")
    if activations is None:
        activations = activation_peak(config, p)
    activations = _validate.size("activations", activations, minimum=0)
    free = (1 - reserve) * device.memory_capacity - weight_bytes(config, p) - activations
    return max(0, math.floor(free / kv_cache_bytes(config, context, p)))


def _acceptance(acceptance: float) -> float:
    a = _validate.non_negative("acceptance", acceptance)
    if a >= 1:
        raise InvalidArgument("acceptance", f"must be below 1, got {acceptance}")
    return a


def speculative_tokens(acceptance: float, draft: int) -> float:
    """一次验证步期望产出的 token 数：``(1 - a^(g+1)) / (1 - a)``。

    有 ``g`` 个 draft token、每个以概率 ``a`` 被接受时（Leviathan et al. 2023，式 1），目标模型一步
    检查 ``g + 1`` 个位置。

    Examples
    --------
    >>> round(speculative_tokens(0.8, 4), 3)
    3.362
    >>> speculative_tokens(0.0, 4)
    1.0
    """
    a = _acceptance(acceptance)
    g = _validate.size("draft", draft, minimum=0)
    return (1 - a ** (g + 1)) / (1 - a)


def speculative_speedup(
    acceptance: float, draft: int, cost_ratio: float, *, verify_ratio: float = 1.0
) -> float:
    """speculative decoding 相对普通 decoding 在 walltime 上的加速比。

    Leviathan et al. 2023，Theorem 3.8：``(1 - a^(g+1)) / ((1 - a) (g c + 1))``，其中 ``c``
    （``cost_ratio``）是 draft 模型一步的时间与目标模型一步的时间之比。他们的定理假定验证 ``g + 1``
    个位置只花目标模型一步的时间；验证花得更多时（compute-bound、大 batch），``verify_ratio`` 是
    这个时间与普通一步的时间之比。

    Examples
    --------
    >>> round(speculative_speedup(0.8, 4, 0.05), 2)     # 3.3616 / 1.2
    2.8
    """
    c = _validate.non_negative("cost_ratio", cost_ratio)
    v = _validate.positive("verify_ratio", verify_ratio)
    g = _validate.size("draft", draft, minimum=0)
    return speculative_tokens(acceptance, g) / (g * c + v)


def mtp_speedup(
    config: ModelConfig,
    device: Hardware,
    *,
    batch: int = 1,
    context: int = 4096,
    acceptance: float = 0.85,
    precisions: Precisions | None = None,
) -> float:
    """multi-token prediction（DeepSeek-V3 的 MTP 模块）当作 speculative decoding 时的加速比。

    MTP 模块是一个 decoder 层（与最后一层同形）加一个把 hidden 与下一个 token 的 embedding 拼起来
    再投影回 ``hidden`` 的 linear，embedding 与 LM head 与主模型共用。每步它 draft 一个 token
    （``g = 1``），主模型一步验证两个位置。draft 代价之比 ``c`` 是 MTP 模块一步与主模型一步 decode
    的时间下界之比，``verify_ratio`` 是主模型验证两个位置与普通一步的时间下界之比，二者都取
    :func:`~roofline_book.llm.inference.step_time`；再代入 :func:`speculative_speedup`。

    Examples
    --------
    一个 Llama-3-8B 形状的模型加一个 MTP 模块：接受率 0.85 时一步平均产出 1.85 个 token，
    draft 与验证的代价把它压低一些：

    >>> from roofline_book.devices.catalog import hardware
    >>> from roofline_book.llm.config import adhoc_model
    >>> m = adhoc_model("mtp", hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
    ...                 vocab=128256, mtp_layers=1)
    >>> round(mtp_speedup(m, hardware("h100-sxm"), acceptance=0.85), 2)
    1.68
    """
    from ..ops import Cost
    from .inference import linear, step_ops, step_time
    from .layers import layer_ops

    if config.mtp_layers < 1:
        raise InvalidArgument("config", f"{config.key} has no multi-token prediction module")
    p = precisions or Precisions()
    _acceptance(acceptance)
    one = step_time(step_ops(config, batch, 1, context, p), device, p).seconds
    two = step_time(step_ops(config, batch, 2, context, p, logits=2), device, p).seconds
    layer = layer_ops(config, batch, 1, context, p, layer=config.layers - 1)
    project = linear(batch, 2 * config.hidden, config.hidden, p)
    head = linear(batch, config.hidden, config.vocab, p, table=True)
    ops: list[tuple[str, Cost]] = [(op.name, op.cost) for op in layer]
    ops += [("projection", project), ("LM head", head)]
    draft = step_time(ops, device, p).seconds
    return speculative_speedup(acceptance, 1, draft / one, verify_ratio=two / one)
