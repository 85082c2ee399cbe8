"""硬件附录的表格：每块设备的上限、稀疏峰值、cache 以及出处。

表头和单元格都是中文读者要读的内容：用中文词语，单位、精度和产品名照原样写。
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..hardware import Hardware, catalog
from ..units import si

#: 矩阵单元各列的精度，按顺序。
PRECISIONS = ("fp64", "tf32", "bf16", "fp16", "fp8", "int8")

#: 设备表中没有的数字，在表格里显示成什么。
MISSING = "—"

#: 设备或出处的数字有多可靠，按表格中的说法。
FIRMNESS_ZH = {"vendor": "厂商资料", "paper": "论文实测", "secondary": "二手资料", "": "用户给定"}


def _devices(devices: Mapping[str, Hardware] | None) -> Mapping[str, Hardware]:
    return catalog() if devices is None else devices


def _rate(value: float | None, precision: str = "") -> str:
    if value is None:
        return MISSING
    return si(value, "OP/s" if precision == "int8" else "FLOP/s")


def peaks_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Each device's compute ceilings per unit and precision, HBM bandwidth and capacity.

    Columns: the dense matrix-unit (Tensor Core / Matrix Core) rate per
    precision (``矩阵 bf16`` ...), the vector-unit FP32 and FP64 rates
    (``向量 fp32``, ``向量 fp64``), the special-function rate (``特殊函数``,
    ``—`` where neither published nor derivable), ``HBM 带宽``, the BF16 GEMM
    ridge point, ``容量`` and ``可靠性`` (how firm the sources are).

    Returns
    -------
    pandas.DataFrame
        Text cells, indexed by ``设备`` (the catalog key).

    Examples
    --------
    H100 SXM: 989.5 TFLOP/s / 3.35 TB/s = 295 FLOP/byte; the vector lanes run
    FP32 at 67 TFLOP/s and FP64 at 34:

    >>> from roofline_book import EXAMPLE, hardware
    >>> df = peaks_frame({"h100-sxm": hardware("h100-sxm"), "example": EXAMPLE})
    >>> columns = ["矩阵 bf16", "矩阵 int8", "向量 fp32", "向量 fp64", "HBM 带宽"]
    >>> df.loc["h100-sxm", columns].tolist()
    ['989.5 TFLOP/s', '1.979 POP/s', '67 TFLOP/s', '34 TFLOP/s', '3.35 TB/s']
    >>> df.loc["h100-sxm", "ridge bf16 [FLOP/B]"]
    '295'
    >>> df.loc["example", "矩阵 bf16"], df.loc["example", "可靠性"]
    ('—', '用户给定')
    """
    import pandas as pd

    rows = []
    for key, dev in _devices(devices).items():
        row = {"设备": key}
        for p in PRECISIONS:
            row[f"矩阵 {p}"] = _rate(dev.dense_peaks.get(p), p)
        for p in ("fp32", "fp64"):
            row[f"向量 {p}"] = _rate(dev.vector_peaks.get(p), p)
        row["特殊函数"] = _rate(dev.special_peak)
        row["HBM 带宽"] = si(dev.memory_bandwidth, "B/s")
        row["ridge bf16 [FLOP/B]"] = f"{dev.ridge_point('bf16'):.0f}"
        row["容量"] = si(dev.memory_capacity, "B") if dev.memory_capacity else MISSING
        row["可靠性"] = FIRMNESS_ZH[dev.firmness]
        rows.append(row)
    return pd.DataFrame(rows).set_index("设备")


def special_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """How each special-function rate was derived: SFU results per clock, lanes, clock, rate.

    ``clock = FP32 peak / (2 x FP32 lanes per SM x SMs)`` and ``rate = SFU
    results per clock per SM x SMs x clock``; only devices whose inputs are
    published have a row.

    Examples
    --------
    >>> row = special_frame().loc["h100-sxm"]
    >>> int(row["每 SM 每时钟"]), row["时钟 [GHz]"], row["特殊函数"]
    (16, '1.983', '4.188 TFLOP/s')
    """
    import pandas as pd

    rows = []
    for key, dev in _devices(devices).items():
        if "special_peak" not in dev.derivations:
            continue
        lanes, sfu, sms = dev.fp32_lanes_per_sm, dev.sfu_per_sm_per_clock, dev.sms
        assert lanes and sfu and sms and dev.special_peak  # a derived rate has its inputs
        clock = dev.vector_peaks["fp32"] / (2 * lanes * sms)
        rows.append(
            {
                "设备": key,
                "每 SM 每时钟": sfu,
                "每 SM FP32 lanes": lanes,
                "SM 数": sms,
                "时钟 [GHz]": f"{clock / 1e9:.3f}",
                "特殊函数": si(dev.special_peak, "FLOP/s"),
            }
        )
    return pd.DataFrame(rows).set_index("设备")


def sparse_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """2:4 sparse peaks beside the dense ones (FLOP/s) and their ratio, per device and precision.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(设备, 精度)``; devices without sparse peaks have no rows.

    Examples
    --------
    >>> df = sparse_frame()
    >>> df.loc[("h100-sxm", "bf16"), "比值"]  # 2:4 sparsity doubles the peak
    '2.00'
    """
    import pandas as pd

    rows = [
        {
            "设备": key,
            "精度": p,
            "2:4 sparse": _rate(v, p),
            "dense": _rate(dev.peak_flops(p), p),
            "比值": f"{v / dev.peak_flops(p):.2f}",
        }
        for key, dev in _devices(devices).items()
        for p, v in dev.sparse_peaks.items()
    ]
    return pd.DataFrame(rows).set_index(["设备", "精度"])


def cache_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """On-chip memory per device: L2, a last-level cache beyond it, per-SM memories, SM count.

    Returns
    -------
    pandas.DataFrame
        Text cells indexed by ``设备`` (the SM count stays an int); unknown figures are ``"—"``.

    Examples
    --------
    >>> row = cache_frame().loc["h100-sxm"]
    >>> row["L2"], row["每 SM shared memory"], row["每 SM 寄存器文件"], row["SM / CU 数"]
    ('52.43 MB', '233.5 kB', '262.1 kB', 132)
    """
    import pandas as pd

    def size(value: float | None) -> str:
        return si(value, "B") if value else MISSING

    return pd.DataFrame(
        [
            {
                "设备": key,
                "L2": size(dev.l2_cache),
                "末级缓存（L2 之外）": size(dev.last_level_cache),
                "每 SM shared memory": size(dev.shared_memory_per_sm),
                "每 SM L1 + shared": size(dev.l1_shared_per_sm),
                "每 SM 寄存器文件": size(dev.register_file_per_sm),
                "SM / CU 数": dev.sms or MISSING,
            }
            for key, dev in _devices(devices).items()
        ]
    ).set_index("设备")


def sources_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Where each figure of each device comes from: document, date, firmness and URL.

    The sources' notes (in English, as the catalog keeps them) are shown by
    ``roofline-book devices``, not here.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(设备, 数据)``.

    Examples
    --------
    >>> df = sources_frame()
    >>> list(df.columns), df.index.names
    (['出处', '日期', '可靠性', 'URL'], FrozenList(['设备', '数据']))
    """
    import pandas as pd

    rows = [
        {
            "设备": key,
            "数据": figure,
            "出处": src.title,
            "日期": src.date,
            "可靠性": FIRMNESS_ZH[src.firmness],
            "URL": src.url or MISSING,
        }
        for key, dev in _devices(devices).items()
        for figure, src in dev.sources.items()
    ]
    return pd.DataFrame(rows).set_index(["设备", "数据"])
