"""roofline 模型：可达性能、ridge point、各种下界与实测性能。

峰值算力为 ``P`` （FLOP/s）、内存带宽为 ``B`` （byte/s）、算术强度为 ``I`` （FLOP/byte）时，
kernel 最快只能达到

.. math:: P_{\\text{attainable}}(I) = \\min(P,\\; B I).

两条 roof 相交于 ridge point ``I* = P / B``：在它左边的 kernel 受限于内存，右边的受限于计算。

真实设备的 roof 不止两条：每种计算单元和精度（矩阵单元、向量单元、特殊函数单元）各有一条
水平线，每个存储层级（HBM、L2）各有一条斜线。:func:`time_bound` 在目录设备上用
:class:`~roofline_book.ops.Cost` 用到的每一个上限来约束它：时间下界是各资源所需时间中
最大的那个，下界同时指出是哪种资源。规则只有一处：:func:`roofline_book.roofline.bounds.bound`。

Examples
--------
>>> ridge_point(100e12, 1e12)
100.0
>>> attainable(1 / 6, 100e12, 1e12) / 1e12          # the BF16 add: 1/6 TFLOP/s
0.16666666666666666
>>> attainable(1365.0, 100e12, 1e12) / 1e12         # a 4096^3 BF16 GEMM hits the flat roof
100.0
"""

from __future__ import annotations

import math
import numbers

from .._base import validate as _validate
from .._base.extras import MissingExtra
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.catalog import Hardware
from ..dtypes import Precision, bytes_per_element
from ..ops import Cost
from .bounds import COMPUTE_RESOURCES as COMPUTE_RESOURCES
from .bounds import MEMORY_RESOURCES as MEMORY_RESOURCES
from .bounds import Bound, Ceilings, TimeBound, bound


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """两条 roof 相交处的算术强度，``P / B`` （FLOP/byte）。

    Parameters
    ----------
    peak_flops : float
        峰值算力（FLOP/s），> 0。
    bandwidth : float
        内存带宽（byte/s），> 0。

    Examples
    --------
    100 TFLOP/s 除以 1 TB/s：

    >>> ridge_point(100e12, 1e12)
    100.0
    """
    return _validate.positive("peak_flops", peak_flops) / _validate.positive("bandwidth", bandwidth)


def attainable(intensity, peak_flops: float, bandwidth: float):
    """可达性能 ``min(P, B * I)`` （FLOP/s）。

    Parameters
    ----------
    intensity : float or array_like
        算术强度（FLOP/byte），有限且 >= 0。
    peak_flops : float
        峰值算力（FLOP/s）。
    bandwidth : float
        内存带宽（byte/s）。

    Returns
    -------
    float or numpy.ndarray
        标量的算术强度返回 float，否则返回同 shape 的数组。标量不用 NumPy（纯 Python 的
        ``min``，得到与 NumPy 相同的 float）；数组需要 NumPy，只在传入数组时才导入它。
        ``B * I`` 超过 1e308 时为 inf，``min(P, inf) = P``。

    Examples
    --------
    >>> attainable(50, 100e12, 1e12) / 1e12, attainable(1e300, 100e12, 1e12) / 1e12
    (50.0, 100.0)
    >>> attainable([1, 10, 100, 1000], 100e12, 1e12) / 1e12
    array([  1.,  10., 100., 100.])
    """
    peak = _validate.positive("peak_flops", peak_flops)
    band = _validate.positive("bandwidth", bandwidth)
    if _validate.is_bool(intensity) or isinstance(intensity, (str, bytes)):
        raise InvalidArgumentType(
            "intensity", f"must be a number or an array of numbers, got {intensity!r}"
        )
    if isinstance(intensity, numbers.Real):  # Python floats overflow to inf, as NumPy's do
        return min(peak, band * _validate.non_negative("intensity", intensity))
    try:
        from .._base import arrays as _arrays  # the one model module that imports NumPy
    except ModuleNotFoundError as exc:
        if exc.name != "numpy":
            raise
        raise MissingExtra(
            "attainable() on an array of intensities needs numpy (pip install numpy); "
            "a single intensity does not"
        ) from None
    return _arrays.attainable(intensity, peak, band)


