"""设备：每种计算单元、每种精度、每个存储层级各一个上限，以及每个数字的出处。

硬件目录保存在一个数据文件里，``roofline_book/data/hardware.toml``。计算上限按单元
保存（:data:`COMPUTE_UNITS`）：矩阵单元（Tensor Core、Matrix Core）、向量单元
（FP32/FP64 lane，即 CUDA core）和特殊函数单元（exp、rsqrt 等）。内存上限按层级保存
（:data:`MEMORY_LEVELS`）：HBM，以及有公开数字时的 L2。峰值都是 *dense* 速率。厂商
通常先印出 2:4 稀疏的速率，是 dense 的 2 倍；这些单独保存
（:meth:`Hardware.sparse_peak_flops`），从不用作 roof。

Examples
--------
>>> h100 = hardware("H100-SXM")
>>> h100.peak_flops("bf16") / 1e12, h100.memory_bandwidth / 1e12
(989.5, 3.35)
>>> round(h100.ridge_point("bf16"))
295
>>> h100.ceiling("vector", "bf16") / 1e12        # 16-bit elementwise math runs in FP32
67.0
>>> round(h100.ridge_point("bf16", unit="vector"), 1)
20.0

本书的示例设备，100 TFLOP/s、1 TB/s：

>>> EXAMPLE.ridge_point()
100.0
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType

from . import _validate
from .dtypes import Precision, precision_name

ANY_PRECISION = "any"
"""自定义设备唯一峰值的键，所有精度共用。"""

COMPUTE_UNITS = ("matrix", "vector", "special")
"""各有自己上限的计算单元（见 :data:`roofline_book.ops.UNITS`）。"""

MEMORY_LEVELS = ("hbm", "l2")
"""有带宽上限的存储层级：主存，以及（有公开数字时的）L2 cache。"""


@dataclass(frozen=True)
class Source:
    """一个硬件数字发表在哪里。"""

    key: str
    title: str
    url: str = ""
    date: str = ""
    note: str = ""
    firmness: str = ""
    """``"vendor"`` （datasheet、白皮书、编程指南）、``"paper"`` （测量或设计论文）或
    ``"secondary"`` （媒体、经销商、第三方汇编）。
    """

    def __str__(self) -> str:
        when = f" ({self.date})" if self.date else ""
        return f"{self.title}{when}"


USER_SOURCE = Source("user", "supplied by the caller (not a datasheet)")


def peak_key(dtype: Precision) -> str:
    """一种精度的峰值在目录中所用的键（两种 FP8 格式共用 'fp8'）。

    Examples
    --------
    >>> peak_key("fp8_e5m2"), peak_key("bfloat16")
    ('fp8', 'bf16')
    """
    name = precision_name(dtype)
    return "fp8" if name.startswith("fp8") else name


@dataclass(frozen=True)
class Ceiling:
    """设备的一条 roof：某种计算单元在某种精度下的速率，或某个存储层级的带宽。

    Attributes
    ----------
    resource : str
        ``"matrix"``、``"vector"``、``"special"``、``"hbm"`` 或 ``"l2"``。
    precision : str
        计算上限的精度键；内存上限为 ``""``。
    value : float
        FLOP/s（int8 为 OP/s）或 byte/s。
    source : Source
        它发表在哪里。
    derivation : str
        由公开数字推算出的数字，写出公式；否则为 ``""``。
    """

    resource: str
    precision: str
    value: float
    source: Source
    derivation: str = ""

    @property
    def is_memory(self) -> bool:
        return self.resource in MEMORY_LEVELS


@dataclass(frozen=True)
class Hardware:
    """用于 roofline 模型的一块设备，每种单元、每个存储层级各有一个上限。

    Parameters
    ----------
    key : str
        目录中的键，例如 ``"h100-sxm"``。
    name : str
        全名。
    dense_peaks : mapping of str to float
        矩阵单元（Tensor Core / Matrix Core）各精度键的 dense 速率
        （FLOP/s；int8 为 OP/s）。
    memory_bandwidth : float
        HBM（主存）的峰值带宽（byte/s）。
    vector_peaks : mapping of str to float
        向量单元各精度的速率（FLOP/s）：FP32 与 FP64 lane，以及有公开数字时 16 位的
        非 Tensor Core 速率。
    special_peak : float or None
        每秒特殊函数运算次数（exp、rsqrt 等），有公开数字或可推算时给出。
    sparse_peaks : mapping of str to float
        2:4 结构化稀疏的速率（FLOP/s），仅供参考。
    memory_capacity : float or None
        主存（HBM）的容量（byte），有公开数字时给出。
    l2_cache : float or None
        L2 cache 的容量（byte），有公开数字时给出。
    last_level_cache : float or None
        L2 之外的一级 cache（AMD 的 Infinity Cache）的容量（byte），有公开数字时给出。
    l2_bandwidth : float or None
        L2 带宽（byte/s），厂商或所引用的测量给出时才有。
    shared_memory_per_sm : float or None
        每个 SM 的 shared memory 容量（byte），一个 SM 上所有 block 共用；一个 block
        能用的上限略小（H100 为每个 SM 228 KiB，一个 block 最多 227 KiB）。
    l1_shared_per_sm : float or None
        每个 SM 的 L1 与 shared memory 合计容量（byte）。
    register_file_per_sm : float or None
        每个 SM 的寄存器堆容量（byte）。
    sms : int or None
        streaming multiprocessor 的个数（AMD 上为 compute unit）。
    fp32_lanes_per_sm : int or None
        每个 SM 的 FP32 lane 数，是推算 ``special_peak`` 所用的公开数字之一。
    sfu_per_sm_per_clock : int or None
        每个 SM 每个时钟周期的特殊函数结果数，是推算 ``special_peak`` 所用的公开数字之一。
    firmness : str
        设备出处的可靠程度：``"vendor"`` （datasheet、白皮书）或 ``"secondary"``；
        自定义设备为 ``""``。
    sources : mapping of str to Source
        每个数字的出处，按字段名索引。
    derivations : mapping of str to str
        每个由公开数字推算出的数字的公式。
    """

    key: str
    name: str
    dense_peaks: Mapping[str, float]
    memory_bandwidth: float
    vendor: str = ""
    vector_peaks: Mapping[str, float] = field(default_factory=dict)
    special_peak: float | None = None
    sparse_peaks: Mapping[str, float] = field(default_factory=dict)
    memory_capacity: float | None = None
    l2_cache: float | None = None
    l2_bandwidth: float | None = None
    last_level_cache: float | None = None
    shared_memory_per_sm: float | None = None
    l1_shared_per_sm: float | None = None
    register_file_per_sm: float | None = None
    sms: int | None = None
    fp32_lanes_per_sm: int | None = None
    sfu_per_sm_per_clock: int | None = None
    firmness: str = ""
    sources: Mapping[str, Source] = field(default_factory=dict)
    derivations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        if not self.dense_peaks:
            raise ValueError("dense_peaks must name at least one precision")
        for label, peaks in (
            ("dense_peaks", self.dense_peaks),
            ("vector_peaks", self.vector_peaks),
            ("sparse_peaks", self.sparse_peaks),
        ):
            for precision, value in peaks.items():
                _validate.positive(f"{label}[{precision!r}]", value)
        for name in ("special_peak", "l2_bandwidth"):
            if getattr(self, name) is not None:
                _validate.positive(name, getattr(self, name))
        for precision, sparse in self.sparse_peaks.items():
            dense = self.dense_peaks.get(precision)
            if dense is not None and sparse < dense:
                raise ValueError(
                    f"{self.key}: sparse peak for {precision} ({sparse:g}) is below the "
                    f"dense one ({dense:g}); the two columns look swapped"
                )
        for precision, vector in self.vector_peaks.items():
            matrix = self.dense_peaks.get(precision)
            if matrix is not None and vector > matrix:
                raise ValueError(
                    f"{self.key}: vector peak for {precision} ({vector:g}) is above the "
                    f"matrix one ({matrix:g}); a Tensor Core figure looks filed as vector"
                )
        for name in ("dense_peaks", "vector_peaks", "sparse_peaks", "sources", "derivations"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def precisions(self) -> tuple[str, ...]:
        """矩阵乘法可用的精度键，先列矩阵单元的，再列向量单元的。"""
        extra = [p for p in self.vector_peaks if p not in self.dense_peaks]
        return tuple(self.dense_peaks) + tuple(extra)

    def peak_flops(self, dtype: Precision = "bf16") -> float:
        """``dtype`` 精度下矩阵乘法的 dense 峰值速率（FLOP/s）。

        这是矩阵单元的速率；矩阵单元不支持的精度（NVIDIA 上不用 TF32 的 FP32）在向量单元上
        做乘法，按向量单元的速率计。

        Raises
        ------
        ValueError
            设备没有公布这种精度的数字。

        Examples
        --------
        >>> hardware("a100-sxm").peak_flops("tf32") / 1e12
        156.0
        >>> hardware("h100-sxm").peak_flops("fp32") / 1e12   # CUDA cores: no FP32 Tensor Core
        67.0
        """
        if ANY_PRECISION in self.dense_peaks:
            precision_name(dtype)  # still reject unknown names
            return self.dense_peaks[ANY_PRECISION]
        key = peak_key(dtype)
        if key in self.dense_peaks:
            return self.dense_peaks[key]
        if key in self.vector_peaks:
            return self.vector_peaks[key]
        raise ValueError(
            f"{self.key} has no published dense peak for {key}; "
            f"allowed: {', '.join(self.precisions)}"
        )

    def vector_peak(self, dtype: Precision = "fp32") -> float:
        """对 ``dtype`` 数据做 elementwise 运算时向量单元的速率（FLOP/s）。

        16 位和 8 位数据上的 elementwise kernel 按 FP32 计算（PyTorch 的 ``opmath`` 类型），
        FP64 数据按 FP64 计算，所以这是 FP32 或 FP64 lane 的速率。没有向量单元数字的自定义
        设备用它唯一的峰值。

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> h100.vector_peak("bf16") / 1e12, h100.vector_peak("fp64") / 1e12
        (67.0, 34.0)
        """
        key = "fp64" if peak_key(dtype) == "fp64" else "fp32"
        if not self.vector_peaks:
            return self.peak_flops(dtype)
        if key not in self.vector_peaks:
            raise ValueError(
                f"{self.key} has no published vector (non-tensor) peak for {key}; "
                f"allowed: {', '.join(self.vector_peaks)}"
            )
        return self.vector_peaks[key]

    def special_peak_flops(self) -> float:
        """每秒特殊函数运算次数（exp、tanh、rsqrt 等）。

        没有公开数字、也无法推算时，取 FP32 向量单元的速率：一次超越函数至少要一次向量运算，
        所以下界仍是下界。

        Examples
        --------
        H100 SXM：每个 SM 每个时钟周期 16 个结果，132 个 SM，1.98 GHz：

        >>> round(hardware("h100-sxm").special_peak_flops() / 1e12, 2)
        4.19
        """
        if self.special_peak is not None:
            return self.special_peak
        return self.vector_peak("fp32")

    def ceiling(self, unit: str, dtype: Precision = "bf16") -> float:
        """一种单元处理 ``dtype`` 数据时的计算上限（FLOP/s）。

        Parameters
        ----------
        unit : {"matrix", "vector", "special"}
        dtype : str or torch.dtype
            算子数据的精度。

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> [h100.ceiling(u, "bf16") / 1e12 for u in ("matrix", "vector")]
        [989.5, 67.0]
        >>> h100.ceiling("tensor")
        Traceback (most recent call last):
        ...
        ValueError: unit must be one of matrix, vector, special; got 'tensor'
        """
        unit = _validate.choice("unit", unit, COMPUTE_UNITS)
        if unit == "matrix":
            return self.peak_flops(dtype)
        if unit == "vector":
            return self.vector_peak(dtype)
        precision_name(dtype)  # reject unknown names here too
        return self.special_peak_flops()

    def bandwidth(self, level: str = "hbm") -> float | None:
        """一个存储层级的带宽（byte/s）；L2 没有数字时为 None。

        Examples
        --------
        >>> hardware("h100-sxm").bandwidth("hbm") / 1e12
        3.35
        >>> hardware("h100-sxm").bandwidth("dram")
        Traceback (most recent call last):
        ...
        ValueError: level must be one of hbm, l2; got 'dram'
        """
        level = _validate.choice("level", level, MEMORY_LEVELS)
        return self.memory_bandwidth if level == "hbm" else self.l2_bandwidth

    def sparse_peak_flops(self, dtype: Precision = "bf16") -> float:
        """厂商给出的 2:4 稀疏速率（FLOP/s）：仅供参考，绝不用作 dense 运算的 roof。"""
        key = peak_key(dtype)
        if key not in self.sparse_peaks:
            raise ValueError(
                f"{self.key} has no published sparse peak for {key}; "
                f"allowed: {', '.join(self.sparse_peaks) or 'none'}"
            )
        return self.sparse_peaks[key]

    def ridge_point(
        self, dtype: Precision = "bf16", *, unit: str = "matrix", level: str = "hbm"
    ) -> float:
        """某个存储层级的斜线与某种单元的水平 roof 相交处的算术强度（FLOP/byte）。

        默认值（矩阵单元对 HBM）就是 GEMM 的 ridge point。

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> round(h100.ridge_point("bf16")), round(h100.ridge_point("fp8"))
        (295, 591)
        """
        band = self.bandwidth(level)
        if band is None:
            raise ValueError(f"{self.key} has no published {level} bandwidth")
        return self.ceiling(unit, dtype) / band

    def ceilings(self) -> list[Ceiling]:
        """设备的每一条 roof 及其出处：计算按单元和精度，内存按层级。

        Examples
        --------
        >>> [(c.resource, c.precision) for c in hardware("h100-sxm").ceilings()][:2]
        [('matrix', 'fp64'), ('matrix', 'tf32')]
        """

        def cited(figure: str) -> Source:
            return self.sources.get(figure, USER_SOURCE)

        out = [Ceiling("matrix", p, v, cited("peak_flops")) for p, v in self.dense_peaks.items()]
        out += [
            Ceiling("vector", p, v, cited("vector_peaks")) for p, v in self.vector_peaks.items()
        ]
        if self.special_peak is not None:
            derivation = self.derivations.get("special_peak", "")
            special = Ceiling(
                "special", "fp32", self.special_peak, cited("special_peak"), derivation
            )
            out.append(special)
        out.append(Ceiling("hbm", "", self.memory_bandwidth, cited("memory_bandwidth")))
        if self.l2_bandwidth is not None:
            derivation = self.derivations.get("l2_bandwidth", "")
            out.append(Ceiling("l2", "", self.l2_bandwidth, cited("l2_bandwidth"), derivation))
        return out

    def source(self, figure: str) -> Source:
        """一个数字的出处（``"peak_flops"``、``"memory_bandwidth"`` 等）。"""
        if figure not in self.sources:
            raise ValueError(
                f"figure must be one of {', '.join(self.sources) or '(none)'} for {self.key}, "
                f"got {figure!r}"
            )
        return self.sources[figure]


def adhoc(
    name: str,
    peak_flops: float | Mapping[str, float],
    memory_bandwidth: float,
    *,
    vector: float | Mapping[str, float] | None = None,
    special: float | None = None,
    l2_bandwidth: float | None = None,
    l2_cache: float | None = None,
    shared_memory_per_sm: float | None = None,
) -> Hardware:
    """用你自己的数字建一块设备，例如一个算例，或一台测过的机器。

    Parameters
    ----------
    name : str
        任意名称。
    peak_flops : float or mapping of str to float
        矩阵单元峰值：所有精度共用一个（FLOP/s），或每个精度名一个。
    memory_bandwidth : float
        HBM（主存）带宽（byte/s）。
    vector : float or mapping of str to float, optional
        向量单元的速率（只给一个数时视为 FP32）；不给时，向量运算受 ``peak_flops`` 约束。
    special : float, optional
        每秒特殊函数运算次数；不给时取向量单元的速率。
    l2_bandwidth : float, optional
        L2 带宽（byte/s）。
    l2_cache : float, optional
        L2 cache 的容量（byte）。
    shared_memory_per_sm : float, optional
        每个 SM 的 shared memory 容量（byte）。

    Examples
    --------
    >>> dev = adhoc("mine", {"bf16": 200e12, "fp32": 50e12}, 2e12)
    >>> dev.ridge_point("bf16"), dev.ridge_point("fp32")
    (100.0, 25.0)
    >>> gpu = adhoc("mine", 200e12, 2e12, vector=20e12)
    >>> gpu.ceiling("vector", "bf16") / 1e12, gpu.ridge_point(unit="vector")
    (20.0, 10.0)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if isinstance(peak_flops, Mapping):
        peaks = {
            peak_key(k): _validate.positive(f"peak_flops[{k!r}]", v) for k, v in peak_flops.items()
        }
    else:
        peaks = {ANY_PRECISION: _validate.positive("peak_flops", peak_flops)}
    if vector is None:
        vectors: dict[str, float] = {}
    elif isinstance(vector, Mapping):
        vectors = {peak_key(k): _validate.positive(f"vector[{k!r}]", v) for k, v in vector.items()}
    else:
        vectors = {"fp32": _validate.positive("vector", vector)}
    user = {"peak_flops": USER_SOURCE, "memory_bandwidth": USER_SOURCE}
    if vectors:
        user["vector_peaks"] = USER_SOURCE
    optional = {
        "special_peak": special,
        "l2_bandwidth": l2_bandwidth,
        "l2_cache": l2_cache,
        "shared_memory_per_sm": shared_memory_per_sm,
    }
    for figure, value in optional.items():
        if value is not None:
            optional[figure] = _validate.positive(figure, value)
            user[figure] = USER_SOURCE
    return Hardware(
        key=name,
        name=name,
        dense_peaks=peaks,
        memory_bandwidth=_validate.positive("memory_bandwidth", memory_bandwidth),
        vector_peaks=vectors,
        special_peak=optional["special_peak"],
        l2_bandwidth=optional["l2_bandwidth"],
        l2_cache=optional["l2_cache"],
        shared_memory_per_sm=optional["shared_memory_per_sm"],
        sources=user,
    )


