"""``roofline-book train``：一步训练在多块 GPU 上的下界、每块设备的内存与下界允许的 MFU。

数字都来自 :func:`roofline_book.distributed.training.train`；这里解析参数、把它的回答写成
:class:`TrainResult` （``--json``）或文本。
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.records import record_field
from ..distributed.activations import SAVINGS, layer_activation_bytes
from ..distributed.collectives import OPS
from ..distributed.training import (
    GRAD_DTYPES,
    WHEN,
    TrainComm,
    TrainingStep,
    TrainSplit,
    train,
    training_flops,
)
from ..units import si
from .common import (
    device_from_args,
    emit_result,
    model_arg,
    model_help,
    parse_size,
    text_table,
)
from .results import Result, command_field

DTYPES = ("bf16", "fp16", "fp8")
"""``--dtype`` 的取值：各层矩阵乘法的精度。"""

_SAVING_WORDS = {
    "eager": "eager PyTorch Llama layer (Hugging Face, op by op)",
    "fused": "fused kernels (Megatron-Core, Transformer Engine)",
}
_WHEN_WORDS = {
    "micro-step": "every micro-step",
    "last backward": "last backward",
    "step": "once a step",
}
_S = "s"


@dataclass(frozen=True, kw_only=True)
class CommEntry:
    """一步中的一种集合通信。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one collective of the step"}

    what: str = record_field(description="the collective's role")
    op: str = record_field(enum=list(OPS), description="the collective")
    count: int = record_field(minimum=0, unit="1", description="times per step")
    when: str = record_field(enum=list(WHEN), description="when in the step")
    bytes: float = record_field(
        minimum=0, unit="byte", description="each time, each device's buffer"
    )
    devices: int = record_field(minimum=0, unit="1", description="devices taking part")
    link: str = record_field(description="nvlink, pcie, a network key, ...")
    transfer_time_s: float = record_field(
        minimum=0, unit=_S, description="bandwidth term, all times"
    )
    latency_time_s: float = record_field(minimum=0, unit=_S, description="alpha term, all times")
    overlaps: bool = record_field(description="can overlap compute")
    overlap_window_s: float | None = record_field(
        nullable=True,
        minimum=0,
        unit=_S,
        description="the compute it can hide under; null: the whole step",
    )

    @classmethod
    def of(cls, c: TrainComm) -> CommEntry:
        """集合通信 ``c`` 的记录。"""
        return cls(
            what=c.what,
            op=c.op,
            count=c.count,
            when=c.when,
            bytes=c.nbytes,
            devices=c.devices,
            link=c.link,
            transfer_time_s=c.time.bandwidth_s,
            latency_time_s=c.time.latency_s,
            overlaps=c.overlaps,
            overlap_window_s=None if math.isinf(c.window_s) else c.window_s,
        )


def _count(description: str) -> Any:
    return record_field(minimum=0, unit="1", description=description)


def _seconds(description: str) -> Any:
    return record_field(minimum=0, unit=_S, description=description)


