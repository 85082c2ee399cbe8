"""``roofline-book op OPERATOR``：一个算子在一块设备上的代价与下界。"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.records import as_mapping, record_field
from ..dtypes import precision_name
from ..units import si
from .common import (
    RESOURCE_TEXT,
    add_device_arguments,
    device_from_args,
    device_line,
    emit_result,
    number,
    rate_rows,
    text_table,
    time_rows,
)
from .operators import ALIASES, OPERATORS, Arguments, add_operator_arguments, device_defaults
from .results import CostOn, Device, Result, command_field


@dataclass(frozen=True, kw_only=True)
class OpResult(Result):
    """``op --json``：一个算子在一块设备上。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one operator on one device"}

    command: str = command_field("op")
    operator: str = record_field(
        enum=list(OPERATORS), description="the operator, as 'op OPERATOR' names it"
    )
    arguments: Arguments = record_field(
        description="every argument the package function got, defaults included: "
        "calling it with them gives these figures"
    )
    device: Device = record_field()
    cost: CostOn = record_field(inline=True)


RESULT = OpResult


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``op`` 以及每个算子一个的下级子命令加到 ``sub`` 中。"""
    op = sub.add_parser(
        "op",
        help="one operator on one device",
        description="One operator's FLOPs, bytes, intensity, bound and time lower bound.",
    )
    op_sub = op.add_subparsers(dest="operator", metavar="OPERATOR", required=True)
    for name, spec in OPERATORS.items():
        p = op_sub.add_parser(
            name,
            aliases=ALIASES.get(name, []),
            parents=[common],
            help=spec.summary[0],
            description=spec.summary[0],
        )
        add_operator_arguments(p, spec)
        add_device_arguments(p)
        p.set_defaults(handler=run, operator=name)


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """文本输出的 ``operator`` 一行：算子收到的参数，写成规范的样子。

    精度写成规范名称（``--dtype torch.bfloat16`` 显示为 ``bf16``），实现名写成小写
    （``--impl FLASH`` 显示为 ``flash``），flash kernel 的 tile 写成 ``(block_m 128, ...)``
    而不是 Python 的 dict。

    Examples
    --------
    >>> call_text("attention", {"dtype": "BFloat16", "impl": "FLASH",
    ...                         "tile": {"block_m": 128, "block_n": 176, "cluster_m": 2}})
    'attention(dtype=bf16, impl=flash, tile=(block_m 128, block_n 176, cluster_m 2))'
    """

    def text(key: str, value: Any) -> str:
        if key.endswith("dtype"):
            return precision_name(value, key)
        if key == "impl" and isinstance(value, str):
            return value.strip().lower()
        if isinstance(value, dict):  # a flash tile, as --json prints it
            return "(" + ", ".join(f"{k} {v}" for k, v in value.items()) + ")"
        return str(value)

    shown = ", ".join(f"{k}={text(k, v)}" for k, v in arguments.items() if v is not None)
    return f"{name}({shown})"


def run(args: argparse.Namespace) -> int:
    """``op`` 子命令：一个算子在一块设备上。"""
    spec = OPERATORS[args.operator]
    given = {a.name: getattr(args, a.name) for a in spec.params if hasattr(args, a.name)}
    device = device_from_args(args)
    cost, arguments = spec.call(device_defaults(spec, given, device))
    precision = precision_name(arguments[spec.roof_dtype])  # bf16, not torch.bfloat16
    result = OpResult(
        operator=args.operator,
        arguments=Arguments(arguments),
        device=Device.on(device, precision),
        cost=CostOn.of(cost, device, precision),
    )
    if args.json:
        emit_result(result)
        return 0
    figures = as_mapping(result.cost)
    rows = [
        ("operator", call_text(args.operator, arguments)),
        ("device", device_line(device, precision)),
        ("FLOPs", si(cost.flops, "FLOP")),
        ("bytes read", si(cost.bytes_read, "B")),
        ("bytes written", si(cost.bytes_written, "B")),
        ("bytes", si(cost.bytes, "B") + " (compulsory)"),
        *(
            [("bytes re-read", si(cost.reread_bytes, "B") + " (a cache may serve them)")]
            if cost.reread_bytes
            else []
        ),
        ("kernels", str(cost.kernels)),
        ("intensity", f"{number(cost.intensity)} FLOP/B"),
        ("ridge point", f"{number(device.ridge_point(precision))} FLOP/B (matrix over HBM)"),
        ("matrix peak", si(device.peak_flops(precision), "FLOP/s")),
        ("memory bandwidth", si(device.memory_bandwidth, "B/s")),
        *time_rows(figures),
        ("bound", RESOURCE_TEXT[figures["bound"]]),
        *rate_rows(figures, device, precision),
        ("time lower bound", si(figures["time_lower_bound_s"], "s")),
    ]
    print(text_table(None, rows, right=set()))
    return 0
