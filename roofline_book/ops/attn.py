"""Self-attention: materialized scores against FlashAttention's tiled kernel."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import _validate
from ..dtypes import Precision, bytes_per_element, precision_name
from .cost import Cost
from .matmul import gemm
from .pointwise import SOFTMAX_FLOPS_PER_ELEMENT, elementwise, softmax

ATTENTION_IMPLS = ("eager", "materialized", "flash")

#: Default on-chip memory (byte) a FlashAttention thread block works in. It is
#: the 192 KB of combined L1 / shared memory per SM of the A100 that Dao et al.
#: (2022, Section 2.1) use as their example.
DEFAULT_SRAM_BYTES = 192 * 1024

#: Where :func:`fa3_tile` reads FlashAttention-3's tiles: the public repository
#: Dao-AILab/flash-attention, ``hopper/tile_size.h`` (``tile_size_fwd_sm90``) and
#: ``hopper/flash_fwd_launch_template.h`` (``Enable_cluster``), at this commit.
FA3_SOURCE = (
    "Dao-AILab/flash-attention@0251105a2fb19d2957484b7f023cd8c115286ced, "
    "hopper/tile_size.h (tile_size_fwd_sm90), hopper/flash_fwd_launch_template.h"
)


@dataclass(frozen=True)
class FlashTile:
    """The tile a flash attention kernel works in (rows of Q, K and V).

    Attributes
    ----------
    block_m : int
        Query rows one thread block keeps on chip (``kBlockM``, ``Br``). K and
        V stream past once per query block.
    block_n : int
        Key and value rows loaded per step (``kBlockN``, ``Bc``). Under a
        causal mask a query block loads whole key blocks, so the keys it
        reads are rounded up to a multiple of ``block_n`` (never past the
        last key). 1 counts exactly the keys the mask keeps.
    cluster_m : int
        Neighbouring query blocks that share each K/V load (a thread-block
        cluster with TMA multicast): the cluster loads a block once for all
        of them. It applies only when the query blocks divide evenly into
        clusters, as in FlashAttention-3; otherwise each block loads alone.

    Examples
    --------
    >>> FlashTile(128, 176, 2)
    FlashTile(block_m=128, block_n=176, cluster_m=2)
    """

    block_m: int
    block_n: int = 1
    cluster_m: int = 1

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "cluster_m"):
            _validate.size(name, getattr(self, name))


# tile_size_fwd_sm90(headdim, headdim_v=headdim, is_causal, is_local=False, element_size,
# v_colmajor=False, paged_kv_non_TMA=False, softcap=False): {kBlockM, kBlockN} by the
# largest head dim of each branch; kBlockN is (non-causal, causal).
_FA3_SM90 = {
    2: ((64, 192, (192, 128)), (96, 192, (144, 144)), (128, 128, (176, 128)),
        (192, 128, (112, 112)), (256, 128, (80, 80))),
    1: ((64, 192, (160, 160)), (96, 192, (128, 128)), (128, 128, (224, 224)),
        (192, 128, (160, 160)), (256, 128, (128, 128))),
}  # fmt: skip


def fa3_tile(head_dim: int, dtype: Precision = "bf16", causal: bool = False) -> FlashTile:
    """FlashAttention-3's forward tile on Hopper (SM90) for ``head_dim`` and ``dtype``.

    Read from the FlashAttention-3 source (``FA3_SOURCE``):
    ``tile_size_fwd_sm90`` gives ``kBlockM`` and ``kBlockN`` for equal Q/K
    and V head dims, no local window, no paged KV and no softcap; the tiles
    are set by register and shared-memory budgets, not by the ``M / (4d)``
    rule of :func:`attention`'s fallback. ``run_mha_fwd_`` launches clusters
    of two query blocks that multicast each K/V load (``Enable_cluster``)
    for 16-bit data at a compiled head dim of 128 or more, FP8 at 192, and
    no causal mask.

    Parameters
    ----------
    head_dim : int
        Width of one head, 1 to 256 (FA3 compiles 64, 96, 128, 192 and 256
        and rounds a head dim up to the next of these).
    dtype : str or torch.dtype
        FP16 or BF16 (2 bytes) or FP8 (1 byte), the precisions FA3 runs.
    causal : bool
        A causal mask (smaller key blocks at some head dims, no clusters).

    Examples
    --------
    >>> fa3_tile(64), fa3_tile(128).block_m, fa3_tile(256).block_m
    (FlashTile(block_m=192, block_n=192, cluster_m=1), 128, 128)
    >>> fa3_tile(128, causal=True)
    FlashTile(block_m=128, block_n=128, cluster_m=1)
    >>> fa3_tile(128, "fp8")
    FlashTile(block_m=128, block_n=224, cluster_m=1)
    """
    head_dim = _validate.size("head_dim", head_dim)
    if head_dim > 256:
        raise ValueError(f"head_dim must be at most 256 for FlashAttention-3, got {head_dim}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    size = bytes_per_element(dtype)
    if size not in _FA3_SM90:
        raise ValueError(
            f"dtype must be a 16-bit (fp16, bf16) or 8-bit (fp8) precision for "
            f"FlashAttention-3, got {precision_name(dtype)}"
        )
    compiled, block_m, block_n = next(b for b in _FA3_SM90[size] if head_dim <= b[0])
    clustered = not causal and (compiled >= 128 if size == 2 else compiled == 192)
    return FlashTile(block_m, block_n[int(causal)], 2 if clustered else 1)


def _causal_pairs(seq_q: int, seq_k: int) -> int:
    """(query, key) pairs a causal mask keeps, aligned bottom-right.

    Query ``i`` (of ``seq_q``) sees keys ``0 .. seq_k - seq_q + i``, so the
    last query sees every key: a decode step's one new query attends to its
    whole cache. This is the alignment of FlashAttention >= 2.1, vLLM and
    ``torch.nn.attention.bias.causal_lower_right``. With ``seq_q > seq_k`` the
    first ``seq_q - seq_k`` queries see no key.
    """
    if seq_q <= seq_k:
        return seq_q * (seq_k - seq_q) + seq_q * (seq_q + 1) // 2
    return seq_k * (seq_k + 1) // 2


def _flash_keys_read(seq_q: int, seq_k: int, tile: FlashTile, causal: bool) -> int:
    """Key (and value) rows a flash kernel loads, summed over its query blocks.

    Query blocks are grouped ``tile.cluster_m`` at a time when they divide
    evenly (one load serves the group), else one at a time. Without a mask
    each group loads all ``seq_k`` keys. With the bottom-right causal mask a
    group loads keys up to its last query's limit, ``seq_k - seq_q + last +
    1`` (none while that is <= 0), in whole ``block_n`` blocks, never past
    ``seq_k``.
    """
    rows, bn = tile.block_m, tile.block_n
    blocks = math.ceil(seq_q / rows)
    group = tile.cluster_m if blocks % tile.cluster_m == 0 else 1
    groups = blocks // group
    if not causal:
        return groups * seq_k
    offset, keys = seq_k - seq_q, 0
    for g in range(groups):
        last = min((g + 1) * group * rows, seq_q) - 1
        needed = min(seq_k, max(0, offset + last + 1))
        keys += min(seq_k, math.ceil(needed / bn) * bn)
    return keys


def _block_rows(sram_bytes: int, head_dim: int, dtype: Precision, limit: int) -> int:
    """Rows of a flash block: ``M / (4d)`` for ``M`` on-chip elements, at most ``limit``."""
    s = bytes_per_element(dtype)
    sram_elements = sram_bytes // s
    if sram_elements < 4 * head_dim:
        raise ValueError(
            f"sram_bytes must hold at least 4 * head_dim elements "
            f"({4 * head_dim * s} bytes in {precision_name(dtype)}), got {sram_bytes}"
        )
    return min(limit, sram_elements // (4 * head_dim))


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
    tile: FlashTile | None = None,
) -> Cost:
    """Scaled dot-product attention ``softmax(Q K^T / sqrt(d)) V``, forward pass.

    Shapes: ``Q`` is (batch, heads, seq_q, head_dim), ``K`` and ``V`` are
    (batch, heads, seq_k, head_dim). With ``N`` scores per head,
    ``N = seq_q * seq_k``:

    FLOPs (NB, convention): the two matrix products, ``4 N d`` per head, on
    the matrix units, as PyTorch's flop counter and Dao et al. count them;
    plus the softmax's :data:`SOFTMAX_FLOPS_PER_ELEMENT` per score, one exp
    on the special function units and the rest on the vector units. The
    ``1/sqrt(d)`` scale is folded into the first product. With
    ``causal=True`` the flash kernel computes only the ``(query, key)``
    pairs the mask keeps, while the unfused versions compute every score and
    then mask, so their FLOPs count masked work too.

    ``impl="materialized"``: the fewest unfused kernels, three. ``S = Q K^T``
    is written to memory, softmax reads ``S`` and writes ``P``, and
    ``O = P V`` reads ``P`` back; scores are stored in ``dtype``, 8 bytes
    per BF16 score.

    ``impl="eager"``: attention as eager Hugging Face code writes it, six
    kernels: ``Q K^T``, the scale, the mask add (``causal=True`` only; the
    mask, one per sequence, is read once), softmax computed and written in
    FP32, the cast back to ``dtype``, and ``P V``: about 24 bytes per BF16
    score.

    ``impl="flash"``: one tiled kernel (FlashAttention). A block of ``Br``
    query rows stays on chip while the key and value rows stream past, the
    loop order of FlashAttention-2 (Dao 2023) and FlashAttention-3. The
    compulsory traffic, :attr:`Cost.bytes <roofline_book.ops.Cost.bytes>`,
    is Q, K and V read once and O written once. K and V are read once per
    query block (once per cluster of blocks that multicast them), about
    ``seq_q / Br`` times: the reads after the first are
    ``Cost.reread_bytes``, and one head's K and V is
    ``Cost.reread_footprint``. The roofline charges the re-reads to L2
    when that footprint fits there (a few MB against tens of MB of L2 on
    current GPUs) and to HBM when it does not.

    ``Br`` is ``tile.block_m`` when a ``tile`` is given: a real kernel's
    tile, e.g. FlashAttention-3's on Hopper (:func:`fa3_tile`), whose
    register budget, not its shared memory, sets ``Br``. Without one the
    model falls back on the on-chip memory: with ``M = sram_bytes / s``
    elements, ``Br = M / (4d)``, the block size of Dao et al. (2022,
    Algorithm 1) without its cap at ``d`` rows, and the re-reads are
    ``Theta(seq_q seq_k d^2 / M)`` in all (the bound of their Theorem 2).

    Parameters
    ----------
    batch, heads, seq_q, seq_k, head_dim : int
        Sizes, each >= 1.
    dtype : str or torch.dtype
        Precision of Q, K, V, O (and of the materialized scores).
    impl : {"eager", "materialized", "flash"}
    causal : bool
        Apply a causal mask, aligned bottom-right: query ``i`` attends to keys
        ``0 .. seq_k - seq_q + i`` (``0 .. i`` when ``seq_q == seq_k``), so one
        decode query sees its whole context.
    sram_bytes : int
        On-chip memory of one flash thread block (byte), usually the device's
        shared memory per SM; must hold at least one query row's working set,
        ``4 * head_dim`` elements. Used for ``Br`` only when ``tile`` is None.
    tile : FlashTile, optional
        The flash kernel's tile (query rows, key rows, cluster); None derives
        the query rows from ``sram_bytes`` and counts keys one by one.

    Examples
    --------
    One head, 4096 tokens, d = 128, BF16. All versions do the same FLOPs:

    >>> mat = attention(1, 1, 4096, 4096, 128, impl="materialized")
    >>> fl = attention(1, 1, 4096, 4096, 128, impl="flash")
    >>> mat.flops == fl.flops == 4 * 4096 * 4096 * 128 + 5 * 4096 * 4096
    True
    >>> fl.flops_by_unit["special"] == 4096 * 4096        # one exp per score
    True

    The materialized scores dominate its traffic (written, read, written,
    read: 4 x 2 x 4096^2 bytes); the flash kernel's compulsory traffic is
    Q, K, V and O once each:

    >>> 4 * 2 * 4096**2 <= mat.bytes
    True
    >>> fl.bytes == 4 * 4096 * 128 * 2
    True
    >>> fl.reread_footprint == 2 * 4096 * 128 * 2         # one head's K and V
    True

    Eager code moves three times the materialized bytes per score (32
    heads share one mask):

    >>> eager = attention(1, 32, 4096, 4096, 128, impl="eager", causal=True)
    >>> eager.kernels, round((eager.bytes - 32 * 4 * 4096 * 128 * 2) / (32 * 4096**2))
    (6, 24)

    A causal decode step, one query over a cache of 1024 keys, sees every key:

    >>> step = attention(1, 8, 1, 1024, 128, causal=True)
    >>> step.flops == 8 * 1024 * (4 * 128 + 5)    # 4 * heads * 1024 * d, plus the softmax
    True

    With enough on-chip memory for all of Q, nothing is read twice:

    >>> attention(1, 1, 64, 64, 32, "fp16", sram_bytes=2**20).reread_bytes
    0

    FlashAttention-3's tile at d = 128 (128 query rows, clusters of two that
    share each K/V load): 4096 / 128 = 32 blocks, 16 loads of K and V, 15 of
    them re-reads:

    >>> fa3 = attention(1, 1, 4096, 4096, 128, tile=fa3_tile(128))
    >>> fa3.reread_bytes == 15 * 2 * 4096 * 128 * 2
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
    if tile is not None and not isinstance(tile, FlashTile):
        raise TypeError(f"tile must be a FlashTile or None, got {type(tile).__name__}")
    s = bytes_per_element(dtype)
    bh = batch * heads

    if impl == "materialized":
        scores = gemm(seq_q, head_dim, seq_k, dtype, batch=bh)
        probs = softmax(bh * seq_q, seq_k, dtype)
        output = gemm(seq_q, seq_k, head_dim, dtype, batch=bh)
        return scores + probs + output
    if impl == "eager":
        return _eager(batch, bh, seq_q, seq_k, head_dim, dtype, causal)

    if tile is None:
        tile = FlashTile(_block_rows(sram_bytes, head_dim, dtype, seq_q))
    pairs = _causal_pairs(seq_q, seq_k) if causal else seq_q * seq_k
    keys = _flash_keys_read(seq_q, seq_k, tile, causal)
    softmax_vector = SOFTMAX_FLOPS_PER_ELEMENT - 1
    return Cost(
        flops=bh * pairs * (4 * head_dim + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=bh * s * head_dim * (seq_q + 2 * seq_k),
        bytes_written=bh * s * head_dim * seq_q,
        vector_flops=bh * pairs * softmax_vector,
        special_flops=bh * pairs,
        reread_bytes=bh * s * head_dim * 2 * (keys - seq_k),
        reread_footprint=s * head_dim * 2 * seq_k,
    )


def _eager(
    batch: int, bh: int, seq_q: int, seq_k: int, d: int, dtype: Precision, causal: bool
) -> Cost:
    """The six (five without a mask) kernels of eager Hugging Face attention."""
    scores = bh * seq_q * seq_k
    s, f32 = bytes_per_element(dtype), bytes_per_element("fp32")
    total = gemm(seq_q, d, seq_k, dtype, batch=bh)  # S = Q K^T
    total += elementwise(scores, dtype)  # S * scale
    if causal:  # S + mask; the (batch, 1, seq_q, seq_k) mask is read once
        total += elementwise(scores, dtype) + Cost(0, s * batch * seq_q * seq_k, 0, 0)
    total += softmax(bh * seq_q, seq_k, dtype) + Cost(0, 0, (f32 - s) * scores, 0)  # FP32 out
    total += Cost(0, f32 * scores, s * scores)  # .to(dtype)
    return total + gemm(seq_q, seq_k, d, dtype, batch=bh)  # O = P V


ATTENTION_BACKWARD_IMPLS = ("stored", "flash")


def attention_backward(
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
    """Backward pass of :func:`attention`: gradients of Q, K and V from dO.

    ``impl="stored"``: the forward pass kept ``P``; five unfused kernels read
    it back. ``dV = P^T dO`` and ``dP = dO V^T`` (matrix units), ``dS = P *
    (dP - D)`` (2 vector FLOPs per score; ``D`` is one number per row and is
    left out), ``dQ = dS K`` and ``dK = dS^T Q``. The ``N x N`` tensors
    ``P``, ``dP`` and ``dS`` go to and from memory.

    ``impl="flash"``: the forward pass kept only ``O`` and each row's
    logsumexp ``L``; the backward kernel recomputes ``S = Q K^T`` and ``P =
    exp(S - L)`` on chip (one more matrix product, one exp and one subtract
    per score), so it does more FLOPs than ``"stored"`` but no ``N x N``
    tensor reaches memory. Compulsory traffic: Q, K, V, O, dO read once, dQ,
    dK, dV written once (``L`` is left out). With the key and value blocks
    of FlashAttention-2's backward (``Bc = M / (4d)`` rows) on chip, Q, dO
    and dQ are fetched again for every key block: those are re-reads, with
    one head's Q, dO and dQ as their footprint.

    FLOPs: 8 ``N d`` per score for ``"stored"`` (four products), 10 for
    ``"flash"``, the 2.5 times the forward's 4 that Dao (2023) counts.

    ``causal=True`` (the mask of :func:`attention`, aligned bottom-right): the
    flash kernel computes only the ``(query, key)`` pairs the mask keeps, as
    in the forward pass; the traffic is unchanged (NB: the re-reads are
    counted as without the mask, an upper bound). The unfused ``"stored"``
    kernels compute every score, so their cost does not change.

    Examples
    --------
    One head, 4096 tokens, d = 128, BF16: recomputing costs 1.25 times the
    matrix FLOPs and moves far fewer bytes.

    >>> stored = attention_backward(1, 1, 4096, 4096, 128, impl="stored")
    >>> flash = attention_backward(1, 1, 4096, 4096, 128, impl="flash")
    >>> flash.matrix_flops / stored.matrix_flops
    1.25
    >>> flash.bytes == 8 * 4096 * 128 * 2          # Q, K, V, O, dO in; dQ, dK, dV out
    True
    >>> round(stored.bytes / flash.bytes)
    29

    A causal mask keeps 4096 * 4097 / 2 of the 4096^2 pairs:

    >>> causal = attention_backward(1, 1, 4096, 4096, 128, impl="flash", causal=True)
    >>> causal.flops == 4096 * 4097 // 2 * (10 * 128 + 4), causal.bytes == flash.bytes
    (True, True)
    """
    batch = _validate.size("batch", batch)
    heads = _validate.size("heads", heads)
    seq_q = _validate.size("seq_q", seq_q)
    seq_k = _validate.size("seq_k", seq_k)
    head_dim = _validate.size("head_dim", head_dim)
    impl = _validate.choice("impl", impl, ATTENTION_BACKWARD_IMPLS)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    sram_bytes = _validate.size("sram_bytes", sram_bytes)
    s = bytes_per_element(dtype)
    bh, scores = batch * heads, batch * heads * seq_q * seq_k

    by_p = gemm(seq_k, seq_q, head_dim, dtype, batch=bh)  # dV = P^T dO (dK = dS^T Q alike)
    dp = gemm(seq_q, head_dim, seq_k, dtype, batch=bh)  # dP = dO V^T
    ds = elementwise(scores, dtype, inputs=2, outputs=1, flops_per_element=2)  # P * (dP - D)
    dq = gemm(seq_q, seq_k, head_dim, dtype, batch=bh)  # dQ = dS K
    stored = by_p + dp + ds + dq + by_p
    if impl == "stored":
        return stored

    rows = _block_rows(sram_bytes, head_dim, dtype, seq_k)
    key_blocks = math.ceil(seq_k / rows)
    q_rows = bh * s * head_dim * seq_q  # one N x d tensor of the queries' side, all heads
    kv_rows = bh * s * head_dim * seq_k
    kept = bh * _causal_pairs(seq_q, seq_k) if causal else scores
    # per kept score: the four products of "stored" (8 d) and S = Q K^T again (2 d) on the
    # matrix units; dS = P * (dP - D) (2), exp(S - L) (a subtract and an exp)
    return Cost(
        flops=kept * (10 * head_dim + 4),
        bytes_read=3 * q_rows + 2 * kv_rows,  # Q, O, dO; K, V
        bytes_written=q_rows + 2 * kv_rows,  # dQ; dK, dV
        vector_flops=3 * kept,
        special_flops=kept,
        reread_bytes=(key_blocks - 1) * 4 * q_rows,  # Q, dO read; dQ read and written again
        reread_footprint=3 * s * head_dim * seq_q,
    )
