"""AdamW 的一步：各实现对优化器状态所做的各趟读写。"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, bytes_per_element, precision_name
from .cost import ZERO, Cost


@dataclass(frozen=True)
class Pass:
    """优化器一步中的一个 kernel：它读什么、写什么，每个参数几次运算（FLOP）。"""

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    flops: int
    special: int = 0
    """``flops`` 中有几次是特殊函数求值（平方根、除法的倒数）。"""
    fma: int = 0
    """``flops`` 中有几次配成 FMA，每个先乘后加计 2。"""


# The kernels that PyTorch's single-tensor AdamW (``foreach=False``) launches
# per parameter tensor, in order. ``denom`` is a temporary in the state dtype.
# FMAs: lerp is ``self + w * (end - self)`` (a subtract, then a multiply-add), addcmul
# ``self + v * (t1 * t2)`` and addcdiv ``self + v * (t1 / t2)`` end in a multiply-add.
# Divisions: addcdiv's ``t1 / t2`` is an IEEE division, a reciprocal on the special
# function units (PyTorch builds without fast math); the division by the Python float
# ``sqrt(bias_correction2)`` is a multiply by its reciprocal (ATen's div_true with a CPU
# scalar), so it stays vector work.
_ADAMW_UNFUSED = (
    Pass("param.mul_(1 - lr * weight_decay)", ("param",), ("param",), 1),
    Pass("exp_avg.lerp_(grad, 1 - beta1)", ("exp_avg", "grad"), ("exp_avg",), 3, fma=2),
    Pass("exp_avg_sq.mul_(beta2)", ("exp_avg_sq",), ("exp_avg_sq",), 1),
    Pass(
        "exp_avg_sq.addcmul_(grad, grad, 1 - beta2)",
        ("exp_avg_sq", "grad"),
        ("exp_avg_sq",),
        3,
        fma=2,
    ),
    Pass("denom = exp_avg_sq.sqrt()", ("exp_avg_sq",), ("denom",), 1, special=1),
    Pass("denom = denom / sqrt(bias_correction2)", ("denom",), ("denom",), 1),
    Pass("denom.add_(eps)", ("denom",), ("denom",), 1),
    Pass(
        "param.addcdiv_(exp_avg, denom, -step_size)",
        ("param", "exp_avg", "denom"),
        ("param",),
        3,
        special=1,
        fma=2,
    ),
)
# NB: the fused kernel does the same arithmetic in one pass; it divides by the bias
# correction's root as a tensor, one more reciprocal left out here (a bound may undercount).
_ADAMW_FUSED = (
    Pass(
        "_fused_adamw_",
        ("param", "grad", "exp_avg", "exp_avg_sq"),
        ("param", "exp_avg", "exp_avg_sq"),
        sum(p.flops for p in _ADAMW_UNFUSED),
        special=sum(p.special for p in _ADAMW_UNFUSED),
        fma=sum(p.fma for p in _ADAMW_UNFUSED),
    ),
)

ADAMW_IMPLS = ("loop", "foreach", "fused")

#: PyTorch ``multi_tensor_apply`` 中每个 thread block 处理的元素数（``kChunkSize``），以及
#: 一次 launch 最多携带的 block 数和 tensor 数，按 kernel 接收几个 tensor 列表区分（ATen
#: MultiTensorApply.cuh 中的 ``depth_to_max_blocks``、``depth_to_max_tensors``，CUDA 12 构建的
#: 4 KB kernel 参数上限）。
MULTI_TENSOR_CHUNK = 65536
MULTI_TENSOR_MAX_BLOCKS = 320
MULTI_TENSOR_MAX_TENSORS = (110, 64, 48, 36, 30)
#: CUDA 13 构建中的同样这些上限（MultiTensorApply.cuh 中的 ``CUDART_VERSION >= 13000``，
#: PyTorch 2.13），更大的 kernel 参数让每次 launch 携带 7 倍的量。
MULTI_TENSOR_MAX_BLOCKS_CUDA13 = 2240
MULTI_TENSOR_MAX_TENSORS_CUDA13 = (770, 448, 336, 252, 210)
_MULTI_TENSOR_LIMITS = {
    12: (MULTI_TENSOR_MAX_BLOCKS, MULTI_TENSOR_MAX_TENSORS),
    13: (MULTI_TENSOR_MAX_BLOCKS_CUDA13, MULTI_TENSOR_MAX_TENSORS_CUDA13),
}


def multi_tensor_launches(params: int, tensors: int, depth: int, *, cuda: int = 12) -> int:
    """一个 ``multi_tensor_apply`` kernel 对一个 tensor 列表做一趟至少要 launch 几次。

    每次 launch 最多携带 :data:`~roofline_book.ops.optimizer.MULTI_TENSOR_MAX_BLOCKS` 个 chunk（每个
    :data:`~roofline_book.ops.optimizer.MULTI_TENSOR_CHUNK`
    个元素），最多 ``MULTI_TENSOR_MAX_TENSORS[depth - 1]`` 个
    tensor，所以次数随元素个数增长，而不只随列表长度增长。``tensors`` 个 tensor 中的
    ``params`` 个元素至少构成 ``ceil(params / 65536)`` 个 chunk（tensor 在 chunk 中间结束时
    更多），所以这是一个下界。这些上限取决于 PyTorch 构建时的 CUDA 版本：``cuda=13`` 时改用
    ``MULTI_TENSOR_MAX_BLOCKS_CUDA13`` 与 ``MULTI_TENSOR_MAX_TENSORS_CUDA13``。

    Examples
    --------
    Llama-2-7B 一个 block 的 202 M 个参数分在 7 个 tensor 中，fused AdamW（参数、梯度和两个矩，
    depth 4）：``ceil(3089 / 320)`` 次 launch。

    >>> multi_tensor_launches(202_383_360, 7, 4)
    10
    >>> multi_tensor_launches(1000, 200, 1)       # 200 small tensors, 110 per launch
    2

    10 亿个参数（15259 个 chunk），depth 4：CUDA 12 构建中 launch 48 次，CUDA 13 构建中
    ``ceil(15259 / 2240) = 7`` 次。

    >>> multi_tensor_launches(10**9, 1, 4), multi_tensor_launches(10**9, 1, 4, cuda=13)
    (48, 7)
    """
    params = _validate.size("params", params)
    tensors = _validate.size("tensors", tensors)
    depth = _validate.size("depth", depth)
    if not isinstance(cuda, int) or isinstance(cuda, bool) or cuda not in _MULTI_TENSOR_LIMITS:
        raise InvalidArgument(
            "cuda", f"must be 12 or 13 (the CUDA major version of the build), got {cuda!r}"
        )
    max_blocks, max_tensors = _MULTI_TENSOR_LIMITS[cuda]
    if depth > len(max_tensors):
        raise InvalidArgument("depth", f"must be 1 to {len(max_tensors)}, got {depth}")
    chunks = -(-params // MULTI_TENSOR_CHUNK)
    by_blocks = -(-chunks // max_blocks)
    by_tensors = -(-tensors // max_tensors[depth - 1])
    return max(by_blocks, by_tensors)


def adamw_passes(impl: str = "fused") -> tuple[Pass, ...]:
    """AdamW 一步对内存所做的各趟读写，按模型的计法。

    ``"loop"`` （``foreach=False``）和 ``"foreach"`` （``foreach=True``）运行同样的一串
    elementwise kernel，所以搬运的字节数相同；foreach 版本对整个 tensor 列表 launch 一次
    运算，而不是每个 tensor 一次。``"fused"`` （``fused=True``）在一个 kernel 里做完全部。

    Examples
    --------
    fused kernel 把参数、梯度和两个矩各读一次，把参数和两个矩各写一次：

    >>> (step,) = adamw_passes("fused")
    >>> step.reads
    ('param', 'grad', 'exp_avg', 'exp_avg_sq')
    >>> step.writes
    ('param', 'exp_avg', 'exp_avg_sq')

    不融合的版本要经过内存八趟：

    >>> len(adamw_passes("loop")), adamw_passes("loop") == adamw_passes("foreach")
    (8, True)
    """
    impl = _validate.choice("impl", impl, ADAMW_IMPLS)
    return _ADAMW_FUSED if impl == "fused" else _ADAMW_UNFUSED


def adamw(
    params: int,
    impl: str = "fused",
    *,
    tensors: int = 1,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
    cuda: int = 12,
) -> Cost:
    """对分在 ``tensors`` 个 tensor 中的 ``params`` 个参数做一步 AdamW。

    代价是 :func:`adamw_passes` 各趟读写之和，每个 tensor 按它自己的精度计。FLOPs：每个
    参数 14 次，其中平方根与除法的倒数在特殊函数单元上，其余在向量单元上，其中 6 次组成 3 个 FMA
    （NB：这是本包的约定，见各趟；FlopCounterMode 一次也不计）。

    kernel launch：loop 每趟对每个 tensor launch 一次；foreach 和 fused 经由 PyTorch 的
    ``multi_tensor_apply``，每趟对每批 chunk launch 一次（:func:`multi_tensor_launches`），
    所以大模型每趟要 launch 好几次，而不是一次；每次能带多少 chunk 取决于 PyTorch 构建时的 CUDA
    版本（``cuda``）。

    精度：``torch.optim.AdamW`` 要求梯度与参数同精度。FP32 master weight 和矩配 16 位梯度，并在
    同一个 kernel 里写出下一次前向要读的 16 位权重副本，是 Transformer Engine 的 ``FusedAdam``
    （``master_weights=True``）和 Megatron-LM 的 ``--use-precision-aware-optimizer
    --main-grads-dtype bf16`` 的做法（Megatron-LM 的 BF16 默认配置保留 FP32 梯度）：给出
    ``model_dtype`` 表示这份副本，此时 ``grad_dtype`` 可以与 ``param_dtype`` 不同。fused 在它唯一
    的一趟里写出副本；loop 与 foreach 另要一趟转换（读 master weight、写副本）：loop 每个 tensor
    一个 kernel，foreach 经 ``multi_tensor_apply``。

    Parameters
    ----------
    params : int
        要更新的参数个数，>= 1。
    impl : {"loop", "foreach", "fused"}
        按哪种实现的各趟读写建模。
    tensors : int
        这些参数分布在几个参数 tensor 中（1 <= tensors <= params）。
    param_dtype : str or torch.dtype
        参数（master weight）的精度。
    grad_dtype : str or torch.dtype, optional
        梯度的精度；默认同 ``param_dtype``。
    state_dtype : str or torch.dtype, optional
        两个矩的精度；默认同 ``param_dtype``。
    model_dtype : str or torch.dtype, optional
        这一步另外写出的模型权重副本的精度（master-weight 优化器）；
        ``torch.optim.AdamW`` 不写副本，为 None。
    cuda : {12, 13}
        PyTorch 构建时的 CUDA 主版本，决定 foreach 与 fused 每次 launch 能带的 chunk 数
        （:func:`multi_tensor_launches`）。

    Examples
    --------
    全部 FP32：fused 每个参数读 4 x 4 字节、写 3 x 4 字节。

    >>> fused = adamw(10**6, "fused")
    >>> fused.bytes_read // 10**6, fused.bytes_written // 10**6
    (16, 12)
    >>> loop = adamw(10**6, "loop")
    >>> loop.bytes // 10**6, loop.kernels, loop.flops == fused.flops
    (80, 8, True)
    >>> round(loop.bytes / fused.bytes, 2)
    2.86
    >>> fused.special_flops // 10**6, fused.vector_slots // 10**6    # 2 special; 12 - 3 slots
    (2, 9)

    十亿个参数，fused 要 launch ``ceil(15259 / 320) = 48`` 次：

    >>> adamw(10**9, "fused", tensors=100).kernels
    48

    CUDA 13 构建每次 launch 带 2240 块：``ceil(15259 / 2240) = 7`` 次：

    >>> adamw(10**9, "fused", tensors=100, cuda=13).kernels
    7

    master weight：FP32 权重和矩，BF16 梯度，再写回一份 BF16 副本（每个参数多 2 字节）。loop 的
    副本由另一个 kernel 转换：80 - 2 x 2（两趟读 BF16 梯度）+ 4 + 2 = 82 字节，每个 tensor 多一个
    kernel：

    >>> mixed = adamw(1, "fused", grad_dtype="bf16", model_dtype="bf16")
    >>> mixed.bytes_read, mixed.bytes_written
    (14, 14)
    >>> loop = adamw(7, "loop", tensors=7, grad_dtype="bf16", model_dtype="bf16")
    >>> loop.bytes // 7, loop.kernels
    (82, 63)
    """
    params = _validate.size("params", params)
    tensors = _validate.size("tensors", tensors)
    if tensors > params:
        raise InvalidArgument("tensors", f"must be <= params ({params}), got {tensors}")
    passes = adamw_passes(impl)
    if not isinstance(cuda, int) or isinstance(cuda, bool) or cuda not in _MULTI_TENSOR_LIMITS:
        raise InvalidArgument(
            "cuda", f"must be 12 or 13 (the CUDA major version of the build), got {cuda!r}"
        )
    for name, dtype in (("param_dtype", param_dtype), ("grad_dtype", grad_dtype),
                        ("state_dtype", state_dtype), ("model_dtype", model_dtype)):  # fmt: skip
        if dtype is None:
            if name == "param_dtype":  # the others default to it
                raise InvalidArgumentType(name, "must be a precision name such as 'fp32', got None")
            continue
        if precision_name(dtype, name).startswith("int") and name != "state_dtype":
            # (8-bit optimizers quantize the moments, state_dtype, never the weights)
            raise InvalidArgument(
                name,
                f"must be a floating-point precision (fp32, bf16, fp16, ...): AdamW "
                f"updates weights in floating point; got {dtype!r}",
            )
    if grad_dtype is not None and model_dtype is None:
        if bytes_per_element(grad_dtype) != bytes_per_element(param_dtype):
            raise InvalidArgument(
                "grad_dtype",
                f"({grad_dtype}) differs from param_dtype ({param_dtype}): "
                "torch.optim.AdamW needs them equal; for FP32 master weights with 16-bit "
                "gradients (Transformer Engine FusedAdam with master_weights, Megatron-LM's "
                "precision-aware optimizer) also give model_dtype, the precision of the "
                "weight copy the step writes",
            )
    state = param_dtype if state_dtype is None else state_dtype
    width = {
        "param": bytes_per_element(param_dtype),
        "grad": bytes_per_element(param_dtype if grad_dtype is None else grad_dtype),
        "exp_avg": bytes_per_element(state),
        "exp_avg_sq": bytes_per_element(state),
        "denom": bytes_per_element(state),
    }
    loop = impl.strip().lower() == "loop"
    total = ZERO
    for p in passes:
        depth = len(set(p.reads) | set(p.writes))
        total += Cost(
            flops=p.flops * params,
            bytes_read=params * sum(width[t] for t in p.reads),
            bytes_written=params * sum(width[t] for t in p.writes),
            kernels=tensors if loop else multi_tensor_launches(params, tensors, depth, cuda=cuda),
            vector_flops=(p.flops - p.special) * params,
            special_flops=p.special * params,
            vector_fma_flops=p.fma * params,
        )
    if model_dtype is None:
        return total
    copy = params * bytes_per_element(model_dtype)
    if impl.strip().lower() == "fused":  # the 16-bit weight copy, written in the same pass
        return total + Cost(0, 0, copy, 0)
    # unfused: a cast pass reads the master weight and writes the copy
    launches = tensors if loop else multi_tensor_launches(params, tensors, 2, cuda=cuda)
    return total + Cost(0, params * width["param"], copy, launches)
