"""attention、softmax、归一化、损失、dropout 与 tensor 列表上的 kernel 的模型（见
:mod:`roofline_book.measure.profile.atenops`）。

参数都按名字读（:meth:`~roofline_book.measure.profile.atencalls.Call.tensor`、
:meth:`~roofline_book.measure.profile.atencalls.Call.value`）：``is_causal`` 在各个 SDPA kernel
中的位置
各不相同，``normalized_shape`` 决定归一化的行，``dim`` 决定 softmax 沿哪一维。
"""

from __future__ import annotations

import dataclasses

from ...dtypes import bytes_per_element
from ...ops import (
    SOFTMAX_FLOPS_PER_ELEMENT,
    Cost,
    adamw,
    attention,
    attention_backward,
    elementwise,
    layernorm,
    rmsnorm,
    softmax,
)
from ...ops.registry import Entry
from .atencalls import Call, itemsize, nbytes, numel, precision_of, rows_cols


def _qkv(call: Call, query: str = "query") -> tuple[int, int, int, int, int, int, str] | None:
    """SDPA 的 (batch, heads, kv_heads, seq_q, seq_k, head_dim, precision)，各自读自 Q 与 K/V。"""
    q, k, v = call.tensor(query), call.tensor("key"), call.tensor("value")
    if q is None or k is None or v is None or any(len(t[0]) != 4 for t in (q, k, v)):
        return None
    (b, h, sq, d), (bk, hk, sk, dk), (bv, hv, sv, dv) = q[0], k[0], v[0]
    precision = precision_of(q[1])
    if precision is None or (bk, hk, sk, dk) != (bv, hv, sv, dv) or (bk, dk, dv) != (b, d, d):
        return None
    if hk > h or h % hk:
        return None
    return b, h, hk, sq, sk, d, precision


def _causal_keys(causal: bool, seq_q: int, seq_k: int) -> int:
    """PyTorch 的 ``is_causal`` 是左上对齐（``ones(L, S).tril()``）：``seq_q < seq_k`` 时 query
    只看到前 ``seq_q`` 个 key。按右下对齐的 :func:`~roofline_book.ops.attention` 在
    ``seq_q x seq_q`` 上计它们；``seq_q >= seq_k`` 时右下对齐保留的对数更少，仍是下界。
    """
    return min(seq_q, seq_k) if causal else seq_k


def _mask_bytes(call: Call) -> int:
    return sum(nbytes(call.tensor(name)) for name in ("attn_mask", "attn_bias"))


def sdpa(impl: str = "flash", *, logsumexp: bool = False):
    """融合 attention kernel 的前向：Q、K、V 为 (batch, heads, seq, head_dim)，参数按名读。

    ``logsumexp``：kernel 总是写出每行的 logsumexp（FP32，反向要用：CPU 与 CUDA 的 flash
    kernel）；其余的只在 ``compute_log_sumexp=True`` 时写出它。
    """

    def cost(call: Call) -> Cost | None:
        shapes = _qkv(call)
        if shapes is None:
            return None
        b, h, hk, sq, sk, d, precision = shapes
        masked = _mask_bytes(call)
        causal = call.value("is_causal") is True and not masked
        keys = _causal_keys(causal, sq, sk) if impl == "flash" else sk  # unfused: every score
        c = attention(b, h, sq, keys, d, precision, impl=impl, causal=causal, kv_heads=hk)
        lse = logsumexp or call.value("compute_log_sumexp") is True
        return c + Cost(0, masked, 4 * b * h * sq if lse else 0, kernels=0)

    return cost


def sdpa_backward(call: Call) -> Cost | None:
    """融合 attention kernel 的反向：grad_out、query、key、value 与 ``is_causal`` 按名读。"""
    shapes = _qkv(call)
    if shapes is None or call.tensor("grad_out") is None and call.tensor("grad_out_") is None:
        return None
    b, h, hk, sq, sk, d, precision = shapes
    masked = _mask_bytes(call)
    causal = call.value("is_causal") is True and not masked
    c = attention_backward(b, h, sq, _causal_keys(causal, sq, sk), d, precision, causal=causal,
                           kv_heads=hk)  # fmt: skip
    return c + Cost(0, masked + nbytes(call.tensor("logsumexp")), 0, kernels=0)  # L read back


