"""``roofline-book train``：一步训练在多块 GPU 上的下界、每块设备的内存与下界允许的 MFU。"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..distributed.activations import SAVINGS, layer_activation_bytes
from ..distributed.parallel import GPUS_PER_NODE
from ..distributed.training import (
    GRAD_DTYPES,
    TrainingStep,
    TrainSplit,
    train,
    training_flops,
)
from ..llm.inference import model, models
from ..units import si
from .common import UsageError, device_from_args, emit_json, parse_size, text_table

_SAVING_WORDS = {
    "eager": "eager PyTorch Llama layer (Hugging Face, op by op)",
    "fused": "fused kernels (Megatron-Core, Transformer Engine)",
}
_WHEN_WORDS = {
    "micro-step": "every micro-step",
    "last backward": "last backward",
    "step": "once a step",
}


def _split(args: argparse.Namespace) -> TrainSplit:
    """``--gpus --tp --pp --dp --zero`` 的切分；``--dp`` 默认为 ``gpus / (tp x pp)``。"""
    group = args.tp * args.pp
    if args.gpus % group:
        raise UsageError(f"--gpus {args.gpus} must be a multiple of --tp x --pp ({group})")
    dp = args.gpus // group if args.dp is None else args.dp
    if dp * group != args.gpus:
        raise UsageError(
            f"--dp {dp} x --tp {args.tp} x --pp {args.pp} = {dp * group}, not --gpus {args.gpus}"
        )
    if args.tp > GPUS_PER_NODE:
        raise UsageError(f"--tp {args.tp} must fit in one node of {GPUS_PER_NODE} GPUs")
    if args.no_reshard and args.zero != 3:
        raise UsageError(f"--no-reshard is an option of --zero 3 (FSDP), not --zero {args.zero}")
    return TrainSplit(dp=dp, tp=args.tp, pp=args.pp, zero=args.zero, reshard=not args.no_reshard)


def _hint(args: argparse.Namespace, split: TrainSplit) -> str:
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
    tries.append("more --tp or --pp")
    return "try " + ", ".join(tries)


def _figures(args: argparse.Namespace, config: Any, device: Any, split: TrainSplit,
             batch: int, step: TrainingStep) -> dict[str, Any]:  # fmt: skip
    memory = step.memory_bytes
    capacity = device.memory_capacity
    return {
        "model": config.key,
        "device": device.key,
        "gpus": split.devices,
        "dp": split.dp,
        "tp": split.tp,
        "pp": split.pp,
        "zero": split.zero,
        "reshard": split.reshard,
        "batch": batch,
        "micro_batch": step.micro_batch,
        "accumulation_steps": step.accumulation_steps,
        "seq": args.seq,
        "tokens": batch * args.seq,
        "recompute": args.recompute,
        "activation_saving": step.saving,
        "activation_bytes_per_token_per_layer": sum(
            layer_activation_bytes(config, saving=step.saving).values()
        ),
        "grad_dtype": step.grad_dtype,
        "step_flops": training_flops(config, batch * args.seq, args.seq, recompute=args.recompute),
        "model_flops": step.model_flops,
        "peak_flops_per_s": step.peak,
        "compute_time_s": step.compute_s,
        "micro_backward_time_s": step.micro_backward_s,
        "pipeline_bubble": step.bubble,
        "communication_time_s": step.communication_s,
        "communication_latency_s": math.fsum(c.time.latency_s for c in step.comms),
        "step_time_lower_bound_s": step.seconds,
        "step_time_exposed_tp_s": step.exposed_s,
        "mfu_upper_bound": step.mfu,
        "mfu_all_overlap_upper_bound": step.mfu_all_overlap,
        "memory_bytes_per_device": memory,
        "memory_bytes_per_device_by_part": dict(step.memory_bytes_per_device),
        "memory_capacity_bytes": capacity,
        "fits": None if capacity is None else memory <= capacity,
        "communication": [
            {
                "what": c.what,
                "op": c.op,
                "count": c.count,
                "when": c.when,
                "bytes": c.nbytes,
                "devices": c.devices,
                "link": c.link,
                "transfer_time_s": c.time.bandwidth_s,
                "latency_time_s": c.time.latency_s,
                "overlaps": c.overlaps,
                "overlap_window_s": None if math.isinf(c.window_s) else c.window_s,
            }
            for c in step.comms
        ],
    }


def run(args: argparse.Namespace) -> int:
    """``train`` 子命令。"""
    config = model(args.model)
    device = device_from_args(args)
    if device.link_bandwidth is None:
        raise UsageError(f"--device {device.key} has no interconnect in the catalog")
    split = _split(args)
    if args.seq > config.max_context:
        raise UsageError(
            f"--seq {args.seq} is beyond {config.key}'s context window ({config.max_context})"
        )
    mb = args.micro_batch
    batch = args.batch if args.batch is not None else split.dp * mb * math.ceil(8 / mb)
    if batch % (split.dp * mb):
        raise UsageError(
            f"--batch {batch} must be a multiple of --dp x --micro-batch ({split.dp} x {mb})"
        )
    if args.pp > config.layers:
        raise UsageError(f"--pp {args.pp} must be at most {config.key}'s {config.layers} layers")
    if config.heads % args.tp or config.ffn % args.tp:
        raise UsageError(
            f"--tp {args.tp} must divide {config.key}'s {config.heads} heads and MLP width "
            f"{config.ffn}"
        )
    step = train(
        config,
        device,
        split,
        batch=batch,
        seq=args.seq,
        micro_batch=mb,
        recompute=args.recompute,
        saving=args.activations,
        grad_dtype=args.grad_dtype,
    )
    figures = _figures(args, config, device, split, batch, step)
    if args.json:
        emit_json("train", figures)
        return 0
    zero = f"ZeRO {split.zero}" + ("" if split.zero < 3 or split.reshard else ", no reshard")
    print(
        f"{config.name} on {split.devices} x {device.key} (DP {split.dp}, TP {split.tp}, "
        f"PP {split.pp}, {zero}), {batch} sequences of {args.seq} tokens"
        + (", full recompute" if args.recompute else "")
    )
    per_layer = figures["activation_bytes_per_token_per_layer"]
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
            fits += f" (does not fit: {_hint(args, split)})"
    exposed = step.exposed_s != step.seconds
    lines = [
        ("step FLOPs", si(figures["step_flops"], "FLOP")),
        ("compute per device", si(step.compute_s, "s") + f" (bubble {step.bubble:.1%})"),
        ("one micro-batch's backward", si(step.micro_backward_s, "s")),
        ("communication, bandwidth", si(step.communication_s, "s")),
        (
            "step time",
            si(step.exposed_s, "s")
            + (" (lower bound, TP all-reduces not overlapped)" if exposed else " (lower bound)"),
        ),
        ("step time, all overlap", si(step.seconds, "s")),
        (
            "MFU",
            f"{step.mfu:.1%} (upper bound; {step.mfu_all_overlap:.1%} if all communication "
            f"overlaps; peak {si(step.peak, 'FLOP/s')})",
        ),
        *parts,
        ("memory per device", si(memory, "B") + fits),
    ]
    print(text_table(None, lines, right=set()))
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``train`` 加到 ``sub`` 中。"""
    p = sub.add_parser(
        "train",
        parents=[common],
        help="a training step over many GPUs: time lower bound, memory per device, MFU",
        description=(
            "One training step of a decoder-only language model split over GPUs (data, tensor "
            "and pipeline parallel, ZeRO/FSDP): its FLOPs, each collective per micro-step, the "
            "memory per device, the step time lower bound and the MFU it allows."
        ),
    )
    p.add_argument("--model", required=True, metavar="NAME", help=f"one of: {', '.join(models())}")
    p.add_argument("--gpus", type=parse_size, required=True, metavar="N", help="GPUs in all")
    p.add_argument("--tp", type=parse_size, default=1, metavar="N", help="tensor parallel (1)")
    p.add_argument("--pp", type=parse_size, default=1, metavar="N", help="pipeline stages (1)")
    p.add_argument(
        "--dp", type=parse_size, metavar="N", help="data parallel (--gpus / (--tp x --pp))"
    )
    p.add_argument(
        "--zero", type=int, choices=(0, 1, 2, 3), default=0, help="ZeRO stage; 3 is FSDP (0)"
    )
    p.add_argument(
        "--no-reshard",
        action="store_true",
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
        "--grad-dtype",
        choices=GRAD_DTYPES,
        default="bf16",
        help="gradients kept and reduced in this precision; Megatron and Llama 3 use fp32 (bf16)",
    )
    group = p.add_argument_group("device")
    group.add_argument("--device", metavar="NAME", help="catalog device (h100-sxm)")
    p.set_defaults(handler=run, peak=None, bandwidth=None)
