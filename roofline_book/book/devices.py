"""硬件附录的表格：每块设备的上限、稀疏峰值、cache 以及出处。

表头和单元格都是中文读者要读的内容：用中文词语，单位、精度和产品名照原样写。
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..hardware import Hardware, catalog
from ..units import binary, si

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


def special_rate(value: float | None) -> str:
    """A special-function rate as the tables print it: evaluations per second, not FLOP/s.

    Examples
    --------
    >>> special_rate(4.18176e12)
    '4.182 T 次/s'
    """
    return MISSING if value is None else f"{si(value)} 次/s"


def clock(value: float | None) -> str:
    """A clock in MHz, as the tables print it.

    Examples
    --------
    >>> clock(1.98e9), clock(None)
    ('1980 MHz', '—')
    """
    return MISSING if value is None else f"{value / 1e6:g} MHz"


def _packed(dev: Hardware) -> float | None:
    """The packed 16-bit vector rate, where published and above the FP32 lanes."""
    rates = [dev.vector_peaks[p] for p in ("bf16", "fp16") if p in dev.vector_peaks]
    return max(rates) if rates and max(rates) > dev.vector_peaks.get("fp32", 0) else None


def peaks_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Each device's compute ceilings per unit and precision, HBM bandwidth and capacity.

    Columns: the dense matrix-unit (Tensor Core / Matrix Core) rate per
    precision (``矩阵 bf16`` ...), the vector-unit FP32 and FP64 rates
    (``向量 fp32``, ``向量 fp64``) and the packed 16-bit one where published
    (``向量 16 位``), the special-function rate in evaluations per second
    (``特殊函数``, ``—`` where neither published nor derivable), the clock
    all of them are stated at (``时钟``), ``HBM 带宽``, the BF16 GEMM ridge
    point, ``容量`` (binary, as the device exposes it) and ``可靠性`` (how firm
    the sources are).

    Returns
    -------
    pandas.DataFrame
        Text cells, indexed by ``设备`` (the catalog key).

    Examples
    --------
    H100 SXM at 1980 MHz: 1070.5 TFLOP/s / 3.35 TB/s = 320 FLOP/byte; the
    vector lanes run FP32 at 67 TFLOP/s, FP64 at 34, packed BF16 at 133.8:

    >>> from roofline_book import EXAMPLE, hardware
    >>> df = peaks_frame({"h100-sxm": hardware("h100-sxm"), "example": EXAMPLE})
    >>> columns = ["矩阵 bf16", "矩阵 int8", "向量 fp32", "向量 fp64", "向量 16 位", "HBM 带宽"]
    >>> df.loc["h100-sxm", columns].tolist()
    ['1.07 PFLOP/s', '2.141 POP/s', '67 TFLOP/s', '34 TFLOP/s', '133.8 TFLOP/s', '3.35 TB/s']
    >>> df.loc["h100-sxm", ["ridge bf16 [FLOP/B]", "时钟", "容量"]].tolist()
    ['320', '1980 MHz', '79.65 GiB']
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
        row["向量 16 位"] = _rate(_packed(dev))
        row["特殊函数"] = special_rate(dev.special_peak)
        row["时钟"] = clock(dev.clock_hz)
        row["HBM 带宽"] = si(dev.memory_bandwidth, "B/s")
        row["ridge bf16 [FLOP/B]"] = f"{dev.ridge_point('bf16'):.0f}"
        row["容量"] = binary(dev.memory_capacity) if dev.memory_capacity else MISSING
        row["可靠性"] = FIRMNESS_ZH[dev.firmness]
        rows.append(row)
    return pd.DataFrame(rows).set_index("设备")


def special_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """How each special-function rate was derived: SFU results per clock, SMs, clock, rate.

    ``rate = SFU results per clock per SM x SMs x the device clock``, in
    evaluations per second; only devices whose inputs are published have a row.

    Examples
    --------
    >>> row = special_frame().loc["h100-sxm"]
    >>> int(row["每 SM 每时钟"]), row["时钟"], row["特殊函数"]
    (16, '1980 MHz', '4.182 T 次/s')
    """
    import pandas as pd

    rows = []
    for key, dev in _devices(devices).items():
        if "special_peak" not in dev.derivations:
            continue
        rows.append(
            {
                "设备": key,
                "每 SM 每时钟": dev.sfu_per_sm_per_clock,
                "SM 数": dev.sms,
                "时钟": clock(dev.clock_hz),
                "特殊函数": special_rate(dev.special_peak),
            }
        )
    return pd.DataFrame(rows).set_index("设备")


def clock_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Matrix peaks the vendor rates at a clock below the device's, scaled to it.

    One row per device and precision scaled: the vendor's dense figure, the
    clock it is rated at, the device clock and the figure at that clock
    (``vendor x device clock / rated clock``).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(设备, 精度)``; devices whose figures are all at one clock have no rows.

    Examples
    --------
    >>> clock_frame().loc[("h100-sxm", "bf16")].tolist()
    ['989.4 TFLOP/s', '1830 MHz', '1980 MHz', '1.07 PFLOP/s']
    """
    import pandas as pd

    rows = [
        {
            "设备": key,
            "精度": p,
            "厂商 dense 峰值": _rate(vendor, p),
            "厂商所用时钟": clock(dev.clock_hz * vendor / dev.dense_peaks[p]),
            "设备时钟": clock(dev.clock_hz),
            "本书所用峰值": _rate(dev.dense_peaks[p], p),
        }
        for key, dev in _devices(devices).items()
        for p, vendor in dev.vendor_peaks.items()
        if dev.clock_hz
    ]
    return pd.DataFrame(rows).set_index(["设备", "精度"])


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
    Sizes are binary (KiB, MiB), as the vendors mean them; ``L2 带宽`` is
    ``—`` where neither a vendor nor a measurement by others gives one.

    >>> row = cache_frame().loc["h100-sxm"]
    >>> row["L2"], row["L2 带宽"], row["每 SM shared memory"], row["每 SM 寄存器文件"]
    ('50 MiB', '8.429 TB/s', '228 KiB', '256 KiB')
    >>> row["SM / CU 数"]
    132
    """
    import pandas as pd

    def size(value: float | None) -> str:
        return binary(value) if value else MISSING

    return pd.DataFrame(
        [
            {
                "设备": key,
                "L2": size(dev.l2_cache),
                "L2 带宽": si(dev.l2_bandwidth, "B/s") if dev.l2_bandwidth else MISSING,
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
    """Where each figure of each device comes from: document, date, firmness, URL, basis.

    A source compared with a figure's and not taken has a row of its own
    (``数据`` ends in ``（对照，未采用）``). ``口径`` says how a figure was
    read: for the capacity, whether it is the total the driver reports or the
    nominal capacity read as GiB; for a scaled matrix peak, the clocks. The
    sources' notes (in English, as the catalog keeps them) are shown by
    ``roofline-book devices``, not here.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(设备, 数据)``.

    Examples
    --------
    >>> df = sources_frame()
    >>> list(df.columns), df.index.names
    (['出处', '日期', '可靠性', '口径', 'URL'], FrozenList(['设备', '数据']))
    >>> df.loc[("h100-sxm", "memory_capacity"), "口径"]
    'nvidia-smi 报告的总量 81559 MiB'
    >>> df.loc[("b200", "memory_capacity"), "口径"]
    '标称容量按 GiB 读作 180 GiB（未找到驱动报告的总量）'
    >>> df.loc[("b200", "memory_bandwidth（对照，未采用）"), ["出处", "口径"]].tolist()
    ['NVIDIA Blackwell Architecture Technical Brief', '该出处给出 7.7 TB/s']
    """
    import pandas as pd

    def basis(dev: Hardware, figure: str) -> str:
        if figure == "memory_capacity" and dev.memory_capacity:
            if dev.memory_capacity_basis == "driver":
                return f"nvidia-smi 报告的总量 {dev.memory_capacity / 2**20:.0f} MiB"
            if dev.memory_capacity_basis == "nominal":
                gib = dev.memory_capacity / 2**30
                return f"标称容量按 GiB 读作 {gib:g} GiB（未找到驱动报告的总量）"
        if figure == "peak_flops" and dev.vendor_peaks and dev.clock_hz:
            scaled = ", ".join(dev.vendor_peaks)
            return f"{scaled} 由厂商所用时钟换算到 {clock(dev.clock_hz)}"
        if figure == "clock_hz":
            return "全部 roof 按此时钟给出"
        return ""

    def row(key: str, dev: Hardware, figure: str, src: Any, said: str | None = None) -> dict:
        return {
            "设备": key,
            "数据": figure if said is None else f"{figure}（对照，未采用）",
            "出处": src.title,
            "日期": src.date,
            "可靠性": FIRMNESS_ZH[src.firmness],
            "口径": basis(dev, figure) if said is None else said,
            "URL": src.url or MISSING,
        }

    rows = []
    for key, dev in _devices(devices).items():
        for figure, src in dev.sources.items():
            rows.append(row(key, dev, figure, src))
            values = dev.compared_figures.get(figure, ())
            for i, other in enumerate(dev.compared_sources.get(figure, ())):
                unit = "B/s" if "bandwidth" in figure else ""
                said = f"该出处给出 {si(values[i], unit)}" if i < len(values) else ""
                rows.append(row(key, dev, figure, other, said))
    return pd.DataFrame(rows).set_index(["设备", "数据"])
