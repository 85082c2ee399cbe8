"""一个 roof 模型：一台机器的各项上限（:class:`Ceilings`），以及由它们得出的时间下界 :func:`bound`。

目录里的设备（:meth:`Ceilings.of`）与一次 run 测得的上限
（:func:`roofline_book.measure.judge.ceilings.of_run`）给出同一种
:class:`Ceilings`：每种计算单元在每种
精度下的速率，以及由内向外的各存储层级（:class:`Level`），每级有带宽和它能装下的字节数。
:func:`bound` 是唯一的下界规则，:func:`roofline_book.roofline.roofs.time_bound`、run
的预测、profiler、
报告和各项检查都调用它。规则有两部分：

- **哪个单元的上限管哪些 FLOPs。** 矩阵 FLOPs 除以矩阵单元的速率；向量工作按 lane slot 计
  （:attr:`Cost.vector_slots <roofline_book.ops.Cost.vector_slots>`），除以每秒 lane slot 数（其中
  ``Cost.fp32_vector_slots`` 按 FP32 的速率）；
  特殊函数求值次数除以它们的速率。只有一个峰值的机器（``"compute"``）让所有 FLOPs 共用它。
- **数据必须到达哪一级。** 冷启动（``resident=False``）时，必需字节来自最外一级（HBM、DRAM），
  途经它之内每个有带宽的层级；数据可能已在 cache 中时（``resident=True``：前一个算子刚写出它，
  或同一个 kernel 重复运行），必需字节来自装得下每个 kernel 工作集的最小层级。重读字节
  （``Cost.reread_bytes``）来自装得下它们 footprint 的最小层级；主存之内没有层级时不计。一级
  “装得下”``n`` 字节，指
  ``n <= fill x 容量``：下界取 ``fill =`` :data:`CACHE_MARGIN` （稍大于一级的工作集仍有一部分命中，
  按下一级算会被真实的 kernel 突破），预测取更小的份额。没有带宽的层级（没有测过的 L1）不给出
  时间：落在那里的数据不受任何内存 roof 约束。
- **近的一级不比远的一级慢。** 一级的 roof 不低于它外面任何一级的 roof（:func:`outward_floor`）：
  放在近处的数据至少能像从更远的一级那样读到。忙碌的机器上测得的 L3 可能比 DRAM 还慢，照搬它
  的下界会被真实的 kernel 突破。

各单元与各层级同时工作，所以下界是各项时间中最大的一个（:class:`TimeBound`）。

Examples
--------
>>> from roofline_book import add, hardware
>>> h100 = Ceilings.of(hardware("h100-sxm"))
>>> [level.name for level in h100.levels]
['l2', 'hbm']
>>> cold = bound(add(2**20), h100)
>>> cold.resource, sorted(cold.by_resource)
('hbm', ['hbm', 'l2', 'vector'])

同一个 add 的 6 MiB 已在 50 MiB 的 L2 中时，它只需到达 L2：

>>> warm = bound(add(2**20), h100, resident=True)
>>> warm.resource, sorted(warm.by_resource)
('l2', ['l2', 'vector'])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.device import ANY_PRECISION, COMPUTE_UNITS, Hardware, peak_key
from ..dtypes import BYTES, Precision, precision_name
from ..ops import Cost

Bound = Literal["memory", "compute"]

CACHE_MARGIN = 4
"""下界让一个层级装下至多为其容量这么多倍的工作集；每个 kernel 的字节数达到末级 cache 的这么多倍，
数据才算从主存流式读写。比一级 cache 稍大的工作集仍会在其中部分命中，只按下一级的带宽计时，真实的
kernel 会比“下界”更快。在 L3 为 32 MiB 的 CPU 上 2 倍不够：victim cache 和预取器仍能供给 64 MiB
工作集的一部分，AdamW loop 的八趟读写也会从 cache 重读每个 tensor。
"""

COMPUTE_RESOURCES = ("compute", *COMPUTE_UNITS)
"""计算资源：只有一个峰值时的 ``"compute"``，以及各计算单元。"""

MEMORY_RESOURCES = ("memory", "l1", "l2", "l3", "llc", "hbm", "dram")
"""存储层级的名称：两条 roof 的模型中的 ``"memory"``，各级 cache，以及主存（GPU 的 HBM、
CPU 的 DRAM）。"""


@dataclass(frozen=True)
class Level:
    """一个存储层级：带宽与它能装下的字节数。

    Attributes
    ----------
    name : str
        :data:`MEMORY_RESOURCES` 之一。
    bandwidth : float or None
        byte/s；没有公开或测得的数字时为 None，这一级不给出时间。
    capacity : float or None
        这一级能装下的字节数；最外一级（主存）为 None，或为它的容量。内层一级为 None 表示大小
        不知道。
    """

    name: str
    bandwidth: float | None
    capacity: float | None = None

    def __post_init__(self) -> None:
        _validate.choice("name", self.name, MEMORY_RESOURCES)
        for label in ("bandwidth", "capacity"):
            if getattr(self, label) is not None:
                _validate.positive(label, getattr(self, label))


#: :meth:`Ceilings.of` of the last devices it was built for, by ``id``: (device, its ceilings).
_OF: OrderedDict[int, tuple[Hardware, Ceilings]] = OrderedDict()
_OF_SIZE = 64


@dataclass(frozen=True)
class Ceilings:
    """一台机器的各项上限：每种单元在每种精度下的速率，以及由内向外的存储层级。

    Attributes
    ----------
    name : str
        机器的名称：目录中的键，或一次 run 的设备与日期。
    rates : mapping of tuple to float
        ``(unit, precision)`` 到速率：``unit`` 为 ``"matrix"`` （FLOP/s）、``"vector"`` （每秒
        lane slot 数：一次 FMA 或其他任何运算占一个）、``"special"`` （每秒求值次数），或只有一个
        峰值的机器的 ``"compute"`` （FLOP/s）；``precision`` 为精度键
        （:func:`roofline_book.devices.ceiling.peak_key`）。
    levels : tuple of Level
        由内向外，最后一个是主存。
    sources : mapping of tuple to str
        一些速率的来历，例如 run 中测出它的条目 id；只作说明。
    """

    name: str
    rates: Mapping[tuple[str, str], float]
    levels: tuple[Level, ...]
    sources: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.levels:
            raise InvalidArgument("levels", "must name at least the main memory")
        for (unit, precision), value in self.rates.items():
            _validate.choice("unit", unit, COMPUTE_RESOURCES)
            _validate.positive(f"rates[{unit!r}, {precision!r}]", value)
        object.__setattr__(self, "rates", MappingProxyType(dict(self.rates)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        object.__setattr__(self, "levels", tuple(self.levels))

    @classmethod
    def of(cls, device: Hardware) -> Ceilings:
        """目录设备（或 :func:`~roofline_book.devices.catalog.adhoc` 设备）的各项上限。

        矩阵单元的速率取 :meth:`~roofline_book.devices.device.Hardware.peak_flops`，向量单元取
        :meth:`~roofline_book.devices.device.Hardware.vector_op_rate` （lane slot），特殊函数取
        :meth:`~roofline_book.devices.device.Hardware.special_peak_flops`；不给向量峰值的设备只有一个
        ``"compute"`` 速率。层级为有数字时的 L2，然后是 HBM。
        """
        if not isinstance(device, Hardware):
            raise InvalidArgumentType(
                "device", f"must be a roofline_book.Hardware, got {type(device).__name__}"
            )
        # A device is frozen, so its ceilings never change: a decode loop of thousands of steps
        # asks for the same device's ceilings thousands of times (they took 60% of step_time).
        cached = _OF.get(id(device))
        if cached is not None and cached[0] is device:
            return cached[1]
        ceilings = cls._of(device)
        _OF[id(device)] = (device, ceilings)  # holding the device, so its id is not reused
        if len(_OF) > _OF_SIZE:
            _OF.popitem(last=False)
        return ceilings

    @classmethod
    def _of(cls, device: Hardware) -> Ceilings:
        keys = [ANY_PRECISION] if ANY_PRECISION in device.dense_peaks else []
        keys += sorted({peak_key(p) for p in BYTES})
        rates: dict[tuple[str, str], float] = {}
        for key in keys:
            precision = "fp32" if key == ANY_PRECISION else key
            try:
                matrix = device.peak_flops(precision)
            except ValueError:
                continue
            if not device.vector_peaks:
                rates["compute", key] = matrix
                continue
            rates["matrix", key] = matrix
            try:
                rates["vector", key] = device.vector_op_rate(precision)
            except ValueError:
                pass
            rates["special", key] = device.special_peak_flops()
        levels = []
        if device.l2_cache is not None or device.l2_bandwidth is not None:
            levels.append(Level("l2", device.l2_bandwidth, device.l2_cache))
        if device.last_level_cache is not None:
            levels.append(Level("llc", None, device.last_level_cache))
        levels.append(Level("hbm", device.memory_bandwidth, device.memory_capacity))
        return cls(device.key, rates, tuple(levels))

    @property
    def shared_peak(self) -> bool:
        """所有 FLOPs 是否共用一个峰值（``"compute"``）。"""
        return any(unit == "compute" for unit, _ in self.rates)

    def rate(self, unit: str, dtype: Precision = "bf16") -> float | None:
        """``unit`` 处理 ``dtype`` 数据的速率；没有这一项时为 None。

        Examples
        --------
        >>> from roofline_book import hardware
        >>> h100 = Ceilings.of(hardware("h100-sxm"))
        >>> round(h100.rate("matrix", "bf16") / 1e12, 1), h100.rate("vector", "fp32") / 1e12
        (989.4, 33.5)
        """
        unit = _validate.choice("unit", unit, COMPUTE_RESOURCES)
        precision_name(dtype)  # reject unknown names
        key = peak_key(dtype)
        if (unit, key) in self.rates:
            return self.rates[unit, key]
        return self.rates.get((unit, ANY_PRECISION))

    @property
    def memory(self) -> Level:
        """最外一级：主存。"""
        return self.levels[-1]

    def level(self, name: str) -> Level:
        """名为 ``name`` 的层级。"""
        for level in self.levels:
            if level.name == name:
                return level
        names = ", ".join(level.name for level in self.levels)
        raise InvalidArgument("level", f"must be one of {names}; got {name!r}")

    def with_rate(self, unit: str, precision: str, value: float) -> Ceilings:
        """把一个速率换成 ``value`` 的副本（预测按条目换上它的数据流所对应的速率）。"""
        return replace(self, rates={**self.rates, (unit, peak_key(precision)): value})

    def with_bandwidth(self, name: str, value: float | None) -> Ceilings:
        """把层级 ``name`` 的带宽换成 ``value`` 的副本。"""
        self.level(name)
        levels = [replace(lv, bandwidth=value) if lv.name == name else lv for lv in self.levels]
        return replace(self, levels=tuple(levels))


@dataclass(frozen=True)
class TimeBound:
    """kernel 运行时间的下界，它用到的每种资源一个（秒）。

    Attributes
    ----------
    by_resource : mapping of str to float
        每种资源所需的秒数：矩阵 FLOPs 除以矩阵单元的峰值，向量 lane slot 数除以 lane 速率，特殊函数
        求值次数除以它们的速率（``"matrix"``、``"vector"``、``"special"``；只有一个峰值时为
        ``"compute"``），或字节数除以某个层级的带宽（:data:`MEMORY_RESOURCES`）。

    Examples
    --------
    >>> t = TimeBound({"matrix": 2e-3, "hbm": 1e-3})
    >>> t.seconds, t.resource, t.bound
    (0.002, 'matrix', 'compute')
    """

    by_resource: Mapping[str, float]

    def __post_init__(self) -> None:
        known = COMPUTE_RESOURCES + MEMORY_RESOURCES
        if not self.by_resource:
            raise InvalidArgument("by_resource", "must name at least one resource")
        for name, seconds in self.by_resource.items():
            if name not in known:
                raise InvalidArgument(
                    "resource", f"must be one of {', '.join(known)}; got {name!r}"
                )
            _validate.non_negative(f"by_resource[{name!r}]", seconds)
        object.__setattr__(self, "by_resource", MappingProxyType(dict(self.by_resource)))

    @property
    def seconds(self) -> float:
        """各时间中最大的一个，任何 kernel 都无法更快（秒）。"""
        return max(self.by_resource.values())

    @property
    def resource(self) -> str:
        """决定下界的资源；相等时算计算资源，与 ridge point 上的约定相同。"""
        order = [r for r in COMPUTE_RESOURCES + MEMORY_RESOURCES if r in self.by_resource]
        return max(order, key=lambda r: (self.by_resource[r], -order.index(r)))

    @property
    def compute(self) -> float:
        """最大的计算时间，即内存不花时间时的时间（秒）。"""
        return max((v for r, v in self.by_resource.items() if r in COMPUTE_RESOURCES), default=0.0)

    @property
    def memory(self) -> float:
        """最大的内存时间，即运算不花时间时的时间（秒）。"""
        return max((v for r, v in self.by_resource.items() if r in MEMORY_RESOURCES), default=0.0)

    @property
    def bound(self) -> Bound:
        """下界由存储层级还是计算单元决定。"""
        return "memory" if self.resource in MEMORY_RESOURCES else "compute"


def outward_floor(levels: tuple[Level, ...]) -> tuple[Level, ...]:
    """各层级，每级的带宽不低于它外面任何一级的带宽：近处的数据至少能像从更远的一级那样读到。

    没有带宽的层级（没有 roof）保持没有；它外面有带宽的层级照样抬高更内的层级。没有倒置时原样
    返回同一个 tuple。

    Examples
    --------
    一台忙碌的 CPU 上测得 L3 为 12 GB/s，DRAM 为 17.7 GB/s：L3 的 roof 取 17.7 GB/s。

    >>> levels = (Level("l1", None, 2**15), Level("l2", 5e10, 2**20), Level("l3", 1.2e10, 2**25),
    ...           Level("dram", 1.77e10))
    >>> [lv.bandwidth for lv in outward_floor(levels)]
    [None, 50000000000.0, 17700000000.0, 17700000000.0]
    """
    floor, out = 0.0, []
    for level in reversed(levels):
        bandwidth = level.bandwidth
        if bandwidth is not None:
            if bandwidth < floor:
                level = replace(level, bandwidth=floor)
            floor = max(floor, bandwidth)
        out.append(level)
    result = tuple(reversed(out))
    return levels if result == levels else result


def source_level(levels: tuple[Level, ...], nbytes: float, fill: float = CACHE_MARGIN) -> int:
    """装得下 ``nbytes`` 字节的最小层级的下标：``nbytes <= fill x capacity``；都装不下时为最外一级。

    大小不知道的内层（``capacity`` 为 None）可能装得下任何数据，下界就让它装下。

    Examples
    --------
    >>> levels = (Level("l2", 1e12, 2**21), Level("l3", 5e11, 2**26), Level("dram", 2e10))
    >>> [source_level(levels, n) for n in (2**20, 2**23, 2**28, 2**30)]
    [0, 0, 1, 2]
    >>> [source_level(levels, n, fill=0.25) for n in (2**20, 2**25)]
    [1, 2]
    """
    fill = _validate.positive("fill", fill)
    for i, level in enumerate(levels[:-1]):
        if level.capacity is None or nbytes <= fill * level.capacity:
            return i
    return len(levels) - 1


def bound(
    cost: Cost,
    ceilings: Ceilings,
    dtype: Precision = "bf16",
    *,
    resident: bool = False,
    fill: float = CACHE_MARGIN,
    working_set: float | None = None,
) -> TimeBound | None:
    """``ceilings`` 下 ``cost`` 的时间下界：每种单元、每个层级各需的时间（秒），最大的就是下界。

    规则见模块说明。

    Parameters
    ----------
    cost : Cost
        算子的 FLOPs 与字节数。
    ceilings : Ceilings
        机器的上限。
    dtype : str or torch.dtype
        算子数据的精度，决定各单元的速率。
    resident : bool
        数据是否可能已在装得下它的 cache 中（见模块说明）；默认 False：必需字节来自主存。
    fill : float
        一级能装下的量占其容量的倍数；下界默认 :data:`CACHE_MARGIN`。
    working_set : float, optional
        每个 kernel 的工作集（byte）；默认 ``cost.bytes / cost.kernels``。

    Returns
    -------
    TimeBound or None
        没有任何上限约束 ``cost`` 时为 None（例如数据落在没有 roof 的 L1 中，它又没有 FLOPs）。

    Raises
    ------
    ValueError
        ``cost`` 在某个单元上有工作，``ceilings`` 却没有这个单元在 ``dtype`` 下的速率。

    Examples
    --------
    一台只有 L2 与 DRAM 的机器：L2 2 MiB、1 TB/s，DRAM 20 GB/s，FP32 向量 1e11 lane slot/s。
    一个 4 MiB 的 FP32 add（2^18 个元素，3 MiB 流量）冷启动时 DRAM 决定下界；数据已在 cache
    中时，它在 4 x 2 MiB 之内，只需到达 L2：

    >>> from roofline_book.ops import add
    >>> c = Ceilings("toy", {("vector", "fp32"): 1e11},
    ...              (Level("l2", 1e12, 2**21), Level("dram", 2e10)))
    >>> a = add(2**18, "fp32")
    >>> t = bound(a, c, "fp32")
    >>> t.resource, t.seconds == a.bytes / 2e10
    ('dram', True)
    >>> bound(a, c, "fp32", resident=True).resource
    'l2'
    """
    if not isinstance(cost, Cost):
        raise InvalidArgumentType(
            "cost", f"must be a roofline_book.Cost, got {type(cost).__name__}"
        )
    if not isinstance(ceilings, Ceilings):
        raise InvalidArgumentType(
            "ceilings", f"must be a roofline_book.Ceilings, got {type(ceilings).__name__}"
        )
    times: dict[str, float] = {}
    if ceilings.shared_peak:
        peak = ceilings.rate("compute", dtype)
        if peak is None:
            have = sorted(p for _, p in ceilings.rates)
            raise InvalidArgument(
                "dtype",
                f"{peak_key(dtype)!r} has no compute rate on {ceilings.name}; "
                f"allowed: {', '.join(have)}",
            )
        times["compute"] = cost.flops / peak
    else:
        work = {
            "matrix": cost.matrix_flops,
            "vector": cost.vector_slots,
            "special": cost.special_flops,
        }
        for unit, amount in work.items():
            if not amount:
                continue
            rate = ceilings.rate(unit, dtype)
            if rate is None:
                have = sorted({p for u, p in ceilings.rates if u == unit})
                raise InvalidArgument(
                    "dtype",
                    f"{peak_key(dtype)!r} has no {unit} rate on {ceilings.name}; "
                    f"allowed: {', '.join(have) or 'none'}",
                )
            times[unit] = amount / rate
        fp32 = ceilings.rate("vector", "fp32") if cost.fp32_vector_slots else None
        if fp32 is not None:  # slots that run in FP32 whatever the data (Cost.fp32_vector_slots)
            rest = cost.vector_slots - cost.fp32_vector_slots
            times["vector"] = times["vector"] * rest / cost.vector_slots
            times["vector"] += cost.fp32_vector_slots / fp32
    levels = outward_floor(ceilings.levels)
    ws = cost.bytes / max(cost.kernels, 1) if working_set is None else working_set
    outer = len(levels) - 1
    start = source_level(levels, ws, fill) if resident else outer
    # with no level inside the main memory, nothing says where re-reads come from: no term
    reread = source_level(levels, cost.reread_footprint, fill) if len(levels) > 1 else -1
    for i, level in enumerate(levels):
        if level.bandwidth is None or (i > start and i > reread):
            continue
        traffic = (cost.bytes if i <= start else 0) + (cost.reread_bytes if i <= reread else 0)
        times[level.name] = traffic / level.bandwidth
    return TimeBound(times) if times else None
