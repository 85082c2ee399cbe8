"""profiler 记录的 aten 算子在本包中的模型，按输入 shape 计算。

:data:`ATEN_MODELS` 中每个算子名一项：给它一次记录下的调用（:class:`Call`：输入
shape、dtype，以及 profiler 保留的标量参数），它从 :mod:`roofline_book.ops` 算出这次
调用的 :class:`~roofline_book.ops.Cost`；记录中的信息不够时（tensor 列表的 shape
profiler 不记，或是整数 tensor）返回 ``None``。没有列出的算子没有模型：attribution
会列出它的时间，但不给数字，而不是编造数字。

约定（NB）：输入 ``[]`` 是标量或 0 维 tensor，不搬运字节；elementwise 的输出取各输入
广播后的 shape 和第一个 tensor 输入的精度；原地算子（``add_``）读写自己的第一个输入，
代价与非原地版本相同。每个元素的 FLOPs 按 :func:`roofline_book.ops.elementwise`
的约定计：每次算术运算计 1，一次超越函数在特殊函数单元上计 1。两个 shape 相同的
输入即使其实是同一个 tensor（AdamW 的 ``addcmul_(grad, grad)``），也按两个 tensor
计：shape 分辨不出来。

Examples
--------
>>> call = Call("aten::mm", ((512, 512), (512, 1408)), ("float", "float"))
>>> model(call).flops                     # 2 * 512 * 512 * 1408
738197504
>>> model(Call("aten::add", ((2, 256, 512), (2, 256, 512), ()), ("float",) * 2 + ("Scalar",))).bytes
3145728
>>> model(Call("aten::cat", ((), ()), ("TensorList", "Scalar"))) is None
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..dtypes import bytes_per_element, precision_name
from ..ops import (
    GELU_FLOPS_PER_ELEMENT,
    Cost,
    attention,
    attention_backward,
    elementwise,
    gemm,
    layernorm,
    rmsnorm,
    softmax,
)


@dataclass(frozen=True)
class Call:
    """一个算子的一次调用记录：名称、输入 shape、dtype 和标量参数。

    ``dtypes`` 是 profiler 给出的字符串（``"float"``、``"c10::BFloat16"``、
    ``"Scalar"``）；``concrete`` 是它保留下来的标量参数（tensor 处为 ``None``），
    如果它保留了的话。
    """

    name: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...] = ()
    concrete: tuple[object, ...] = field(default=(), compare=False)


def precision_of(profiler_dtype: str) -> str | None:
    """profiler 的 dtype 字符串在本包中的精度名称；不是浮点类型时为 None。

    Examples
    --------
    >>> precision_of("float"), precision_of("c10::BFloat16"), precision_of("long int")
    ('fp32', 'bf16', None)
    """
    text = profiler_dtype.removeprefix("c10::").strip()
    try:
        return precision_name(text)
    except (ValueError, TypeError):
        return None


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _tensors(call: Call) -> list[tuple[tuple[int, ...], str]]:
    """浮点 tensor 输入（不含标量），写成 (shape, precision)。"""
    out = []
    for i, shape in enumerate(call.shapes):
        dtype = call.dtypes[i] if i < len(call.dtypes) else ""
        precision = precision_of(dtype)
        if shape and precision is not None:
            out.append((shape, precision))
    return out


def _broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes], strict=True):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _pointwise(flops: int, special: int = 0, *, tensors: int | None = None):
    """一个 elementwise 算子：每个 tensor 输入读一次，写出一个广播后 shape 的输出。"""

    def cost(call: Call) -> Cost | None:
        inputs = _tensors(call)[:tensors]
        if not inputs:
            return None
        out_shape = _broadcast([s for s, _ in inputs])
        if out_shape is None:
            return None
        n, precision = _numel(out_shape), inputs[0][1]
        full = elementwise(
            n, precision, flops_per_element=flops, special_per_element=special, outputs=1
        )
        more = sum(_numel(s) * bytes_per_element(p) for s, p in inputs[1:])
        return full + Cost(0, more, 0, kernels=0)

    return cost


def _write_only(call: Call) -> Cost | None:
    inputs = _tensors(call)
    if not inputs:
        return None
    shape, precision = inputs[0]
    return Cost(0, 0, _numel(shape) * bytes_per_element(precision))


def _copy(call: Call) -> Cost | None:
    inputs = _tensors(call)  # copy_(dst, src): read src, write dst, each in its own precision
    if len(inputs) < 2:
        return None
    (dst, p_dst), (src, p_src) = inputs[:2]
    return Cost(0, _numel(src) * bytes_per_element(p_src), _numel(dst) * bytes_per_element(p_dst))


def _reduction(call: Call) -> Cost | None:
    """沿某些维度做 sum / mean：读每个元素，写出归约后的 tensor。"""
    inputs = _tensors(call)
    if not inputs:
        return None
    shape, precision = inputs[0]
    out = inputs[1][0] if len(inputs) > 1 else None  # sum(x, dims, keepdim, dtype, out)
    s, n = bytes_per_element(precision), _numel(shape)
    rows = _numel(out) if out else max(1, n // shape[-1])
    return Cost(n, s * n, s * rows, vector_flops=n)


def _matmul(call: Call) -> Cost | None:
    inputs = _tensors(call)
    if call.name.endswith(("addmm", "baddbmm")):  # (bias, A, B): the bias is read once more
        if len(inputs) < 3:
            return None
        (bias, p_bias), inputs = inputs[0], inputs[1:]
        extra = Cost(0, _numel(bias) * bytes_per_element(p_bias), 0, kernels=0)
    else:
        extra = Cost(0, 0, 0, kernels=0)
    if len(inputs) < 2:
        return None
    (a, precision), (b, _) = inputs[:2]
    if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return gemm(a[0], a[1], b[1], precision) + extra
    if len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return gemm(a[1], a[2], b[2], precision, batch=a[0]) + extra
    return None


def _concrete_flag(call: Call, index: int) -> bool:
    value = call.concrete[index] if index < len(call.concrete) else None
    return bool(value) if isinstance(value, bool) else False


def _sdpa(causal_at: int):
    """融合 attention kernel 的前向：Q、K、V 的 shape 为 (batch, heads, seq, head_dim)。"""

    def cost(call: Call) -> Cost | None:
        inputs = _tensors(call)
        if len(inputs) < 3 or any(len(s) != 4 for s, _ in inputs[:3]):
            return None
        (q, precision), (k, _) = inputs[0], inputs[1]
        causal = _concrete_flag(call, causal_at)
        return attention(q[0], q[1], q[2], k[2], q[3], precision, impl="flash", causal=causal)

    return cost


def _sdpa_backward(causal_at: int):
    """融合 attention kernel 的反向：(dO, Q, K, V, O, ...)。"""

    def cost(call: Call) -> Cost | None:
        inputs = _tensors(call)
        if len(inputs) < 4 or any(len(s) != 4 for s, _ in inputs[:4]):
            return None
        (q, precision), (k, _) = inputs[1], inputs[2]
        causal = _concrete_flag(call, causal_at)
        return attention_backward(q[0], q[1], q[2], k[2], q[3], precision, causal=causal)

    return cost


def _rows_by_last(call: Call, model: Callable[[int, int, str], Cost]) -> Cost | None:
    inputs = _tensors(call)
    if not inputs:
        return None
    shape, precision = inputs[0]
    return model(_numel(shape) // shape[-1], shape[-1], precision)


def _softmax_backward(call: Call) -> Cost | None:
    inputs = _tensors(call)  # (grad_output, output, dim, dtype): dx = y * (dy - sum(dy * y))
    if len(inputs) < 2:
        return None
    shape, precision = inputs[0]
    return elementwise(_numel(shape), precision, inputs=2, flops_per_element=4)


_SILU = 5  # x * sigmoid(x): the sigmoid's negate, exp, add and divide, then the product
# Special-function evaluations: exp, log, tanh, the roots, and the reciprocal an IEEE
# division of two tensors compiles to (MUFU.RCP plus FMAs; PyTorch builds without fast
# math), so sigmoid and SiLU count two. ``div`` stays vector work: ATen divides by a CPU
# scalar as a multiply by its reciprocal, and counting it on the special function units
# could put a bound above a real kernel.
_UNARY = {  # name: (FLOPs per element, of which special-function evaluations)
    "neg": (1, 0),
    "abs": (1, 0),
    "relu": (1, 0),
    "reciprocal": (1, 1),
    "pow": (1, 0),
    "square": (1, 0),
    "sqrt": (1, 1),
    "rsqrt": (1, 1),
    "exp": (1, 1),
    "log": (1, 1),
    "tanh": (1, 1),
    "sigmoid": (4, 2),
    "silu": (_SILU, 2),
    "gelu": (GELU_FLOPS_PER_ELEMENT, 1),
}
_BINARY = {
    "add": (1, 0),
    "sub": (1, 0),
    "mul": (1, 0),
    "div": (1, 0),
    "maximum": (1, 0),
    "minimum": (1, 0),
    "threshold_backward": (1, 0),  # ReLU's backward: keep dy where x > 0
    "silu_backward": (_SILU + 4, 2),  # dy * s * (1 + x (1 - s)), s = sigmoid(x) recomputed
    "gelu_backward": (GELU_FLOPS_PER_ELEMENT + 4, 1),
}
_TERNARY = {
    "addcmul": (3, 0),  # x + value * a * b
    "addcdiv": (3, 1),  # x + value * a / b: the division's reciprocal
    "lerp": (3, 0),  # x + w * (y - x)
    "where": (1, 0),
}


def _register() -> dict[str, Callable[[Call], Cost | None]]:
    models: dict[str, Callable[[Call], Cost | None]] = {}
    for op in ("mm", "addmm", "bmm", "baddbmm"):
        models[f"aten::{op}"] = _matmul
    for table, tensors in ((_UNARY, 1), (_BINARY, 2), (_TERNARY, 3)):
        for op, (flops, special) in table.items():
            for name in (op, f"{op}_"):
                models[f"aten::{name}"] = _pointwise(flops, special, tensors=tensors)
    models["aten::copy_"] = _copy
    models["aten::fill_"] = models["aten::zero_"] = _write_only
    models["aten::sum"] = models["aten::mean"] = _reduction
    models["aten::_softmax"] = lambda c: _rows_by_last(c, softmax)
    models["aten::_softmax_backward_data"] = _softmax_backward
    models["aten::native_layer_norm"] = lambda c: _rows_by_last(c, layernorm)
    models["aten::_fused_rms_norm"] = lambda c: _rows_by_last(c, rmsnorm)
    # fused attention kernels; the argument holding is_causal differs between them
    models["aten::_scaled_dot_product_flash_attention_for_cpu"] = _sdpa(4)
    models["aten::_scaled_dot_product_flash_attention"] = _sdpa(4)
    models["aten::_scaled_dot_product_efficient_attention"] = _sdpa(6)
    models["aten::_scaled_dot_product_cudnn_attention"] = _sdpa(6)
    models["aten::_scaled_dot_product_flash_attention_for_cpu_backward"] = _sdpa_backward(7)
    models["aten::_scaled_dot_product_flash_attention_backward"] = _sdpa_backward(10)
    models["aten::_scaled_dot_product_efficient_attention_backward"] = _sdpa_backward(10)
    return models


ATEN_MODELS = _register()
"""有模型的 aten 算子：名称 -> 以 :class:`Call` 为参数、返回 Cost 或 None 的函数。"""

HELPERS = frozenset({"aten::copy_", "aten::fill_", "aten::zero_"})
"""其他 kernel 调用来填充或搬运输出的、有模型的算子。若一个算子下面有模型的只有这些，它仍算作一个
单独的 kernel。
"""

__all__ = [
    "ATEN_MODELS",
    "HELPERS",
    "Call",
    "model",
    "precision_of",
]


def model(call: Call) -> Cost | None:
    """一次调用记录的 Cost；没有适用的模型时为 None。

    Examples
    --------
    RMSNorm 中对 512 行求倒数平方根，FP32：每行读一次、写一次、做一次特殊函数运算：

    >>> c = model(Call("aten::rsqrt", ((512, 1),), ("float",)))
    >>> c.bytes, c.special_flops
    (4096, 512)
    >>> model(Call("aten::view", ((4, 8), ()), ("float", "ScalarList"))) is None
    True
    """
    entry = ATEN_MODELS.get(call.name)
    return None if entry is None else entry(call)
