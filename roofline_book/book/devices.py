"""硬件附录的表格：每块设备的上限、稀疏峰值、cache 以及出处。

表头和单元格都是中文读者要读的内容：用中文词语，单位、精度和产品名照原样写。
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..devices.catalog import Hardware, catalog
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
    """按表格的写法写出特殊函数的速率：每秒求值次数，不是 FLOP/s。

    Examples
    --------
    >>> special_rate(4.18176e12)
    '4.182 T 次/s'
    """
    return MISSING if value is None else f"{si(value)} 次/s"


def clock(value: float | None) -> str:
    """按表格的写法以 MHz 写出时钟频率。

    Examples
    --------
    >>> clock(1.98e9), clock(None)
    ('1980 MHz', '—')
    """
    return MISSING if value is None else f"{value / 1e6:g} MHz"


def _packed(dev: Hardware, precision: str) -> float | None:
    """``precision`` （fp16 或 bf16）的 packed 向量速率，有公开数字且高于 FP32 lane 时给出。"""
    rate = dev.vector_peaks.get(precision)
    return rate if rate and rate > dev.vector_peaks.get("fp32", 0) else None


def peaks_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """每个设备按单元与精度的计算上限、HBM 带宽与容量。

    各列：每种精度矩阵单元（Tensor Core / Matrix Core）的 dense 速率（``矩阵 bf16`` 等），向量单元的
    FP32 与 FP64 速率（``向量 fp32``、``向量 fp64``）以及有公开数字且高于 FP32 lane 时的 packed
    FP16、BF16 速率（``向量 fp16x2``、``向量 bf16x2``：每条指令两个结果），特殊函数的每秒求值次数
    （``特殊函数``；目录未收录其输入时为 ``—``），厂商标出向量速率所按的 boost 时钟（``时钟``；
    矩阵单元另有时钟的见 :func:`clock_frame`），``HBM 带宽``，BF16 GEMM 的 ridge point，``容量``
    （二进制，按设备呈现出来的量）和 ``可靠性`` （出处有多可靠）。

    Returns
    -------
    pandas.DataFrame
        文字单元格，按 ``设备`` （目录中的键）索引。

    Examples
    --------
    H100 SXM：厂商的 dense BF16 989.4 TFLOP/s / 3.35 TB/s = 295 FLOP/byte；向量 lane 的 FP32 速率为
    67 TFLOP/s，FP64 为 34，packed BF16 为 133.8；A100 的 packed FP16 是 78，BF16 是 39：

    >>> from roofline_book import EXAMPLE, hardware
    >>> df = peaks_frame({"h100-sxm": hardware("h100-sxm"), "example": EXAMPLE})
    >>> columns = ["矩阵 bf16", "矩阵 int8", "向量 fp32", "向量 fp64", "向量 bf16x2", "HBM 带宽"]
    >>> df.loc["h100-sxm", columns].tolist()
    ['989.4 TFLOP/s', '1.979 POP/s', '67 TFLOP/s', '34 TFLOP/s', '133.8 TFLOP/s', '3.35 TB/s']
    >>> df.loc["h100-sxm", ["ridge bf16 [FLOP/B]", "时钟", "容量"]].tolist()
    ['295', '1980 MHz', '79.65 GiB']
    >>> a100 = peaks_frame({"a100-sxm": hardware("a100-sxm")})
    >>> a100.loc["a100-sxm", ["向量 fp16x2", "向量 bf16x2"]].tolist()
    ['78 TFLOP/s', '39 TFLOP/s']
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
        for p in ("fp16", "bf16"):
            row[f"向量 {p}x2"] = _rate(_packed(dev, p))
        row["特殊函数"] = special_rate(dev.special_peak)
        row["时钟"] = clock(dev.clock_hz)
        row["HBM 带宽"] = si(dev.memory_bandwidth, "B/s")
        row["ridge bf16 [FLOP/B]"] = f"{dev.ridge_point('bf16'):.0f}"
        row["容量"] = binary(dev.memory_capacity) if dev.memory_capacity else MISSING
        row["可靠性"] = FIRMNESS_ZH[dev.firmness]
        rows.append(row)
    return pd.DataFrame(rows).set_index("设备")


