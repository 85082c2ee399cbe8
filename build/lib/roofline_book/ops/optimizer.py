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


# The kernels that PyTorch's single-tensor AdamW (``foreach=False``) launches
# per parameter tensor, in order. ``denom`` is a temporary in the state dtype.
_ADAMW_UNFUSED = (
    Pass("param.mul_(1 - lr * weight_decay)", ("param",), ("param",), 1),
    Pass("exp_avg.lerp_(grad, 1 - beta1)", ("exp_avg", "grad"), ("exp_avg",), 3),
    Pass("exp_avg_sq.mul_(beta2)", ("exp_avg_sq",), ("exp_avg_sq",), 1),
    Pass("exp_avg_sq.addcmul_(grad, grad, 1 - beta2)", ("exp_avg_sq", "grad"), ("exp_avg_sq",), 3),
    Pass("denom = exp_avg_sq.sqrt()", ("exp_avg_sq",), ("denom",), 1),
    Pass("denom = denom / sqrt(bias_correction2)", ("denom",), ("denom",), 1),
    Pass("denom.add_(eps)", ("denom",), ("denom",), 1),
    Pass(
        "param.addcdiv_(exp_avg, denom, -step_size)", ("param", "exp_avg", "denom"), ("param",), 3
    ),
)
_ADAMW_FUSED = (
    Pass(
        "_fused_adamw_",
        ("param", "grad", "exp_avg", "exp_avg_sq"),
        ("param", "exp_avg", "exp_avg_sq"),
        sum(p.flops for p in _ADAMW_UNFUSED),
    ),
)

ADAMW_IMPLS = ("loop", "foreach", "fused")


def adamw_passes(impl: str = "fused") -> tuple[Pass, ...]:
    """The passes over memory of one AdamW step, as the model counts them.

    ``"loop"`` (``foreach=False``) and ``"foreach"`` (``foreach=True``) run the
    same sequence of elementwise kernels, so they move the same bytes; the
    foreach version launches one kernel per operation for a whole list of
    tensors instead of one per tensor. ``"fused"`` (``fused=True``) does all
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
) -> Cost:
    """One AdamW step over ``params`` parameters held in ``tensors`` tensors.

    The cost is the sum over :func:`adamw_passes` of what each pass reads and
    writes, each tensor in its own precision. FLOPs: 14 per parameter (NB:
    this package's convention, see the passes; FlopCounterMode counts none).

    Kernel launches: the loop launches each pass once per tensor; foreach
    and fused launch each pass once for the whole list (NB: PyTorch's
    multi-tensor apply splits a long list into a few chunks, so a real count
    can be a small multiple of this).

    Parameters
    ----------
    params : int
        Parameters updated, >= 1.
    impl : {"loop", "foreach", "fused"}
        Which PyTorch implementation to model.
    tensors : int
        Parameter tensors the parameters are spread over (1 <= tensors <= params).
    param_dtype, grad_dtype, state_dtype : str or torch.dtype
        Precisions of the parameters, gradients and both moments; the latter
        two default to ``param_dtype``.

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

    Mixed precision, BF16 gradients with FP32 master weights and states:

    >>> adamw(1, "fused", grad_dtype="bf16").bytes_read
    14
    """
    params = _validate.size("params", params)
    tensors = _validate.size("tensors", tensors)
    if tensors > params:
        raise ValueError(f"tensors must be <= params ({params}), got {tensors}")
    passes = adamw_passes(impl)
    state = param_dtype if state_dtype is None else state_dtype
    width = {
        "param": bytes_per_element(param_dtype),
        "grad": bytes_per_element(param_dtype if grad_dtype is None else grad_dtype),
        "exp_avg": bytes_per_element(state),
        "exp_avg_sq": bytes_per_element(state),
        "denom": bytes_per_element(state),
    }
    launches_per_pass = tensors if impl.strip().lower() == "loop" else 1
    total = ZERO
    for p in passes:
        total += Cost(
            flops=p.flops * params,
            bytes_read=params * sum(width[t] for t in p.reads),
            bytes_written=params * sum(width[t] for t in p.writes),
            kernels=launches_per_pass,
        )
    return total