def roof_kind(intensity: float, peak_flops: float, bandwidth: float) -> Bound:
    """在两条 roof 的模型里，这个算术强度的 kernel 受哪条 roof 限制：``"memory"`` 或 ``"compute"``。

    恰好在 ridge point 上两条 roof 给出同样的速率；此时返回 ``"compute"``。一个代价在真实设备上的
    时间下界（每种单元、每个存储层级各一条 roof）见 :func:`roofline_book.roofline.bounds.bound`。

    Examples
    --------
    >>> roof_kind(1 / 6, 100e12, 1e12), roof_kind(1365, 100e12, 1e12)
    ('memory', 'compute')
    """
    intensity = _validate.non_negative("intensity", intensity)
    return "memory" if intensity < ridge_point(peak_flops, bandwidth) else "compute"


def time_lower_bound(cost: Cost, peak_flops: float, bandwidth: float) -> TimeBound:
    """kernel 时间的两个下界 ``FLOPs / P`` 与 ``bytes / B``：两条 roof 的模型。

    每个 FLOP 都受同一个峰值约束，每个字节都受同一个带宽约束，正如本书前几章的做法。
    对目录设备，:func:`time_bound` 让每种单元、每个存储层级各受自己的上限约束。

    Examples
    --------
    示例设备上 4096^3 的 BF16 GEMM：1.37e11 FLOP 按 100 TFLOP/s 需 1.37 ms；
    它的 100 MB 流量按 1 TB/s 需 0.1 ms。

    >>> from roofline_book.ops import gemm
    >>> t = time_lower_bound(gemm(4096, 4096, 4096), 100e12, 1e12)
    >>> round(t.compute * 1e3, 2), round(t.memory * 1e3, 3), t.bound
    (1.37, 0.101, 'compute')
    """
    if not isinstance(cost, Cost):
        raise InvalidArgumentType(
            "cost", f"must be a roofline_book.Cost, got {type(cost).__name__}"
        )
    peak = _validate.positive("peak_flops", peak_flops)
    band = _validate.positive("bandwidth", bandwidth)
    return TimeBound({"compute": cost.flops / peak, "memory": cost.bytes / band})


def time_bound(cost: Cost, device: Hardware, dtype: Precision = "bf16") -> TimeBound:
    """``device`` 的每种资源完成 ``cost`` 所需的时间；最大的就是下界。

    计算：矩阵 FLOPs 除以 ``dtype`` 下矩阵单元的峰值；向量工作按 lane slot 计
    （:attr:`Cost.vector_slots <roofline_book.ops.Cost.vector_slots>`：一个 FMA 或其他任何运算各占一
    个），除以 lane 速率，即厂商按 FMA 计的向量峰值的一半
    （:meth:`Hardware.vector_op_rate
    <roofline_book.devices.device.Hardware.vector_op_rate>`，有公开数字时
    用 packed 16 位运算）；特殊函数求值次数除以它们的速率。全部按设备唯一的时钟计。内存按冷启动
    计：必需字节来自 HBM（输入来自 HBM，输出写回 HBM），途经 L2，设备有 L2 带宽时也按它计入；重读
    （``Cost.reread_bytes``）来自装得下它们 footprint 的最小层级（L2 装得下至多
    :data:`~roofline_book.roofline.bounds.CACHE_MARGIN` 倍容量时就在 L2，否则在
    HBM）。各单元与各层级同时
    工作，所以 kernel 至少需要这些时间中最大的一个。所有运算只有一个峰值的设备（不给 ``vector`` 的
    :func:`roofline_book.devices.catalog.adhoc`）只有一种计算资源 ``"compute"``，所有 FLOPs 共用。

    这就是 :func:`roofline_book.roofline.bounds.bound` 用 :meth:`Ceilings.of(device)
    <roofline_book.roofline.bounds.Ceilings.of>` 给出的下界；数据可能已在 cache 中时
    （profiler 中的算子），用 ``bound(..., resident=True)``。

    Examples
    --------
    H100 SXM 上的 BF16 add 在向量单元上运行，而不是 Tensor Core。一次 add 占一个 lane slot，
    不是 FMA：1 FLOP 按 packed BF16x2 峰值的一半，133.8 / 2 = 66.9 T adds/s，对比 6 字节按
    3.35 TB/s：内存时间长 6 / 3.35 x 66.9 = 120 倍。FP32 时两者都减半：12 字节对比 1 FLOP 按
    67 / 2 = 33.5 T/s，仍是 120 倍：

    >>> from roofline_book import add, attention, gemm, hardware
    >>> h100 = hardware("h100-sxm")
    >>> t = time_bound(add(2**20), h100)
    >>> t.resource, round(t.by_resource["hbm"] / t.by_resource["vector"])
    ('hbm', 120)
    >>> t32 = time_bound(add(2**20, "fp32"), h100, "fp32")
    >>> round(t32.by_resource["hbm"] / t32.by_resource["vector"])
    120

    大 GEMM 受矩阵单元约束：

    >>> time_bound(gemm(8192, 8192, 8192), h100).resource
    'matrix'

    head dim 为 128 的 FlashAttention 从 L2 而不是 HBM 重读 K 和 V（每个字节都计入 H100 的 L2 roof，
    该带宽由他人测得），它的指数运算需要特殊函数单元：

    >>> fa = time_bound(attention(4, 16, 4096, 4096, 128, sram_bytes=228 * 1024), h100)
    >>> fa.resource, sorted(fa.by_resource)
    ('matrix', ['hbm', 'l2', 'matrix', 'special', 'vector'])
    """
    if not isinstance(device, Hardware):
        raise InvalidArgumentType(
            "device", f"must be a roofline_book.Hardware, got {type(device).__name__}"
        )
    if not isinstance(cost, Cost):
        raise InvalidArgumentType(
            "cost", f"must be a roofline_book.Cost, got {type(cost).__name__}"
        )
    if cost.flops:
        device.peak_flops(dtype)  # the catalog's own message for a precision it has no peak for
    result = bound(cost, Ceilings.of(device), dtype)
    assert result is not None  # a cold start always reaches the main memory, which has a bandwidth
    return result


