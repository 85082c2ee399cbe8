"""``roofline-book block``：一个 decoder block 的各算子（以及一步 AdamW），写成表格。"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from .. import ops
from .._base import validate as _validate
from ..devices.catalog import Hardware
from ..llm.block import BLOCK_OP_KEYS, LLAMA2_7B
from ..present.tables import Row, block_table, optimizer_table
from ..units import si
from .common import (
    RESOURCE_TEXT,
    UsageError,
    add_device_arguments,
    cost_figures,
    device_from_args,
    device_json,
    device_line,
    emit_json,
    number,
    parse_size,
    text_table,
)

_CONFIG_FIELDS = ("batch", "seq", "hidden", "heads", "ffn")


def _row_json(row: Row, device: Hardware, precision: str) -> dict[str, Any]:
    return (
        {"id": BLOCK_OP_KEYS[row.name], "name": row.name}
        | cost_figures(row.cost, device, precision)
        | {"share": row.share}
    )


def _rows_table(rows: Sequence[Row], *, total: bool = True) -> str:
    header = (
        "operator",
        "FLOPs",
        "bytes",
        "kernels",
        "FLOP/B",
        "bound",
        "attainable",
        "time bound",
        "share",
    )
    body: list[tuple[str, ...]] = [
        (
            r.name,
            si(r.cost.flops, "FLOP"),
            si(r.cost.bytes, "B"),
            str(r.cost.kernels),
            number(r.cost.intensity),
            RESOURCE_TEXT[r.resource],
            si(r.attainable, " exp/s" if r.unit == "special" else "FLOP/s"),
            si(r.time.seconds, "s"),
            f"{r.share:.1%}",
        )
        for r in rows
    ]
    if total:
        summed = sum((r.cost for r in rows), ops.ZERO)
        seconds = math.fsum(r.time.seconds for r in rows)
        body.append(
            ("total", si(summed.flops, "FLOP"), si(summed.bytes, "B"), str(summed.kernels))
            + ("", "", "", si(seconds, "s"), "")
        )
    return text_table(header, body, right={1, 2, 3, 4, 6, 7, 8})


def run(args: argparse.Namespace) -> int:
    """``block`` 子命令：一个 decoder block 的各算子，可选加上 AdamW。"""
    changes = {
        f: getattr(args, f) for f in (*_CONFIG_FIELDS, "dtype", "causal") if hasattr(args, f)
    }
    config = dataclasses.replace(LLAMA2_7B, **changes)
    args.attention = _validate.choice("--attention", args.attention, ops.ATTENTION_IMPLS)
    optimizer_flags = ("param_dtype", "grad_dtype", "state_dtype", "model_dtype")
    given = [f"--{f.replace('_', '-')}" for f in optimizer_flags if getattr(args, f) is not None]
    if given and not args.optimizer:
        are = "is an option" if len(given) == 1 else "are options"
        raise UsageError(f"{', '.join(given)} {are} of the AdamW step: add --optimizer")
    if args.param_dtype is None:
        args.param_dtype = "fp32"
    device = device_from_args(args)
    sram = {"sram_bytes": args.sram_bytes} if args.sram_bytes is not None else {}
    rows = block_table(config, device, attention_impl=args.attention, **sram)
    opt_rows: list[Row] = []
    if args.optimizer:
        opt_rows = optimizer_table(
            config,
            device,
            param_dtype=args.param_dtype,
            grad_dtype=args.grad_dtype,
            state_dtype=args.state_dtype,
            model_dtype=args.model_dtype,
        )
    if args.json:
        data: dict[str, Any] = {
            "config": dataclasses.asdict(config)
            | {
                "tokens": config.tokens,
                "head_dim": config.head_dim,
                "parameters": config.parameters,
            },
            "attention": args.attention,
            "device": device_json(device, config.dtype),
            "ops": [_row_json(r, device, config.dtype) for r in rows],
        }
        if args.optimizer:
            data["optimizer"] = {
                "device": device_json(device, args.param_dtype),
                "ops": [_row_json(r, device, args.param_dtype) for r in opt_rows],
            }
        emit_json("block", data)
        return 0
    shape = ", ".join(f"{f}={getattr(config, f)}" for f in _CONFIG_FIELDS)
    print(
        f"decoder block ({shape}, dtype={config.dtype}, causal={config.causal}, "
        f"attention={args.attention}), forward pass"
    )
    print(f"device: {device_line(device, config.dtype)}")
    print()
    print(_rows_table(rows))
    if args.optimizer:
        print()
        print(
            f"one AdamW step over the block's {config.parameters:,} parameters, "
            f"roof: {device_line(device, args.param_dtype)}"
        )
        print()
        print(_rows_table(opt_rows, total=False))  # three alternatives: no sum
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``block`` 加到 ``sub`` 中。"""
    block = sub.add_parser(
        "block",
        parents=[common],
        help="a Transformer decoder block's operators as a table",
        description=(
            "The forward operators of one Llama-style decoder block on a device; "
            "sizes default to a Llama-2-7B block at sequence length 4096."
        ),
    )
    for field in _CONFIG_FIELDS:
        block.add_argument(
            f"--{field}",
            type=parse_size,
            default=argparse.SUPPRESS,
            metavar="N",
            help=f"(default: {getattr(LLAMA2_7B, field)})",
        )
    block.add_argument(
        "--dtype", default=argparse.SUPPRESS, help=f"precision (default: {LLAMA2_7B.dtype})"
    )
    block.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help=f"causal self-attention (default: {LLAMA2_7B.causal})",
    )
    block.add_argument(
        "--attention",
        default="flash",
        metavar="IMPL",
        help=f"attention implementation: {', '.join(ops.ATTENTION_IMPLS)} (default: flash)",
    )
    block.add_argument(
        "--sram-bytes",
        type=parse_size,
        metavar="N",
        help="on-chip memory of a flash thread block (default: the device's shared memory per SM)",
    )
    block.add_argument(
        "--optimizer", action="store_true", help="add one AdamW step over the block's weights"
    )
    block.add_argument("--param-dtype", help="AdamW parameters (default: fp32)")
    block.add_argument("--grad-dtype", help="AdamW gradients (default: --param-dtype)")
    block.add_argument("--state-dtype", help="AdamW moments (default: --param-dtype)")
    block.add_argument(
        "--model-dtype",
        help="the weight copy a master-weight optimizer writes (needed when --grad-dtype "
        "differs from --param-dtype)",
    )
    add_device_arguments(block)
    block.set_defaults(handler=run)
