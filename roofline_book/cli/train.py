"""``roofline-book train``：一步训练在多块 GPU 上的下界、每块设备的内存与下界允许的 MFU。"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..inference import model, models
from ..parallel import GPUS_PER_NODE
from ..training import TrainSplit, train, training_flops
from ..units import si
from .common import UsageError, device_from_args, emit_json, parse_size, text_table


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
    return TrainSplit(dp=dp, tp=args.tp, pp=args.pp, zero=args.zero)


def run(args: argparse.Namespace) -> int:
    """``train`` 子命令。"""
    config = model(args.model)
    device = device_from_args(args)
    if device.link_bandwidth is None:
        raise UsageError(f"--device {device.key} has no interconnect in the catalog")
    split = _split(args)
    batch = args.batch if args.batch is not None else 8 * split.dp
    if batch % split.dp:
        raise UsageError(f"--batch {batch} must be a multiple of --dp ({split.dp})")
    if args.pp > config.layers:
        raise UsageError(f"--pp {args.pp} must be at most {config.key}'s {config.layers} layers")
    if config.heads % args.tp or config.ffn % args.tp:
        raise UsageError(
            f"--tp {args.tp} must divide {config.key}'s {config.heads} heads and MLP width "
            f"{config.ffn}"
        )
    step = train(config, device, split, batch=batch, seq=args.seq, recompute=args.recompute)
    memory = step.memory_bytes
    capacity = device.memory_capacity
    figures: dict[str, Any] = {
        "model": config.key,
        "device": device.key,
        "gpus": split.devices,
        "dp": split.dp,
        "tp": split.tp,
        "pp": split.pp,
        "zero": split.zero,
        "batch": batch,
        "seq": args.seq,
        "tokens": batch * args.seq,
        "recompute": args.recompute,
        "step_flops": training_flops(config, batch * args.seq, args.seq, recompute=args.recompute),
        "model_flops": step.model_flops,
        "compute_time_s": step.compute_s,
        "pipeline_bubble": step.bubble,
        "communication_time_s": step.communication_s,
        "communication_latency_s": math.fsum(c.time.latency_s for c in step.comms),
        "step_time_lower_bound_s": step.seconds,
        "step_time_exposed_tp_s": step.exposed_s,
        "mfu_upper_bound": step.mfu,
        "memory_bytes_per_device": memory,
        "memory_bytes_per_device_by_part": dict(step.memory_bytes_per_device),
        "memory_capacity_bytes": capacity,
        "fits": None if capacity is None else memory <= capacity,
        "communication": [
            {
                "what": c.what,
                "op": c.op,
                "count": c.count,
                "bytes": c.nbytes,
                "devices": c.devices,
                "link": c.link,
                "transfer_time_s": c.time.bandwidth_s,
                "latency_time_s": c.time.latency_s,
                "overlaps": c.overlaps,
            }
            for c in step.comms
        ],
    }
    if args.json:
        emit_json("train", figures)
        return 0
    print(
        f"{config.name} on {split.devices} x {device.key} (DP {split.dp}, TP {split.tp}, "
        f"PP {split.pp}, ZeRO {split.zero}), {batch} sequences of {args.seq} tokens"
        + (", full recompute" if args.recompute else "")
    )
    print()
    rows = [
        (
            c.what,
            c.link,
            si(c.nbytes, "B"),
            str(c.count),
            si(c.time.bandwidth_s, "s"),
            si(c.time.latency_s, "s"),
            "yes" if c.overlaps else "no",
        )
        for c in step.comms
    ]
    head = ("communication", "link", "bytes each", "times", "bandwidth", "latency", "overlaps")
    print(text_table(head, rows, right={2, 3, 4, 5}))
    print()
    parts = [(f"memory, {k}", si(v, "B")) for k, v in step.memory_bytes_per_device.items()]
    fits = (
        ""
        if capacity is None
        else f" of {si(capacity, 'B')}" + ("" if memory <= capacity else " (does not fit)")
    )
    lines = [
        ("step FLOPs", si(figures["step_flops"], "FLOP")),
        ("compute per device", si(step.compute_s, "s") + f" (bubble {step.bubble:.1%})"),
        ("communication, bandwidth", si(step.communication_s, "s")),
        ("step time", si(step.seconds, "s") + " (lower bound, all overlap)"),
        ("step time, TP exposed", si(step.exposed_s, "s")),
        ("MFU", f"{step.mfu:.1%} (upper bound)"),
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
            "and pipeline parallel, ZeRO/FSDP): its FLOPs, each collective, the memory per "
            "device, the step time lower bound and the MFU it allows."
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
        "--batch", type=parse_size, metavar="N", help="sequences per step, all GPUs (8 x --dp)"
    )
    p.add_argument("--seq", type=parse_size, default=4096, metavar="N", help="tokens (4096)")
    p.add_argument(
        "--recompute", action="store_true", help="full activation recompute (one more forward)"
    )
    group = p.add_argument_group("device")
    group.add_argument("--device", metavar="NAME", help="catalog device (h100-sxm)")
    p.set_defaults(handler=run, peak=None, bandwidth=None)