def unit_rates(cost: Cost, time: TimeBound) -> dict[str, float]:
    """每种计算单元的 FLOPs 除以算子的时间下界，按单元索引。

    ``F_u / T`` 是算子用时恰为下界 ``T`` 时单元 ``u`` 的运行速率；因为 ``T >= F_u / P_u``，它永远不
    超过该单元的峰值 ``P_u``。没有 FLOPs 的单元不列出。``"special"`` 的速率按每秒求值次数计（一次
    exp 是一个 special FLOP）。所有单元只有一个峰值的设备（它的 ``time`` 有一个 ``"compute"`` 资源）
    对全部 FLOPs 只给一个速率 ``"compute"``。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> from roofline_book.ops import Cost
    >>> h100 = hardware("h100-sxm")
    >>> c = Cost(flops=10**12, bytes_read=10**6, bytes_written=0, vector_flops=10**9)
    >>> rates = unit_rates(c, time_bound(c, h100))          # the matrix units bind
    >>> rates["matrix"] == h100.peak_flops("bf16"), rates["vector"] < h100.ceiling("vector")
    (True, True)
    """
    seconds = time.seconds
    if "compute" in time.by_resource:  # one peak for every unit
        return {"compute": cost.flops / seconds} if cost.flops and seconds else {}
    return {u: f / seconds for u, f in cost.flops_by_unit.items() if f and seconds}


def main_unit(cost: Cost, time: TimeBound) -> str | None:
    """承担算子大部分 FLOPs 的计算单元；算子没有 FLOPs 时为 None。

    表格一行的可达速率就按这个单元报告（:attr:`roofline_book.present.tables.Row.attainable`）：GEMM
    或
    FlashAttention 是矩阵单元，add 是向量单元。相等时按 matrix、vector、special 的顺序取第一个。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> from roofline_book.ops import attention, softmax
    >>> h100 = hardware("h100-sxm")
    >>> [main_unit(c, time_bound(c, h100)) for c in (attention(1, 1, 512, 512, 64), softmax(8, 8))]
    ['matrix', 'vector']
    """
    rates = unit_rates(cost, time)
    if not rates:
        return None
    flops = {"compute": cost.flops, **cost.flops_by_unit}
    order = list(rates)
    return max(order, key=lambda u: (flops[u], -order.index(u)))


def attainable_on(
    intensity,
    device: Hardware,
    dtype: Precision = "bf16",
    *,
    unit: str = "matrix",
    level: str = "hbm",
):
    """某一种单元的水平 roof 与某一个层级的斜线之下的可达性能（FLOP/s）。

    默认值（矩阵单元对 HBM）给出 GEMM 的 roofline。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> h100 = hardware("h100-sxm")
    >>> round(attainable_on(1000, h100) / 1e12, 1), attainable_on(1000, h100, unit="vector") / 1e12
    (989.4, 133.8)
    """
    if not isinstance(device, Hardware):
        raise InvalidArgumentType("device", f"must be a Hardware, got {type(device).__name__}")
    band = device.bandwidth(level)
    if band is None:
        raise InvalidArgument("level", f"{level!r} has no published bandwidth on {device.key}")
    return attainable(intensity, device.ceiling(unit, dtype), band)


