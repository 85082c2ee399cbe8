"""各子命令共用的部分：单行错误信息、读取尺寸与速率、设备、输出。"""

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
    """错误信息只有一行的 ``ArgumentParser``：哪里错了、该去哪里看。"""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")


class UsageError(ValueError):
    """解析之后才发现的错误输入；打印为一行，退出状态为 2。"""


def parse_size(text: str) -> int:
    """把 :func:`roofline_book.units.parse_size` 用作 argparse 的 type。

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
    """读取以 ``unit`` 计、> 0 的速率的 parser；含 ``wrong`` 的文本视为 ``what``，予以拒绝。"""

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
    """``--device`` 指定的目录设备，或由 ``--peak --bandwidth`` 建的自定义设备。

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
    """无量纲的数（算术强度、ridge point），保留 4 位有效数字。"""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def emit(data: Any) -> None:
    """把 ``data`` 打印为缩进的 JSON（``--json`` 的输出）。"""
    print(json.dumps(data, indent=2))


def cost_figures(cost: Cost, device: Hardware, precision: str) -> dict[str, Any]:
    """roofline 模型对 ``device`` 上一个代价的结论，用基本单位。

    ``time_by_resource`` 是每种单元和每个存储层级所需的秒数；``time_lower_bound`` 是其中最大的，
    ``bound`` 指出它对应的资源。``attainable`` 是承担最多 FLOPs 的那个单元（``attainable_unit``）的
    速率，即它的 FLOPs 除以时间下界；``attainable_by_unit`` 给出每个单元的速率，没有一个超过该单元的
    峰值。
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


#: 文本输出对每种资源的叫法。
RESOURCE_TEXT = {
    "compute": "compute",
    "matrix": "matrix units",
    "vector": "vector units",
    "special": "special functions",
    "hbm": "HBM",
    "l2": "L2",
}


def rate_rows(figures: dict[str, Any], device: Hardware, precision: str) -> list[tuple[str, str]]:
    """文本报告中的 ``attainable, <unit>`` 各行：每种单元的速率，旁边是它的峰值。

    特殊函数的速率按每秒求值次数计（每次 exp 计 1）。
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
    """文本报告中的 ``time, <resource>`` 各行，起限制作用的那一行加标记。"""
    bound = figures["bound"]
    return [
        (f"time, {RESOURCE_TEXT[r]}", si(t, "s") + ("  <- bound" if r == bound else ""))
        for r, t in figures["time_by_resource"].items()
    ]
