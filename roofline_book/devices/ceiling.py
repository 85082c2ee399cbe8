"""设备数字的出处（:class:`Source`）、一条 roof（:class:`Ceiling`）和节点之间的网络
（:class:`Network`），以及它们所用的词：计算单元、存储层级、互连。

设备本身见 :mod:`roofline_book.devices.device`，目录见 :mod:`roofline_book.devices.catalog`。
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._base import validate as _validate
from ..dtypes import Precision, precision_name
from ..units import si

ANY_PRECISION = "any"
"""自定义设备唯一峰值的键，所有精度共用。"""

SPECIAL_UNIT = "evaluations/s"
"""特殊函数上限的单位：每秒求值次数（exp、rsqrt 等），不是 FLOP/s。"""

FLOP_PER_FMA = 2
"""厂商为一次 fused multiply-add 计的 FLOPs；它的向量峰值按这种运算计。"""

COMPUTE_UNITS = ("matrix", "vector", "special")
"""各有自己上限的计算单元（见 :data:`roofline_book.ops.cost.UNITS`）。"""

MEMORY_LEVELS = ("hbm", "l2")
"""有带宽上限的存储层级：主存，以及（有公开数字时的）L2 cache。"""

LINKS = ("nvlink", "infinity-fabric", "pcie")
"""节点内 GPU 之间的互连：NVLink（经 NVSwitch）、AMD Infinity Fabric（XGMI），或只有 PCIe。"""


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


@dataclass(frozen=True)
class Network:
    """节点之间的一种网络：每块 GPU 一个 NIC 时，每块 GPU 在节点外的带宽与每步延迟。

    Attributes
    ----------
    key, name : str
        目录中的键（``"ib-ndr"``）与全名。
    bandwidth : float
        一个 NIC 端口 **每个方向** 的带宽（byte/s）：400 Gb/s 为 50e9 byte/s。
    latency : float
        集合通信模型每一步所用的延迟（秒），出处或假设见 ``sources``、``derivations``。
    sources : mapping of str to Source
        ``"bandwidth"`` 与 ``"latency"`` 的出处。
    derivations : mapping of str to str
        换算或假设。
    """

    key: str
    name: str
    bandwidth: float
    latency: float
    sources: Mapping[str, Source] = field(default_factory=dict)
    derivations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate.positive("bandwidth", self.bandwidth)
        _validate.positive("latency", self.latency)
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        object.__setattr__(self, "derivations", MappingProxyType(dict(self.derivations)))


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
        单位见 :attr:`unit`：矩阵与向量单元为 FLOP/s（int8 为 OP/s），特殊函数单元为每秒求值次数，
        存储层级为 byte/s。
    source : Source
        它发表在哪里。
    derivation : str
        由公开数字推算出的数字，写出公式；否则为 ``""``。
    clock_hz : float or None
        厂商给出这个数字时所按的 SM 时钟（Hz）；存储层级与不知道时为 None。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> [str(c) for c in hardware("h100-sxm").ceilings() if c.resource == "special"]
    ['special fp32: 4.182 T evaluations/s at 1980 MHz']
    >>> [str(c) for c in hardware("h100-sxm").ceilings() if c.precision == "bf16"]
    ['matrix bf16: 989.4 TFLOP/s at 1830 MHz', 'vector bf16: 133.8 TFLOP/s at 1980 MHz']
    """

    resource: str
    precision: str
    value: float
    source: Source
    derivation: str = ""
    clock_hz: float | None = None

    @property
    def is_memory(self) -> bool:
        return self.resource in MEMORY_LEVELS

    @property
    def unit(self) -> str:
        """:attr:`value` 的单位：``"FLOP/s"``、``"OP/s"``、``"evaluations/s"`` 或 ``"B/s"``。"""
        if self.is_memory:
            return "B/s"
        if self.resource == "special":
            return SPECIAL_UNIT
        return "OP/s" if self.precision == "int8" else "FLOP/s"

    def __str__(self) -> str:
        name = f"{self.resource} {self.precision}".rstrip()
        if self.resource == "special":  # a count per second: the prefix stands alone
            value = f"{si(self.value)} {self.unit}"
        else:
            value = si(self.value, self.unit)
        clock = (
            "" if self.is_memory or self.clock_hz is None else f" at {self.clock_hz / 1e6:g} MHz"
        )
        return f"{name}: {value}{clock}"
