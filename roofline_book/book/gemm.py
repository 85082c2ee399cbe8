"""GEMM 一章的数：方阵与 linear layer 在哪里越过 ridge point，以及习题里的可达性能。

每个函数返回一个 dict，键就是章节粘贴（glue）时用的名字，所以隐藏的 cell 只需选好设备与形状，
再写 ``glue(**gemm.square_crossing_figures(h100, dtypes, sizes, compare=a100))``。键里的设备简称
取目录键的第一段（``"h100-sxm"`` -> ``"h100"``）。

Examples
--------
>>> from roofline_book import hardware
>>> tokens = [2**p for p in range(17)]
>>> f = token_crossing_figures(hardware("h100-sxm"), hardware("a100-sxm"), tokens)
>>> f["mstar_h100_int"], f["mfirst_h100"], f["rect_limit"]   # 2 * 4096**2 / (2 * 8192) = 2048
(346, 512, 2048.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..devices.catalog import Hardware
from ..dtypes import bytes_per_element
from ..measure.bench.suites import suite_spec
from ..ops import Cost, gemm
from ..roofline.roofs import attainable_on, gemm_tokens_to_ridge, square_gemm_size_to_ridge
from ..units import sci, si
from .rows import first_size

__all__ = [
    "attainable_figures",
    "bench_square_figures",
    "square_crossing_figures",
    "square_gemm_figures",
    "tf32_figures",
    "token_crossing_figures",
    "tokens_to_ridge_figures",
]


def _tag(device: Hardware) -> str:
    """The short name in glue keys: ``"h100-sxm"`` -> ``"h100"``."""
    return device.key.split("-")[0]


def square_gemm_figures(n: int, dtype: str = "bf16", *, small: int) -> dict[str, float | str]:
    """边长 ``n`` 的方阵 GEMM 的算术强度、流量与运算量，以及边长 ``small`` 的三个矩阵合计多大。

    Parameters
    ----------
    n : int
        正文举例的方阵边长。
    dtype : str
        三个矩阵的精度。
    small : int
        另一个方阵的边长，只报告它三个矩阵的字节数（MiB）。

    Returns
    -------
    dict
        ``g{n}_i`` （FLOP/byte）、``g{n}_bytes_si`` （如 ``"100.7 MB"``）、``g{n}_flops_sci``
        （如 ``"1.37 × 10¹¹"``）与 ``g{small}_mib`` （MiB）。

    Examples
    --------
    >>> square_gemm_figures(4096, small=1024)["g4096_bytes_si"]   # 3 * 2 * 4096**2 B
    '100.7 MB'
    """
    c = gemm(n, n, n, dtype)
    return {
        f"g{n}_i": c.intensity,
        f"g{n}_bytes_si": si(c.bytes, "B"),
        f"g{n}_flops_sci": sci(c.flops),
        f"g{small}_mib": gemm(small, small, small, dtype).bytes / 2**20,
    }


def square_crossing_figures(
    device: Hardware,
    dtypes: Sequence[str],
    sizes: Sequence[int],
    *,
    compare: Hardware,
    narrow: str = "fp8",
    narrow_out: str = "bf16",
) -> dict[str, float | int]:
    """每种精度的方阵 GEMM 在 ``device`` 上越过自己的 ridge point 的边长，及对照设备的 BF16。

    ridge point 是该精度的 GEMM 峰值除以 HBM 带宽（FLOP/byte）；交点 ``n* = 3 s I* / 2``
    （:func:`~roofline_book.square_gemm_size_to_ridge`），按 2 的幂取的是 ``sizes`` 中第一个
    达到 ridge point 的边长。``narrow`` 精度的输入另算一次输出写成 ``narrow_out`` 的情形
    （cuBLASLt 与 Transformer Engine 的 FP8 GEMM 写出 BF16）。

    Parameters
    ----------
    device : roofline_book.Hardware
        主设备（键里的简称，如 ``h100``）。
    dtypes : sequence of str
        比较的精度，须含 ``narrow``、``"bf16"`` 与 ``"fp32"``。
    sizes : sequence of int
        按 2 的幂扫描的边长，从小到大。
    compare : roofline_book.Hardware
        对照的设备，只看 BF16。
    narrow, narrow_out : str
        输入最窄的精度与它的输出精度。

    Returns
    -------
    dict
        对每种精度 ``d``：``ridge_{tag}_{d}``、``ncross_{d}``、``nfirst_{d}``；
        ``ncross_{narrow}_{narrow_out}out``、``nfirst_...`` 与 ``i_..._first``
        （在 ``nfirst_{narrow}`` 处的算术强度）；对照设备的 ``ridge_{tag}_bf16``、
        ``ncross_{tag}_bf16``、``nfirst_{tag}_bf16``；
        主设备的 ``fp32_tflops`` （FP32 峰值，TFLOP/s）、``bf16_over_fp32`` 与 ``{tag}_l2_mib``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = square_crossing_figures(hardware("h100-sxm"), ("fp8", "bf16", "fp32"),
    ...                             [2**p for p in range(4, 15)], compare=hardware("a100-sxm"))
    >>> f["ncross_fp32"], f["nfirst_fp32"]       # ridge 67 / 3.35 = 20; n* = 3 * 4 * 20 / 2
    (120.0, 128)
    """
    ridges = {d: device.ridge_point(d) for d in dtypes}
    first = {d: first_size(sizes, ridges[d], d) for d in dtypes}
    out = f"{narrow}_{narrow_out}out"
    wide = first[narrow]
    figures: dict[str, float | int] = {
        f"ncross_{out}": square_gemm_size_to_ridge(ridges[narrow], narrow, out_dtype=narrow_out),
        f"i_{out}_first": gemm(wide, wide, wide, narrow, out_dtype=narrow_out).intensity,
        f"nfirst_{out}": next(
            s
            for s in sizes
            if gemm(s, s, s, narrow, out_dtype=narrow_out).intensity >= ridges[narrow]
        ),
    }
    for d in dtypes:
        figures[f"ncross_{d}"] = square_gemm_size_to_ridge(ridges[d], d)
        figures[f"nfirst_{d}"] = first[d]
        figures[f"ridge_{_tag(device)}_{d}"] = ridges[d]
    other, ridge_other = _tag(compare), compare.ridge_point("bf16")
    figures[f"ridge_{other}_bf16"] = ridge_other
    figures[f"ncross_{other}_bf16"] = square_gemm_size_to_ridge(ridge_other, "bf16")
    figures[f"nfirst_{other}_bf16"] = first_size(sizes, ridge_other)
    figures["fp32_tflops"] = device.peak_flops("fp32") / 1e12
    figures["bf16_over_fp32"] = device.peak_flops("bf16") / device.peak_flops("fp32")
    if device.l2_cache is None:
        raise ValueError(f"device {device.key!r}: the catalog gives no L2 cache size")
    figures[f"{_tag(device)}_l2_mib"] = device.l2_cache / 2**20
    return figures


def token_crossing_figures(
    device: Hardware,
    compare: Hardware,
    tokens: Sequence[int],
    k: int = 4096,
    n: int = 4096,
    dtype: str = "bf16",
) -> dict[str, float | int]:
    """权重为 ``k x n`` 的 linear layer 要多少 token 才越过两台设备的 ridge point。

    ``M* = I* s K N / (2KN - I* s (K + N))`` （:func:`~roofline_book.gemm_tokens_to_ridge`）；
    按 2 的幂取的是 ``tokens`` 中第一个达到 ridge point 的 token 数，它的一半还在斜线上。

    Parameters
    ----------
    device, compare : roofline_book.Hardware
        主设备与对照设备（ridge point 取 ``dtype`` 的）。
    tokens : sequence of int
        按 2 的幂扫描的 token 数 ``M``，从小到大。
    k, n : int
        权重的形状 ``K x N``。
    dtype : str
        激活、权重与输出的精度。

    Returns
    -------
    dict
        ``mstar_{tag}`` （实数 ``M*``）、``mstar_{tag}_int`` （最少的整数 token 数）、
        ``mfirst_{tag}``、对照设备的 ``mstar_{tag}`` 与 ``mfirst_{tag}``、``rect_limit``
        （``2KN / (s (K + N))``，FLOP/byte）、``mhalf`` （主设备 ``mfirst`` 的一半）、
        ``m1_i``、``mhalf_i``、``mfirst_i`` （这几个 token 数下的算术强度）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> tokens = [2**p for p in range(17)]
    >>> f = token_crossing_figures(hardware("h100-sxm"), hardware("a100-sxm"), tokens)
    >>> f["mhalf"], f["mfirst_a100"]
    (256, 256)
    """
    ridge, ridge_other = device.ridge_point(dtype), compare.ridge_point(dtype)
    m_first = first_size(tokens, ridge, dtype, k=k, n=n)
    tag, other = _tag(device), _tag(compare)
    return {
        f"mstar_{tag}": gemm_tokens_to_ridge(ridge, k, n, dtype),
        f"mstar_{tag}_int": first_size(range(1, max(tokens) + 1), ridge, dtype, k=k, n=n),
        f"mfirst_{tag}": m_first,
        f"mstar_{other}": gemm_tokens_to_ridge(ridge_other, k, n, dtype),
        "rect_limit": 2 * k * n / (bytes_per_element(dtype) * (k + n)),
        "mhalf": m_first // 2,
        f"mfirst_{other}": first_size(tokens, ridge_other, dtype, k=k, n=n),
        "m1_i": gemm(1, k, n, dtype).intensity,
        "mhalf_i": gemm(m_first // 2, k, n, dtype).intensity,
        "mfirst_i": gemm(m_first, k, n, dtype).intensity,
    }


def tf32_figures(device: Hardware, prefix: str) -> dict[str, float]:
    """FP32 存储、按 TF32 在 Tensor Core 上计算的方阵 GEMM，与 BF16 方阵比越过 ridge point 的边长。

    TF32 读写的仍是 FP32 数据（``s = 4``），所以交点按 FP32 的 ``s`` 与 TF32 的 ridge point 算。

    Returns
    -------
    dict
        ``{prefix}ridge_tf32`` （FLOP/byte）、``{prefix}n_tf32``、``{prefix}n_bf16`` （两个交点
        ``n*``），以及 ``{tag}_bf16_over_tf32`` （两个 dense 峰值之比）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = tf32_figures(hardware("a100-sxm"), "q_")
    >>> f["a100_bf16_over_tf32"], round(f["q_n_tf32"] / f["q_n_bf16"], 9)  # 2x the bytes, 1/2 peak
    (2.0, 1.0)
    """
    ridge_tf32 = device.ridge_point("tf32")
    return {
        f"{prefix}ridge_tf32": ridge_tf32,
        f"{prefix}n_tf32": square_gemm_size_to_ridge(ridge_tf32, "fp32"),
        f"{prefix}n_bf16": square_gemm_size_to_ridge(device.ridge_point("bf16"), "bf16"),
        f"{_tag(device)}_bf16_over_tf32": device.peak_flops("bf16") / device.peak_flops("tf32"),
    }


def attainable_figures(
    cost: Cost, device: Hardware, prefix: str, dtype: str = "bf16"
) -> dict[str, float]:
    """一个 GEMM 在 ``device`` 的矩阵单元与 HBM 之下的可达性能。

    Returns
    -------
    dict
        ``{prefix}i`` （FLOP/byte）、``{prefix}tflops`` （TFLOP/s）与 ``{prefix}pct``
        （占 ``dtype`` dense 峰值的百分比）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = attainable_figures(gemm(1, 4096, 4096), hardware("h100-sxm"), "d_")
    >>> round(f["d_tflops"], 3)            # about 1 FLOP/byte x 3.35 TB/s
    3.348
    """
    att = attainable_on(cost.intensity, device, dtype)  # matrix units over HBM
    return {
        f"{prefix}i": cost.intensity,
        f"{prefix}tflops": att / 1e12,
        f"{prefix}pct": att / device.peak_flops(dtype) * 100,
    }


def tokens_to_ridge_figures(
    device: Hardware, k: int, n: int, tokens: Sequence[int], prefix: str, dtype: str = "bf16"
) -> dict[str, float | int]:
    """权重 ``k x n`` 越过 ``device`` 的 ridge point 所需的 token 数：实数 ``{prefix}mstar``，
    以及 ``tokens`` 中第一个够的 ``{prefix}pow2``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> tokens = [2**p for p in range(17)]
    >>> f = tokens_to_ridge_figures(hardware("h100-sxm"), 4096, 11008, tokens, "")
    >>> round(f["mstar"], 1), f["pow2"]
    (327.8, 512)
    """
    ridge = device.ridge_point(dtype)
    return {
        f"{prefix}mstar": gemm_tokens_to_ridge(ridge, k, n, dtype),
        f"{prefix}pow2": first_size(tokens, ridge, dtype, k=k, n=n),
    }


def bench_square_figures(device: Hardware, prefix: str, suite: str = "quick") -> dict[str, float]:
    """CUDA ``suite`` 计时的 BF16 方阵 GEMM，最小的两个在 ``device`` 上的可达性能上限。

    Returns
    -------
    dict
        ``{prefix}n0``、``{prefix}n1`` 与 ``{prefix}nmax`` （suite 的边长）；``{prefix}att0``、
        ``{prefix}att1`` （TFLOP/s）、``{prefix}pct0``、``{prefix}pct1`` （占 BF16 峰值的百分比）；
        ``{prefix}us0`` （最小的那个按可达性能要多少 µs）；``bf16_tflops`` （BF16 峰值）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = bench_square_figures(hardware("h100-sxm"), "")
    >>> f["n0"], round(f["att0"], 2)       # I = 256 / 3; x 3.35 TB/s
    (256, 285.87)
    """
    sizes = suite_spec("cuda", suite).gemm_sizes  # the sizes a CUDA run of the suite times
    peak = device.peak_flops("bf16")
    att = [attainable_on(gemm(s, s, s).intensity, device, "bf16") for s in sizes[:2]]
    return {
        **{f"{prefix}n{i}": s for i, s in enumerate(sizes[:2])},
        f"{prefix}nmax": sizes[-1],
        "bf16_tflops": peak / 1e12,
        **{f"{prefix}att{i}": a / 1e12 for i, a in enumerate(att)},
        **{f"{prefix}pct{i}": 100 * a / peak for i, a in enumerate(att)},
        f"{prefix}us0": gemm(sizes[0], sizes[0], sizes[0]).flops / att[0] * 1e6,
    }
