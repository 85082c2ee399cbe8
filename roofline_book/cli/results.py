"""``--json`` 的词汇：每个子命令的结果是一个记录类，它的 JSON 与 JSON Schema 都由它生成。

记录类用 :func:`~roofline_book._base.records.record_field` 声明每个键：说明、约束，以及每个数的
单位（``unit``，写进 schema 的说明，如 ``[s]``）。键名也带单位，所有输出用同一套：

- 秒以 ``_s`` 结尾，速率以 ``_per_s`` 结尾（FLOP/s、每秒 token 数、特殊函数每秒求值次数），
  带宽以 ``_Bps`` 结尾（byte/s），容量以 ``_bytes`` 结尾；计数不带后缀（``flops``、``bytes``、
  ``kernels``、``calls``）；
- 资源用同一组标识（:data:`RESOURCES`）；
- 设备总是同一个对象（:class:`Device`），一个代价在设备上的结论总是同一组键（:class:`CostOn`，
  并入外层对象）；每个算子带稳定的 ``id``，与显示用的 ``name`` 分开（:class:`OpEntry`）。

一个子命令这样声明它的结果：

1. 写一个冻结的 ``@dataclass(frozen=True, kw_only=True)`` 记录类，继承 :class:`Result`，第一个
   字段写 ``command: str = command_field("NAME")``（它取代 :class:`Result` 的同名字段，留在
   ``roofline_book_version`` 之后），其余字段按输出的键序用 ``record_field`` 声明，数都带 ``unit``；
   类属性 ``SCHEMA_EXTRA = {"description": "..."}`` 是 schema 的标题说明；
2. 在子命令的模块里写 ``RESULT = 这个类``：命令行的 schema 表（测试与命令行附录读它）由
   :func:`command_schema` 从它生成（:data:`roofline_book.cli.schema.SCHEMAS`）；
3. ``run()`` 只解析参数、调用模型、构建这个记录，再把它渲染成文本，或用
   :func:`~roofline_book.cli.common.emit_result` 写成 JSON
   （:func:`~roofline_book._base.records.as_mapping`：键序就是字段的顺序，``optional`` 的空字段
   省略）。

见 :mod:`roofline_book.cli.devices` （第一个这样写的子命令）。

Examples
--------
>>> from roofline_book.devices.catalog import hardware
>>> d = as_mapping(Device.on(hardware("h100-sxm"), "bf16"))
>>> list(d)
['key', 'name', 'adhoc', 'precision', 'peaks_per_s', 'bandwidths_Bps', 'ridge_point']
>>> command_schema(Result)["properties"]["roofline_book_version"]["type"]
'string'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import __version__
from .._base.records import as_mapping, json_schema, record_field
from ..devices.catalog import Hardware, catalog
from ..ops import Cost
from ..roofline.roofs import main_unit, time_bound, unit_rates

__all__ = [
    "DIALECT",
    "RESOURCES",
    "Bandwidths",
    "BlockOp",
    "CostOn",
    "Device",
    "LayerOp",
    "OpEntry",
    "Peaks",
    "Result",
    "StepOp",
    "UnitFlops",
    "as_mapping",
    "command_field",
    "command_schema",
    "is_adhoc",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

RESOURCES = ["matrix", "vector", "special", "compute", "memory", "l1", "l2", "l3", "llc", "hbm",
             "dram"]  # fmt: skip
"""资源的标识：计算单元、只有一个峰值的设备的 ``compute``、存储层级。"""


@dataclass(frozen=True, kw_only=True)
class Result:
    """每个 ``--json`` 输出的信封：写它的包的版本与子命令名；子命令的结果继承它。"""

    roofline_book_version: str = record_field(
        default=__version__, description="version of the roofline-book package that wrote this"
    )
    command: str = record_field(default="", description="the subcommand")


def command_field(name: str) -> Any:
    """子命令 ``name`` 的结果中的 ``command`` 字段：值总是 ``name``。"""
    return record_field(default=name, const=name, description="the subcommand")


def command_schema(cls: type[Result]) -> dict[str, Any]:
    """子命令结果 ``cls`` 的 JSON Schema（draft 2020-12），带标题。"""
    name = cls.__dataclass_fields__["command"].default
    return {"$schema": DIALECT, "title": f"roofline-book {name} --json"} | json_schema(cls)


def is_adhoc(device: Hardware) -> bool:
    """``device`` 不是目录中的设备（由 ``--peak --bandwidth`` 建成）。"""
    return catalog().get(device.key) is not device


@dataclass(frozen=True, kw_only=True)
class Peaks:
    """设备在一种精度下的计算上限。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "compute ceilings at this precision"}

    matrix: float = record_field(minimum=0, unit="FLOP/s", description="matrix-unit dense peak")
    vector: float | None = record_field(
        nullable=True,
        minimum=0,
        unit="FLOP/s",
        description="vector-unit peak; null if not published",
    )
    special: float | None = record_field(
        nullable=True,
        minimum=0,
        unit="evaluations/s",
        description="special-function-unit rate; null if not published",
    )


