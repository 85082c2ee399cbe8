"""FLOPs and memory traffic of deep-learning operators.

Every operator is a small pure function that returns a :class:`Cost`. The
traffic is the *minimum* a kernel of the described structure must move
between main memory (HBM / DRAM) and the chip: each input read once, each
output written once, per kernel. Caches can only make real traffic lower than
this for data that is re-read, and a poor kernel can make it higher.

Notation: ``s`` is bytes per element (:func:`roofline_book.dtypes.bytes_per_element`),
``I = FLOPs / bytes`` the arithmetic intensity in FLOP/byte.

NB: ``torch.utils.flop_counter.FlopCounterMode`` counts matrix products only
(mm, bmm, addmm, baddbmm, convolutions and, on CUDA, SDPA). It reports zero for
elementwise operators, norms, softmax and optimizer steps, so for those the
FLOP conventions stated in each docstring are this package's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from . import _validate
from .dtypes import Precision, bytes_per_element, precision_name


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes moved by one or more kernels.

    Costs add, so the cost of three separate kernels can be set beside the
    cost of one fused kernel.

    Parameters
    ----------
    flops : int
        Floating-point operations (FLOP).
    bytes_read : int
        Bytes read from main memory (byte).
    bytes_written : int
        Bytes written to main memory (byte).
    kernels : int
        Kernel launches the work takes.

    Examples
    --------
    >>> c = Cost(flops=10, bytes_read=40, bytes_written=20)
    >>> c.bytes, c.intensity
    (60, 0.16666666666666666)
    >>> (c + c).kernels
    2
    >>> sum([c, c, c]) == 3 * c
    True
    """

    flops: int
    bytes_read: int
    bytes_written: int
    kernels: int = 1

    def __post_init__(self) -> None:
        for field in ("flops", "bytes_read", "bytes_written", "kernels"):
            _validate.size(field, getattr(self, field), minimum=0)

    @property
    def bytes(self) -> int:
        """Total bytes moved, read plus written (byte)."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte moved (FLOP/byte)."""
        if self.bytes == 0:
            raise ValueError("this Cost moves no bytes, so its intensity is undefined")
        return self.flops / self.bytes

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.kernels + other.kernels,
        )

    def __radd__(self, other: object) -> Cost:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # lets sum() start from 0
        return NotImplemented

    def __mul__(self, times: object) -> Cost:
        if isinstance(times, bool) or not isinstance(times, int):
            return NotImplemented
        times = _validate.size("times", times, minimum=0)
        return Cost(
            self.flops * times,
            self.bytes_read * times,
            self.bytes_written * times,
            self.kernels * times,
        )

    __rmul__ = __mul__


ZERO = Cost(0, 0, 0, 0)
"""The cost of doing nothing, the start of a sum of costs."""


# --------------------------------------------------------------------------
# GEMM


def gemm(
    m: int,
    k: int,
    n: int,
    dtype: Precision = "bf16",
    *,
    batch: int = 1,
    out_dtype: Precision | None = None,
) -> Cost:
    """Matrix product ``C = A @ B`` with ``A`` of shape (m, k) and ``B`` (k, n).

    Each of the ``m * n`` outputs takes ``k`` multiplies and ``k`` adds, so

    .. math:: \\text{FLOPs} = 2 m k n

    (NB: the last add of each dot product is not needed, ``2k - 1`` would be
    exact; ``2k`` is the convention of PyTorch's flop counter and of vendor
    peak figures). If ``A`` and ``B`` are read once and ``C`` written once,
    the minimum traffic is ``s (mk + kn + mn)``.

    Parameters
    ----------
    m, k, n : int
        Rows of ``A``, the shared dimension, columns of ``B``; each >= 1.
    dtype : str or torch.dtype
        Precision of ``A`` and ``B`` (and of ``C`` unless ``out_dtype``).
    batch : int
        Independent products of this shape (``torch.bmm``); both operands
        are batched.
    out_dtype : str or torch.dtype, optional
        Precision of ``C`` if it differs from the inputs'.

    Returns
    -------
    Cost

    Examples
    --------
    The reference chapter's square GEMM, n = 4096:

    >>> c = gemm(4096, 4096, 4096, "bf16")
    >>> c.flops                      # 2 * 4096**3
    137438953472
    >>> f"{c.flops:.2e}"
    '1.37e+11'

    For a square GEMM ``I = 2n^3 / (3 s n^2) = 2n / (3s)``; in BF16 (s = 2)
    at n = 4096 that is 8192 / 6:

    >>> round(c.intensity, 1)
    1365.3
    >>> gemm(4096, 4096, 4096, "fp32").intensity == c.intensity / 2
    True
    """
    m = _validate.size("m", m)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    batch = _validate.size("batch", batch)
    s_in = bytes_per_element(dtype)
    s_out = s_in if out_dtype is None else bytes_per_element(out_dtype)
    return Cost(
        flops=2 * batch * m * k * n,
        bytes_read=batch * s_in * (m * k + k * n),
        bytes_written=batch * s_out * m * n,
    )


