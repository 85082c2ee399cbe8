"""self-attention：把得分矩阵写回内存的实现与 FlashAttention 的分块 kernel。"""

from __future__ import annotations

import dataclasses
import math

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, bytes_per_element, precision_name
from .cost import Cost
from .matmul import gemm
from .pointwise import SOFTMAX_FLOPS_PER_ELEMENT, elementwise, softmax
from .tiles import FA3_SOURCE as FA3_SOURCE
from .tiles import FlashTile
from .tiles import fa3_tile as fa3_tile

ATTENTION_IMPLS = ("eager", "materialized", "flash")

#: FlashAttention 一个 thread block 默认可用的片上存储（byte）：192 KiB，即 Dao et al.
#: （2022，第 2.1 节）举例所用的 A100 每个 SM 的 L1 与 shared memory 合计容量；A100
#: 的 shared memory 本身每个 SM 最多 164 KiB（见硬件目录）。
DEFAULT_SRAM_BYTES = 192 * 1024


def _causal_pairs(seq_q: int, seq_k: int, window: int | None = None) -> int:
    """causal mask 保留的 (query, key) 对数，右下对齐；有 ``window`` 时每个 query 至多看这么多个。

    query ``i`` （共 ``seq_q`` 个）看到 key ``0 .. seq_k - seq_q + i``，所以最后一个 query 看到
    每一个 key：一步 decode 的那个新 query 看到它的整个 cache。这是 FlashAttention >= 2.1、vLLM 和
    ``torch.nn.attention.bias.causal_lower_right`` 的对齐方式。``seq_q > seq_k`` 时，前
    ``seq_q - seq_k`` 个 query 看不到任何 key。sliding window 再把 query ``i`` 限于它的最后
    ``window`` 个 key（包括它自己）：看到 ``t`` 个 key 的 query 现在看 ``min(t, window)`` 个。
    """
    # query i sees t = seq_k - seq_q + 1 + i keys; t runs over lo..hi, none below 1
    lo, hi = max(seq_k - seq_q + 1, 1), seq_k
    if window is None or window >= hi:
        return hi * (hi + 1) // 2 - (lo - 1) * lo // 2
    cut = max(window, lo - 1)  # t <= cut: t keys; t > cut: window keys
    rising = window * (window + 1) // 2 - (lo - 1) * lo // 2 if window >= lo else 0
    return rising + window * (hi - cut)


def attention_keys(seq_q: int, seq_k: int, window: int | None = None) -> int:
    """causal attention（右下对齐）中有某个 query 看到的 key 个数，即必须读入的 K 与 V 行数。

    没有窗口时最后一个 query 看到全部 ``seq_k`` 个；sliding window ``w`` 下第一个 query 的窗口
    从它的位置往前 ``w - 1`` 个 key 起，所以共 ``min(seq_k, seq_q + w - 1)`` 个。

    Examples
    --------
    >>> attention_keys(1, 8192, 4096), attention_keys(100, 5000, 4096), attention_keys(1, 10)
    (4096, 4195, 10)
    """
    return seq_k if window is None else min(seq_k, seq_q + window - 1)


def _flash_keys_read(
    seq_q: int, seq_k: int, tile: FlashTile, causal: bool, window: int | None = None
) -> int:
    """flash kernel 读入的 key（及 value）行数，对所有 query 块求和。

    query 块能整除时每 ``tile.cluster_m`` 个一组（一次读入供整组使用），否则一个一组。没有 mask 时
    每组读入全部 ``seq_k`` 个 key。用右下对齐的 causal mask 时，一组读入的 key 到它最后一个 query 的
    界限 ``seq_k - seq_q + last + 1`` 为止（这个数 <= 0 时一个也不读）；有 sliding window 时从它
    第一个 query 的窗口起点 ``seq_k - seq_q + first + 1 - window`` 开始。两端都按整个 ``block_n``
    块计，不超出 ``0 .. seq_k``。
    """
    rows, bn = tile.block_m, tile.block_n
    blocks = math.ceil(seq_q / rows)
    group = tile.cluster_m if blocks % tile.cluster_m == 0 else 1
    groups = blocks // group
    if not causal:
        return groups * seq_k
    offset, keys = seq_k - seq_q, 0
    for g in range(groups):
        first, last = g * group * rows, min((g + 1) * group * rows, seq_q) - 1
        end = min(seq_k, max(0, offset + last + 1))
        if end == 0:
            continue
        start = 0 if window is None else max(0, offset + first + 1 - window)
        keys += min(seq_k, math.ceil(end / bn) * bn) - start // bn * bn
    return keys