@dataclass(frozen=True, kw_only=True)
class Bandwidths:
    """设备的存储上限。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "memory ceilings"}

    hbm: float = record_field(minimum=0, unit="byte/s", description="device memory bandwidth")
    l2: float | None = record_field(
        nullable=True, minimum=0, unit="byte/s", description="L2 bandwidth; null if not published"
    )

    @classmethod
    def of(cls, device: Hardware) -> Bandwidths:
        """``device`` 的 HBM 与 L2 带宽（byte/s）。"""
        return cls(hbm=device.memory_bandwidth, l2=device.l2_bandwidth)


@dataclass(frozen=True, kw_only=True)
class Device:
    """回答所用的设备：每个输出中都是这同一个对象。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "the device an answer was computed on (the same object in every output)"
    }

    key: str = record_field(
        description="catalog key, e.g. h100-sxm (an ad-hoc device's key is its name)"
    )
    name: str = record_field(description="the device's full name")
    adhoc: bool = record_field(description="built from --peak and --bandwidth")
    precision: str = record_field(
        description="the precision whose compute ceilings apply, e.g. bf16"
    )
    peaks_per_s: Peaks = record_field()
    bandwidths_Bps: Bandwidths = record_field()
    ridge_point: float = record_field(
        minimum=0, unit="FLOP/byte", description="matrix peak over HBM bandwidth"
    )

    @classmethod
    def on(cls, device: Hardware, precision: str) -> Device:
        """``device`` 在 ``precision`` 下的上限。"""
        return cls(
            key=device.key,
            name=device.name,
            adhoc=is_adhoc(device),
            precision=precision,
            peaks_per_s=Peaks(
                matrix=device.peak_flops(precision),
                vector=device.ceiling("vector", precision),
                special=device.ceiling("special", precision),
            ),
            bandwidths_Bps=Bandwidths.of(device),
            ridge_point=device.ridge_point(precision),
        )