#: 本书的示例设备：峰值 100 TFLOP/s，内存带宽 1 TB/s。
EXAMPLE = adhoc("example (100 TFLOP/s, 1 TB/s)", 100e12, 1e12)

#: 目录表中的键 -> Hardware 的字段，用于原样读入的数字。
_FIELDS = {
    "matrix": "dense_peaks",
    "matrix_sparse": "sparse_peaks",
    "vector": "vector_peaks",
    "special": "special_peak",
    "memory_bandwidth": "memory_bandwidth",
    "memory_capacity": "memory_capacity",
    "l2_cache": "l2_cache",
    "l2_bandwidth": "l2_bandwidth",
    "last_level_cache": "last_level_cache",
    "shared_memory_per_sm": "shared_memory_per_sm",
    "l1_shared_per_sm": "l1_shared_per_sm",
    "register_file_per_sm": "register_file_per_sm",
    "sms": "sms",
}
#: Hardware 的字段 -> 其出处所用的名称（沿用只有一条 roof 时的目录）。
_SOURCE_NAMES = {"dense_peaks": "peak_flops", "sparse_peaks": "peak_flops_sparse"}
#: 推算数字的输入：它们需要出处，但本身不是上限。
_INPUTS = ("fp32_lanes_per_sm", "sfu_per_sm_per_clock")


