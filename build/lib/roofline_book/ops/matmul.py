"""Matrix products: GEMM, a tiled GEMM's traffic, and a linear layer's backward pass."""

from __future__ import annotations

from .. import _validate
from ..dtypes import Precision, bytes_per_element
from .cost import Cost


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
