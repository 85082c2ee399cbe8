"""``roofline-book plot``：roofline 图（SVG 或 PNG），算子画成点。"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.extras import require
from .._base.records import record_field
from ..roofline.roofs import main_unit, time_bound, unit_rates
from ..units import si
from .common import (
    RESOURCE_TEXT,
    UsageError,
    add_device_arguments,
    device_from_args,
    device_line,
    emit_result,
    number,
    output_file,
    text_table,
)
from .operators import OPERATORS, Arguments, parse_point, point_form
from .results import CostOn, Device, Result, command_field


@dataclass(frozen=True, kw_only=True)
class PlotPoint:
    """图中的一个点：一个算子在这块设备上。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one point"}

    operator: str = record_field(enum=list(OPERATORS), description="the operator")
    label: str = record_field(description="the point as typed, the legend's label")
    arguments: Arguments = record_field(description="as in op")
    cost: CostOn = record_field(inline=True)


@dataclass(frozen=True, kw_only=True)
class PlotResult(Result):
    """``plot --json``：写出的图，以及图中的每个点。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "a roofline chart"}

    command: str = command_field("plot")
    out: str = record_field(description="the file written (absolute path)")
    device: Device = record_field()
    points: tuple[PlotPoint, ...] = record_field(description="the points, in order")


RESULT = PlotResult


def _y_unit(peak: float, units: dict[str, float]) -> str:
    return next((u for u, scale in units.items() if peak >= scale), list(units)[-1])


def run(args: argparse.Namespace) -> int:
    """``plot`` 子命令：roofline 图，算子画成点。"""
    out = output_file(args.out, "--out")
    suffix = out.suffix.lower().removeprefix(".")
    device = device_from_args(args)
    peak, band = device.peak_flops(args.dtype), device.memory_bandwidth
    named = [parse_point(text, args.dtype, device) for text in args.point]
    for text, (_, _, cost, _) in zip(args.point, named, strict=True):
        if cost.intensity <= 0:  # a log axis has no 0
            raise UsageError(
                f"--point {text!r}: intensity is 0 FLOP/byte (no FLOPs), which the roofline's "
                "log axis cannot place; 'op' reports such an operator"
            )

    matplotlib = require("matplotlib", "plot")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from ..present import plotting

    plotting.use_style()
    ridge = device.ridge_point(args.dtype)
    xs = [ridge] + [cost.intensity for _, _, cost, _ in named]
    if device.vector_peaks:  # the lowest flat, the special functions, meets HBM further left
        xs.append(device.ridge_point(args.dtype, unit="special"))
    lo = 10 ** math.floor(math.log10(min(xs)) - 1)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 1)
    unit = _y_unit(peak, plotting.UNITS)
    fig, ax = plt.subplots()
    try:
        named_costs = [(label, cost) for _, label, cost, _ in named]
        if device.vector_peaks:  # a catalog device: every roof, each point under its own
            plotting.ceilings(ax, device, args.dtype, intensity_range=(lo, hi), unit=unit)
            plotting.placed(ax, named_costs, device, args.dtype, unit=unit, annotate=False)
            if named_costs:
                ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the axes
        else:
            plotting.roofline(
                ax,
                peak,
                band,
                label=device_line(device, args.dtype),
                intensity_range=(lo, hi),
                unit=unit,
            )
            # the legend names the points; labels beside them would collide
            plotting.points(ax, named_costs, peak, band, unit=unit, annotate=False)
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the axes
        ax.set_title(device_line(device, args.dtype))
        metadata = {"Date": None} if suffix == "svg" else {}
        fig.savefig(out, format=suffix, metadata=metadata)
    finally:
        plt.close(fig)
    if args.json:
        points = tuple(
            PlotPoint(
                operator=key,
                label=label,
                arguments=Arguments(arguments),
                cost=CostOn.of(cost, device, args.dtype),
            )
            for key, label, cost, arguments in named
        )
        emit_result(PlotResult(out=str(out), device=Device.on(device, args.dtype), points=points))
        return 0
    print(f"wrote {args.out}: {device_line(device, args.dtype)}, {len(named)} point(s)")
    body = []
    for _, label, cost, _ in named:
        # each row as the chart places it: the main unit's rate, at that unit's FLOPs per HBM
        # byte (softmax: its vector FLOPs, not all its FLOPs), so the rate is the HBM roof's
        # at the printed intensity whenever HBM binds
        t = time_bound(cost, device, args.dtype)
        main = main_unit(cost, t)
        rate = 0.0 if main is None else unit_rates(cost, t)[main]
        at_hbm = plotting.level_intensities(cost, t, device).get("hbm")
        body.append(
            (
                label,
                "-" if main is None else RESOURCE_TEXT[main],
                "-" if at_hbm is None else number(at_hbm),
                RESOURCE_TEXT[t.resource],
                si(rate, " exp/s" if main == "special" else "FLOP/s"),
            )
        )
    if body:
        head = ("point", "unit", "FLOP/B", "bound", "attainable")
        print(text_table(head, body, right={2, 4}))
        print("FLOP/B: the unit's FLOPs per HBM byte, where the chart places the point")
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``plot`` 加到 ``sub`` 中。"""
    plot = sub.add_parser(
        "plot",
        parents=[common],
        help="a roofline chart (SVG or PNG) with operators as points",
        description=(
            "Draw the roofline of a device and place operators on it. A point is "
            "NAME:SIZE,SIZE,...[,KEY=VALUE], e.g. gemm:4096,4096,4096, add:1048576, "
            "attention:1,32,4096,4096,128,impl=materialized."
        ),
    )
    plot.add_argument("--out", required=True, help="output file, .svg or .png")
    plot.add_argument(
        "--point",
        action="append",
        default=[],
        metavar="NAME:SIZES",
        help="an operator to place (repeatable), its sizes in this order (more with "
        f"KEY=VALUE): {'; '.join(point_form(name) for name in OPERATORS)}",
    )
    plot.add_argument("--dtype", default="bf16", help="precision of the roof and the points")
    add_device_arguments(plot)
    plot.set_defaults(handler=run)