def _kv_heads(heads: int, kv_heads: int | None) -> int:
    """K 与 V 的 head 数：None 时等于 ``heads``；否则须整除 ``heads`` （GQA/MQA 的分组）。"""
    if kv_heads is None:
        return heads
    kv_heads = _validate.size("kv_heads", kv_heads)
    if kv_heads > heads or heads % kv_heads:
        raise InvalidArgument(
            "kv_heads",
            f"must divide heads ({heads}): each K/V head serves heads / kv_heads "
            f"query heads; got {kv_heads}",
        )
    return kv_heads


def _block_rows(sram_bytes: int, head_dim: int, dtype: Precision, limit: int) -> int:
    """flash 块的行数：片上有 ``M`` 个元素时为 ``M / (4d)``，至多 ``limit``。"""
    s = bytes_per_element(dtype)
    sram_elements = sram_bytes // s
    if sram_elements < 4 * head_dim:
        raise InvalidArgument(
            "sram_bytes",
            f"must hold at least 4 * head_dim elements "
            f"({4 * head_dim * s} bytes in {precision_name(dtype)}), got {sram_bytes}",
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
    kv_heads: int | None = None,
    window: int | None = None,
    kv_dtype: Precision | None = None,
) -> Cost:
    """scaled dot-product attention ``softmax(Q K^T / sqrt(d)) V`` 的前向。

    shape：``Q`` 为 (batch, heads, seq_q, head_dim)，``K`` 和 ``V`` 为
    (batch, kv_heads, seq_k, head_dim)，``kv_heads`` 默认等于 ``heads``；小于它时是 grouped-query
    attention（GQA，``kv_heads = 1`` 时为 MQA），每 ``heads / kv_heads`` 个 query head 共用一个 K/V
    head，K 和 V 按它们自己的 head 数计字节（必需流量各读一次）。每个 query head 有
    ``N = seq_q * seq_k`` 个得分：

    FLOPs（NB，约定）：两次矩阵乘法，每个 head ``4 N d``，在矩阵单元上，与 PyTorch 的
    flop counter 和 Dao et al. 的计法相同；再加上 softmax 每个得分
    :data:`~roofline_book.ops.pointwise.SOFTMAX_FLOPS_PER_ELEMENT`
    次运算，其中一次 exp 在特殊函数单元上，其余在向量
    单元上。``1/sqrt(d)`` 的缩放并入第一次乘法。``causal=True`` 时，flash kernel 只计算
    mask 保留下来的 ``(query, key)`` 对，而不融合的实现先算出全部得分再加 mask，所以它们
    的 FLOPs 也包括被 mask 掉的部分。

    causal mask 按右下对齐（FlashAttention >= 2.1 的约定）：query ``i`` 看到 key
    ``0 .. seq_k - seq_q + i``。PyTorch ``scaled_dot_product_attention(is_causal=True)`` 按左上对齐
    （query ``i`` 看到 key ``0 .. i``）；两者只在 ``seq_q != seq_k`` 时不同，例如 ``seq_q = 4096``、
    ``seq_k = 1`` 时右下对齐只保留 1 对，左上对齐保留 4096 对。

    ``impl="materialized"``：kernel 数最少的不融合实现，三个 kernel。``S = Q K^T`` 写回
    内存，softmax 读 ``S``、写 ``P``，``O = P V`` 再把 ``P`` 读回来；得分按 ``dtype``
    存放，每个 BF16 得分 8 字节。

    ``impl="eager"``：Hugging Face eager 代码的写法：``Q K^T``、缩放、加 mask（仅
    ``causal=True``；mask 每条序列一份，读一次）、``softmax(..., dtype=torch.float32)``、转回
    ``dtype``，以及 ``P V``。ATen 只对 FP16 输入把转换并入 softmax；BF16 的得分先由单独的一个 kernel
    转成 FP32（见 ``_eager``），所以 BF16 下是七个 kernel，每个得分约 32 字节（不加 mask 时六个、
    28 字节）。FP32 的 softmax 的向量运算按 FP32 的速率计（``Cost.fp32_vector_slots``）。

    ``impl="flash"``：一个分块 kernel（FlashAttention）。``Br`` 行 query 组成的块留在片上， key 与
    value 的各行依次流过，这是 FlashAttention-2（Dao 2023）与 FlashAttention-3 的循环顺序。必需流量
    :attr:`Cost.bytes <roofline_book.ops.Cost.bytes>` 是 Q、K、V 各读一次，O 写一次。每个 query 块
    （或者以 multicast 共享它们的每一组块）都要读一遍 K 和 V，约 ``seq_q / Br`` 次：第一次之后的读取
    记为 ``Cost.reread_bytes``，一个 head 的 K 和 V 记为 ``Cost.reread_footprint``。这个 footprint
    装得进 L2 时（当前 GPU 上是几 MB 对几十 MB 的 L2），roofline 把重读算在 L2 上，装不下时算在 HBM
    上。FlashAttention-2 与 -3 把得分留在 FP32 累加器里，softmax 按 FP32 做，与 ``dtype`` 无关，
    所以它的向量运算按 FP32 的速率计（``Cost.fp32_vector_slots``）。

    给了 ``tile`` 时 ``Br`` 为 ``tile.block_m``：一个真实 kernel 的 tile，例如 Hopper 上
    FlashAttention-3 的（:func:`fa3_tile`），它的 ``Br`` 由寄存器预算而不是 shared memory 决定。没有
    ``tile`` 时模型退回片上存储：记 ``M = sram_bytes / s`` 个元素，``Br = M / (4d)``，即 Dao et al.
    （2022，Algorithm 1）的块大小，但不设上限 ``d`` 行，重读总量为 ``Theta(seq_q seq_k d^2 / M)``
    （他们 Theorem 2 的界）。

    Parameters
    ----------
    batch : int
        序列数（batch 大小），>= 1。
    heads : int
        attention head 数，>= 1。
    seq_q : int
        每条序列的 query 数，>= 1。
    seq_k : int
        每条序列的 key（与 value）数，>= 1。
    head_dim : int
        每个 head 的维度 ``d``，>= 1。
    dtype : str or torch.dtype
        Q、K、V、O 的精度（也是写回内存的得分的精度）。
    impl : {"eager", "materialized", "flash"}
    causal : bool
        加 causal mask，右下对齐：query ``i`` 看 key ``0 .. seq_k - seq_q + i``
        （``seq_q == seq_k`` 时为 ``0 .. i``），所以 decode 的一个 query 能看到全部上下文。
    sram_bytes : int
        一个 flash thread block 的片上存储（byte），通常取设备每个 SM 的 shared memory；
        至少要装下一行 query 的工作集，即 ``4 * head_dim`` 个元素。只在 ``tile`` 为 None 时用来定
        ``Br``。
    tile : FlashTile, optional
        flash kernel 的 tile（query 行数、key 行数、cluster）；None 时由 ``sram_bytes`` 推出
        query 行数，key 逐个计数。
    kv_heads : int, optional
        K 与 V 的 head 数，须整除 ``heads``；None 时等于 ``heads``。FLOPs 不变（每个 query head
        照样与它那组的 K、V 做两次乘法）；K、V 的必需读取与重读按 ``kv_heads`` 计（NB：共用一个
        K/V head 的 query head 之间的重读可能由 cache 供给，按 ``kv_heads`` 计是下界）。不融合的
        实现把 K、V 按 query head 展开来读，这里同样只计每个 K/V head 一次。
    window : int, optional
        sliding window（Mistral、Gemma 2 的 local 层）：每个 query 只看它最后 ``window`` 个 key，
        包括它自己；须与 ``causal=True`` 一起用。flash kernel 只计算窗口内的对，只读某个 query
        看到的 key（``min(seq_k, seq_q + window - 1)`` 个）；不融合的实现照样算出全部得分再加
        mask，代价与 causal 相同。None：不限窗口。
    kv_dtype : str or torch.dtype, optional
        K 与 V 的精度（例如 FP8 的 KV cache），只用于 flash kernel；None 时等于 ``dtype``。

    Examples
    --------
    一个 head，4096 个 token，d = 128，BF16。各实现的 FLOPs 相同：

    >>> mat = attention(1, 1, 4096, 4096, 128, impl="materialized")
    >>> fl = attention(1, 1, 4096, 4096, 128, impl="flash")
    >>> mat.flops == fl.flops == 4 * 4096 * 4096 * 128 + 5 * 4096 * 4096
    True
    >>> fl.flops_by_unit["special"] == 4096 * 4096        # one exp per score
    True

    写回内存的得分占了 materialized 流量的大头（写、读、写、读：4 x 2 x 4096^2 字节）；
    flash kernel 的必需流量是 Q、K、V、O 各一次：

    >>> 4 * 2 * 4096**2 <= mat.bytes
    True
    >>> fl.bytes == 4 * 4096 * 128 * 2
    True
    >>> fl.reread_footprint == 2 * 4096 * 128 * 2         # one head's K and V
    True

    eager 代码每个 BF16 得分搬运的字节数是 materialized 的 4 倍（32 个 head 共用一份 mask）：

    >>> eager = attention(1, 32, 4096, 4096, 128, impl="eager", causal=True)
    >>> eager.kernels, round((eager.bytes - 32 * 4 * 4096 * 128 * 2) / (32 * 4096**2))
    (7, 32)

    causal 的一步 decode，一个 query 对 1024 个 key 的 cache，能看到每一个 key：

    >>> step = attention(1, 8, 1, 1024, 128, causal=True)
    >>> step.flops == 8 * 1024 * (4 * 128 + 5)    # 4 * heads * 1024 * d, plus the softmax
    True

    GQA 的一步 decode：32 个 query head 共用 8 个 K/V head，4096 个 key，d = 128，FP32。K 和 V
    各读 8 * 4096 * 128 * 4 字节，Q 与 O 各 32 * 128 * 4 字节：

    >>> gqa = attention(1, 32, 1, 4096, 128, "fp32", kv_heads=8)
    >>> gqa.bytes == 2 * 8 * 4096 * 128 * 4 + 2 * 32 * 128 * 4, 3 * gqa.bytes
    (True, 100761600)
    >>> gqa.flops == attention(1, 32, 1, 4096, 128, "fp32").flops
    True

    片上存储装得下全部 Q 时，没有数据被读两次：

    >>> attention(1, 1, 64, 64, 32, "fp16", sram_bytes=2**20).reread_bytes
    0

    d = 128 时 FlashAttention-3 的 tile（128 行 query，两个块组成一个 cluster，共享每次 K/V 读入）：
    4096 / 128 = 32 个块，K 与 V 读入 16 次，其中 15 次是重读：

    >>> fa3 = attention(1, 1, 4096, 4096, 128, tile=fa3_tile(128))
    >>> fa3.reread_bytes == 15 * 2 * 4096 * 128 * 2
    True

    sliding window 4096 的一步 decode，cache 中有 8192 个 key：只有最后 4096 个被看到、被读：

    >>> local = attention(1, 1, 1, 8192, 128, causal=True, window=4096)
    >>> local.flops == 4096 * (4 * 128 + 5), local.bytes_read == (1 + 2 * 4096) * 128 * 2
    (True, True)
    """
    batch = _validate.size("batch", batch)
    heads = _validate.size("heads", heads)
    seq_q = _validate.size("seq_q", seq_q)
    seq_k = _validate.size("seq_k", seq_k)
    head_dim = _validate.size("head_dim", head_dim)
    impl = _validate.choice("impl", impl, ATTENTION_IMPLS)
    if not isinstance(causal, (bool,)):
        raise InvalidArgumentType("causal", f"must be True or False, got {causal!r}")
    sram_bytes = _validate.size("sram_bytes", sram_bytes)
    if tile is not None and not isinstance(tile, FlashTile):
        raise InvalidArgumentType("tile", f"must be a FlashTile or None, got {type(tile).__name__}")
    kv = _kv_heads(heads, kv_heads)
    if window is not None:
        window = _validate.size("window", window)
        if not causal:
            raise InvalidArgument("window", "needs causal=True: a query sees its last keys")
    s = bytes_per_element(dtype)
    if (
        kv_dtype is not None
        and impl != "flash"
        and precision_name(kv_dtype, "kv_dtype") != precision_name(dtype)
    ):
        raise InvalidArgument(
            "kv_dtype",
            f"must equal dtype for impl={impl!r}: only the flash kernel reads K and V"
            " in their own precision",
        )
    s_kv = s if kv_dtype is None else bytes_per_element(precision_name(kv_dtype, "kv_dtype"))
    bh = batch * heads
    _validate.elements(
        "batch * heads * seq * head_dim (Q, K, V)", bh * max(seq_q, seq_k) * head_dim
    )
    if impl != "flash":
        _validate.elements("batch * heads * seq_q * seq_k (the score matrix)", bh * seq_q * seq_k)
    # K and V read per query head by the unfused kernels, beyond once per K/V head
    shared = 2 * batch * (heads - kv) * s * seq_k * head_dim

    if impl == "materialized":
        scores = gemm(seq_q, head_dim, seq_k, dtype, batch=bh)
        probs = softmax(bh * seq_q, seq_k, dtype)
        output = gemm(seq_q, seq_k, head_dim, dtype, batch=bh)
        total = scores + probs + output
        return dataclasses.replace(total, bytes_read=total.bytes_read - shared)
    if impl == "eager":
        total = _eager(batch, bh, seq_q, seq_k, head_dim, dtype, causal)
        return dataclasses.replace(total, bytes_read=total.bytes_read - shared)

    if tile is None:
        tile = FlashTile(_block_rows(sram_bytes, head_dim, dtype, seq_q))
    pairs = _causal_pairs(seq_q, seq_k, window) if causal else seq_q * seq_k
    seen = attention_keys(seq_q, seq_k, window)  # K and V rows some query sees: read once
    keys = _flash_keys_read(seq_q, seq_k, tile, causal, window)
    softmax_vector = SOFTMAX_FLOPS_PER_ELEMENT - 1
    return Cost(
        flops=bh * pairs * (4 * head_dim + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=batch * head_dim * (s * heads * seq_q + s_kv * 2 * kv * seen),
        bytes_written=bh * s * head_dim * seq_q,
        vector_flops=bh * pairs * softmax_vector,
        fp32_vector_slots=bh * pairs * softmax_vector,  # softmax in the FP32 accumulators
        special_flops=bh * pairs,
        reread_bytes=batch * kv * s_kv * head_dim * 2 * (keys - seen),
        reread_footprint=s_kv * head_dim * 2 * seen,
    )


def _eager(
    batch: int, bh: int, seq_q: int, seq_k: int, d: int, dtype: Precision, causal: bool
) -> Cost:
    """Hugging Face eager attention 的各个 kernel：BF16 七个（不加 mask 时六个）。

    ``softmax(S, dim=-1, dtype=torch.float32).to(dtype)``：ATen 只对 FP16 走融合的 half-to-float
    路径，其他精度先由一个单独的 kernel 转成 FP32（``aten/src/ATen/native/SoftMax.cpp``）::

        if (input_.is_cuda() && input_.scalar_type() == ScalarType::Half &&
            dtype == ScalarType::Float) return at::_softmax(input_, dim_, true);
        else { Tensor converted = dtype.has_value() ? input_.toType(dtype.value()) : input_; ... }

    FP32 输入不需要转换（``toType`` 与 ``.to`` 原样返回），也没有转回的 kernel。
    """
    scores = bh * seq_q * seq_k
    s, f32 = bytes_per_element(dtype), bytes_per_element("fp32")
    total = gemm(seq_q, d, seq_k, dtype, batch=bh)  # S = Q K^T
    total += elementwise(scores, dtype)  # S * scale
    if causal:  # S + mask; the (batch, 1, seq_q, seq_k) mask is read once
        total += elementwise(scores, dtype) + Cost(0, s * batch * seq_q * seq_k, 0, 0)
    probs = softmax(bh * seq_q, seq_k, "fp32")  # computed in FP32, written in FP32
    probs = dataclasses.replace(probs, fp32_vector_slots=probs.vector_slots)
    if s == f32:  # nothing to convert
        return total + probs + gemm(seq_q, seq_k, d, dtype, batch=bh)
    if precision_name(dtype) == "fp16":  # the fused half-to-float softmax reads FP16
        probs = dataclasses.replace(probs, bytes_read=s * scores)
    else:  # input_.toType(kFloat): a kernel of its own
        total += Cost(0, s * scores, f32 * scores)
    total += probs + Cost(0, f32 * scores, s * scores)  # .to(dtype)
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
    kv_heads: int | None = None,
) -> Cost:
    """:func:`attention` 的反向：由 dO 求 Q、K、V 的梯度。

    ``impl="stored"``：前向保存了 ``P``；五个不融合的 kernel 把它读回来。
    ``dV = P^T dO`` 和 ``dP = dO V^T`` （矩阵单元），``dS = P * (dP - D)`` （每个得分 2 次
    向量运算；``D`` 每行一个数，不计），``dQ = dS K`` 和 ``dK = dS^T Q``。``N x N`` 的
    tensor ``P``、``dP`` 和 ``dS`` 都要进出内存。

    ``impl="flash"``：前向只保存了 ``O`` 和每行的 logsumexp ``L``；反向 kernel 在片上
    重算 ``S = Q K^T`` 和 ``P = exp(S - L)`` （每个得分多一次矩阵乘法、一次 exp 和一次
    减法），所以 FLOPs 比 ``"stored"`` 多，但没有 ``N x N`` 的 tensor 到达内存。必需流量：
    Q、K、V、O、dO 各读一次，dQ、dK、dV 各写一次（``L`` 不计）。按 FlashAttention-2
    反向的做法，key 和 value 的块（``Bc = M / (4d)`` 行）留在片上，每个 key 块都要再取一遍
    Q、dO 和 dQ：这些是重读，footprint 是一个 head 的 Q、dO 和 dQ。

    FLOPs：每个得分，``"stored"`` 为 ``8 d`` （四次乘法，每个 head 共 ``8 N d``），
    ``"flash"`` 为 ``10 d``，即 Dao（2023）所计的前向 ``4 d`` 的 2.5 倍。

    ``causal=True`` （即 :func:`attention` 的 mask，右下对齐）：与前向一样，flash kernel
    只计算 mask 保留的 ``(query, key)`` 对；流量不变（NB：重读按无 mask 计，是个上界）。
    不融合的 ``"stored"`` 各 kernel 计算全部得分，代价不变。

    ``kv_heads`` （GQA/MQA，须整除 ``heads``，默认等于它）：与 :func:`attention` 一样，K、V 和它们的
    梯度 dK、dV 按 ``kv_heads`` 计字节，FLOPs 不变。

    Examples
    --------
    一个 head，4096 个 token，d = 128，BF16：重算使矩阵 FLOPs 变为 1.25 倍，搬运的字节却少得多。

    >>> stored = attention_backward(1, 1, 4096, 4096, 128, impl="stored")
    >>> flash = attention_backward(1, 1, 4096, 4096, 128, impl="flash")
    >>> flash.matrix_flops / stored.matrix_flops
    1.25
    >>> flash.bytes == 8 * 4096 * 128 * 2          # Q, K, V, O, dO in; dQ, dK, dV out
    True
    >>> round(stored.bytes / flash.bytes)
    29

    causal mask 保留 4096^2 对中的 4096 * 4097 / 2 对：

    >>> causal = attention_backward(1, 1, 4096, 4096, 128, impl="flash", causal=True)
    >>> causal.flops == 4096 * 4097 // 2 * (10 * 128 + 4), causal.bytes == flash.bytes
    (True, True)

    8 个 query head 共用 2 个 K/V head：K、V、dK、dV 各少 6 个 head 的字节：

    >>> mha = attention_backward(1, 8, 256, 256, 64, "fp32")
    >>> gqa = attention_backward(1, 8, 256, 256, 64, "fp32", kv_heads=2)
    >>> mha.bytes - gqa.bytes == 4 * 6 * 256 * 64 * 4, gqa.flops == mha.flops
    (True, True)
    """
    batch = _validate.size("batch", batch)
    heads = _validate.size("heads", heads)
    seq_q = _validate.size("seq_q", seq_q)
    seq_k = _validate.size("seq_k", seq_k)
    head_dim = _validate.size("head_dim", head_dim)
    impl = _validate.choice("impl", impl, ATTENTION_BACKWARD_IMPLS)
    if not isinstance(causal, bool):
        raise InvalidArgumentType("causal", f"must be True or False, got {causal!r}")
    sram_bytes = _validate.size("sram_bytes", sram_bytes)
    kv = _kv_heads(heads, kv_heads)
    s = bytes_per_element(dtype)
    bh, scores = batch * heads, batch * heads * seq_q * seq_k
    _validate.elements(
        "batch * heads * seq * head_dim (Q, K, V)", bh * max(seq_q, seq_k) * head_dim
    )
    _validate.elements("batch * heads * seq_q * seq_k (the score matrix)", scores)
    shared = 2 * batch * (heads - kv) * s * seq_k * head_dim  # K, V (or dK, dV) per query head

    by_p = gemm(seq_k, seq_q, head_dim, dtype, batch=bh)  # dV = P^T dO (dK = dS^T Q alike)
    dp = gemm(seq_q, head_dim, seq_k, dtype, batch=bh)  # dP = dO V^T
    ds = elementwise(scores, dtype, inputs=2, outputs=1, flops_per_element=2)  # P * (dP - D)
    dq = gemm(seq_q, seq_k, head_dim, dtype, batch=bh)  # dQ = dS K
    stored = by_p + dp + ds + dq + by_p
    if impl == "stored":  # dP reads V, dQ reads K; dV and dK written once per K/V head
        return dataclasses.replace(
            stored,
            bytes_read=stored.bytes_read - shared,
            bytes_written=stored.bytes_written - shared,
        )

    rows = _block_rows(sram_bytes, head_dim, dtype, seq_k)
    key_blocks = math.ceil(seq_k / rows)
    q_rows = bh * s * head_dim * seq_q  # one N x d tensor of the queries' side, all heads
    kv_rows = batch * kv * s * head_dim * seq_k
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
