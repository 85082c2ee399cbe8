"""``roofline-book devices``：硬件目录、dense 峰值、ridge point 与出处。"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.records import record_field
from ..devices.catalog import Ceiling, Hardware, catalog, hardware, peak_key
from ..devices.ceiling import Source
from ..units import si
from .common import UsageError, emit_result, number, text_table
from .results import RESOURCES, Bandwidths, Result, command_field

_SOURCE = "where a figure comes from"


@dataclass(frozen=True, kw_only=True)
class CeilingEntry:
    """一条 roof：单元或层级、精度、值与单位、额定时钟、出处与推导。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one ceiling"}

    resource: str = record_field(enum=RESOURCES, description="unit or level")
    precision: str | None = record_field(nullable=True, description="precision")
    value: float = record_field(minimum=0, description="in unit")
    unit: str = record_field(description="FLOP/s, exp/s or B/s")
    clock_hz: float | None = record_field(nullable=True, minimum=0, unit="Hz")
    source: Source = record_field(description=_SOURCE)
    derivation: str | None = record_field(nullable=True, description="how it follows")

    @classmethod
    def of(cls, c: Ceiling) -> CeilingEntry:
        """roof ``c`` 的记录。"""
        return cls(
            resource=c.resource,
            precision=c.precision,
            value=c.value,
            unit=c.unit,
            clock_hz=c.clock_hz,
            source=c.source,
            derivation=c.derivation,
        )


@dataclass(frozen=True, kw_only=True)
class CatalogDevice:
    """目录中的一块设备：各精度的 dense 峰值与 ridge point、容量、出处与全部 roof。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one catalog device, every precision"}

    key: str = record_field(description="catalog key")
    name: str = record_field(description="full name")
    vendor: str = record_field(description="vendor")
    matrix_peaks_per_s: Mapping[str, float] = record_field(
        item={"minimum": 0}, unit="FLOP/s", description="dense peak by precision (OP/s for int8)"
    )
    ridge_points: Mapping[str, float] = record_field(
        item={"minimum": 0}, unit="FLOP/byte", description="ridge point by precision"
    )
    bandwidths_Bps: Bandwidths = record_field()
    memory_capacity_bytes: int | None = record_field(nullable=True, minimum=0, unit="byte")
    memory_capacity_basis: str | None = record_field(
        nullable=True, description="how the capacity is counted"
    )
    clock_hz: float | None = record_field(nullable=True, minimum=0, unit="Hz")
    l2_cache_bytes: int | None = record_field(nullable=True, minimum=0, unit="byte")
    shared_memory_per_sm_bytes: int | None = record_field(nullable=True, minimum=0, unit="byte")
    sms: int | None = record_field(
        nullable=True,
        minimum=0,
        unit="1",
        description="streaming multiprocessors (or compute units)",
    )
    sparse_matrix_peaks_per_s: Mapping[str, float] | None = record_field(
        optional=True,
        keep_empty=True,
        item={"minimum": 0},
        unit="FLOP/s",
        description="2:4-sparse peak by precision (with --sparse)",
    )
    sources: Mapping[str, Source] = record_field(description="the source of each figure")
    compared_sources: Mapping[str, tuple[Source, ...]] = record_field(
        description="sources compared, not taken"
    )
    derivations: Mapping[str, str] = record_field(description="how derived figures follow")
    firmness: str = record_field(description="how firm the sources are")
    ceilings: tuple[CeilingEntry, ...] = record_field(
        description="every ceiling, per unit and level"
    )

    @classmethod
    def of(cls, d: Hardware, wanted: str | None, sparse: bool) -> CatalogDevice:
        """设备 ``d`` 在精度 ``wanted`` （None：每种）下的记录；``sparse`` 时带 2:4 稀疏峰值。"""
        keep = _precisions(d, wanted)
        return cls(
            key=d.key,
            name=d.name,
            vendor=d.vendor,
            matrix_peaks_per_s={p: d.peak_flops(p) for p in keep},
            ridge_points={p: d.ridge_point(p) for p in keep},
            bandwidths_Bps=Bandwidths.of(d),
            memory_capacity_bytes=_bytes(d.memory_capacity),
            memory_capacity_basis=d.memory_capacity_basis,
            clock_hz=d.clock_hz,
            l2_cache_bytes=_bytes(d.l2_cache),
            shared_memory_per_sm_bytes=_bytes(d.shared_memory_per_sm),
            sms=d.sms,
            sparse_matrix_peaks_per_s=(
                {p: v for p, v in d.sparse_peaks.items() if p in keep} if sparse else None
            ),
            sources=d.cited_sources(sparse),
            compared_sources=dict(d.compared_sources),
            derivations=dict(d.derivations),
            firmness=d.firmness,
            ceilings=tuple(CeilingEntry.of(c) for c in d.ceilings()),
        )


@dataclass(frozen=True, kw_only=True)
class DevicesResult(Result):
    """``devices --json``：目录中的设备。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the hardware catalog"}

    command: str = command_field("devices")
    devices: tuple[CatalogDevice, ...] = record_field(description="catalog devices")


RESULT = DevicesResult


def _precisions(device: Hardware, wanted: str | None) -> list[str]:
    return [p for p in device.precisions if wanted is None or p == wanted]


