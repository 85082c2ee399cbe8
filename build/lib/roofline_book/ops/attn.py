"""Self-attention: materialized scores against FlashAttention's tiled kernel."""

from __future__ import annotations

import math

from .. import _validate
from ..dtypes import Precision, bytes_per_element, precision_name
from .cost import Cost
from .matmul import gemm
from .pointwise import SOFTMAX_FLOPS_PER_ELEMENT, softmax

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
    impl: str = "flash",
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
