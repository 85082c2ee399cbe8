"""``roofline-book block``：目录中任一模型的一个 decoder block 的各算子（可加一步 AdamW）。"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import ops
from .._base import validate as _validate
from .._base.records import record_field
from ..devices.catalog import Hardware
from ..llm.block import LLAMA2_7B, Block, block_ops, optimizer_ops
from ..llm.config import ModelConfig
from ..present.tables import Row, block_table, optimizer_table
from ..units import si
from .common import (
    RESOURCE_TEXT,
    UsageError,
    add_device_arguments,
    device_from_args,
    device_line,
    emit_result,
    model_arg,
    model_help,
    number,
    parse_size,
    text_table,
)
from .results import BlockOp, CostOn, Device, Result, command_field

_CONFIG_FIELDS = ("batch", "seq", "hidden", "heads", "ffn")
_SIZES = ("hidden", "heads", "ffn")  # the model's, when given


@dataclass(frozen=True, kw_only=True)
class BlockShape:
    """block 的形状与它处理的 batch。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the decoder block's shape"}

    batch: int = record_field(minimum=1, unit="1", description="sequences")
    seq: int = record_field(minimum=1, unit="1", description="tokens per sequence")
    hidden: int = record_field(minimum=1, unit="1", description="model width d_model")
    heads: int = record_field(minimum=1, unit="1", description="attention (query) heads")
    ffn: int = record_field(minimum=1, unit="1", description="MLP width (per expert)")
    dtype: str = record_field(description="precision of weights and activations")
    causal: bool = record_field(description="causal self-attention")
    tokens: int = record_field(minimum=1, unit="1", description="batch * seq")
    head_dim: int = record_field(minimum=1, unit="1", description="width of one head")
    parameters: int = record_field(minimum=1, unit="1", description="the block's weights")

    @classmethod
    def of(cls, config: Block) -> BlockShape:
        """``config`` 的形状。"""
        sizes = {f: getattr(config, f) for f in (*_CONFIG_FIELDS, "dtype", "causal")}
        return cls(
            **sizes,
            tokens=config.tokens,
            head_dim=config.head_dim,
            parameters=config.parameters,
        )


@dataclass(frozen=True, kw_only=True)
class OptimizerStep:
    """对 block 的权重做的一步 AdamW，每种实现一项。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "with --optimizer only"}

    device: Device = record_field()
    ops: tuple[BlockOp, ...] = record_field(description="one AdamW step, each implementation")


@dataclass(frozen=True, kw_only=True)
class BlockResult(Result):
    """``block --json``：一个 decoder block 的各算子，可加一步 AdamW。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "a decoder block's operators"}

    command: str = command_field("block")
    config: BlockShape = record_field()
    attention: str = record_field(description="attention implementation")
    device: Device = record_field()
    ops: tuple[BlockOp, ...] = record_field(description="the block's forward operators, in order")
    optimizer: OptimizerStep | None = record_field(optional=True, default=None)


RESULT = BlockResult


def _block_ops(
    ids: Sequence[str], rows: Sequence[Row], device: Hardware, p: str
) -> tuple[BlockOp, ...]:
    return tuple(
        BlockOp(id=i, name=r.name, cost=CostOn.of(r.cost, device, p), share=r.share)
        for i, r in zip(ids, rows, strict=True)
    )


def _model(args: argparse.Namespace) -> ModelConfig:
    """``--model`` （默认 Llama-2-7B；目录中的名字或 ``config.json`` 的路径），按给出的
    ``--hidden``、``--heads``、``--ffn`` 改过尺寸。"""
    base = LLAMA2_7B.model if args.model is None else model_arg(args.model)
    sizes: dict[str, Any] = {f: getattr(args, f) for f in _SIZES if hasattr(args, f)}
    if ("hidden" in sizes or "heads" in sizes) and not base.mla:
        sizes["head_dim"] = None  # hidden / heads again; MLA's heads keep their published width
    if "heads" in sizes and base.kv_heads == base.heads:  # multi-head stays multi-head
        sizes["kv_heads"] = sizes["heads"]
    return dataclasses.replace(base, **sizes) if sizes else base


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


def _checkpoint_dtype(args: argparse.Namespace, shape: ModelConfig) -> str | None:
    """没有给 ``--dtype``、``config.json`` 的 ``quantization_config`` 是 W8A8 （权重与激活同一种
    格式，DeepSeek-V3 的 FP8）时，block 用的精度；否则为 None。block 只有一种精度，W4A16 这样
    权重与激活不同的格式用 ``infer``。"""
    ckpt = shape.checkpoint
    if hasattr(args, "dtype") or ckpt is None or ckpt.weights != ckpt.activations:
        return None
    return ckpt.activations


def run(args: argparse.Namespace) -> int:
    """``block`` 子命令：一个 decoder block 的各算子，可选加上 AdamW。"""
    shape = _model(args)
    changes = {f: getattr(args, f) for f in ("batch", "seq", "dtype", "causal") if hasattr(args, f)}
    checkpoint = _checkpoint_dtype(args, shape)
    if checkpoint is not None:
        changes["dtype"] = checkpoint
    config = Block(shape, **changes)
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
        optimizer = None
        if args.optimizer:
            optimizer = OptimizerStep(
                device=Device.on(device, args.param_dtype),
                ops=_block_ops(
                    [op.id for op in optimizer_ops(config)], opt_rows, device, args.param_dtype
                ),
            )
        ids = [op.id for op in block_ops(config, attention_impl=args.attention)]
        emit_result(
            BlockResult(
                config=BlockShape.of(config),
                attention=args.attention,
                device=Device.on(device, config.dtype),
                ops=_block_ops(ids, rows, device, config.dtype),
                optimizer=optimizer,
            )
        )
        return 0
    sizes = ", ".join(f"{f}={getattr(config, f)}" for f in _CONFIG_FIELDS)
    named = "" if args.model is None else f"{config.model.name} "
    print(
        f"{named}decoder block ({sizes}, dtype={config.dtype}, causal={config.causal}, "
        f"attention={args.attention}), forward pass"
    )
    ckpt = shape.checkpoint
    if checkpoint is not None and ckpt is not None:
        print(f"dtype {checkpoint}: the checkpoint's ({ckpt.scheme}, from the config.json's "
              "quantization_config); --dtype runs another")  # fmt: skip
    elif ckpt is not None and not hasattr(args, "dtype"):
        print(f"dtype {config.dtype}: block has one precision, the checkpoint's {ckpt.scheme} "
              "is not it; infer models its weights and activations")  # fmt: skip
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
            "The forward operators of one decoder block (one layer of a catalog model) on a "
            "device; sizes default to a Llama-2-7B block at sequence length 4096."
        ),
    )
    block.add_argument(
        "--model",
        metavar="NAME|PATH",
        help="the model whose layer the block is: " + model_help(LLAMA2_7B.model.key),
    )
    for field in _CONFIG_FIELDS:
        block.add_argument(
            f"--{field}",
            type=parse_size,
            default=argparse.SUPPRESS,
            metavar="N",
            help=f"(default: {getattr(LLAMA2_7B, field)})"
            if field not in _SIZES
            else f"(default: the model's; {getattr(LLAMA2_7B, field)} for Llama-2-7B)",
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
