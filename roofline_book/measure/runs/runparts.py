"""run file 中描述机器与一次 run 的记录：设备、软件、测得的上限与稳定性。

它们与条目一起组成 :class:`roofline_book.measure.runs.records.Run`；记录类共有的 JSON 读写在
:mod:`roofline_book._base.records`。
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from ..._base import records as schema
from ..._base.records import record_field as _field
from ...dtypes import BYTES
from ..bench.cases import BANDWIDTH_KINDS


class Record:
    """记录类共有的读写（:mod:`~roofline_book._base.records`）：字段名
    （或 ``key``）即 JSON 键。"""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """由一个已按 schema 校验的 JSON 对象构建（见 :func:`.runfile.validate_run`）。"""
        return typing.cast(Self, schema.from_mapping(cls, data))

    def as_mapping(self) -> dict[str, Any]:
        """写回 JSON 对象：:meth:`from_mapping` 的逆。"""
        return schema.as_mapping(self)


@dataclass(frozen=True, kw_only=True)
class Ceiling(Record):
    """一项测得的上限：速率，它来自哪个条目，各轮之间的离散程度。

    Attributes
    ----------
    value : float
        FLOP/s 或 byte/s，即 ``entry`` 按模型算出的速率。
    entry : str
        它来自的条目的 id。
    spread : float or None
        各轮的 max / min - 1；由扫描中最快的条目得出的旧 run 没有它。
    """

    value: float = _field(exclusiveMinimum=0)
    entry: str = _field(minLength=1)
    spread: float | None = _field(
        optional=True, minimum=0, description="max / min - 1 of the rounds"
    )


@dataclass(frozen=True, kw_only=True)
class CacheCeiling(Ceiling):
    """CPU 上一个 cache 层级的带宽：数据留在该层之内的 copy（byte/s）。

    Attributes
    ----------
    working_set_bytes : int
        copy 触及的字节数（源与目的）。
    cache_bytes : int
        该层级的大小（一个核心），byte。
    """

    working_set_bytes: int = _field(minimum=1)
    cache_bytes: int = _field(minimum=1)


@dataclass(frozen=True, kw_only=True)
class MeasuredCeilings(Record):
    """一次 run 测得的上限。

    Attributes
    ----------
    peak_flops : Mapping of str to Ceiling
        每种精度最好的峰值 GEMM 探针（探针之前的 run：扫描中最好的 GEMM），FLOP/s。
    bandwidth : Mapping of str to Ceiling
        每个流式 kernel（``copy``、``triad``、``triad_inplace``）按模型字节数算出的速率，byte/s。
    working_set_bytes : int
        带宽 copy 触及的字节数（源与目的）。
    vector_flops : Mapping of str to Ceiling
        CPU：L2 之内的 add，每种精度，FLOP/s（没有时为空）。
    cache_bandwidth : Mapping of str to CacheCeiling
        CPU：每个 cache 层级（L2、L3）之内的 copy，byte/s（没有时为空）。
    """

    peak_flops: Mapping[str, Ceiling] = _field(
        keys=list(BYTES),
        description="the best peak-GEMM probe per precision (in a run from before the probes, "
        "the best GEMM of the sweep), FLOP/s",
    )
    bandwidth: Mapping[str, Ceiling] = _field(
        keys=list(BANDWIDTH_KINDS),
        description="rates of the streaming kernels from the model's bytes, byte/s",
    )
    working_set_bytes: int = _field(
        minimum=1, description="bytes the copy touches (source and destination)"
    )
    vector_flops: Mapping[str, Ceiling] = _field(
        optional=True,
        keys=list(BYTES),
        default_factory=dict,
        description="CPU: an add within the L2 per precision, FLOP/s",
    )
    cache_bandwidth: Mapping[str, CacheCeiling] = _field(
        optional=True,
        propertyNames={"pattern": "^L[1-9]$"},
        default_factory=dict,
        description="CPU: per cache level (L2, L3), a copy that stays in it, byte/s",
    )

    def named(self) -> list[tuple[str, Ceiling, int]]:
        """每项上限：(``group.key`` 名称, 上限, 0 表示 FLOP/s、1 表示 byte/s)。

        Examples
        --------
        >>> c = MeasuredCeilings(peak_flops={"fp32": Ceiling(value=1.0, entry="g")}, bandwidth={},
        ...              working_set_bytes=8)
        >>> c.named()
        [('peak_flops.fp32', Ceiling(value=1.0, entry='g', spread=None), 0)]
        """
        groups: tuple[tuple[str, Mapping[str, Ceiling], int], ...] = (
            ("peak_flops", self.peak_flops, 0),
            ("bandwidth", self.bandwidth, 1),
            ("vector_flops", self.vector_flops, 0),
            ("cache_bandwidth", self.cache_bandwidth, 1),
        )
        return [
            (f"{group}.{key}", c, which) for group, cs, which in groups for key, c in cs.items()
        ]

    @property
    def memory_roof(self) -> float | None:
        """测得的内存带宽：各带宽上限中最高的一个（byte/s），没有时为 None。"""
        values = [c.value for c in self.bandwidth.values()]
        return max(values) if values else None


@dataclass(frozen=True, kw_only=True)
class Device(Record):
    """run 所在的设备。

    Attributes
    ----------
    type : {"cpu", "cuda"}
    name : str
    cache_bytes : int or None
        末级 cache（CPU）或 L2（GPU），byte；未知时为 None。
    memory_bytes : int or None
        主存，byte。
    caches : Mapping of str to int
        CPU：每一级的数据 cache 或统一 cache（一个核心），byte（旧 run 没有时为空）。
    cpu_model : str or None
        CPU 才有：处理器型号。
    threads : int or None
        CPU 才有：torch 的线程数。
    cpu_capability : str or None
        CPU 才有：torch 所用的指令集（``AVX512`` 等）。
    threads_policy : {"set", "all"} or None
        CPU：线程数为 run 设定，或沿用 torch 的默认（全部）。
    sm_count : int or None
        CUDA 才有：SM 的个数。
    compute_capability : str or None
        CUDA 才有：``major.minor``。
    """

    type: str = _field(enum=["cpu", "cuda"])
    name: str = _field(minLength=1)
    cache_bytes: int | None = _field(
        nullable=True, minimum=0, description="last-level cache (CPU) or L2 (GPU), byte"
    )
    caches: Mapping[str, int] = _field(
        optional=True,
        default_factory=dict,
        propertyNames={"pattern": "^L[1-9]$"},
        item={"minimum": 1},
        description="CPU: data or unified cache per level (one core), byte",
    )
    memory_bytes: int | None = _field(nullable=True, minimum=0, description="main memory, byte")
    cpu_model: str | None = _field(only="cpu", nullable=True)
    threads: int | None = _field(only="cpu", nullable=True, minimum=1)
    cpu_capability: str | None = _field(only="cpu", nullable=True)
    threads_policy: str | None = _field(
        optional=True,
        enum=["set", "all"],
        description="CPU: threads set for the run, or torch's default (all)",
    )
    sm_count: int | None = _field(only="cuda", nullable=True, minimum=1)
    compute_capability: str | None = _field(only="cuda", nullable=True)


@dataclass(frozen=True, kw_only=True)
class Software(Record):
    """软件版本：Python、torch、CUDA（或 HIP）工具链与驱动（没有时为 None），以及写下这个 run 的
    roofline-book 的版本（较早的 run 没有记下它）。"""

    python: str = _field(minLength=1)
    torch: str = _field(minLength=1)
    cuda: str | None = _field(nullable=True)
    driver: str | None = _field(nullable=True)
    roofline_book: str | None = _field(
        optional=True, minLength=1, description="the roofline-book version that wrote the run"
    )


@dataclass(frozen=True, kw_only=True)
class LevelInversion(Record):
    """一个存储层级测得比它外面的一级还慢：机器在 run 中被别的任务占用时会这样（数据放在近处，
    至少能像从更远的一级那样读到，:func:`roofline_book.roofline.bounds.outward_floor`）。

    Attributes
    ----------
    level : str
        测得较慢的层级（``"l3"`` 等，:data:`roofline_book.roofline.bounds.MEMORY_RESOURCES`）。
    bandwidth : float
        它测得的带宽，byte/s。
    outer : str
        它外面测得最快的一级（``"dram"`` 等）。
    outer_bandwidth : float
        那一级的带宽，byte/s；下界对 ``level`` 取它。
    """

    level: str = _field(pattern="^(l[1-9]|llc)$")
    bandwidth: float = _field(exclusiveMinimum=0, description="the level's measured roof, byte/s")
    outer: str = _field(
        pattern="^(l[1-9]|llc|dram|hbm)$", description="the fastest level further out"
    )
    outer_bandwidth: float = _field(
        exclusiveMinimum=0, description="that level's roof, which the bound takes, byte/s"
    )


@dataclass(frozen=True, kw_only=True)
class Stability(Record):
    """run 期间机器是否保持不变：在各 case 之间计时的哨兵探针，从第一次到最后一次。

    Attributes
    ----------
    probe : str
        哨兵条目的 id。
    first_s, last_s : float
        第一个与最后一个检查点（秒）。
    drift : float
        ``last_s / first_s``。
    checkpoints_s : tuple of float or None
        每个检查点（秒）。
    spread : float or None
        检查点的 max / min - 1。
    stable : bool
    ceiling_drift : float or None
        峰值与 DRAM 探针最后一轮（case 之后）相对之前最好一轮之比中离 1 最远的一个。
    inverted_levels : tuple of LevelInversion
        测得比外面一级还慢的 cache 层级（:func:`roofline_book.measure.judge.ceilings.inversions`）：
        说明机器在测它时被占用；上限对它取外面那一级的带宽。
    """

    probe: str = _field(minLength=1)
    first_s: float = _field(exclusiveMinimum=0)
    last_s: float = _field(exclusiveMinimum=0)
    drift: float = _field(exclusiveMinimum=0)
    checkpoints_s: tuple[float, ...] | None = _field(
        optional=True, minItems=2, item={"exclusiveMinimum": 0}
    )
    spread: float | None = _field(optional=True, minimum=0)
    stable: bool = _field()
    ceiling_drift: float | None = _field(
        optional=True,
        exclusiveMinimum=0,
        description="the peak and DRAM probes' last round (after the cases) over their best "
        "earlier one, the farthest from 1",
    )
    inverted_levels: tuple[LevelInversion, ...] = _field(
        optional=True,
        default=(),
        description="cache levels measured slower than a level further out (a loaded machine); "
        "the ceilings hold each to that level's roof",
    )


__all__ = [
    "CacheCeiling",
    "Ceiling",
    "Device",
    "LevelInversion",
    "MeasuredCeilings",
    "Record",
    "Software",
    "Stability",
]