@dataclass(frozen=True, kw_only=True)
class TrainResult(Result):
    """``train --json``：:class:`~roofline_book.distributed.training.TrainingStep` 的 JSON。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "a training step over many devices"}

    command: str = command_field("train")
    model: str = record_field(description="catalog key of the model")
    device: str = record_field(description="catalog key of the device")
    gpus: int = _count("devices, dp x tp x pp x cp")
    dp: int = _count("data-parallel replicas")
    tp: int = _count("tensor-parallel devices")
    pp: int = _count("pipeline stages")
    vpp: int = _count("virtual pipeline stages a device (interleaved 1F1B)")
    cp: int = _count("context-parallel devices a sequence is split over")
    ep: int = _count("expert-parallel ranks of the DP group the routed experts are spread over")
    zero: int = _count("ZeRO stage (3 is FSDP)")
    reshard: bool = record_field(description="ZeRO-3 frees the gathered weights after each use")
    batch: int = _count("sequences per step, all devices")
    micro_batch: int = _count("sequences a replica runs at once")
    accumulation_steps: int = _count("micro-steps per replica a step, batch / (dp x micro_batch)")
    seq: int = record_field(minimum=0, unit="token", description="tokens per sequence")
    tokens: int = record_field(minimum=0, unit="token", description="tokens per step, all devices")
    recompute: bool = record_field(description="full activation recompute")
    dtype: str = record_field(
        enum=list(DTYPES), description="precision of the layers' GEMMs; fp8: W8A8, block scales"
    )
    activation_saving: str = record_field(
        enum=list(SAVINGS), description="what a layer saves for the backward"
    )
    activation_bytes_per_token_per_layer: int = record_field(
        minimum=0, unit="byte", description="saved by one layer, one token, tp 1"
    )
    grad_dtype: str = record_field(
        enum=list(GRAD_DTYPES), description="precision gradients are kept and reduced in"
    )
    step_flops: int = record_field(
        minimum=0, unit="FLOP", description="the step's FLOPs, recompute included"
    )
    model_flops: int = record_field(
        minimum=0, unit="FLOP", description="6N per token plus attention, no recompute"
    )
    peak_flops_per_s: float = record_field(
        minimum=0, unit="FLOP/s", description="the matrix peak MFU is taken against (BF16 for fp8)"
    )
    gemm_peak_flops_per_s: float = record_field(
        minimum=0, unit="FLOP/s", description="the matrix peak the layers' GEMMs run at"
    )
    compute_time_s: float = _seconds("one device's FLOPs at the matrix peak, with the bubble")
    micro_backward_time_s: float = _seconds("one micro-batch's backward on one device")
    pipeline_bubble: float = record_field(
        minimum=0, unit="1", description="(p - 1) / (vpp x m + p - 1)"
    )
    communication_time_s: float = _seconds("every collective's bandwidth term, summed")
    communication_latency_s: float = _seconds("every collective's alpha term, summed")
    step_time_lower_bound_s: float = _seconds("all communication overlapped where it can")
    step_time_exposed_tp_s: float = _seconds(
        "the TP all-reduces on the critical path, as Megatron runs them by default"
    )
    step_time_any_schedule_s: float = _seconds(
        "all communication overlapped and no pipeline bubble: the floor of any schedule"
    )
    mfu_upper_bound: float = record_field(
        minimum=0, unit="1", description="model FLOPs / (devices x peak x step_time_exposed_tp_s)"
    )
    mfu_all_overlap_upper_bound: float = record_field(
        minimum=0, unit="1", description="model FLOPs / (devices x peak x step_time_lower_bound_s)"
    )
    mfu_at_gemm_peak_upper_bound: float = record_field(
        minimum=0, unit="1", description="mfu_upper_bound against gemm_peak_flops_per_s"
    )
    model_flops_per_s_per_device: float = record_field(
        minimum=0,
        unit="FLOP/s",
        description="model FLOPs / (devices x step_time_exposed_tp_s): the rate a device may reach",
    )
    memory_bytes_per_device: float = record_field(
        minimum=0, unit="byte", description="weights, gradients, optimizer, activations"
    )
    memory_bytes_per_device_by_part: Mapping[str, float] = record_field(
        item={"minimum": 0}, unit="byte", description="memory by part"
    )
    memory_capacity_bytes: float | None = record_field(
        nullable=True, minimum=0, unit="byte", description="the device's memory"
    )
    fits: bool | None = record_field(nullable=True, description="memory fits the capacity")
    communication: tuple[CommEntry, ...] = record_field(description="the step's communication")

    @classmethod
    def of(cls, args: argparse.Namespace, config: Any, device: Any, split: TrainSplit,
           batch: int, step: TrainingStep) -> TrainResult:  # fmt: skip
        """一步训练 ``step`` 的记录（``args`` 给出 ``seq`` 与 ``recompute``）。"""
        memory, capacity = step.memory_bytes, device.memory_capacity
        return cls(
            model=config.key,
            device=device.key,
            gpus=split.devices,
            dp=split.dp,
            tp=split.tp,
            pp=split.pp,
            vpp=split.vpp,
            cp=split.cp,
            ep=split.ep,
            zero=split.zero,
            reshard=split.reshard,
            batch=batch,
            micro_batch=step.micro_batch,
            accumulation_steps=step.accumulation_steps,
            seq=args.seq,
            tokens=batch * args.seq,
            recompute=args.recompute,
            dtype=step.dtype,
            activation_saving=step.saving,
            activation_bytes_per_token_per_layer=sum(
                layer_activation_bytes(config, saving=step.saving).values()
            ),
            grad_dtype=step.grad_dtype,
            step_flops=training_flops(config, batch * args.seq, args.seq, recompute=args.recompute),
            model_flops=step.model_flops,
            peak_flops_per_s=step.peak,
            gemm_peak_flops_per_s=step.gemm_peak or step.peak,
            compute_time_s=step.compute_s,
            micro_backward_time_s=step.micro_backward_s,
            pipeline_bubble=step.bubble,
            communication_time_s=step.communication_s,
            communication_latency_s=math.fsum(c.time.latency_s for c in step.comms),
            step_time_lower_bound_s=step.seconds,
            step_time_exposed_tp_s=step.exposed_s,
            step_time_any_schedule_s=step.floor_s,
            mfu_upper_bound=step.mfu,
            mfu_all_overlap_upper_bound=step.mfu_all_overlap,
            mfu_at_gemm_peak_upper_bound=step.mfu_at_gemm_peak,
            model_flops_per_s_per_device=step.flops_per_device_s,
            memory_bytes_per_device=memory,
            memory_bytes_per_device_by_part=dict(step.memory_bytes_per_device),
            memory_capacity_bytes=capacity,
            fits=None if capacity is None else memory <= capacity,
            communication=tuple(CommEntry.of(c) for c in step.comms),
        )


RESULT = TrainResult


def _hint(args: argparse.Namespace, split: TrainSplit, config: Any) -> str:
    """内存放不下时可以试的选项。"""
    tries = []
    if split.zero < 3:
        tries.append("--zero 3")
    if not args.recompute:
        tries.append("--recompute")
    if args.micro_batch > 1:
        tries.append("a smaller --micro-batch")
    if split.zero == 3 and not split.reshard:
        tries.append("dropping --no-reshard")
    if config.experts > 1 and split.ep < config.experts:
        tries.append("more --ep")
    tries.append("more --tp, --pp or --cp")
    return "try " + ", ".join(tries)


def run(args: argparse.Namespace) -> int:
    """``train`` 子命令。"""
    config = model_arg(args.model)
    device = device_from_args(args)
    split = TrainSplit.over(
        args.gpus,
        tp=args.tp,
        pp=args.pp,
        vpp=args.vpp,
        cp=args.cp,
        ep=args.ep,
        dp=args.dp,
        zero=args.zero,
        reshard=args.reshard,
    )
    mb = args.micro_batch
    batch = args.batch if args.batch is not None else split.dp * mb * math.ceil(8 / mb)
    step = train(
        config,
        device,
        split,
        batch=batch,
        seq=args.seq,
        micro_batch=mb,
        recompute=args.recompute,
        dtype=args.dtype,
        saving=args.activations,
        grad_dtype=args.grad_dtype,
    )
    result = TrainResult.of(args, config, device, split, batch, step)
    if args.json:
        emit_result(result)
        return 0
    _text(args, config, device, split, step, result)
    return 0


def _text(args: argparse.Namespace, config: Any, device: Any, split: TrainSplit,
          step: TrainingStep, result: TrainResult) -> None:  # fmt: skip
    """一步训练的文本报告。"""
    batch, mb = result.batch, result.micro_batch
    zero = f"ZeRO {split.zero}" + ("" if split.zero < 3 or split.reshard else ", no reshard")
    dims = (("vpp", split.vpp), ("cp", split.cp), ("ep", split.ep))
    more = "".join(f", {k.upper()} {v}" for k, v in dims if v > 1)
    print(
        f"{config.name} on {split.devices} x {device.key} (DP {split.dp}, TP {split.tp}, "
        f"PP {split.pp}{more}, {zero}), {batch} sequences of {args.seq} tokens"
        + (", full recompute" if args.recompute else "")
        + (", FP8 GEMMs" if step.dtype == "fp8" else "")
    )
    per_layer = result.activation_bytes_per_token_per_layer
    steps = step.accumulation_steps
    print(
        f"micro-batch {mb} sequence{'s' if mb > 1 else ''}: {steps} micro-step"
        f"{'s' if steps > 1 else ''} per replica a step; gradients {step.grad_dtype.upper()}"
    )
    print(
        f"activations: {_SAVING_WORDS[step.saving]}, {per_layer / config.hidden:.1f} bytes a "
        "token per hidden unit a layer"
    )
    print()
    rows = [
        (
            c.what,
            c.link,
            si(c.nbytes, "B"),
            str(c.count),
            _WHEN_WORDS[c.when],
            si(c.time.bandwidth_s, "s"),
            si(c.time.latency_s, "s"),
            "yes" if c.overlaps else "no",
        )
        for c in step.comms
    ]
    head = ("communication", "link", "bytes each", "times", "when", "bandwidth", "latency",
            "overlaps")  # fmt: skip
    print(text_table(head, rows, right={2, 3, 5, 6}))
    print()
    memory, capacity = step.memory_bytes, device.memory_capacity
    parts = [(f"memory, {k}", si(v, "B")) for k, v in step.memory_bytes_per_device.items() if v]
    fits = ""
    if capacity is not None:
        fits = f" of {si(capacity, 'B')}"
        if memory > capacity:
            fits += f" (does not fit: {_hint(args, split, config)})"
    exposed = step.exposed_s != step.seconds
    lines = [
        ("step FLOPs", si(result.step_flops, "FLOP")),
        ("compute per device", si(step.compute_s, "s") + f" (bubble {step.bubble:.1%})"),
        ("one micro-batch's backward", si(step.micro_backward_s, "s")),
        ("communication, bandwidth", si(step.communication_s, "s")),
        (
            "step time",
            si(step.exposed_s, "s")
            + (" (lower bound, TP all-reduces not overlapped)" if exposed else " (lower bound)"),
        ),
        ("step time, all overlap", si(step.seconds, "s")),
        *(
            [
                (
                    "step time, any schedule",
                    si(step.floor_s, "s") + " (no bubble: zero-bubble, DualPipe)",
                )
            ]
            if step.bubble
            else []
        ),
        ("model FLOP/s per device", si(step.flops_per_device_s, "FLOP/s") + " (upper bound)"),
        (
            "MFU",
            f"{step.mfu:.1%} (upper bound; {step.mfu_all_overlap:.1%} if all communication "
            f"overlaps; against the {_peak_name(step)} peak {si(step.peak, 'FLOP/s')})",
        ),
        *(
            [
                (
                    "MFU against the FP8 peak",
                    f"{step.mfu_at_gemm_peak:.1%} (upper bound; peak "
                    f"{si(step.gemm_peak, 'FLOP/s')})",
                )
            ]
            if step.dtype == "fp8"
            else []
        ),  # fmt: skip
        *parts,
        ("memory per device", si(memory, "B") + fits),
    ]
    print(text_table(None, lines, right=set()))


def _peak_name(step: TrainingStep) -> str:
    return "BF16" if step.dtype == "fp8" else step.dtype.upper()


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``train`` 加到 ``sub`` 中。"""
    p = sub.add_parser(
        "train",
        parents=[common],
        help="a training step over many GPUs: time lower bound, memory per device, MFU",
        description=(
            "One training step of a decoder-only language model split over GPUs (data, tensor, "
            "pipeline, context and expert parallel, ZeRO/FSDP): its FLOPs, each collective per "
            "micro-step, the memory per device, the step time lower bound and the MFU it allows."
        ),
    )
    p.add_argument("--model", required=True, metavar="NAME|PATH", help=model_help())
    p.add_argument("--gpus", type=parse_size, required=True, metavar="N", help="GPUs in all")
    p.add_argument("--tp", type=parse_size, default=1, metavar="N", help="tensor parallel (1)")
    p.add_argument("--pp", type=parse_size, default=1, metavar="N", help="pipeline stages (1)")
    p.add_argument(
        "--vpp",
        type=parse_size,
        default=1,
        metavar="N",
        help="virtual pipeline stages a GPU (interleaved 1F1B): bubble (p-1)/(N m + p-1) (1)",
    )
    p.add_argument(
        "--cp",
        type=parse_size,
        default=1,
        metavar="N",
        help="context parallel: each sequence split over N GPUs, K/V all-gathered a layer (1)",
    )
    p.add_argument(
        "--ep",
        type=parse_size,
        default=1,
        metavar="N",
        help="expert parallel (MoE): routed experts spread over N ranks of the DP group (1)",
    )
    p.add_argument(
        "--dp", type=parse_size, metavar="N", help="data parallel (--gpus / (--tp x --pp x --cp))"
    )
    p.add_argument(
        "--zero", type=int, choices=(0, 1, 2, 3), default=0, help="ZeRO stage; 3 is FSDP (0)"
    )
    p.add_argument(
        "--no-reshard",
        dest="reshard",
        action="store_false",
        help="--zero 3 keeps the gathered weights for the whole step (FSDP2 "
        "reshard_after_forward=False): one all-gather a step, full 16-bit weights per device",
    )
    p.add_argument(
        "--batch",
        type=parse_size,
        metavar="N",
        help="sequences per step, all GPUs (8 x --dp, rounded up to a multiple of --micro-batch)",
    )
    p.add_argument(
        "--micro-batch",
        type=parse_size,
        default=1,
        metavar="N",
        help="sequences each replica runs at once; batch / (dp x N) micro-steps a step (1)",
    )
    p.add_argument("--seq", type=parse_size, default=4096, metavar="N", help="tokens (4096)")
    p.add_argument(
        "--recompute", action="store_true", help="full activation recompute (one more forward)"
    )
    p.add_argument(
        "--activations",
        choices=SAVINGS,
        default="eager",
        help="what each layer saves for the backward: eager PyTorch ops or fused kernels (eager)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="bf16",
        help="the layers' GEMMs at this precision's peak; fp8: W8A8 with block scales, "
        "attention and the rest BF16, MFU still against the BF16 peak (bf16)",
    )
    p.add_argument(
        "--grad-dtype",
        choices=GRAD_DTYPES,
        default="bf16",
        help="gradients kept and reduced in this precision; Megatron and Llama 3 use fp32 (bf16)",
    )
    group = p.add_argument_group("device")
    group.add_argument("--device", metavar="NAME", help="catalog device (h100-sxm)")
    p.set_defaults(handler=run, peak=None, bandwidth=None)
