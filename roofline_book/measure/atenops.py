"""The package's models for the aten operators a profiler records, read from their input shapes.

One entry per operator name in :data:`ATEN_MODELS`: given one recorded call
(:class:`Call`: the input shapes, dtypes and the scalar arguments the
profiler kept) it returns the :class:`~roofline_book.ops.Cost` of that call
from :mod:`roofline_book.ops`, or ``None`` where the record does not say
enough (a tensor list, whose shapes the profiler leaves out, or an integer
tensor). An operator not listed has no model: the attribution lists it with
its time and no figures, rather than invent them.

Conventions (NB): a ``[]`` input is a scalar or a 0-d tensor and moves no
bytes; an elementwise output has the broadcast shape of the inputs and the
first tensor input's precision; in-place operators (``add_``) read and
write their first input, which costs what an out-of-place one does. The
FLOPs per element are :func:`roofline_book.ops.elementwise`'s convention,
one per arithmetic operation, a transcendental counted as one on the special
function units. Two inputs of the same shape are counted as two tensors
even when they are one (AdamW's ``addcmul_(grad, grad)``): the shapes
cannot tell.

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
    """One recorded call of an operator: its name, input shapes, dtypes and scalar arguments.

    ``dtypes`` are the profiler's strings (``"float"``, ``"c10::BFloat16"``,
    ``"Scalar"``); ``concrete`` the scalar arguments it kept (``None`` for a
    tensor), where it kept any.
    """

    name: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...] = ()
    concrete: tuple[object, ...] = field(default=(), compare=False)


def precision_of(profiler_dtype: str) -> str | None:
    """The package's precision name of a profiler dtype string; None if it is no float type.

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
    """The float tensor inputs (not scalars) as (shape, precision)."""
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
    """An elementwise operator: every tensor input read, one output of the broadcast shape."""

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
    """sum / mean over some dimensions: read every element, write the reduced tensor."""
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
    """A fused attention kernel's forward: Q, K, V of shape (batch, heads, seq, head_dim)."""

    def cost(call: Call) -> Cost | None:
        inputs = _tensors(call)
        if len(inputs) < 3 or any(len(s) != 4 for s, _ in inputs[:3]):
            return None
        (q, precision), (k, _) = inputs[0], inputs[1]
        causal = _concrete_flag(call, causal_at)
        return attention(q[0], q[1], q[2], k[2], q[3], precision, impl="flash", causal=causal)

    return cost


def _sdpa_backward(causal_at: int):
    """A fused attention kernel's backward: (dO, Q, K, V, O, ...)."""

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
"""The modelled aten operators: name -> function of a :class:`Call` returning a Cost or None."""

HELPERS = frozenset({"aten::copy_", "aten::fill_", "aten::zero_"})
"""Modelled operators that other kernels call to fill or move their outputs. An operator
whose only modelled descendants are these still counts as a kernel of its own."""

__all__ = [
    "ATEN_MODELS",
    "HELPERS",
    "Call",
    "model",
    "precision_of",
]


def model(call: Call) -> Cost | None:
    """The Cost of one recorded call, or None where no model applies.

    Examples
    --------
    RMSNorm's reciprocal root over 512 rows, FP32: one read, one write, one
    special-function evaluation per row:

    >>> c = model(Call("aten::rsqrt", ((512, 1),), ("float",)))
    >>> c.bytes, c.special_flops
    (4096, 512)
    >>> model(Call("aten::view", ((4, 8), ()), ("float", "ScalarList"))) is None
    True
    """
    entry = ATEN_MODELS.get(call.name)
    return None if entry is None else entry(call)
