"""The AdamW step: the passes each implementation makes over the optimizer state."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate
from ..dtypes import Precision, bytes_per_element
from .cost import ZERO, Cost


@dataclass(frozen=True)
class Pass:
    """One kernel of an optimizer step: what it reads, what it writes, FLOPs per parameter."""

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    flops: int
    special: int = 0
    """How many of ``flops`` are special-function evaluations (the square root, the
    reciprocal of a division)."""
    fma: int = 0
    """How many of ``flops`` pair into FMAs, 2 per multiply-then-add."""


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

#: Elements per thread block in PyTorch's ``multi_tensor_apply`` (``kChunkSize``), and the
#: most blocks and tensors one launch carries, by how many tensor lists the kernel takes
#: (``depth_to_max_blocks``, ``depth_to_max_tensors`` in ATen's MultiTensorApply.cuh, the
#: 4 KB kernel-argument limit of CUDA 12 builds).
MULTI_TENSOR_CHUNK = 65536
MULTI_TENSOR_MAX_BLOCKS = 320
MULTI_TENSOR_MAX_TENSORS = (110, 64, 48, 36, 30)
#: The same limits in CUDA 13 builds (``CUDART_VERSION >= 13000`` in MultiTensorApply.cuh,
#: PyTorch 2.13), whose larger kernel arguments carry seven times as much per launch.
MULTI_TENSOR_MAX_BLOCKS_CUDA13 = 2240
MULTI_TENSOR_MAX_TENSORS_CUDA13 = (770, 448, 336, 252, 210)
_MULTI_TENSOR_LIMITS = {
    12: (MULTI_TENSOR_MAX_BLOCKS, MULTI_TENSOR_MAX_TENSORS),
    13: (MULTI_TENSOR_MAX_BLOCKS_CUDA13, MULTI_TENSOR_MAX_TENSORS_CUDA13),
}


def multi_tensor_launches(params: int, tensors: int, depth: int, *, cuda: int = 12) -> int:
    """Launches a ``multi_tensor_apply`` kernel needs at least for one pass over a tensor list.

    Each launch carries at most :data:`MULTI_TENSOR_MAX_BLOCKS` chunks of
    :data:`MULTI_TENSOR_CHUNK` elements and at most
    ``MULTI_TENSOR_MAX_TENSORS[depth - 1]`` tensors, so the count grows with
    the number of elements, not only with the list's length. ``params``
    elements in ``tensors`` tensors make at least ``ceil(params / 65536)``
    chunks (more when tensors end mid-chunk), so this is a lower bound.
    The limits depend on the CUDA version PyTorch was built with: ``cuda=13``
    takes ``MULTI_TENSOR_MAX_BLOCKS_CUDA13`` and ``MULTI_TENSOR_MAX_TENSORS_CUDA13``
    instead.

    Examples
    --------
    The 202 M parameters of a Llama-2-7B block in 7 tensors, fused AdamW
    (param, grad and two moments, depth 4): ``ceil(3089 / 320)`` launches.

    >>> multi_tensor_launches(202_383_360, 7, 4)
    10
    >>> multi_tensor_launches(1000, 200, 1)       # 200 small tensors, 110 per launch
    2

    A billion parameters (15259 chunks), depth 4: 48 launches in a CUDA 12
    build, ``ceil(15259 / 2240) = 7`` in a CUDA 13 build.

    >>> multi_tensor_launches(10**9, 1, 4), multi_tensor_launches(10**9, 1, 4, cuda=13)
    (48, 7)
    """
    params = _validate.size("params", params)
    tensors = _validate.size("tensors", tensors)
    depth = _validate.size("depth", depth)
    if isinstance(cuda, bool) or cuda not in _MULTI_TENSOR_LIMITS:
        raise ValueError(
            f"cuda must be 12 or 13 (the CUDA major version of the build), got {cuda!r}"
        )
    max_blocks, max_tensors = _MULTI_TENSOR_LIMITS[cuda]
    if depth > len(max_tensors):
        raise ValueError(f"depth must be 1 to {len(max_tensors)}, got {depth}")
    chunks = -(-params // MULTI_TENSOR_CHUNK)
    by_blocks = -(-chunks // max_blocks)
    by_tensors = -(-tensors // max_tensors[depth - 1])
    return max(by_blocks, by_tensors)


def adamw_passes(impl: str = "fused") -> tuple[Pass, ...]:
    """The passes over memory of one AdamW step, as the model counts them.

    ``"loop"`` (``foreach=False``) and ``"foreach"`` (``foreach=True``) run the
    same sequence of elementwise kernels, so they move the same bytes; the
    foreach version launches each operation for whole lists of tensors
    instead of once per tensor. ``"fused"`` (``fused=True``) does all
    of it in one kernel.

    Examples
    --------
    The fused kernel reads the parameter, its gradient and both moments once,
    and writes the parameter and both moments once:

    >>> (step,) = adamw_passes("fused")
    >>> step.reads
    ('param', 'grad', 'exp_avg', 'exp_avg_sq')
    >>> step.writes
    ('param', 'exp_avg', 'exp_avg_sq')

    The unfused version goes through memory eight times:

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
) -> Cost:
    """One AdamW step over ``params`` parameters held in ``tensors`` tensors.

    The cost is the sum over :func:`adamw_passes` of what each pass reads and
    writes, each tensor in its own precision. FLOPs: 14 per parameter, the
    square root and the division's reciprocal among them on the special
    function units, the rest on the vector units, 6 of those in three FMAs
    (NB: this package's convention, see the passes; FlopCounterMode counts
    none).

    Kernel launches: the loop launches each pass once per tensor; foreach
    and fused go through PyTorch's ``multi_tensor_apply``, which launches
    each pass once per batch of chunks (:func:`multi_tensor_launches`), so a
    large model takes several launches per pass, not one.

    Precisions: ``torch.optim.AdamW`` needs the gradient in the parameter's
    precision. FP32 master weights and moments with 16-bit gradients are
    the mixed-precision optimizers of Megatron-LM and DeepSpeed, which also
    write the 16-bit copy of the weights the next forward pass reads: give
    ``model_dtype`` for that copy, and ``grad_dtype`` may then differ from
    ``param_dtype``.

    Parameters
    ----------
    params : int
        Parameters updated, >= 1.
    impl : {"loop", "foreach", "fused"}
        Which implementation's passes to model.
    tensors : int
        Parameter tensors the parameters are spread over (1 <= tensors <= params).
    param_dtype, grad_dtype, state_dtype : str or torch.dtype
        Precisions of the parameters (the master weights), gradients and both
        moments; the latter two default to ``param_dtype``.
    model_dtype : str or torch.dtype, optional
        Precision of a model-weight copy the step also writes (master-weight
        optimizers); None for ``torch.optim.AdamW``, which writes none.

    Examples
    --------
    FP32 everywhere: fused reads 4 x 4 bytes and writes 3 x 4 bytes per parameter.

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

    A billion parameters take ``ceil(15259 / 320) = 48`` fused launches:

    >>> adamw(10**9, "fused", tensors=100).kernels
    48

    Master weights: FP32 weights and moments, BF16 gradients, and the BF16
    copy written back (2 more bytes per parameter):

    >>> mixed = adamw(1, "fused", grad_dtype="bf16", model_dtype="bf16")
    >>> mixed.bytes_read, mixed.bytes_written
    (14, 14)
    """
    params = _validate.size("params", params)
    tensors = _validate.size("tensors", tensors)
    if tensors > params:
        raise ValueError(f"tensors must be <= params ({params}), got {tensors}")
    passes = adamw_passes(impl)
    if grad_dtype is not None and model_dtype is None:
        if bytes_per_element(grad_dtype) != bytes_per_element(param_dtype):
            raise ValueError(
                f"grad_dtype ({grad_dtype}) differs from param_dtype ({param_dtype}): "
                "torch.optim.AdamW needs them equal; for FP32 master weights with 16-bit "
                "gradients (Megatron-LM, DeepSpeed) also give model_dtype, the precision "
                "of the weight copy the step writes"
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
            kernels=tensors if loop else multi_tensor_launches(params, tensors, depth),
            vector_flops=(p.flops - p.special) * params,
            special_flops=p.special * params,
            vector_fma_flops=p.fma * params,
        )
    if model_dtype is not None:  # the 16-bit weight copy, written in the same pass
        total += Cost(0, 0, params * bytes_per_element(model_dtype), 0)
    return total