def _derived_special(entry: Mapping, key: str) -> tuple[float, str] | None:
    """由 SFU 个数、SM 个数和 FP32 峰值所隐含的时钟频率，推算特殊函数的速率。

    ``clock = FP32 peak / (2 FLOP per FMA x FP32 lanes per SM x SMs)``，
    ``special = SFU results per clock per SM x SMs x clock``。
    """
    needed = ("sfu_per_sm_per_clock", "fp32_lanes_per_sm", "sms")
    if "special" in entry or not all(k in entry for k in needed):
        return None
    fp32 = entry.get("vector", {}).get("fp32")
    if fp32 is None:
        raise ValueError(f"hardware.toml: {key} derives its special rate but has no vector fp32")
    sfu, lanes, sms = (entry[k] for k in needed)
    clock = fp32 / (2 * lanes * sms)
    formula = (
        f"{sfu} results/clock/SM x {sms} SMs x {clock / 1e9:.3f} GHz, the clock at which "
        f"{lanes} FP32 lanes/SM x 2 FLOP reach the {fp32 / 1e12:g} TFLOP/s FP32 peak"
    )
    return sfu * sms * clock, formula


@functools.cache
def catalog() -> Mapping[str, Hardware]:
    """数据文件中的全部设备，按键索引。

    Examples
    --------
    >>> list(catalog())[:3]
    ['a100-sxm', 'a800-sxm', 'h100-sxm']
    """
    text = resources.files(__package__).joinpath("data/hardware.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = {k: Source(key=k, **v) for k, v in data["sources"].items()}
    devices = {}
    for key, entry in data["devices"].items():
        cited = entry.get("sources", {})
        for figure in (*_FIELDS, *_INPUTS):
            if figure in entry and cited.get(figure) not in sources:
                raise ValueError(f"hardware.toml: {key}.{figure} names no known source")
        fields = {_FIELDS[k]: v for k, v in entry.items() if k in _FIELDS}
        figure_sources = {
            _SOURCE_NAMES.get(_FIELDS[k], _FIELDS[k]): sources[cited[k]]
            for k in entry
            if k in _FIELDS
        }
        fields.update({k: entry[k] for k in _INPUTS if k in entry})
        derivations = {}
        derived = _derived_special(entry, key)
        if derived is not None:
            fields["special_peak"], derivations["special_peak"] = derived
            figure_sources["special_peak"] = sources[cited["sfu_per_sm_per_clock"]]
            figure_sources["fp32_lanes_per_sm"] = sources[cited["fp32_lanes_per_sm"]]
        devices[key] = Hardware(
            key=key,
            name=entry["name"],
            vendor=entry.get("vendor", ""),
            firmness=entry.get("firmness", ""),
            sources=figure_sources,
            derivations=derivations,
            **fields,
        )
    return MappingProxyType(devices)


def hardware(name: str) -> Hardware:
    """按键取目录中的设备；大小写、空格和下划线都不影响。

    Examples
    --------
    >>> hardware("H200 SXM").memory_bandwidth
    4800000000000.0
    >>> mi = hardware("mi300x")
    >>> round(mi.sparse_peak_flops("bf16") / mi.peak_flops("bf16"), 3)
    2.0
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a device name such as 'h100-sxm', got {name!r}")
    key = "-".join(name.strip().lower().replace("_", " ").split())
    devices = catalog()
    if key not in devices:
        raise ValueError(f"unknown device {name!r}; allowed: {', '.join(devices)}")
    return devices[key]
