"""What every subcommand shares: one-line errors, reading sizes and rates, devices, output."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

from ..hardware import Hardware, adhoc, catalog, hardware
from ..ops import Cost
from ..roofline import main_unit, time_bound, unit_rates
from ..tables import text_table
from ..units import SIZE_FORMS, parse_si, si
from ..units import parse_size as _parse_size

PROG = "roofline-book"
DEFAULT_DEVICE = "h100-sxm"
EXIT_USAGE = 2

__all__ = [
    "DEFAULT_DEVICE",
    "RESOURCE_TEXT",
    "EXIT_USAGE",
    "PROG",
    "SIZE_FORMS",
    "Parser",
    "UsageError",
    "add_device_arguments",
    "cost_figures",
    "rate_rows",
    "time_rows",
    "device_from_args",
    "device_json",
    "device_line",
    "emit",
    "number",
    "parse_bandwidth",
    "parse_peak",
    "parse_size",
    "text_table",
]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: what was wrong, where to look."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")


class UsageError(ValueError):
    """Bad input found after parsing; printed as one line, exit status 2."""


def parse_size(text: str) -> int:
    """:func:`roofline_book.units.parse_size` as an argparse type.

    Examples
    --------
    >>> parse_size("4Ki")
    4096
    >>> parse_size("4.5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number (e.g. ...), got '4.5'
    """
    try:
        return _parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rate(unit: str, wrong: str, what: str) -> Callable[[str], float]:
    """A parser of a rate > 0 in ``unit``; text containing ``wrong`` is ``what``, refused."""

    def parse(text: str) -> float:
        if wrong in text:
            raise argparse.ArgumentTypeError(f"{text!r} is {what}; this takes {unit}")
        try:
            value = parse_si(text, name="rate")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("rate: ")) from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a rate > 0 in {unit}, got {text!r}")
        return value

    parse.__name__ = unit
    return parse


parse_peak = _rate("FLOP/s", "B", "a bandwidth (bytes)")
parse_bandwidth = _rate("byte/s", "FLOP", "a compute rate")


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("device")
    group.add_argument(
        "--device",
        metavar="NAME",
        help=f"catalog device, any case: {', '.join(catalog())} (default: {DEFAULT_DEVICE})",
    )
    group.add_argument(
        "--peak", type=parse_peak, metavar="FLOP/s", help="ad-hoc device's peak, e.g. 100T"
    )
    group.add_argument(
        "--bandwidth",
        type=parse_bandwidth,
        metavar="B/s",
        help="ad-hoc device's memory bandwidth, e.g. 1T or 3.35TB/s",
    )


def device_from_args(args: argparse.Namespace) -> Hardware:
    """The catalog device named by ``--device``, or an ad-hoc one from ``--peak --bandwidth``.

    Examples
    --------
    >>> ns = argparse.Namespace(device=None, peak=100e12, bandwidth=1e12)
    >>> device_from_args(ns).ridge_point()
    100.0
    """
    if args.peak is None and args.bandwidth is None:
        return hardware(args.device or DEFAULT_DEVICE)
    if args.device is not None:
        raise UsageError("give either --device or --peak with --bandwidth, not both")
    if args.peak is None or args.bandwidth is None:
        missing = "--bandwidth" if args.peak is not None else "--peak"
        raise UsageError(
            f"an ad-hoc device needs both --peak and --bandwidth; {missing} is missing"
        )
    name = f"ad hoc ({si(args.peak, 'FLOP/s')}, {si(args.bandwidth, 'B/s')})"
    return adhoc(name, args.peak, args.bandwidth)


def is_adhoc(device: Hardware) -> bool:
    return catalog().get(device.key) is not device


def device_json(device: Hardware, precision: str) -> dict[str, Any]:
    return {
        "key": device.key,
        "name": device.name,
        "precision": precision,
        "peak_flops": device.peak_flops(precision),
        "vector_flops": device.ceiling("vector", precision),
        "special_flops": device.ceiling("special", precision),
        "memory_bandwidth": device.memory_bandwidth,
        "l2_bandwidth": device.l2_bandwidth,
        "ridge_point": device.ridge_point(precision),
    }


def device_line(device: Hardware, precision: str) -> str:
    if is_adhoc(device):
        return f"{device.name}, any precision"
    return f"{device.key} ({device.name}), {precision} dense peak"


def number(value: float) -> str:
    """A dimensionless figure (intensity, ridge point) with 4 significant digits."""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def emit(data: Any) -> None:
    """Print ``data`` as indented JSON (the ``--json`` output)."""
    print(json.dumps(data, indent=2))


def cost_figures(cost: Cost, device: Hardware, precision: str) -> dict[str, Any]:
    """What the roofline model says about one cost on ``device``, in base units.

    ``time_by_resource`` holds the seconds each unit and memory level needs;
    ``time_lower_bound`` is the largest and ``bound`` names its resource.
    ``attainable`` is the rate of the unit doing most of the FLOPs
    (``attainable_unit``), its FLOPs over the time lower bound, and
    ``attainable_by_unit`` gives every unit's; none exceeds its unit's peak.
    """
    time = time_bound(cost, device, precision)
    rates = unit_rates(cost, time)
    unit = main_unit(cost, time)
    return {
        "flops": cost.flops,
        "flops_by_unit": cost.flops_by_unit,
        "bytes_read": cost.bytes_read,
        "bytes_written": cost.bytes_written,
        "bytes": cost.bytes,
        "reread_bytes": cost.reread_bytes,
        "kernels": cost.kernels,
        "intensity": cost.intensity,
        "bound": time.resource,
        "bound_kind": time.bound,
        "attainable": rates[unit] if unit else 0.0,
        "attainable_unit": unit,
        "attainable_by_unit": rates,
        "time_by_resource": dict(time.by_resource),
        "time_compute": time.compute,
        "time_memory": time.memory,
        "time_lower_bound": time.seconds,
    }


#: How the text output names each resource.
RESOURCE_TEXT = {
    "compute": "compute",
    "matrix": "matrix units",
    "vector": "vector units",
    "special": "special functions",
    "hbm": "HBM",
    "l2": "L2",
}


def rate_rows(figures: dict[str, Any], device: Hardware, precision: str) -> list[tuple[str, str]]:
    """The ``attainable, <unit>`` lines of a text report: each unit's rate beside its peak.

    Special-function rates are evaluations per second (one per exp).
    """
    rows = []
    for unit, rate in figures["attainable_by_unit"].items():
        peak = (
            device.peak_flops(precision) if unit == "compute" else device.ceiling(unit, precision)
        )
        name = " exp/s" if unit == "special" else "FLOP/s"  # one evaluation per exp
        rows.append(
            (f"attainable, {RESOURCE_TEXT[unit]}", f"{si(rate, name)} (peak {si(peak, name)})")
        )
    return rows or [("attainable", si(0.0, "FLOP/s") + " (no FLOPs)")]


def time_rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``time, <resource>`` lines of a text report, the binding one marked."""
    bound = figures["bound"]
    return [
        (f"time, {RESOURCE_TEXT[r]}", si(t, "s") + ("  <- bound" if r == bound else ""))
        for r, t in figures["time_by_resource"].items()
    ]
