"""一台设备的各项上限：:class:`Hardware`。

每个数字的出处、每条 roof 与所用的词见 :mod:`roofline_book.devices.ceiling`。目录里的设备由
:mod:`roofline_book.devices.catalog` 读入，自定义设备用
:func:`~roofline_book.devices.catalog.adhoc` 构造；例子里的 ``hardware`` 即
:func:`~roofline_book.devices.catalog.hardware`。
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, precision_name
from .ceiling import ANY_PRECISION as ANY_PRECISION  # re-exported: the device's vocabulary
from .ceiling import COMPUTE_UNITS as COMPUTE_UNITS
from .ceiling import FLOP_PER_FMA as FLOP_PER_FMA
from .ceiling import LINKS as LINKS
from .ceiling import MEMORY_LEVELS as MEMORY_LEVELS
from .ceiling import SPECIAL_UNIT as SPECIAL_UNIT
from .ceiling import USER_SOURCE as USER_SOURCE
from .ceiling import Ceiling as Ceiling
from .ceiling import Network as Network
from .ceiling import Source as Source
from .ceiling import peak_key as peak_key


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
        向量单元各精度的速率（FLOP/s，与厂商的算法相同，一个 FMA 计 2 FLOP）：FP32 与 FP64 lane，
        以及有公开数字时 16 位 packed 的非 Tensor Core 速率（HFMA2、BF16x2）。
    special_peak : float or None
        每秒特殊函数求值次数（exp、rsqrt、倒数等；结果的个数，不是 FLOP/s），有出处或可推算时给出。
    sparse_peaks : mapping of str to float
        2:4 结构化稀疏的速率（FLOP/s），仅供参考。
    memory_capacity : float or None
        设备呈现出来的主存容量（byte）：有出处给出驱动报告的总量时用它，否则按 GiB 读厂商的标称容量
        （``memory_capacity_basis`` 说明是哪一种）。
    memory_capacity_basis : str
        ``"driver"`` （nvidia-smi 报告的总量）、``"nominal"`` （厂商的标称容量，按 GiB 读）
        或 ``""`` （由调用者给出）。
    l2_cache, last_level_cache : float or None
        容量（byte），有公开数字时给出；``last_level_cache`` 是 L2 之外的一级 cache（AMD 的
        Infinity Cache）。
    l2_bandwidth : float or None
        L2 带宽（byte/s），厂商或所引用的测量给出时才有。
    clock_hz : float or None
        厂商标出向量单元速率所按的 SM 时钟（Hz），即 boost 时钟；矩阵单元的数字也按它标出，
        除非 ``matrix_clock_hz`` 另给一个较低的时钟。特殊函数的速率按它推算。
    shared_memory_per_sm, l1_shared_per_sm, register_file_per_sm : float or None
        每个 SM 的片上存储（byte）：一个 block 最多可用的 shared memory、L1 与它合计、寄存器堆。
    sms : int or None
        streaming multiprocessor 的个数（AMD 上为 compute unit）。
    fp32_lanes_per_sm, sfu_per_sm_per_clock : int or None
        每个 SM 的 FP32 lane 数、每个时钟周期的特殊函数结果数（推算 ``special_peak`` 所用）。
    link : str
        节点内与其他 GPU 的互连，:data:`~roofline_book.devices.ceiling.LINKS` 之一；
        不知道时为 ``""``。
    link_bandwidth : float or None
        这块 GPU 所有互连链路合起来 **每个方向** 的带宽（byte/s）。NVIDIA 印出的 NVLink 数字
        （H100 的 900 GB/s）是两个方向之和，每个方向是它的一半；只有 PCIe 时是 PCIe 一个方向的带宽。
    link_latency : float or None
        集合通信模型每一步（一次相邻设备间的传递）所用的延迟（秒）。
    link_reduces : bool
        交换芯片能在网络中做归约（NVLink SHARP，NCCL 的 NVLS）：all-reduce 时每块 GPU 只需送出并收回
        一份数据，而不是 ring 的两份。
    pcie_generation, pcie_lanes : int or None
        主机接口的 PCIe 代数与 lane 数。
    architecture : str
        芯片的架构，小写（``"hopper"``、``"ampere"``、``"cdna3"``）；自定义设备为 ``""``。
        与架构有关的 kernel 事实按它选取（Hopper 上 FlashAttention-3 的 tile，
        :func:`roofline_book.devices.kernels.device_flash_tile`）。
    reported_names : tuple of str
        驱动与 PyTorch 报告的这块设备的名称（``torch.cuda.get_device_name()``，nvidia-smi 的
        Product Name），例如 ``"NVIDIA H100 80GB HBM3"``：测得的 run 凭它找到目录中的条目
        （:func:`roofline_book.devices.catalog.reported`）。
    firmness : str
        设备出处的可靠程度：``"vendor"`` （datasheet、白皮书）或 ``"secondary"``；
        自定义设备为 ``""``。
    sources : mapping of str to roofline_book.devices.ceiling.Source
        每个数字的出处，按字段名索引；``"vector_peaks.bf16"`` 这样的键给出某一精度不同的出处。
    compared_sources : mapping of str to tuple of roofline_book.devices.ceiling.Source
        与某个数字比较过但没有采用的出处（厂商的另一个数字、更低的测量），按字段名索引。
    compared_figures : mapping of str to tuple of float
        这些出处给出的数字，顺序相同（例如 B200 Tech Brief 的 7.7 TB/s）。
    derivations : mapping of str to str
        推算出的数字的公式，或某个数字是怎样选出的；某一精度用 ``"peak_flops.bf16"`` 这样的键。
    matrix_clock_hz : mapping of str to float
        厂商按低于 ``clock_hz`` 的时钟标出矩阵单元速率的那些精度，及那个时钟（Hz）：Hopper 的
        Tensor Core 各行按 1830 MHz。``dense_peaks`` 就是厂商的数字，不换算到别的时钟。
    """

    key: str
    name: str
    dense_peaks: Mapping[str, float]
    memory_bandwidth: float
    vendor: str = ""
    architecture: str = ""
    reported_names: tuple[str, ...] = ()
    vector_peaks: Mapping[str, float] = field(default_factory=dict)
    special_peak: float | None = None
    sparse_peaks: Mapping[str, float] = field(default_factory=dict)
    memory_capacity: float | None = None
    memory_capacity_basis: str = ""
    l2_cache: float | None = None
    l2_bandwidth: float | None = None
    last_level_cache: float | None = None
    shared_memory_per_sm: float | None = None
    l1_shared_per_sm: float | None = None
    register_file_per_sm: float | None = None
    sms: int | None = None
    fp32_lanes_per_sm: int | None = None
    sfu_per_sm_per_clock: int | None = None
    clock_hz: float | None = None
    link: str = ""
    link_bandwidth: float | None = None
    link_latency: float | None = None
    link_reduces: bool = False
    pcie_generation: int | None = None
    pcie_lanes: int | None = None
    firmness: str = ""
    sources: Mapping[str, Source] = field(default_factory=dict)
    compared_sources: Mapping[str, tuple[Source, ...]] = field(default_factory=dict)
    compared_figures: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    derivations: Mapping[str, str] = field(default_factory=dict)
    matrix_clock_hz: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        if not self.dense_peaks:
            raise InvalidArgument("dense_peaks", "must name at least one precision")
        for label, peaks in (
            ("dense_peaks", self.dense_peaks),
            ("vector_peaks", self.vector_peaks),
            ("sparse_peaks", self.sparse_peaks),
        ):
            for precision, value in peaks.items():
                _validate.positive(f"{label}[{precision!r}]", value)
        for name in (
            "special_peak",
            "l2_bandwidth",
            "memory_capacity",
            "clock_hz",
            "link_bandwidth",
            "link_latency",
        ):
            if getattr(self, name) is not None:
                _validate.positive(name, getattr(self, name))
        if self.link:
            _validate.choice("link", self.link, LINKS)
        if not isinstance(self.link_reduces, bool):
            raise InvalidArgumentType(
                "link_reduces", f"must be true or false, got {self.link_reduces!r}"
            )
        if not isinstance(self.architecture, str):
            raise InvalidArgumentType(
                "architecture", f"must be a string, got {self.architecture!r}"
            )
        names = self.reported_names
        if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
            raise InvalidArgumentType(
                "reported_names", f"must be a sequence of non-empty strings, got {names!r}"
            )
        object.__setattr__(self, "reported_names", tuple(names))
        for name in ("pcie_generation", "pcie_lanes"):
            if getattr(self, name) is not None:
                _validate.size(name, getattr(self, name))
        for precision, rated in self.matrix_clock_hz.items():
            if precision not in self.dense_peaks:
                raise InvalidArgument(
                    "matrix_clock_hz", f"names {precision!r}, which has no matrix rate"
                )
            _validate.positive(f"matrix_clock_hz[{precision!r}]", rated)
        for precision, sparse in self.sparse_peaks.items():
            dense = self.dense_peaks.get(precision)
            if dense is not None and sparse < dense:
                raise InvalidArgument(
                    f"sparse_peaks[{precision!r}]",
                    f"({sparse:g}) is below the dense peak ({dense:g}) of {self.key}; "
                    "the two columns look swapped",
                )
        for precision, vector in self.vector_peaks.items():
            matrix = self.dense_peaks.get(precision)
            if matrix is not None and vector > matrix:
                raise InvalidArgument(
                    f"vector_peaks[{precision!r}]",
                    f"({vector:g}) is above the matrix peak ({matrix:g}) of {self.key}; "
                    "a Tensor Core figure looks filed as vector",
                )
        for name in (
            "dense_peaks",
            "vector_peaks",
            "sparse_peaks",
            "sources",
            "compared_sources",
            "compared_figures",
            "derivations",
            "matrix_clock_hz",
        ):
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
        >>> from roofline_book import hardware
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
        raise InvalidArgument(
            "dtype",
            f"{key!r} has no published dense peak on {self.key}; "
            f"allowed: {', '.join(self.precisions)}",
        )

    def vector_peak(self, dtype: Precision = "fp32") -> float:
        """对 ``dtype`` 数据做 elementwise 运算时向量单元的峰值（FLOP/s，FMA 计 2）。

        FP64 数据在 FP64 lane 上运行。其他数据可以在 FP32 lane 上运行（PyTorch 的 eager kernel
        把 16 位和 8 位数据按 FP32 计算，即它的 ``opmath`` 类型）；厂商公布了非 Tensor Core 的
        FP16/BF16 速率时，16 位数据也能按 packed 对（HFMA2、BF16x2）运行：下界取两者中较高的。
        与厂商的峰值一样，这里一个 FMA 计 2 FLOP；其他运算的速率见 :meth:`vector_op_rate`。
        没有向量单元数字的自定义设备用它唯一的峰值。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> h100, a100 = hardware("h100-sxm"), hardware("a100-sxm")
        >>> h100.vector_peak("fp32") / 1e12, h100.vector_peak("fp64") / 1e12
        (67.0, 34.0)
        >>> h100.vector_peak("bf16") / 1e12, a100.vector_peak("bf16") / 1e12  # packed pairs
        (133.8, 39.0)
        >>> h100.vector_peak("fp8") / 1e12                   # no packed 8-bit math: FP32 lanes
        67.0
        """
        key = peak_key(dtype)
        lane = "fp64" if key == "fp64" else "fp32"
        if not self.vector_peaks:
            return self.peak_flops(dtype)
        if lane not in self.vector_peaks:
            raise InvalidArgument(
                "dtype",
                f"{key!r} runs on {lane} lanes, and {self.key} has no published vector "
                f"(non-tensor) peak for {lane}; allowed: {', '.join(self.vector_peaks)}",
            )
        rate = self.vector_peaks[lane]
        if key in ("fp16", "bf16"):
            rate = max(rate, self.vector_peaks.get(key, 0.0))
        return rate

    def vector_op_rate(self, dtype: Precision = "fp32") -> float:
        """``dtype`` 数据上每秒的向量 lane 运算次数：向量峰值的一半。

        厂商的向量峰值把一个 FMA 算作 2 FLOP，所以一个 lane slot 只有在执行 FMA 时才做 2 FLOP；加、
        乘、max 或比较在同一个 slot 里只算 1 FLOP。这是这类运算（以及 FMA，各占一个 slot）的速率，所
        以向量工作按 lane slot 计时（:attr:`roofline_book.ops.Cost.vector_slots`）。

        Examples
        --------
        H100 SXM 做 FP32 加法的速率是它 67 TFLOP/s FMA 峰值的一半：

        >>> from roofline_book import hardware
        >>> hardware("h100-sxm").vector_op_rate("fp32") / 1e12
        33.5
        """
        return self.vector_peak(dtype) / FLOP_PER_FMA

    def special_peak_flops(self) -> float:
        """每秒特殊函数求值次数（exp、tanh、rsqrt、倒数等）。

        这是每秒结果的个数（:data:`~roofline_book.devices.ceiling.SPECIAL_UNIT`），不是 FLOP/s。
        没有公开数字、也无法推算时，取 FP32 lane 的运算速率（:meth:`vector_op_rate`）：一次超越函数
        至少要一次向量运算，所以下界仍是下界。

        Examples
        --------
        H100 SXM：每个 SM 每个时钟周期 16 个结果 x 132 个 SM x 1980 MHz：

        >>> from roofline_book import hardware
        >>> hardware("h100-sxm").special_peak_flops() / 1e12
        4.18176
        """
        if self.special_peak is not None:
            return self.special_peak
        return self.vector_op_rate("fp32")

    def ceiling(self, unit: str, dtype: Precision = "bf16") -> float:
        """一种单元处理 ``dtype`` 数据时的计算上限。

        矩阵与向量单元为 FLOP/s（厂商的峰值，一个 FMA 计 2 FLOP），特殊函数单元为每秒求值次数。

        Parameters
        ----------
        unit : {"matrix", "vector", "special"}
        dtype : str or torch.dtype
            算子数据的精度。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> h100 = hardware("h100-sxm")
        >>> [round(h100.ceiling(u, "bf16") / 1e12, 1) for u in ("matrix", "vector")]
        [989.4, 133.8]
        >>> h100.ceiling("tensor")
        Traceback (most recent call last):
        ...
        roofline_book.InvalidArgument: unit must be one of matrix, vector, special; got 'tensor'
        """
        unit = _validate.choice("unit", unit, COMPUTE_UNITS)
        if unit == "matrix":
            return self.peak_flops(dtype)
        if unit == "vector":
            return self.vector_peak(dtype)
        precision_name(dtype)  # reject unknown names here too
        return self.special_peak_flops()

    def rated_clock(self, unit: str = "matrix", dtype: Precision = "bf16") -> float | None:
        """厂商给出 ``unit`` 单元在 ``dtype`` 精度下的数字时所按的 SM 时钟（Hz）；不知道时为 None。

        Examples
        --------
        >>> from roofline_book import hardware; h100 = hardware("h100-sxm")
        >>> h100.rated_clock("matrix", "bf16") / 1e6, h100.rated_clock("vector", "bf16") / 1e6
        (1830.0, 1980.0)
        """
        unit = _validate.choice("unit", unit, COMPUTE_UNITS)
        key = dtype if dtype == ANY_PRECISION else peak_key(dtype)
        if unit == "matrix" and key in self.matrix_clock_hz:
            return self.matrix_clock_hz[key]
        return self.clock_hz

    def per_sm_clock(self, unit: str = "matrix", dtype: Precision = "bf16") -> float:
        """每个 SM 每个时钟周期的上限：:meth:`ceiling` / (SM 数 x :meth:`rated_clock`)。

        比较同一个 SM 上的两种单元（exp 对矩阵单元）时用它：两者在同一个时钟下比，时钟约掉。

        Examples
        --------
        H100 SXM：989.4e12 / (132 x 1.83e9) = 4096 次 dense BF16 FLOP 对 16 次特殊函数求值。

        >>> from roofline_book import hardware
        >>> h100 = hardware("h100-sxm")
        >>> round(h100.per_sm_clock("matrix", "bf16")), round(h100.per_sm_clock("special"))
        (4096, 16)
        """
        clock = self.rated_clock(unit, dtype)
        if self.sms is None or clock is None:
            raise InvalidArgument(
                "unit", f"{unit!r} needs an SM count and clock, which {self.key} does not publish"
            )
        return self.ceiling(unit, dtype) / (self.sms * clock)

    def bandwidth(self, level: str = "hbm") -> float | None:
        """一个存储层级的带宽（byte/s）；L2 没有数字时为 None。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> hardware("h100-sxm").bandwidth("hbm") / 1e12
        3.35
        >>> hardware("h100-sxm").bandwidth("dram")
        Traceback (most recent call last):
        ...
        roofline_book.InvalidArgument: level must be one of hbm, l2; got 'dram'
        """
        level = _validate.choice("level", level, MEMORY_LEVELS)
        return self.memory_bandwidth if level == "hbm" else self.l2_bandwidth

    def sparse_peak_flops(self, dtype: Precision = "bf16") -> float:
        """厂商给出的 2:4 稀疏速率（FLOP/s）：仅供参考，绝不用作 dense 运算的 roof。"""
        key = peak_key(dtype)
        if key not in self.sparse_peaks:
            raise InvalidArgument(
                "dtype",
                f"{key!r} has no published sparse peak on {self.key}; "
                f"allowed: {', '.join(self.sparse_peaks) or 'none'}",
            )
        return self.sparse_peaks[key]

    def ridge_point(
        self, dtype: Precision = "bf16", *, unit: str = "matrix", level: str = "hbm"
    ) -> float:
        """某个存储层级的斜线与某种单元的水平 roof 相交处的算术强度（FLOP/byte）。

        默认值（矩阵单元对 HBM）就是 GEMM 的 ridge point。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> h100 = hardware("h100-sxm")
        >>> round(h100.ridge_point("bf16")), round(h100.ridge_point("fp8"))
        (295, 591)
        """
        band = self.bandwidth(level)
        if band is None:
            raise InvalidArgument("level", f"{level!r} has no published bandwidth on {self.key}")
        return self.ceiling(unit, dtype) / band

    def ceilings(self) -> list[Ceiling]:
        """设备的每一条 roof 及其出处：计算按单元和精度，内存按层级。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> [(c.resource, c.precision) for c in hardware("h100-sxm").ceilings()][:2]
        [('matrix', 'fp64'), ('matrix', 'tf32')]
        """

        def cited(figure: str, precision: str = "") -> Source:
            one = self.sources.get(f"{figure}.{precision}")
            return one or self.sources.get(figure, USER_SOURCE)

        def unit(resource: str, figure: str, peaks: Mapping[str, float]) -> list[Ceiling]:
            return [
                Ceiling(
                    resource,
                    p,
                    v,
                    cited(figure, p),
                    self.derivations.get(f"{figure}.{p}", ""),
                    self.rated_clock(resource, p),
                )
                for p, v in peaks.items()
            ]

        out = unit("matrix", "peak_flops", self.dense_peaks)
        out += unit("vector", "vector_peaks", self.vector_peaks)
        if self.special_peak is not None:
            derivation = self.derivations.get("special_peak", "")
            special = Ceiling(
                "special",
                "fp32",
                self.special_peak,
                cited("special_peak"),
                derivation,
                self.clock_hz,
            )
            out.append(special)
        derivation = self.derivations.get("memory_bandwidth", "")
        out.append(Ceiling("hbm", "", self.memory_bandwidth, cited("memory_bandwidth"), derivation))
        if self.l2_bandwidth is not None:
            derivation = self.derivations.get("l2_bandwidth", "")
            out.append(Ceiling("l2", "", self.l2_bandwidth, cited("l2_bandwidth"), derivation))
        return out

    def source(self, figure: str) -> Source:
        """一个数字的出处（``"peak_flops"``、``"memory_bandwidth"`` 等）。"""
        if figure not in self.sources:
            raise InvalidArgument(
                "figure",
                f"must be one of {', '.join(self.sources) or '(none)'} for {self.key}, "
                f"got {figure!r}",
            )
        return self.sources[figure]

    def cited_sources(self, sparse: bool = False) -> dict[str, Source]:
        """各数字的出处；2:4 稀疏峰值（从不作为 roof）的出处只在 ``sparse`` 时给出。"""
        return {f: s for f, s in self.sources.items() if sparse or f != "peak_flops_sparse"}