@dataclass(frozen=True, kw_only=True)
class UnitFlops:
    """按计算单元分的 FLOPs。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "FLOPs by compute unit [FLOP]"}

    matrix: int = record_field(minimum=0, unit="FLOP", description="FLOPs on the matrix units")
    vector: int = record_field(minimum=0, unit="FLOP", description="FLOPs on the vector units")
    special: int = record_field(minimum=0, unit="FLOP", description="FLOPs on the special units")


@dataclass(frozen=True, kw_only=True)
class CostOn:
    """roofline 模型对一个代价在一块设备上的结论，用基本单位；它的键并入外层对象。

    ``time_by_resource_s`` 是每种单元和每个存储层级所需的秒数；``time_lower_bound_s`` 是其中最大的，
    ``bound`` 指出它对应的资源。``attainable_per_s`` 是承担最多 FLOPs 的那个单元
    （``attainable_unit``）的速率，即它的 FLOPs 除以时间下界；``attainable_by_unit_per_s`` 给出每个
    单元的速率，没有一个超过该单元的峰值。
    """

    flops: int = record_field(
        minimum=0,
        unit="FLOP",
        description="FLOPs, exact: beyond 2**53 (huge shapes) read it as a big integer",
    )
    flops_by_unit: UnitFlops = record_field()
    bytes_read: int = record_field(minimum=0, unit="byte", description="compulsory bytes read")
    bytes_written: int = record_field(
        minimum=0, unit="byte", description="compulsory bytes written"
    )
    bytes: int = record_field(minimum=0, unit="byte", description="bytes_read + bytes_written")
    reread_bytes: int = record_field(
        minimum=0, unit="byte", description="bytes read again, which a cache may serve"
    )
    kernels: int = record_field(minimum=0, unit="1", description="kernel launches")
    intensity: float = record_field(minimum=0, unit="FLOP/byte", description="flops / bytes")
    bound: str = record_field(
        enum=RESOURCES, description="the resource that sets the time lower bound"
    )
    bound_kind: str = record_field(
        enum=["compute", "memory"], description="whether that resource computes or moves data"
    )
    attainable_per_s: float = record_field(
        minimum=0,
        unit="FLOP/s",
        description="rate of the unit doing most FLOPs, at the time lower bound "
        "(evaluations/s for special)",
    )
    attainable_unit: str | None = record_field(
        nullable=True, description="the unit attainable_per_s is for; null with no FLOPs"
    )
    attainable_by_unit_per_s: Mapping[str, float] = record_field(
        item={"minimum": 0},
        unit="FLOP/s",
        description="each unit's rate (evaluations/s for special)",
    )
    time_by_resource_s: Mapping[str, float] = record_field(
        item={"minimum": 0}, unit="s", description="seconds each resource needs"
    )
    time_compute_s: float = record_field(
        minimum=0, unit="s", description="the largest time over compute units"
    )
    time_memory_s: float = record_field(
        minimum=0, unit="s", description="the largest time over memory levels"
    )
    time_lower_bound_s: float = record_field(
        minimum=0, unit="s", description="the largest of time_by_resource_s: the time lower bound"
    )

    @classmethod
    def of(cls, cost: Cost, device: Hardware, precision: str) -> CostOn:
        """``cost`` 在 ``device`` 上、以 ``precision`` 的上限算出的结论。"""
        time = time_bound(cost, device, precision)
        rates = unit_rates(cost, time)
        unit = main_unit(cost, time)
        return cls(
            flops=cost.flops,
            flops_by_unit=UnitFlops(
                matrix=cost.matrix_flops, vector=cost.vector_flops, special=cost.special_flops
            ),
            bytes_read=cost.bytes_read,
            bytes_written=cost.bytes_written,
            bytes=cost.bytes,
            reread_bytes=cost.reread_bytes,
            kernels=cost.kernels,
            intensity=cost.intensity,
            bound=time.resource,
            bound_kind=time.bound,
            attainable_per_s=rates[unit] if unit else 0.0,
            attainable_unit=unit,
            attainable_by_unit_per_s=dict(rates),
            time_by_resource_s=dict(time.by_resource),
            time_compute_s=time.compute,
            time_memory_s=time.memory,
            time_lower_bound_s=time.seconds,
        )


@dataclass(frozen=True, kw_only=True)
class OpEntry:
    """一个算子：稳定的标识、显示名，以及它的代价在设备上的结论（:class:`CostOn` 的键）。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one operator"}

    id: str = record_field(
        description="stable identifier of the operator (display names may change)"
    )
    name: str = record_field(description="display name")


@dataclass(frozen=True, kw_only=True)
class LayerOp(OpEntry):
    """一层中的一个算子（``infer`` 的 ``layer_ops``）。"""

    cost: CostOn = record_field(inline=True)


@dataclass(frozen=True, kw_only=True)
class BlockOp(OpEntry):
    """``block`` 的一个算子，带它在各算子时间下界之和中的份额。"""

    cost: CostOn = record_field(inline=True)
    share: float = record_field(
        minimum=0, unit="1", description="this operator's share of the summed time lower bounds"
    )


@dataclass(frozen=True, kw_only=True)
class StepOp(OpEntry):
    """整个模型一步中的一个算子（``infer`` 的 ``ops``）：它汇总的层数与层的种类。"""

    layers: int | None = record_field(
        nullable=True,
        minimum=0,
        unit="1",
        description="layers whose cost this entry sums; null outside the layers",
    )
    layer_kind: str | None = record_field(
        nullable=True,
        enum=["local", "global", "dense", "moe"],
        description="local or global, dense or moe, where the two kinds differ",
    )
    cost: CostOn = record_field(inline=True)