def _along(call: Call, arg: str = "self") -> tuple[int, int, str, str] | None:
    """沿记录下的 ``dim`` 的 (行数, 每行元素数, precision, dtype)。"""
    source = call.tensor(arg)
    dim = call.value("dim")
    if source is None or not source[0] or not isinstance(dim, int):
        return None
    precision = precision_of(source[1])
    if precision is None:
        return None
    cols = source[0][dim % len(source[0])]
    return numel(source[0]) // cols, cols, precision, source[1]


def _upcast(call: Call, rows: int, cols: int, precision: str) -> Cost:
    """``half_to_float=True`` 时输出是 FP32：多写的字节。"""
    if call.value("half_to_float") is True:
        return Cost(0, 0, rows * cols * (4 - bytes_per_element(precision)), kernels=0)
    return Cost(0, 0, 0, kernels=0)


def softmax_(call: Call) -> Cost | None:
    along = _along(call)
    if along is None:
        return None
    rows, cols, precision, _ = along
    return softmax(rows, cols, precision) + _upcast(call, rows, cols, precision)


def log_softmax(call: Call) -> Cost | None:
    """``x - max - log(sum(exp(x - max)))``：每个元素 max、减、exp、累加、再减（5，一个 exp），
    每行一个 log。
    """
    along = _along(call)
    if along is None:
        return None
    rows, cols, precision, _ = along
    c = elementwise(rows * cols, precision, flops_per_element=SOFTMAX_FLOPS_PER_ELEMENT,
                    special_per_element=1)  # fmt: skip
    log = Cost(rows, 0, 0, kernels=0, special_flops=rows)
    return c + log + _upcast(call, rows, cols, precision)


def softmax_backward(flops: int, special: int):
    """(grad_output, output, dim, input_dtype)：读两个 tensor，写一个。

    softmax：``dx = y * (dy - sum(dy * y))``（4）；log_softmax：``dx = dy - exp(y) * sum(dy)``
    （累加、exp、乘、减，4，一个 exp）。
    """

    def cost(call: Call) -> Cost | None:
        along = _along(call, "grad_output")
        if along is None:
            return None
        rows, cols, precision, _ = along
        return elementwise(rows * cols, precision, inputs=2, flops_per_element=flops,
                           special_per_element=special)  # fmt: skip

    return cost


def _norm_inputs(call: Call) -> tuple[int, int, str, int, int] | None:
    """(行数, 每行元素数, precision, 权重的字节数, 权重个数) ，按 ``normalized_shape`` 分行。"""
    source = call.tensor("input")
    if source is None or not source[0]:
        return None
    precision = precision_of(source[1])
    shape = rows_cols(source[0], call.value("normalized_shape"))
    if precision is None or shape is None:
        return None
    weights = [w for w in (call.tensor("weight"), call.tensor("bias")) if w is not None]
    size = itemsize(weights[0][1]) if weights else bytes_per_element(precision)
    return shape[0], shape[1], precision, size or 0, len(weights)


def layer_norm(call: Call) -> Cost | None:
    """:func:`~roofline_book.ops.layernorm`，再写出每行的 mean 与 rstd（反向要用）。"""
    found = _norm_inputs(call)
    if found is None:
        return None
    rows, d, precision, w, weights = found
    c, s = layernorm(rows, d, precision), bytes_per_element(precision)
    # x, and gamma and beta when given (elementwise_affine=False has neither); y, mean, rstd
    return dataclasses.replace(c, bytes_read=s * rows * d + weights * d * w,
                               bytes_written=s * rows * d + 2 * s * rows)  # fmt: skip


def rms_norm(call: Call) -> Cost | None:
    """:func:`~roofline_book.ops.rmsnorm`，再写出每行的 rstd。"""
    found = _norm_inputs(call)
    if found is None:
        return None
    rows, d, precision, w, weights = found
    c, s = rmsnorm(rows, d, precision), bytes_per_element(precision)
    return dataclasses.replace(c, bytes_read=s * rows * d + weights * d * w,
                               bytes_written=s * rows * d + s * rows)  # fmt: skip


