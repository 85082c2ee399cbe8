"""Elementwise operators, normalizations and softmax: one pass over their tensors."""

from __future__ import annotations

from .. import _validate
from ..dtypes import Precision, bytes_per_element
from .cost import Cost


def elementwise(
    numel: int,
    dtype: Precision = "bf16",
    *,
    inputs: int = 1,
    outputs: int = 1,
    flops_per_element: int = 1,
    special_per_element: int = 0,
    fma_per_element: int = 0,
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
    special_per_element : int
        How many of those FLOPs are special-function evaluations (exp, tanh,
        rsqrt, and the reciprocal an IEEE division compiles to), on the
        special function units; the rest run on the vector units. Nothing
        here runs on the matrix units.
    fma_per_element : int
        How many of the vector FLOPs pair into fused multiply-adds, 2 per FMA
        (even); see ``vector_fma_flops`` of :class:`~roofline_book.ops.Cost`.

    Examples
    --------
    >>> c = elementwise(10, "fp32", inputs=3, outputs=1, flops_per_element=2)
    >>> c.bytes, c.flops_by_unit
    (160, {'matrix': 0, 'vector': 20, 'special': 0})
    >>> elementwise(10, "fp32", inputs=3, flops_per_element=2, fma_per_element=2).vector_slots
    10
    """
    numel = _validate.size("numel", numel)
    inputs = _validate.size("inputs", inputs, minimum=1)
    outputs = _validate.size("outputs", outputs, minimum=0)
    flops_per_element = _validate.size("flops_per_element", flops_per_element, minimum=0)
    special_per_element = _validate.size("special_per_element", special_per_element, minimum=0)
    fma_per_element = _validate.size("fma_per_element", fma_per_element, minimum=0)
    if special_per_element > flops_per_element:
        raise ValueError(
            f"special_per_element must be <= flops_per_element ({flops_per_element}), "
            f"got {special_per_element}"
        )
    vector = flops_per_element - special_per_element
    if fma_per_element > vector or fma_per_element % 2:
        raise ValueError(
            f"fma_per_element must be an even number <= the vector FLOPs per element "
            f"({vector}), 2 per FMA; got {fma_per_element}"
        )
    s = bytes_per_element(dtype)
    return Cost(
        flops=flops_per_element * numel,
        bytes_read=inputs * s * numel,
        bytes_written=outputs * s * numel,
        vector_flops=vector * numel,
        special_flops=special_per_element * numel,
        vector_fma_flops=fma_per_element * numel,
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
#: counted as one FLOP, on the special function units), the add and the two outer products (3).
GELU_FLOPS_PER_ELEMENT = 9

#: Of those, the FLOPs that pair into FMAs: ``0.044715 x^3 + x`` is a multiply then an add
#: (one FMA, 2 FLOP). The outer ``0.5 x (1 + t)`` is an add then a multiply, so it stays apart.
GELU_FMA_FLOPS_PER_ELEMENT = 2


def gelu(numel: int, dtype: Precision = "bf16") -> Cost:
    """GELU activation, tanh form; see :data:`GELU_FLOPS_PER_ELEMENT`.

    Examples
    --------
    Even at 9 FLOPs per element GELU stays far left of any GPU's ridge point:

    >>> gelu(2**20, "bf16").intensity
    2.25
    """
    return elementwise(
        numel,
        dtype,
        inputs=1,
        outputs=1,
        flops_per_element=GELU_FLOPS_PER_ELEMENT,
        special_per_element=1,
        fma_per_element=GELU_FMA_FLOPS_PER_ELEMENT,
    )


#: FLOPs per element of ``silu(gate) * up``. The sigmoid ``1 / (1 + exp(-g))``
#: takes 4 (negate, exp, add, divide), the product with ``g`` 1 and the product with ``up`` 1.
SWIGLU_FLOPS_PER_ELEMENT = 6

#: Of those, the special-function evaluations: the exp and the division. PyTorch builds
#: without fast math, so an IEEE ``a / b`` compiles to a reciprocal on the special function
#: units (MUFU.RCP) and FMAs that refine it (NB: those FMAs are left out, so the bound stays
#: a bound). No FLOP of SwiGLU is a multiply then an add, so none is marked as an FMA.
SWIGLU_SPECIAL_PER_ELEMENT = 2


def swiglu(numel: int, dtype: Precision = "bf16") -> Cost:
    """The gated activation of a SwiGLU MLP, ``silu(gate) * up``: two inputs, one output.

    Examples
    --------
    >>> swiglu(1, "bf16").bytes      # read gate, read up, write the product
    6
    """
    return elementwise(
        numel,
        dtype,
        inputs=2,
        outputs=1,
        flops_per_element=SWIGLU_FLOPS_PER_ELEMENT,
        special_per_element=SWIGLU_SPECIAL_PER_ELEMENT,
    )


#: FLOPs per element of Q or K in a rotary embedding,
#: ``x * cos + rotate_half(x) * sin``: two multiplies and one add. NB: Hugging Face's
#: ``apply_rotary_pos_emb`` also negates half of each head (``-x2`` in ``rotate_half``),
#: a sign a fused kernel folds into a subtract, so it is not counted.
ROPE_FLOPS_PER_ELEMENT = 3


def rope(
    tokens: int,
    heads: int,
    head_dim: int,
    dtype: Precision = "bf16",
    *,
    kv_heads: int | None = None,
) -> Cost:
    """Rotary position embedding (RoPE) applied to Q and K, as one fused kernel.

    Per element of ``Q`` and ``K``, ``x * cos + rotate_half(x) * sin``
    (:data:`ROPE_FLOPS_PER_ELEMENT`, all vector work). Compulsory traffic: read
    ``Q`` (``tokens x heads x head_dim``), ``K`` (``tokens x kv_heads x
    head_dim``) and the ``cos`` and ``sin`` tables (``tokens x head_dim`` each,
    shared by every head, in ``dtype``), write the rotated ``Q`` and ``K``:

    .. math:: \\text{bytes} = s\\,\\big(2\\,t\\,(h + h_{kv})\\,d + 2\\,t\\,d\\big)

    This is the count of Hugging Face's ``apply_rotary_pos_emb`` (Llama): it
    computes ``q * cos + rotate_half(q) * sin`` and the same for ``k``, with
    ``cos`` and ``sin`` of shape (batch, seq, head_dim) cast to the
    activations' precision. Run eagerly, that is five kernels per tensor
    (``-x2``, ``cat``, two multiplies, the add), ten in all, each reading and
    writing its operands; the Cost here is the single kernel they fuse into,
    the lower bound. Building the tables (once per forward pass, shared by
    every layer) is not counted.

    Parameters
    ----------
    tokens : int
        Rows of Q and K, ``batch * seq``, >= 1.
    heads : int
        Query heads, >= 1.
    head_dim : int
        Width of one head (elements), even and >= 2: the rotation pairs its halves.
    dtype : str or torch.dtype
        Precision of Q, K and the tables.
    kv_heads : int, optional
        Key heads (fewer than ``heads`` under grouped-query attention); by
        default ``heads``.

    Returns
    -------
    Cost
        One kernel; FLOPs on the vector units.

    Examples
    --------
    A Llama-2-7B layer at 4096 tokens: Q and K are 4096 x 32 x 128 each, the
    tables 4096 x 128 each, all BF16. 3 FLOPs for each of 2 * 4096 * 4096
    elements; 2 * (2 * 4096**2 + 2 * 4096 * 128) bytes in, 2 * 2 * 4096**2 out:

    >>> c = rope(4096, 32, 128)
    >>> c.flops, c.bytes_read, c.bytes_written
    (100663296, 69206016, 67108864)
    >>> c.flops_by_unit["vector"] == c.flops, round(c.intensity, 2)
    (True, 0.74)
    """
    tokens = _validate.size("tokens", tokens)
    heads = _validate.size("heads", heads)
    head_dim = _validate.size("head_dim", head_dim, minimum=2)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {head_dim}")
    kv_heads = heads if kv_heads is None else _validate.size("kv_heads", kv_heads)
    s = bytes_per_element(dtype)
    rotated = tokens * (heads + kv_heads) * head_dim  # elements of Q and K
    flops = ROPE_FLOPS_PER_ELEMENT * rotated
    return Cost(
        flops=flops,
        bytes_read=s * (rotated + 2 * tokens * head_dim),
        bytes_written=s * rotated,
        vector_flops=flops,
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
    the ``+ eps`` and the reciprocal square root (3). The root is the one
    special-function evaluation per row; the rest is vector work. The square
    and the add into the sum are one FMA (``acc + x * x``); the two
    products are plain multiplies.

    Examples
    --------
    A Llama-7B-sized activation, 4096 tokens by 4096 features, in BF16:

    >>> c = rmsnorm(4096, 4096, "bf16")
    >>> c.bytes == 2 * (2 * 4096 * 4096 + 4096)
    True
    >>> round(c.intensity, 2)               # about 4 FLOP per 4 bytes
    1.0
    >>> c.vector_slots == 3 * 4096 * 4096 + 2 * 4096    # one FMA and two multiplies per element
    True
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype)
    return Cost(
        flops=4 * rows * d + 3 * rows,
        bytes_read=s * rows * d + s_w * d,
        bytes_written=s * rows * d,
        vector_flops=4 * rows * d + 2 * rows,
        special_flops=rows,
        vector_fma_flops=2 * rows * d,
    )


def rmsnorm_eager(
    rows: int, d: int, dtype: Precision = "bf16", *, upcast: bool = True
) -> list[tuple[str, Cost]]:
    """The kernels of RMSNorm written as eager PyTorch, one per operation, with their costs.

    The sequence is that of the usual Llama ``RMSNorm`` module: with
    ``upcast=True`` the activation is cast to FP32 first and back to
    ``dtype`` before the weight multiplies it, so most passes move 4-byte
    elements; with ``upcast=False`` every tensor stays in ``dtype``. Each
    kernel reads its inputs from memory and writes its output there: with a
    cold cache that is compulsory, but an intermediate small enough to stay
    in L2 between two kernels may never reach HBM.

    Examples
    --------
    >>> kernels = rmsnorm_eager(4096, 4096, "bf16")
    >>> [name for name, _ in kernels][:3]
    ['x.to(float32)', 'x.pow(2)', '.mean(-1)']
    >>> total = sum(c for _, c in kernels)
    >>> total.kernels, round(total.bytes / rmsnorm(4096, 4096, "bf16").bytes, 1)
    (8, 9.0)
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    if not isinstance(upcast, bool):
        raise TypeError(f"upcast must be True or False, got {upcast!r}")
    s = bytes_per_element(dtype)
    w = bytes_per_element("fp32") if upcast else s  # width of the intermediates
    n = rows * d

    def kernel(flops: int, read: int, written: int, special: int = 0) -> Cost:
        return Cost(flops, read, written, vector_flops=flops - special, special_flops=special)

    steps = [
        ("x.pow(2)", kernel(n, w * n, w * n)),
        (".mean(-1)", kernel(n + rows, w * n, w * rows)),
        ("+ eps", kernel(rows, w * rows, w * rows)),
        ("rsqrt", kernel(rows, w * rows, w * rows, special=rows)),
        ("x * r", kernel(n, w * (n + rows), w * n)),
    ]
    if upcast:
        steps.insert(0, ("x.to(float32)", Cost(0, s * n, w * n)))
        steps.append(("y.to(dtype)", Cost(0, w * n, s * n)))
    steps.append(("weight * y", kernel(n, s * (n + d), s * n)))
    return steps


def layernorm(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """LayerNorm over the last dimension of a ``rows x d`` activation, with weight and bias.

    Traffic: read ``x``, ``gamma`` and ``beta`` once, write ``y`` once. FLOPs
    (NB: this package's convention): per element an add into the mean,
    subtracting the mean, a square, an add into the variance, the multiply by
    the reciprocal deviation, the scale and the shift (7); per row the two
    divisions by ``d``, the ``+ eps`` and the reciprocal root (4). Two pairs
    per element are FMAs: the square and the add into the variance
    (``acc + x' * x'``), the scale and the shift (``y * gamma + beta``). NB:
    the two divisions per row are counted as vector work, not reciprocals;
    one row's worth is too little to matter.

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
        vector_flops=7 * rows * d + 3 * rows,
        special_flops=rows,
        vector_fma_flops=4 * rows * d,
    )


#: FLOPs per element of a numerically safe softmax. They are the running max,
#: the subtraction, exp (NB, counted as one, on the special function units), the add
#: into the sum, the division.
SOFTMAX_FLOPS_PER_ELEMENT = 5

#: Of those, the special-function evaluations of an unfused softmax: the exp and the
#: division by the row's sum, which PyTorch's kernels do per element as an IEEE division
#: (a reciprocal on the special function units, see :data:`SWIGLU_SPECIAL_PER_ELEMENT`).
SOFTMAX_SPECIAL_PER_ELEMENT = 2


def softmax(rows: int, cols: int, dtype: Precision = "bf16") -> Cost:
    """Softmax along the last dimension of a ``rows x cols`` tensor, one fused kernel.

    Each row is read once and written once (a row fits on chip, or an online
    softmax computes the max and the sum in one pass); see
    :data:`SOFTMAX_FLOPS_PER_ELEMENT`.

    Examples
    --------
    >>> c = softmax(4, 8, "fp32")
    >>> c.flops, c.bytes, c.special_flops       # an exp and a reciprocal per element
    (160, 256, 64)
    """
    rows = _validate.size("rows", rows)
    cols = _validate.size("cols", cols)
    return elementwise(
        rows * cols,
        dtype,
        inputs=1,
        outputs=1,
        flops_per_element=SOFTMAX_FLOPS_PER_ELEMENT,
        special_per_element=SOFTMAX_SPECIAL_PER_ELEMENT,
    )