def tiled_gemm(m: int, k: int, n: int, tile: int, dtype: Precision = "bf16") -> Cost:
    """A GEMM computed in ``tile x tile`` output tiles that share nothing through a cache.

    The model: ``C`` (m x n) is cut into ``ceil(m/T) * ceil(n/T)`` output
    tiles of ``T x T``. One tile's accumulators stay on chip for the whole
    ``k`` loop; the tile reads its tile-row of ``A`` (its rows by ``k``) and
    its tile-column of ``B`` (``k`` by its columns) from main memory and
    writes its part of ``C`` once. No tile reuses what another tile fetched
    (no L2 hits), so ``A`` is read ``ceil(n/T)`` times and ``B``
    ``ceil(m/T)`` times:

    .. math:: \\text{bytes} = s\\,\\Big(k\\,\\big(m \\lceil n/T \\rceil
              + n \\lceil m/T \\rceil\\big) + m n\\Big)

    The FLOPs are those of :func:`gemm`, ``2 m k n``: tiling changes the
    traffic, never the arithmetic. For a square GEMM with ``T`` dividing
    ``n`` this is ``s (2 n^3 / T + n^2)`` and ``I = 2 n T / (s (2n + T))``.

    ``T`` need not divide ``m`` or ``n``: the last tile of a row or column is
    clipped to the rows or columns left and reads only those, which is what
    the ceilings count. ``T >= max(m, n)`` is one tile, each operand read
    once, the same cost as :func:`gemm`; ``T = 1`` fetches a whole row of
    ``A`` and column of ``B`` for every output, ``I = 2k / (s (2k + 1))``,
    about ``1/s``.

    Parameters
    ----------
    m, k, n : int
        Rows of ``A``, the shared dimension, columns of ``B``; each >= 1.
    tile : int
        Edge ``T`` of a square output tile (elements), >= 1; larger than
        ``m`` or ``n`` means one tile along that side.
    dtype : str or torch.dtype
        Precision of ``A``, ``B`` and ``C`` (``s`` bytes per element).

    Returns
    -------
    Cost
        One kernel launch; the tiles are its thread blocks.

    Examples
    --------
    One tile covering all of ``C`` is the ideal GEMM:

    >>> tiled_gemm(4096, 4096, 4096, 4096) == gemm(4096, 4096, 4096)
    True

    128 x 128 tiles of the BF16 n = 4096 product: ``A`` and ``B`` are each
    read 4096 / 128 = 32 times, so ``I = 2 * 4096 * 128 / (2 * (8192 + 128))``:

    >>> c = tiled_gemm(4096, 4096, 4096, 128)
    >>> c.flops == 2 * 4096**3, c.bytes == 2 * (2 * 4096**3 // 128 + 4096**2)
    (True, True)
    >>> round(c.intensity, 2)
    63.02

    One output per tile, ``I = 2 * 4096 / (2 * 8193)``, about 1/s:

    >>> round(tiled_gemm(4096, 4096, 4096, 1).intensity, 4)
    0.4999

    Ragged edges: 100 = 3 * 32 + 4, so 4 tiles per side, ``A`` and ``B`` each
    read 4 times, ``2 * 64 * (100 * 4 + 100 * 4)`` bytes in:

    >>> ragged = tiled_gemm(100, 64, 100, 32)
    >>> ragged.bytes_read, ragged.bytes_written
    (102400, 20000)
    """
    m = _validate.size("m", m)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    tile = _validate.size("tile", tile)
    s = bytes_per_element(dtype)
    a_reads, b_reads = -(-n // tile), -(-m // tile)  # ceil, in integers
    return Cost(
        flops=2 * m * k * n,
        bytes_read=s * k * (m * a_reads + n * b_reads),
        bytes_written=s * m * n,
    )


def linear_backward(
    tokens: int, in_features: int, out_features: int, dtype: Precision = "bf16"
) -> Cost:
    """Backward pass of ``y = x @ W.T`` (``torch.nn.functional.linear``, no bias).

    Two GEMMs: the input gradient ``dx = dy @ W`` (tokens x out x in) and the
    weight gradient ``dW = dy.T @ x`` (out x tokens x in), so the backward
    pass costs twice the forward FLOPs, ``4 * tokens * in * out``.

    Examples
    --------
    >>> fwd = gemm(8, 16, 32)
    >>> linear_backward(8, 16, 32).flops == 2 * fwd.flops
    True
    """
    grad_input = gemm(tokens, out_features, in_features, dtype)
    grad_weight = gemm(out_features, tokens, in_features, dtype)
    return grad_input + grad_weight


# --------------------------------------------------------------------------
# Elementwise operators


def elementwise(
    numel: int,
    dtype: Precision = "bf16",
    *,
    inputs: int = 1,
    outputs: int = 1,
    flops_per_element: int = 1,
) -> Cost:
    """A kernel that reads ``inputs`` tensors and writes ``outputs`` tensors of ``numel`` elements.

    .. math:: \\text{bytes} = (\\text{inputs} + \\text{outputs})\\, s\\, N,
              \\qquad I = \\frac{\\text{flops per element}}{(\\text{inputs} + \\text{outputs})\\, s}

    Parameters
    ----------
    numel : int
        Elements per tensor, >= 1.
    dtype : str or torch.dtype
        Precision of every tensor.
    inputs, outputs : int
        Tensors read and written (inputs >= 1, outputs >= 0: an in-place update
        such as ``x.add_(y)`` reads two tensors and writes one).
    flops_per_element : int
        FLOPs per output element (>= 0). FlopCounterMode counts these ops as
        zero; the convention here counts each arithmetic operation as one.

    Examples
    --------
    >>> elementwise(10, "fp32", inputs=3, outputs=1, flops_per_element=2).bytes
    160
    """
    numel = _validate.size("numel", numel)
    inputs = _validate.size("inputs", inputs, minimum=1)
    outputs = _validate.size("outputs", outputs, minimum=0)
    flops_per_element = _validate.size("flops_per_element", flops_per_element, minimum=0)
    s = bytes_per_element(dtype)
    return Cost(
        flops=flops_per_element * numel,
        bytes_read=inputs * s * numel,
        bytes_written=outputs * s * numel,
    )


def add(numel: int, dtype: Precision = "bf16") -> Cost:
    """``z = x + y`` over ``numel`` elements: 1 FLOP, two reads and one write each.

    Examples
    --------
    Per BF16 element: read x (2 bytes), read y (2), write z (2), 6 bytes for
    one FLOP, so ``I = 1/6``:

    >>> per_element = add(1, "bf16")
    >>> per_element.bytes_read, per_element.bytes_written, per_element.bytes
    (4, 2, 6)
    >>> round(add(2**20).intensity, 2)
    0.17
    >>> add(10**6).bytes                            # 6 N bytes
    6000000
    """
    return elementwise(numel, dtype, inputs=2, outputs=1, flops_per_element=1)


def residual_add(numel: int, dtype: Precision = "bf16") -> Cost:
    """``y = x + f(x)``, the skip connection of a Transformer block; the same cost as :func:`add`.

    Examples
    --------
    >>> residual_add(4096 * 4096) == add(4096 * 4096)
    True
    """
    return add(numel, dtype)


def relu(numel: int, dtype: Precision = "bf16") -> Cost:
    """``y = max(x, 0)``: one input, one output, one FLOP (a comparison) per element.

    Examples
    --------
    >>> relu(1, "bf16").bytes, relu(2**20, "bf16").intensity
    (4, 0.25)
    """
    return elementwise(numel, dtype, inputs=1, outputs=1, flops_per_element=1)


#: FLOPs per element of the tanh form of GELU,
#: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``. They are x^3 (2), the scale and
#: add inside (2), the sqrt(2/pi) factor (1), tanh (1, NB, a transcendental
#: counted as one FLOP), the add and the two outer products (3).
GELU_FLOPS_PER_ELEMENT = 9


def gelu(numel: int, dtype: Precision = "bf16") -> Cost:
    """GELU activation, tanh form; see :data:`GELU_FLOPS_PER_ELEMENT`.

    Examples
    --------
    Even at 9 FLOPs per element GELU stays far left of any GPU's ridge point:

    >>> gelu(2**20, "bf16").intensity
    2.25
    """
    return elementwise(numel, dtype, inputs=1, outputs=1, flops_per_element=GELU_FLOPS_PER_ELEMENT)


#: FLOPs per element of ``silu(gate) * up``. The sigmoid ``1 / (1 + exp(-g))``
#: takes 4 (negate, exp, add, divide; exp counted as one), the product with
#: ``g`` 1 and the product with ``up`` 1.
SWIGLU_FLOPS_PER_ELEMENT = 6


def swiglu(numel: int, dtype: Precision = "bf16") -> Cost:
    """The gated activation of a SwiGLU MLP, ``silu(gate) * up``: two inputs, one output.

    Examples
    --------
    >>> swiglu(1, "bf16").bytes      # read gate, read up, write the product
    6
    """
    return elementwise(
        numel, dtype, inputs=2, outputs=1, flops_per_element=SWIGLU_FLOPS_PER_ELEMENT
    )


# --------------------------------------------------------------------------
# Normalizations and softmax


def rmsnorm(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """RMSNorm over the last dimension of a ``rows x d`` activation.

    .. math:: y = \\frac{x}{\\sqrt{\\tfrac1d \\sum_i x_i^2 + \\epsilon}} \\odot \\gamma

    Traffic: read ``x`` once, read the weight ``gamma`` (``d`` values) once,
    write ``y`` once. FLOPs (NB: this package's convention; FlopCounterMode
    counts none): per element a square, an add into the sum, a multiply by
    the reciprocal root and a multiply by ``gamma`` (4); per row the mean,
    the ``+ eps`` and the reciprocal square root (3).

    Examples
    --------
    A Llama-7B-sized activation, 4096 tokens by 4096 features, in BF16:

    >>> c = rmsnorm(4096, 4096, "bf16")
    >>> c.bytes == 2 * (2 * 4096 * 4096 + 4096)
    True
    >>> round(c.intensity, 2)               # about 4 FLOP per 4 bytes
    1.0
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype)
    return Cost(
        flops=4 * rows * d + 3 * rows,
        bytes_read=s * rows * d + s_w * d,
        bytes_written=s * rows * d,
    )


def layernorm(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """LayerNorm over the last dimension of a ``rows x d`` activation, with weight and bias.

    Traffic: read ``x``, ``gamma`` and ``beta`` once, write ``y`` once. FLOPs
    (NB: this package's convention): per element an add into the mean,
    subtracting the mean, a square, an add into the variance, the multiply by
    the reciprocal deviation, the scale and the shift (7); per row the two
    divisions by ``d``, the ``+ eps`` and the reciprocal root (4).

    Examples
    --------
    >>> c = layernorm(2, 8, "fp32")
    >>> c.flops, c.bytes_read, c.bytes_written    # 7*16 + 4*2; 4*(16 + 2*8); 4*16
    (120, 128, 64)
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype)
    return Cost(
        flops=7 * rows * d + 4 * rows,
        bytes_read=s * rows * d + 2 * s_w * d,
        bytes_written=s * rows * d,
    )


#: FLOPs per element of a numerically safe softmax. They are the running max,
#: the subtraction, exp (NB, counted as one), the add into the sum, the division.
SOFTMAX_FLOPS_PER_ELEMENT = 5


def softmax(rows: int, cols: int, dtype: Precision = "bf16") -> Cost:
    """Softmax along the last dimension of a ``rows x cols`` tensor, one fused kernel.

    Each row is read once and written once (a row fits on chip, or an online
    softmax computes the max and the sum in one pass); see
    :data:`SOFTMAX_FLOPS_PER_ELEMENT`.

    Examples
    --------
    >>> c = softmax(4, 8, "fp32")
    >>> c.flops, c.bytes
    (160, 256)
    """
    rows = _validate.size("rows", rows)
    cols = _validate.size("cols", cols)
    return elementwise(
        rows * cols, dtype, inputs=1, outputs=1, flops_per_element=SOFTMAX_FLOPS_PER_ELEMENT
    )


# --------------------------------------------------------------------------
# AdamW


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


def adamw_passes(impl: Literal["loop", "foreach", "fused"] = "fused") -> tuple[Pass, ...]:
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
    impl: Literal["loop", "foreach", "fused"] = "fused",
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


# --------------------------------------------------------------------------
# Attention

ATTENTION_IMPLS = ("materialized", "flash")

#: Default on-chip memory (byte) a FlashAttention thread block works in. It is
#: the 192 KB of combined L1 / shared memory per SM of the A100 that Dao et al.
#: (2022, Section 2.1) use as their example.
DEFAULT_SRAM_BYTES = 192 * 1024


def _causal_pairs(seq_q: int, seq_k: int) -> int:
    """(query, key) pairs a causal mask keeps: query i sees keys 0..i (top-left aligned)."""
    if seq_q <= seq_k:
        return seq_q * (seq_q + 1) // 2
    return seq_k * (seq_k + 1) // 2 + (seq_q - seq_k) * seq_k


def _flash_keys_read(seq_q: int, seq_k: int, rows: int, causal: bool) -> int:
    """Key (and value) rows a flash kernel streams in, summed over its query blocks."""
    blocks = math.ceil(seq_q / rows)
    if not causal:
        return blocks * seq_k
    # Block j (1-based) needs keys up to its last query row, min(seq_k, j * rows);
    # the last block ends at seq_q.
    full = min(blocks - 1, seq_k // rows)
    return rows * full * (full + 1) // 2 + (blocks - 1 - full) * seq_k + min(seq_k, seq_q)


def attention(
    batch: int,
    heads: int,
    seq_q: int,
    seq_k: int,
    head_dim: int,
    dtype: Precision = "bf16",
    *,
    impl: Literal["materialized", "flash"] = "flash",
    causal: bool = False,
    sram_bytes: int = DEFAULT_SRAM_BYTES,
) -> Cost:
    """Scaled dot-product attention ``softmax(Q K^T / sqrt(d)) V``, forward pass.

    Shapes: ``Q`` is (batch, heads, seq_q, head_dim), ``K`` and ``V`` are
    (batch, heads, seq_k, head_dim). With ``N`` scores per head,
    ``N = seq_q * seq_k``:

    FLOPs (NB, convention): the two matrix products, ``4 N d`` per head, as
    PyTorch's flop counter and Dao et al. count them, plus the softmax's
    :data:`SOFTMAX_FLOPS_PER_ELEMENT` per score; the ``1/sqrt(d)`` scale is
    folded into the first product. With ``causal=True`` the flash kernel
    computes only the ``(query, key)`` pairs the mask keeps, while the
    materialized version computes every score and then masks.

    ``impl="materialized"``: three kernels, as eager PyTorch runs them.
    ``S = Q K^T`` is written to memory, softmax reads ``S`` and writes
    ``P``, and ``O = P V`` reads ``P`` back; the scores are stored in
    ``dtype``. Traffic grows with ``seq_q * seq_k``.

    ``impl="flash"``: one tiled kernel (FlashAttention). A block of ``Br``
    query rows stays on chip while the key and value rows stream past, the
    loop order of FlashAttention-2 (Dao 2023). With ``M`` the on-chip memory
    in elements the model takes ``Br = M / (4d)``, the block size of Dao et
    al. (2022, Algorithm 1) without its cap at ``d`` rows. Q is read and O
    written once; K and V are read once per query block, ``seq_q / Br``
    times, so the traffic is ``Theta(seq_q seq_k d^2 / M)``, the bound of
    their Theorem 2, and never below reading Q, K, V and writing O once.
    (Algorithm 1's own loop order re-reads Q and O instead of K and V; the
    order of growth is the same.) Real kernels use fixed block sizes and
    hit L2 on many re-reads, so measured DRAM traffic can be lower.

    Parameters
    ----------
    batch, heads, seq_q, seq_k, head_dim : int
        Sizes, each >= 1.
    dtype : str or torch.dtype
        Precision of Q, K, V, O (and of the materialized scores).
    impl : {"materialized", "flash"}
    causal : bool
        Apply a causal mask (query ``i`` attends to keys ``0..i``).
    sram_bytes : int
        On-chip memory of one flash thread block (byte); must hold at least
        one query row's working set, ``4 * head_dim`` elements.

    Examples
    --------
    One head, 4096 tokens, d = 128, BF16. Both versions do the same FLOPs:

    >>> mat = attention(1, 1, 4096, 4096, 128, impl="materialized")
    >>> fl = attention(1, 1, 4096, 4096, 128, impl="flash")
    >>> mat.flops == fl.flops == 4 * 4096 * 4096 * 128 + 5 * 4096 * 4096
    True

    The materialized scores dominate its traffic (written, read, written,
    read: 4 x 2 x 4096^2 bytes), and tiling cuts the traffic several times:

    >>> 4 * 2 * 4096**2 <= mat.bytes
    True
    >>> round(mat.bytes / fl.bytes, 1), round(fl.intensity / mat.intensity, 1)
    (2.9, 2.9)

    With enough on-chip memory for all of Q, each tensor moves once:

    >>> attention(1, 1, 64, 64, 32, "fp16", sram_bytes=2**20).bytes == 4 * 64 * 32 * 2
    True
    """
    batch = _validate.size("batch", batch)
    heads = _validate.size("heads", heads)
    seq_q = _validate.size("seq_q", seq_q)
    seq_k = _validate.size("seq_k", seq_k)
    head_dim = _validate.size("head_dim", head_dim)
    impl = _validate.choice("impl", impl, ATTENTION_IMPLS)
    if not isinstance(causal, (bool,)):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    sram_bytes = _validate.size("sram_bytes", sram_bytes)
    s = bytes_per_element(dtype)
    bh = batch * heads

    if impl == "materialized":
        scores = gemm(seq_q, head_dim, seq_k, dtype, batch=bh)
        probs = softmax(bh * seq_q, seq_k, dtype)
        output = gemm(seq_q, seq_k, head_dim, dtype, batch=bh)
        return scores + probs + output

    sram_elements = sram_bytes // s
    if sram_elements < 4 * head_dim:
        raise ValueError(
            f"sram_bytes must hold at least 4 * head_dim elements "
            f"({4 * head_dim * s} bytes in {precision_name(dtype)}), got {sram_bytes}"
        )
    rows = min(seq_q, sram_elements // (4 * head_dim))
    pairs = _causal_pairs(seq_q, seq_k) if causal else seq_q * seq_k
    keys = _flash_keys_read(seq_q, seq_k, rows, causal)
    return Cost(
        flops=bh * pairs * (4 * head_dim + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=bh * s * head_dim * (seq_q + 2 * keys),
        bytes_written=bh * s * head_dim * seq_q,
    )