def norm_backward(flops: int, stats: int):
    """LayerNorm / RMSNorm 的反向：读 dy、x、每行的统计量（mean、rstd）与权重，写 dx 与权重梯度。

    FLOPs（NB，本包的约定）：LayerNorm 每个元素 13 次（重算 ``x_hat = (x - mean) * rstd``，
    ``g = dy * gamma``，两个行内求和，``dx = rstd * (g - mean(g) - x_hat * mean(g x_hat))``，
    dgamma 与 dbeta 的累加）；RMSNorm 9 次（没有 mean 与 dbeta）。
    """

    def cost(call: Call) -> Cost | None:
        found = _norm_inputs(call)
        if found is None:
            return None
        rows, d, precision, w, weights = found
        s, n = bytes_per_element(precision), rows * d
        mask = call.value("output_mask")
        grads = sum(bool(m) for m in mask[1:]) if isinstance(mask, list) else weights
        wants_dx = not isinstance(mask, list) or bool(mask[0])
        read = 2 * s * n + stats * rows * s + (d * w if weights else 0)
        written = (s * n if wants_dx else 0) + min(grads, weights) * d * w
        return Cost(flops * n, read, written, vector_flops=flops * n)

    return cost


def nll_loss(call: Call) -> Cost | None:
    """nll_loss_forward(self, target, weight, reduction, ignore_index)：每个目标取出一个 log
    概率并累加。

    读下标、取出的 N 个值（NB：只计取出的元素，是下界）和相应的权重；写出损失（每个样本一个，
    或归约后一个）与 total_weight。
    """
    source, target = call.tensor("self"), call.tensor("target")
    if source is None or target is None or precision_of(source[1]) is None:
        return None
    s = itemsize(source[1]) or 0
    n = numel(target[0]) if target[0] else 1
    weighted = call.tensor("weight") is not None
    out = n if call.value("reduction") == 0 else 1
    return Cost(n * (1 + weighted), nbytes(target) + s * n * (1 + weighted), s * (out + 1),
                vector_flops=n * (1 + weighted))  # fmt: skip


def nll_loss_backward(call: Call) -> Cost | None:
    """每个目标的位置写一个梯度（其余为 0，由把 grad_input 清零的 ``zero_`` 计）。"""
    source, target = call.tensor("self"), call.tensor("target")
    if source is None or target is None or precision_of(source[1]) is None:
        return None
    s = itemsize(source[1]) or 0
    n = numel(target[0]) if target[0] else 1
    return Cost(n, nbytes(target) + nbytes(call.tensor("grad_output")), s * n, vector_flops=n)


def mse(flops: int, backward: bool):
    """mse_loss（差、平方、累加：3）与它的反向（差、乘 2/N、乘 dy：3）。"""

    def cost(call: Call) -> Cost | None:
        a, b = call.tensor("self"), call.tensor("target")
        if a is None or b is None or precision_of(a[1]) is None or a[0] != b[0]:
            return None
        n, s = numel(a[0]), itemsize(a[1]) or 0
        out = n if backward or call.value("reduction") == 0 else 1
        return Cost(flops * n, 2 * s * n, s * out, vector_flops=flops * n)

    return cost


def dropout(call: Call) -> Cost | None:
    """native_dropout(input, p, train)：读 x，写 y 与一字节的 mask；比较与缩放各 1 次
    （随机数不计）。
    """
    x = call.tensor("input")
    if x is None or not x[0] or precision_of(x[1]) is None:
        return None
    n = numel(x[0])
    return Cost(2 * n, nbytes(x), nbytes(x) + n, vector_flops=2 * n)


def dropout_backward(call: Call) -> Cost | None:
    dy, mask = call.tensor("grad_output"), call.tensor("mask")
    if dy is None or mask is None or not dy[0] or precision_of(dy[1]) is None:
        return None
    n = numel(dy[0])
    return Cost(n, nbytes(dy) + nbytes(mask), nbytes(dy), vector_flops=n)


# --------------------------------------------------------------------------
# Tensor-list kernels: foreach ops and the fused optimizer