def achieved(flops: float, seconds: float) -> float:
    """实测性能 ``FLOPs / 所用时间`` （FLOP/s）。

    Examples
    --------
    >>> achieved(4e13, 1.0) / 1e12
    40.0
    """
    return _validate.non_negative("flops", flops) / _validate.positive("seconds", seconds)


def fraction_of_roof(
    flops: float, seconds: float, intensity: float, peak_flops: float, bandwidth: float
) -> float:
    """实测性能占该算术强度处 roof 的比例。

    Examples
    --------
    本书的例子：roof 为 100 TFLOP/s，实测 40 TFLOP/s。

    >>> fraction_of_roof(40e12, 1.0, 1365.0, 100e12, 1e12)
    0.4

    算术强度为 0 时 roof 是 0 FLOP/s，比例没有定义：

    >>> fraction_of_roof(1e9, 1.0, 0, 100e12, 1e12)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: intensity must be > 0 (at 0 FLOP/byte the roof is 0 FLOP/s), ...

    roof 是上界，比例不会大于 1。大于 1 说明某个输入不对（计时、FLOPs、由 cache 供数因而不该按这个
    带宽算的字节数，或低于设备的峰值与带宽），返回它只会被读成“超过 roof”，所以拒绝：

    >>> fraction_of_roof(1e9, 1e-9, 10, 1e12, 1e12)
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: seconds (1e-09 s) gives ... 1e+06 times the roof ...
    """
    rate = achieved(flops, seconds)
    if _validate.non_negative("intensity", intensity) == 0:
        raise InvalidArgument(
            "intensity",
            f"must be > 0 (at 0 FLOP/byte the roof is 0 FLOP/s), got {float(intensity)!r}",
        )
    roof = attainable(intensity, peak_flops, bandwidth)
    fraction = rate / roof
    if fraction > 1 + 1e-9:  # beyond rounding: no run beats an upper bound
        raise InvalidArgument(
            "seconds",
            f"({float(seconds):.4g} s) gives flops / seconds = {rate:.4g} FLOP/s, {fraction:.4g} "
            "times the roof "
            f"({roof:.4g} FLOP/s at intensity {float(intensity):.4g} FLOP/byte): a run cannot "
            "beat the roof, so an input is wrong: seconds, flops, intensity (bytes a cache "
            "served are not HBM bytes), or peak_flops or bandwidth below the device's",
        )
    return fraction


def overhead_fraction(cost: Cost, peak_flops: float, bandwidth: float, overhead: float) -> float:
    """每次 launch 还要花 ``overhead`` 秒时，kernel 最多能达到 roof 的多大比例。

    时间下界为 ``T`` （:func:`time_lower_bound`）时，kernel 至少要 ``overhead + T``，所以最多
    达到 roof 的 ``T / (overhead + T)``：很小的 kernel 接近 0，``T`` 远大于固定开销时接近 1。

    Examples
    --------
    2^20 个元素的 BF16 add 搬运 6 MiB：按 1 TB/s 需 6.29 us，开销 5 us，所以达到 roof 的
    6.29 / 11.29：

    >>> from roofline_book.ops import add
    >>> round(overhead_fraction(add(2**20), 100e12, 1e12, 5e-6), 3)
    0.557
    """
    seconds = time_lower_bound(cost, peak_flops, bandwidth).seconds
    return seconds / (_validate.non_negative("overhead", overhead) + seconds)


# --------------------------------------------------------------------------
# Where a GEMM reaches a ridge point