def _bytes(value: float | None) -> int | None:
    """容量是整数个字节（目录里可能写成 8e10 这样的 float）。"""
    return None if value is None else int(value)


def _clock(hz: float | None) -> str:
    """the clock the vendor rates a figure at"""
    return "-" if hz is None else f"{hz / 1e6:g} MHz"


def _rate_unit(precision: str) -> str:
    return "OP/s" if precision == "int8" else "FLOP/s"  # int8 peaks count integer operations


def run(args: argparse.Namespace) -> int:
    """``devices`` 子命令：目录、dense 峰值和 ridge point，带出处。"""
    devices = [hardware(args.device)] if args.device is not None else list(catalog().values())
    wanted = None if args.dtype is None else peak_key(args.dtype)
    if args.json:
        entries = tuple(CatalogDevice.of(d, wanted, args.sparse) for d in devices)
        emit_result(DevicesResult(devices=entries))
    else:
        print("\n".join(_peaks(devices, wanted, args.sparse) + _ceilings(devices, wanted)
                        + _sources(devices, args.sparse)))  # fmt: skip
    return 0


def _peaks(devices: list[Hardware], wanted: str | None, sparse: bool) -> list[str]:
    """dense 峰值表（``sparse`` 时加上 2:4 稀疏峰值一列）。"""
    header = ["device", "precision", "dense peak", "rated at", "bandwidth", "ridge point"]
    if sparse:
        header.append("2:4-sparse peak (never a roof)")
    body = []
    for d in devices:
        for p in _precisions(d, wanted):
            row = [
                d.key,
                p,
                si(d.peak_flops(p), _rate_unit(p)),
                _clock(d.rated_clock("matrix", p)),
                si(d.memory_bandwidth, "B/s"),
                f"{number(d.ridge_point(p))} {_rate_unit(p)[:-2]}/B",
            ]
            if sparse:
                published = p in d.sparse_peaks
                row.append(si(d.sparse_peak_flops(p), _rate_unit(p)) if published else "-")
            body.append(row)
    if not body:
        raise UsageError(f"no device here publishes a dense peak for {wanted}")
    return [text_table(header, body, right={2, 3, 4, 5, 6}), ""]


def _ceilings(devices: list[Hardware], wanted: str | None) -> list[str]:
    """其余的上限：向量单元、特殊函数单元、推导出的数字，各带 ridge point。"""
    out = [
        "dense peaks: the vendor's figures, at the clock the vendor rates them (MFU uses them).",
        "other ceilings (elementwise work runs on the vector units: each CUDA core issues 1",
        "instruction per clock, an FMA counts 2 FLOP, so an add or a max gets half; a packed",
        "16-bit instruction gives 2 results; exp, rsqrt and a division's reciprocal run on the",
        "special function units, counted in evaluations/s; ridge points over HBM):",
    ]
    for d in devices:
        lines = []
        for c in d.ceilings():
            if c.resource in ("matrix", "hbm") and not c.derivation:
                continue
            if c.resource == "matrix" and wanted is not None and c.precision != wanted:
                continue
            per_byte = c.unit.removesuffix("/s") + "/B"
            ridge = (
                "" if c.is_memory else f", ridge {number(c.value / d.memory_bandwidth)} {per_byte}"
            )
            how = f" = {c.derivation}" if c.derivation else ""
            lines.append(f"    {c}{ridge}{how}")
        if lines:
            out += [f"  {d.key} ({d.firmness} sources)", *lines]
    return [*out, ""]


def _sources(devices: list[Hardware], sparse: bool) -> list[str]:
    """每块设备的出处，一个出处一行（只看一块设备时带出处的注释）。"""
    out = ["sources:"]
    for d in devices:
        cited: dict[str, list[str]] = {}
        for figure, source in d.cited_sources(sparse).items():
            cited.setdefault(source.key, []).append(figure)
        out.append(f"  {d.key}: {d.name}")
        for figures in cited.values():
            source = d.sources[figures[0]]
            url = f" <{source.url}>" if source.url else ""
            out.append(f"    {', '.join(figures)}: {source} [{source.firmness}]{url}")
            if len(devices) == 1 and source.note:
                out.append(f"      {source.note}")
        for figure, others in d.compared_sources.items():
            for other in others:
                out.append(f"    {figure} (compared, not taken): {other} [{other.firmness}]")
    return out


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``devices`` 加到 ``sub`` 中。"""
    devices = sub.add_parser(
        "devices",
        parents=[common],
        help="the hardware catalog: every ceiling per unit and level, with sources",
        description=(
            "The hardware catalog: dense matrix-unit peaks and their ridge points, then the "
            "vector, special-function and memory ceilings, and where each figure comes from "
            "(with --device, the sources' notes too). Vendors' 2:4-sparse rates are shown only "
            "with --sparse."
        ),
    )
    devices.add_argument("--device", metavar="NAME", help="show one device only")
    devices.add_argument("--dtype", help="show one precision only, e.g. bf16")
    devices.add_argument(
        "--sparse", action="store_true", help="also show 2:4-sparse peaks (never used as a roof)"
    )
    devices.set_defaults(handler=run)