def foreach(flops: int, special: int = 0):
    """``_foreach_<op>``：对列表中每个 tensor 做一次 elementwise，各 tensor 列表参数各读一次。"""

    def cost(call: Call) -> Cost | None:
        lists = [lst for lst in call.lists if lst]
        if not lists:
            return None
        total = Cost(0, 0, 0, kernels=1)
        for i, (shape, dtype) in enumerate(lists[0]):
            precision = precision_of(dtype)
            if precision is None:
                return None
            if not shape:  # 0-dim tensors (the optimizer's step counts): the work, no bytes
                total += Cost(flops, 0, 0, 0, vector_flops=flops - special, special_flops=special)
                continue
            n = numel(shape)
            read = sum(nbytes(lst[i]) for lst in lists if i < len(lst))
            c = elementwise(n, precision, flops_per_element=flops, special_per_element=special)
            total += dataclasses.replace(c, bytes_read=read, kernels=0)
        return total

    return cost


def fused_adamw(call: Call) -> Cost | None:
    """``_fused_adamw_(self, grads, exp_avgs, exp_avg_sqs, ...)``：
    :func:`~roofline_book.ops.adamw` 的 fused 实现，每个参数 tensor 按它自己的大小与精度。
    """
    params = call.tensor_list("self")
    if not params:
        return None
    total = Cost(0, 0, 0, kernels=1)
    for shape, dtype in params:
        precision = precision_of(dtype)
        if precision is None or not shape:
            return None
        total += dataclasses.replace(adamw(numel(shape), "fused", param_dtype=precision),
                                     kernels=0)  # fmt: skip
    return total


def foreach_write(call: Call) -> Cost | None:
    """``_foreach_zero_``：只写列表中的每个 tensor。"""
    lists = [lst for lst in call.lists if lst]
    if not lists:
        return None
    return Cost(0, 0, sum(nbytes(t) for t in lists[0]))


# --------------------------------------------------------------------------
# Registered operators: the call's arguments read by the operator's parameter names


def _source(call: Call) -> tuple[tuple[int, ...], str] | None:
    return call.tensor("input") or call.tensor("self")


def _normalized(call: Call) -> tuple[int, int] | None:
    source = _source(call)
    return None if source is None else rows_cols(source[0], call.value("normalized_shape"))


def _precision(tensor: str):
    def read(call: Call) -> str | None:
        found = call.tensor(tensor)
        return None if found is None else precision_of(found[1])

    return read


#: 登记过的算子的参数怎样从一次调用记录中读出，按参数名：``rows`` 与 ``d`` 由 ``normalized_shape``
#: 分行，``numel`` 是输入的元素个数，``dtype`` 是输入的精度，``weight_dtype`` 是 weight 的精度。
#: 一个新算子的参数名若不在这里，它的 aten 算子就没有模型（返回 None），而不是错的数。
PARAMETERS = {
    "rows": lambda call: (_normalized(call) or (None, None))[0],
    "d": lambda call: (_normalized(call) or (None, None))[1],
    "numel": lambda call: None if (s := _source(call)) is None else numel(s[0]),
    "dtype": lambda call: None if (s := _source(call)) is None else precision_of(s[1]),
    "weight_dtype": _precision("weight"),
}


def registered(entry: Entry):
    """登记表中一个算子作为它所列 aten 算子的模型（:attr:`Entry.aten
    <roofline_book.ops.registry.Entry.aten>`）：参数按 :data:`PARAMETERS` 从记录中读出。

    调用不是这个算子所描述的全部工作时返回 None（交给按 schema 读的模型）：可省略的 ``weight``、
    ``bias`` 没有给出，或 ``output_mask`` 省去了某个输出。
    """

    def cost(call: Call) -> Cost | None:
        names = call.names()
        if any(call.tensor(n) is None for n in ("weight", "bias") if n in names):
            return None
        mask = call.value("output_mask")
        if isinstance(mask, list) and not all(mask):
            return None
        given = {}
        for param in entry.params:
            read = PARAMETERS.get(param.name)
            value = None if read is None else read(call)
            if value is None and param.required:
                return None
            if value is not None:
                given[param.name] = value
        try:
            return entry.call(given)[0]
        except (ValueError, TypeError):  # the model refuses what was recorded
            return None

    return cost


__all__ = [
    "PARAMETERS",
    "dropout",
    "dropout_backward",
    "foreach",
    "foreach_write",
    "fused_adamw",
    "layer_norm",
    "log_softmax",
    "mse",
    "nll_loss",
    "nll_loss_backward",
    "norm_backward",
    "registered",
    "rms_norm",
    "sdpa",
    "sdpa_backward",
    "softmax_",
    "softmax_backward",
]