def special_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """每个特殊函数速率是怎样推算的：每时钟的 SFU 结果数、SM 个数、时钟、速率。

    ``rate = SFU results per clock per SM x SMs x clock_hz``，按每秒求值次数计，时钟取厂商标出向量
    速率所用的 boost 时钟；只有目录收录了全部输入的设备才有一行。

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
    """厂商按低于 boost 时钟的频率标出的矩阵单元峰值，以及那个时钟。

    每个这样的设备与精度一行：厂商的 dense 数字（就是本书的 roof，不换算）、它所按的时钟、由两者
    算出的每个 SM 每个时钟的 FLOP 数，以及同一设备向量单元所按的 boost 时钟。

    Returns
    -------
    pandas.DataFrame
        按 ``(设备, 精度)`` 索引；所有数字都按同一个时钟标出的设备没有行。

    Examples
    --------
    989.4e12 / (132 x 1.83e9) = 4096：

    >>> clock_frame().loc[("h100-sxm", "bf16")].tolist()
    ['989.4 TFLOP/s', '1830 MHz', '4096', '1980 MHz']
    """
    import pandas as pd

    rows = [
        {
            "设备": key,
            "精度": p,
            "厂商 dense 峰值": _rate(dev.dense_peaks[p], p),
            "厂商所用时钟": clock(rated),
            "每 SM 每时钟": f"{dev.per_sm_clock('matrix', p):.0f}" if dev.sms else MISSING,
            "向量单元所用时钟": clock(dev.clock_hz),
        }
        for key, dev in _devices(devices).items()
        for p, rated in dev.matrix_clock_hz.items()
    ]
    return pd.DataFrame(rows).set_index(["设备", "精度"])


def sparse_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """2:4 稀疏峰值与 dense 峰值并列（FLOP/s），以及两者之比，按设备与精度列出。

    Returns
    -------
    pandas.DataFrame
        按 ``(设备, 精度)`` 索引；没有稀疏峰值的设备没有行。

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
    """每个设备的片上存储：L2、L2 之外的末级 cache、每个 SM 的存储、SM 个数。

    Returns
    -------
    pandas.DataFrame
        文字单元格，按 ``设备`` 索引（SM 个数仍为 int）；未知的数字为 ``"—"``。

    Examples
    --------
    容量按二进制写（KiB、MiB），与厂商的本意相同；厂商与他人的测量都没有给出时，
    ``L2 带宽`` 为 ``—``。

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


#: 互连的种类，按表格中的说法。
LINK_ZH = {
    "nvlink": "NVLink（NVSwitch）",
    "infinity-fabric": "Infinity Fabric",
    "pcie": "只有 PCIe",
}


def links_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """每个设备与同一节点内其他 GPU 之间的互连：种类、每个方向的带宽、每步延迟、能否在网络中归约。

    Returns
    -------
    pandas.DataFrame
        文字单元格，按 ``设备`` 索引；未知的数字为 ``"—"``。

    Examples
    --------
    带宽按每个方向写：H100 的 NVLink 是 NVIDIA 印出的 900 GB/s 的一半。

    >>> row = links_frame().loc["h100-sxm"]
    >>> row["互连"], row["每个方向"], row["两个方向合计"], row["交换芯片归约"]
    ('NVLink（NVSwitch）', '450 GB/s', '900 GB/s', '是')
    >>> links_frame().loc["rtx-4090", "PCIe"]
    'Gen 4 x16'
    """
    import pandas as pd

    def rate(value: float | None) -> str:
        return si(value, "B/s") if value else MISSING

    return pd.DataFrame(
        [
            {
                "设备": key,
                "互连": LINK_ZH.get(dev.link, MISSING),
                "每个方向": rate(dev.link_bandwidth),
                "两个方向合计": rate(2 * dev.link_bandwidth if dev.link_bandwidth else None),
                "每步延迟": si(dev.link_latency, "s") if dev.link_latency else MISSING,
                "交换芯片归约": "是" if dev.link_reduces else "否",
                "PCIe": f"Gen {dev.pcie_generation} x{dev.pcie_lanes}"
                if dev.pcie_generation
                else MISSING,
            }
            for key, dev in _devices(devices).items()
        ]
    ).set_index("设备")


def sources_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """每个设备的每个数字来自哪里：文献、日期、可靠性、URL、口径。

    与某个数字比较过但没有采用的出处单独占一行（``数据`` 以 ``（对照，未采用）`` 结尾）。``口径`` 说
    明数字是怎样读出的：容量是驱动报告的总量，还是按 GiB 读的标称容量；按低于 boost 时钟标出的矩阵
    峰值写出时钟。出处的注释（英文，与目录中保存的一样）由 ``roofline-book devices`` 显示。

    Returns
    -------
    pandas.DataFrame
        按 ``(设备, 数据)`` 索引。

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
        if figure == "peak_flops" and dev.matrix_clock_hz:
            rated = sorted({clock(c) for c in dev.matrix_clock_hz.values()})
            return f"{', '.join(dev.matrix_clock_hz)} 按 {', '.join(rated)} 标出，原样使用"
        if figure == "clock_hz":
            return "厂商向量速率所按的 boost 时钟"
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