def gemm_tokens_to_ridge(ridge: float, k: int, n: int, dtype: Precision = "bf16") -> float:
    """linear layer ``(M x k) @ (k x n)`` 的算术强度达到 ``ridge`` 时的 token 数 ``M``。

    每个操作数搬运一次（:func:`roofline_book.ops.gemm`）时，这一层的算术强度为
    ``I(M) = 2MKN / (s (MK + KN + MN))`` （FLOP/byte）。它随 ``M`` 增大趋向
    ``2KN / (s (K + N))``；令 ``I(M) = I*``，得

    .. math:: M^{*} = \\frac{I^{*} s K N}{2KN - I^{*} s (K + N)} .

    Parameters
    ----------
    ridge : float
        目标算术强度 ``I*`` （FLOP/byte），> 0；通常取设备的 ridge point
        （:meth:`roofline_book.devices.device.Hardware.ridge_point`）。
    k : int
        这一层的输入特征数（权重为 ``k x n``），>= 1。
    n : int
        这一层的输出特征数，>= 1。
    dtype : str or torch.dtype
        激活、权重与输出的精度（每个元素 ``s`` 字节）。

    Returns
    -------
    float
        ``M*`` （token 数），是一个实数；达到 ``ridge`` 的最少整数 token 数是
        ``math.ceil(M*)``。极限 ``2KN / (s (K + N))`` 不高于 ``ridge`` 时为 ``math.inf``：
        多少 token 都达不到。

    Examples
    --------
    示例设备（ridge point 100 FLOP/byte）上 4096 x 4096 的 BF16 权重：
    ``M* = 100 * 2 * 4096**2 / (2 * 4096**2 - 100 * 2 * 8192) = 409600 / 3896``。

    >>> m_star = gemm_tokens_to_ridge(100.0, 4096, 4096, "bf16")
    >>> round(m_star, 2)
    105.13
    >>> from roofline_book.ops import gemm
    >>> gemm(105, 4096, 4096).intensity < 100 <= gemm(106, 4096, 4096).intensity
    True

    这里的极限是 ``2 * 4096**2 / (2 * 8192) = 2048`` FLOP/byte；等于或高于它的 ridge point
    永远达不到：

    >>> gemm_tokens_to_ridge(2048.0, 4096, 4096, "bf16")
    inf
    """
    ridge = _validate.positive("ridge", ridge)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    s = bytes_per_element(dtype)
    denominator = 2 * k * n - ridge * s * (k + n)
    return ridge * s * k * n / denominator if denominator > 0 else math.inf


def square_gemm_size_to_ridge(
    ridge: float, dtype: Precision = "bf16", *, out_dtype: Precision | None = None
) -> float:
    """方阵 GEMM（``M = K = N = n``）的算术强度达到 ``ridge`` 时的边长 ``n``。

    方阵 GEMM 的算术强度为 ``2n / (3s)`` （FLOP/byte），所以

    .. math:: n^{*} = \\frac{3 s I^{*}}{2} .

    ``C`` 按另一种精度存放时（每个元素 ``s_out`` 字节，例如 cuBLASLt 与 Transformer Engine 中写出
    BF16 的 FP8 GEMM），算术强度为 ``2n / (2s + s_out)``，``n* = (2s + s_out) I* / 2``。

    Parameters
    ----------
    ridge : float
        目标算术强度 ``I*`` （FLOP/byte），> 0；通常取设备的 ridge point。
    dtype : str or torch.dtype
        三个矩阵的精度（每个元素 ``s`` 字节）。
    out_dtype : str or torch.dtype, optional
        ``C`` 的精度与 ``dtype`` 不同时给出，同 :func:`~roofline_book.ops.gemm`。

    Returns
    -------
    float
        ``n*`` （元素个数），是一个实数；达到 ``ridge`` 的最小整数边长是 ``math.ceil(n*)``。

    Examples
    --------
    示例设备的 ridge point 100 FLOP/byte，BF16：``3 * 2 * 100 / 2 = 300``。

    >>> square_gemm_size_to_ridge(100.0, "bf16")
    300.0
    >>> from roofline_book.ops import gemm
    >>> gemm(300, 300, 300, "bf16").intensity
    100.0

    ``s`` 减半，``n*`` 也减半：

    >>> square_gemm_size_to_ridge(100.0, "fp8")
    150.0

    FP8 输入、BF16 输出：``(2 * 1 + 2) * 100 / 2 = 200``。

    >>> square_gemm_size_to_ridge(100.0, "fp8", out_dtype="bf16")
    200.0
    >>> gemm(200, 200, 200, "fp8", out_dtype="bf16").intensity
    100.0
    """
    ridge = _validate.positive("ridge", ridge)
    s = bytes_per_element(dtype)
    s_out = s if out_dtype is None else bytes_per_element(out_dtype, "out_dtype")
    return (2 * s + s_out) * ridge / 2
