"""profiler 记录的 aten 算子在本包中的模型，按输入 shape 与按名读取的参数计算。

:data:`ATEN_MODELS` 中每个算子名一项：给它一次记录下的调用
（:class:`~roofline_book.measure.profile.atencalls.Call`：输入 shape、dtype，以及 profiler
保留的标量
参数与 tensor 列表），它从 :mod:`roofline_book.ops` 算出这次调用的
:class:`~roofline_book.ops.Cost`；记录中的信息不够时返回 ``None``。没有列出的算子没有模型：
attribution 会列出它的时间，但不给数字，而不是编造数字。登记表
（:data:`roofline_book.ops.registry.REGISTRY`）中一个算子列出的 aten 算子，以这个算子的函数为模型，
参数按名字从记录中读出；记录的调用不是它描述的全部工作时（没有 weight、省去一个输出），仍用这里按
schema 读的模型。

参数按名字读，不按位置：profiler 按算子 schema 的顺序记下每个参数（关键字参数也在内），
:meth:`~roofline_book.measure.profile.atencalls.Call.names` 从所装 torch 的
``torch.ops.<ns>.<op>.<overload>._schema.arguments`` 中取参数个数与记录相符、类型最吻合的那个
overload，得到每个位置的名字。于是 ``is_causal``、``dim``、``normalized_shape`` 在各个 kernel
里不管排在第几位都读得对。

约定（NB）：输入 ``[]`` 是标量或 0 维 tensor，不搬运字节（记录中分不出包成 0 维 tensor 的
Python 数）；只作用于 0 维 tensor 的算子（优化器的步数 ``step += 1``）照样计 FLOPs；elementwise
的输出取全部 tensor 输入（bool 与整数的也算）广播后的 shape，精度按 torch 的类型提升；原地算子
（``add_``）读写自己的第一个输入，代价与非原地版本相同。每个元素的 FLOPs 按
:func:`roofline_book.ops.elementwise`
的约定计：每次算术运算计 1，一次超越函数在特殊函数单元上计 1；随机数生成器的整数运算
不计 FLOPs。两个 shape 相同的输入即使其实是同一个 tensor（AdamW 的
``addcmul_(grad, grad)``），也按两个 tensor 计：shape 分辨不出来。

Examples
--------
>>> call = Call("aten::mm", ((512, 512), (512, 1408)), ("float", "float"))
>>> model(call).flops                     # 2 * 512 * 512 * 1408
738197504
>>> model(Call("aten::add", ((2, 256, 512), (2, 256, 512), ()), ("float",) * 2 + ("Scalar",))).bytes
3145728

对 65536 x 4 的 tensor 沿第 0 维求和，只写出 4 个数：

>>> s = model(Call("aten::sum", ((65536, 4), (), (), ()), ("float", "ScalarList", "Scalar", ""),
...                (None, [0], False, None)))
>>> s.bytes_written
16
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...dtypes import bytes_per_element
from ...ops import GELU_FLOPS_PER_ELEMENT, Cost, gemm
from ...ops.registry import REGISTRY
from . import atenlayers as layers
from .atencalls import (
    WRAPPERS,
    Call,
    Shape,
    argument_names,
    broadcast,
    data_tensors,
    float_tensors,
    is_wrapper,
    itemsize,
    nbytes,
    numel,
    precision_of,
    reduced_dims,
    schemas,
)

# --------------------------------------------------------------------------
# Elementwise, copies and fills


def _result_precision(floats: list[tuple[Shape, str]]) -> str:
    """elementwise 输出的精度，按 torch 的类型提升：有维度的浮点 tensor 优先，全是 0 维时才取
    0 维的（``torch.tensor(2.0) * x_bf16`` 是 BF16）；精度不同时取较宽的，位宽相同的 BF16 与 FP16
    得 FP32。
    """
    shaped = [p for s, p in floats if s] or [p for _, p in floats]
    widest = max(bytes_per_element(p) for p in shaped)
    kinds = {p for p in shaped if bytes_per_element(p) == widest}
    return kinds.pop() if len(kinds) == 1 else "fp32"


def _pointwise(flops: int, special: int = 0, *, tensors: int | None = None):
    """一个 elementwise 算子：输出取所有 tensor 输入广播后的 shape，每个 tensor 输入读一次。

    bool 与整数的 tensor 也是输入（``where`` 的 condition、``x * mask``）：它们参与广播，按自己的
    元素大小读；只有它们的调用（整数的 ``add``）没有模型。输出的精度见 :func:`_result_precision`。
    """

    def cost(call: Call) -> Cost | None:
        names = call.names()
        inputs = [
            (i, shape, dtype)
            for i, (shape, dtype) in enumerate(zip(call.shapes, call.dtypes, strict=False))
            if itemsize(dtype) is not None and not (i < len(names) and names[i] == "out")
        ][:tensors]
        floats = [(s, p) for _, s, d in inputs if (p := precision_of(d)) is not None]
        if not floats:
            return None
        out_shape = broadcast([s for _, s, _ in inputs])
        if out_shape is None:
            return None
        n, precision = numel(out_shape), _result_precision(floats)
        if not out_shape:  # only 0-dim tensors: the work, no bytes (see the module's NB)
            return Cost(flops, 0, 0, vector_flops=flops - special, special_flops=special)
        # each input's distinct elements once (an expanded one has fewer than its shape)
        read = sum(call.distinct(i) * (itemsize(d) or 0) for i, s, d in inputs if s)
        return Cost(flops * n, read, n * bytes_per_element(precision),
                    vector_flops=(flops - special) * n, special_flops=special * n)  # fmt: skip

    return cost


#: GELU 的 erf 形式 ``0.5 x (1 + erf(x / sqrt(2)))`` 每个元素的 FLOPs：缩放、erf（NB：一次
#: 求值计 1，在特殊函数单元上）、加、两次乘。``nn.GELU()`` 默认用它；``approximate="tanh"``
#: 是 ``roofline_book.ops.GELU_FLOPS_PER_ELEMENT`` 的 tanh 形式。
GELU_ERF_FLOPS_PER_ELEMENT = 5


def _gelu(call: Call) -> Cost | None:
    """``gelu(self, approximate)``：按记录下的 ``approximate`` 取 erf 形式或 tanh 形式。"""
    tanh = call.value("approximate") == "tanh"
    flops = GELU_FLOPS_PER_ELEMENT if tanh else GELU_ERF_FLOPS_PER_ELEMENT
    return _pointwise(flops, 1)(call)


def _write_only(call: Call) -> Cost | None:
    """``fill_``、``zero_`` 与随机数的原地生成（``uniform_``、``normal_``）：只写自己。"""
    inputs = data_tensors(call)
    if not inputs:
        return None
    return Cost(0, 0, nbytes(inputs[0]))


def _copy(call: Call) -> Cost | None:
    """``copy_(self, src)``：读 src 的不同元素（从 ``expand`` 出来的 bias 复制时只有一行），
    写 self，各按自己的 dtype；0 维的复制不搬运字节。
    """
    dst, src = call.tensor("self"), call.tensor("src")
    if dst is None or src is None or itemsize(dst[1]) is None or itemsize(src[1]) is None:
        return None
    read = call.distinct(call.names().index("src")) * (itemsize(src[1]) or 0) if src[0] else 0
    return Cost(0, read, nbytes(dst))


def _arange(call: Call) -> Cost | None:
    """``arange.start_out(start, end, step, out)``：写出 ``ceil((end - start) / step)`` 个元素。"""
    out = call.tensor("out")
    start, end, step = call.value("start", 0), call.value("end"), call.value("step", 1)
    numbers = all(isinstance(v, (int, float)) for v in (start, end, step))
    if out is None or not numbers or not step or itemsize(out[1]) is None:
        return None
    n = max(0, math.ceil((end - start) / step))  # type: ignore[operator]
    return Cost(0, 0, n * (itemsize(out[1]) or 0)) if n else None


def _cat(call: Call) -> Cost | None:
    tensors = call.tensor_list("tensors")  # the output holds every input once
    if not tensors:
        return None
    moved = sum(nbytes(t) for t in tensors)
    return Cost(0, moved, moved) if moved else None


def _gather_rows(call: Call) -> Cost | None:
    """``index_select(self, dim, index)`` 与 ``embedding(weight, indices)``：读下标和选中的各行。"""
    source = call.tensor("self") or call.tensor("weight")
    index = call.tensor("index") or call.tensor("indices")
    if source is None or index is None or not source[0]:
        return None
    dim = 0 if call.tensor("weight") else call.value("dim", 0)
    if not isinstance(dim, int):
        return None
    row = numel(source[0]) // source[0][dim % len(source[0])]
    out = max(1, numel(index[0]) if index[0] else 1) * row * (itemsize(source[1]) or 0)
    return Cost(0, nbytes(index) + out, out) if out else None


def _scatter_rows(grad: str, indices: str):
    """按下标把梯度的各行累加进一个 tensor（``embedding_dense_backward``、``index_add_``）。

    读梯度与下标；NB：被累加的各行至少写一行，重复的下标分辨不出来，所以写的字节取一行
    （下界）；把输出先清零的 ``zeros`` 由它自己那一行计。
    """

    def cost(call: Call) -> Cost | None:
        source, index = call.tensor(grad), call.tensor(indices)
        if source is None or index is None or not source[0]:
            return None
        s = itemsize(source[1]) or 0
        n = numel(source[0])
        row = n // max(1, numel(index[0]) if index[0] else 1)
        return Cost(n, nbytes(source) + nbytes(index), s * row, vector_flops=n)

    return cost


# --------------------------------------------------------------------------
# Matrix products and attention


def _matmul(call: Call) -> Cost | None:
    inputs = float_tensors(call)
    if call.name.endswith(("addmm", "baddbmm")):  # (bias, A, B): the bias is read once more
        if len(inputs) < 3:
            return None
        (bias, p_bias), inputs = inputs[0], inputs[1:]
        extra = Cost(0, numel(bias) * bytes_per_element(p_bias), 0, kernels=0)
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


# --------------------------------------------------------------------------
# Reductions, softmax, norms, losses


def _reduction(vector: int = 1, special: int = 0, per_output: int = 0, *, indices: bool = False,
               values: bool = True):  # fmt: skip
    """沿记录下的 ``dim`` 归约（None 或 [] 为全部维度）：读每个元素，写出归约后的 tensor。

    输出的元素个数是输入的元素个数除以被归约各维的大小（``keepdim`` 不改变它）；记录了
    ``out`` tensor 时按它的 shape 与精度计。每个输入元素 ``vector`` 次向量运算、``special`` 次
    特殊函数求值，每个输出 ``per_output`` 次特殊函数求值（范数的平方根）。``indices``：按维归约
    时还写出 int64 的下标（``max.dim``）。两个 tensor 的 ``max(a, b)`` 是 elementwise。
    """

    def cost(call: Call) -> Cost | None:
        if call.tensor("other") is not None:
            return _pointwise(1)(call)
        source = call.tensor("self") or call.tensor("input")
        if source is None or not source[0] or precision_of(source[1]) is None:
            return None
        shape, dtype = source
        s, n = itemsize(dtype) or 0, numel(shape)
        out = call.tensor("out")
        if out is not None and out[0]:
            outputs, out_size = numel(out[0]), itemsize(out[1]) or s
        else:
            dims = reduced_dims(call.value("dim"), len(shape))
            if dims is None:
                return None
            outputs, out_size = n // numel([shape[d] for d in dims]), s
        by_dim = indices and "dim" in call.names()
        written = (out_size * outputs if values else 0) + (8 * outputs if by_dim else 0)
        specials = special * n + per_output * outputs
        return Cost(vector * n + specials, s * n, written, vector_flops=vector * n,
                    special_flops=specials)  # fmt: skip

    return cost


# --------------------------------------------------------------------------
# The table


_SILU = 5  # x * sigmoid(x): the sigmoid's negate, exp, add and divide, then the product
# Special-function evaluations: exp, log, tanh, erf, sin/cos, the roots, and the reciprocal an
# IEEE division of two tensors compiles to (MUFU.RCP plus FMAs; PyTorch builds without fast
# math), so sigmoid and SiLU count two. ``div`` stays vector work: ATen divides by a CPU
# scalar as a multiply by its reciprocal, and counting it on the special function units
# could put a bound above a real kernel.
_UNARY = {  # name: (FLOPs per element, of which special-function evaluations)
    "neg": (1, 0),
    "abs": (1, 0),
    "relu": (1, 0),
    "clamp": (2, 0),
    "clamp_min": (1, 0),
    "clamp_max": (1, 0),
    "hardtanh": (2, 0),
    "leaky_relu": (2, 0),
    "reciprocal": (1, 1),
    "pow": (1, 0),
    "square": (1, 0),
    "sqrt": (1, 1),
    "rsqrt": (1, 1),
    "exp": (1, 1),
    "log": (1, 1),
    "erf": (1, 1),
    "sin": (1, 1),
    "cos": (1, 1),
    "tanh": (1, 1),
    "sigmoid": (4, 2),
    "silu": (_SILU, 2),
}
_BINARY = {
    "add": (1, 0),
    "sub": (1, 0),
    "rsub": (1, 0),
    "mul": (1, 0),
    "div": (1, 0),
    "maximum": (1, 0),
    "minimum": (1, 0),
    "threshold_backward": (1, 0),  # ReLU's backward: keep dy where x > 0
    "sigmoid_backward": (3, 0),  # dy * y * (1 - y)
    "tanh_backward": (3, 0),  # dy * (1 - y * y)
    "silu_backward": (_SILU + 4, 2),  # dy * s * (1 + x (1 - s)), s = sigmoid(x) recomputed
    "gelu_backward": (GELU_FLOPS_PER_ELEMENT + 4, 1),
}
_TERNARY = {
    "addcmul": (3, 0),  # x + value * a * b
    "addcdiv": (3, 1),  # x + value * a / b: the division's reciprocal
    "lerp": (3, 0),  # x + w * (y - x)
    "where": (1, 0),
}
_RANDOM = ("uniform_", "normal_", "bernoulli_", "random_", "exponential_", "log_normal_")
#: 只改 tensor 的元数据、或只分配而不搬运数据的算子：它们的模型是零（不读写 tensor 数据）。
VIEWS = frozenset(
    f"aten::{op}"
    for op in (
        "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose",
        "permute", "expand", "expand_as", "unsqueeze", "squeeze", "select", "slice", "split",
        "split_with_sizes", "chunk", "unbind", "narrow", "detach", "detach_", "alias",
        "lift_fresh", "flatten", "unflatten", "view_as", "numpy_T", "empty", "empty_like",
        "empty_strided", "resize_", "result_type", "set_", "_local_scalar_dense",
        "is_nonzero", "requires_grad_", "_has_compatible_shallow_copy_type", "item",
        "broadcast_tensors", "expand_copy",
    )
)  # fmt: skip
_NO_WORK = Cost(0, 0, 0, kernels=0)


def _register() -> dict[str, Callable[[Call], Cost | None]]:
    models: dict[str, Callable[[Call], Cost | None]] = {}

    def add(name: str, fn: Callable[[Call], Cost | None]) -> None:
        if name in models:  # one model per op, as torch's flop_counter registers
            raise RuntimeError(f"duplicate model for {name}")
        models[name] = fn

    for op in ("mm", "addmm", "bmm", "baddbmm"):
        add(f"aten::{op}", _matmul)
    for table, tensors in ((_UNARY, None), (_BINARY, 2), (_TERNARY, 3)):
        for op, (flops, special) in table.items():
            for name in (op, f"{op}_"):
                add(f"aten::{name}", _pointwise(flops, special, tensors=tensors))
            if table is not _TERNARY or op != "where":
                for name in (f"_foreach_{op}", f"_foreach_{op}_"):
                    add(f"aten::{name}", layers.foreach(flops, special))
    for name in ("aten::gelu", "aten::gelu_"):
        add(name, _gelu)
    for name in VIEWS:
        add(name, lambda c: _NO_WORK)
    add("aten::copy_", _copy)
    for op in ("fill_", "zero_", *_RANDOM):
        add(f"aten::{op}", _write_only)
    add("aten::cat", _cat)
    add("aten::arange", _arange)
    add("aten::index_select", _gather_rows)
    add("aten::embedding", _gather_rows)
    add("aten::embedding_dense_backward", _scatter_rows("grad_output", "indices"))
    add("aten::index_add_", _scatter_rows("source", "index"))
    for op in ("sum", "mean", "amax", "amin", "prod"):
        add(f"aten::{op}", _reduction())
    add("aten::max", _reduction(indices=True))
    add("aten::min", _reduction(indices=True))
    add("aten::argmax", _reduction(values=False, indices=True))
    add("aten::linalg_vector_norm", _reduction(2, 0, 1))  # square, accumulate; a root per output
    add("aten::logsumexp", _reduction(3, 1, 1))  # max, subtract, exp, accumulate; a log
    add("aten::_softmax", layers.softmax_)
    add("aten::_log_softmax", layers.log_softmax)
    add("aten::_softmax_backward_data", layers.softmax_backward(4, 0))
    add("aten::_log_softmax_backward_data", layers.softmax_backward(4, 1))
    add("aten::native_layer_norm", layers.layer_norm)
    add("aten::native_layer_norm_backward", layers.norm_backward(13, 2))
    add("aten::_fused_rms_norm", layers.rms_norm)
    add("aten::_fused_rms_norm_backward", layers.norm_backward(9, 1))
    add("aten::nll_loss_forward", layers.nll_loss)
    add("aten::nll_loss_backward", layers.nll_loss_backward)
    add("aten::mse_loss", layers.mse(3, backward=False))
    add("aten::mse_loss_backward", layers.mse(3, backward=True))
    add("aten::native_dropout", layers.dropout)
    add("aten::native_dropout_backward", layers.dropout_backward)
    add("aten::_fused_adamw_", layers.fused_adamw)
    add("aten::_fused_adam_", layers.fused_adamw)
    add("aten::_foreach_zero_", layers.foreach_write)
    # fused attention kernels, every argument read by name from its schema
    for kernel in ("flash_attention_for_cpu", "flash_attention", "efficient_attention",
                   "cudnn_attention", "fused_attention_overrideable"):  # fmt: skip
        add(f"aten::_scaled_dot_product_{kernel}", layers.sdpa(logsumexp="flash" in kernel))
        add(f"aten::_scaled_dot_product_{kernel}_backward", layers.sdpa_backward)
    add("aten::_scaled_dot_product_attention_math", layers.sdpa("materialized"))
    # a registered operator is the model of the aten ops it names; the reading above stays for
    # the calls it does not describe (no weight, an output left out)
    for entry in REGISTRY.values():
        for name in entry.aten:
            models[name] = _first(layers.registered(entry), models.get(name))
    return models


def _first(*readings: Callable[[Call], Cost | None] | None) -> Callable[[Call], Cost | None]:
    """按顺序取第一个给出 Cost 的模型。"""

    def cost(call: Call) -> Cost | None:
        for reading in readings:
            found = None if reading is None else reading(call)
            if found is not None:
                return found
        return None

    return cost


ATEN_MODELS = _register()
"""有模型的 aten 算子：名称 -> 以 :class:`~roofline_book.measure.profile.atencalls.Call`
为参数、返回
Cost 或 None 的函数。
"""

HELPERS = frozenset({"aten::copy_", "aten::fill_", "aten::zero_"})
"""其他 kernel 调用来填充或搬运输出的、有模型的算子。若一个算子下面有模型的只有这些，它仍算作一个
单独的 kernel。
"""

__all__ = [
    "ATEN_MODELS",
    "HELPERS",
    "VIEWS",
    "WRAPPERS",
    "Call",
    "argument_names",
    "is_wrapper",
    "itemsize",
    "model",
    "precision_of",
    "schemas",
]


def model(call: Call) -> Cost | None:
    """一次调用记录的 Cost；没有适用的模型时为 None。

    Examples
    --------
    RMSNorm 中对 512 行求倒数平方根，FP32：每行读一次、写一次、做一次特殊函数运算：

    >>> c = model(Call("aten::rsqrt", ((512, 1),), ("float",)))
    >>> c.bytes, c.special_flops
    (4096, 512)

    ``view`` 不搬运数据：模型是零，而不是没有模型：

    >>> model(Call("aten::view", ((4, 8), ()), ("float", "ScalarList"))).bytes
    0
    >>> model(Call("aten::nonzero", ((4, 8),), ("float",))) is None
    True
    """
    entry = ATEN_MODELS.get(call.name)
    return None if entry is None else entry(call)
