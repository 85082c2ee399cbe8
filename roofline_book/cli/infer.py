"""``roofline-book infer``：一个语言模型在一块设备上的 prefill 与 decode，以及装得下多少。"""

from __future__ import annotations

import argparse
from typing import Any

from ..devices.catalog import Hardware
from ..distributed.parallel import GPUS_PER_NODE, Split
from ..distributed.parallel import infer as infer_split
from ..llm.inference import (
    Precisions,
    StepOp,
    decode_batch_to_ridge,
    kv_bytes_per_token,
    kv_cache_bytes,
    layer_ops,
    model,
    models,
    step_entries,
    step_floor,
    step_ops,
    step_time,
    weight_bytes,
)
from ..llm.serving import MEMORY_RESERVE, activation_peak, max_batch
from ..roofline.roofs import time_bound
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


def _rows(ops, device: Hardware, p: Precisions) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, cost in ops:
        t = time_bound(cost, device, p.activations)
        out.append(
            (
                name,
                si(cost.flops, "FLOP"),
                si(cost.bytes, "B"),
                number(cost.intensity) if cost.bytes else "-",
                RESOURCE_TEXT[t.resource],
                si(t.seconds, "s"),
            )
        )
    return out


_HEADER = ("operator", "FLOPs", "bytes", "FLOP/B", "bound", "time bound")


def run(args: argparse.Namespace) -> int:
    """``infer`` 子命令。"""
    config = model(args.model)
    device = device_from_args(args)
    p = Precisions(
        weights=args.weights_dtype,
        activations=args.dtype,
        kv=args.kv_dtype,
        zero_point=args.zero_point,
        quantize_embeddings=args.quantize_embeddings,
    )
    context = args.context if args.context is not None else min(4096, config.max_context)
    prompt = args.prompt if args.prompt is not None else context
    if context > config.max_context:
        raise UsageError(
            f"--context {context} is beyond {config.key}'s context window ({config.max_context})"
        )
    if prompt > context:
        raise UsageError(f"--prompt ({prompt}) must be <= --context ({context})")
    split = _split(args, config, device)
    group = None
    per_sequence = kv_cache_bytes(config, context, p)
    if split.devices > 1 or split.ep > 1:
        group = infer_split(
            config, device, split, batch=1, context=context, prompt=prompt, precisions=p
        )
        fits = group.max_batch
        weights_here = group.weight_bytes_per_device
        kv_here = group.kv_bytes_per_sequence_per_device
    else:
        fits = None if device.memory_capacity is None else max_batch(config, device, context, p)
        weights_here, kv_here = weight_bytes(config, p), per_sequence
    where = device.key if group is None else f"{split.devices} x {device.key}"
    batch = 1 if args.batch is None else args.batch
    if fits is not None and batch > fits:
        what = (
            f"{config.key} does not fit on {where} at --context {context}, not even one sequence"
            if fits == 0
            else f"--batch {batch} does not fit on {where} at --context {context}: at most "
            f"{fits} sequence(s)"
        )
        raise UsageError(
            f"{what} (weights {si(weights_here, 'B')} per device, "
            f"activations about {si(activation_peak(config, p) // split.tp, 'B')}, "
            f"KV cache {si(kv_here, 'B')} per sequence per device, "
            f"of {si(device.memory_capacity or 0, 'B')} with {MEMORY_RESERVE:.0%} left unused)"
            f"{_fit_hint(args, config, device, split, batch, context, prompt, p)}"
        )
    args.batch = batch
    prefill = step_ops(config, args.batch, prompt, prompt, p)
    decode = step_ops(config, args.batch, 1, context, p)
    t_prefill, t_decode = step_time(prefill, device, p), step_time(decode, device, p)
    f_prefill = step_floor(config, args.batch, prompt, prompt, device, p).seconds
    f_decode = step_floor(config, args.batch, 1, context, device, p).seconds
    prefill_s, decode_s = t_prefill.seconds, t_decode.seconds
    communication = latency = prefill_communication = 0.0
    if group is not None:
        group = infer_split(
            config, device, split, batch=args.batch, context=context, prompt=prompt, precisions=p
        )
        prefill_s, decode_s = group.prefill.seconds, group.decode.seconds
        f_prefill, f_decode = group.prefill.floor_s, group.decode.floor_s
        communication, latency = group.decode.communication_s, group.decode.latency_s
        prefill_communication = group.prefill.communication_s
    figures: dict[str, Any] = {
        "model": config.key,
        "parameters": config.parameters(),
        "active_parameters": config.parameters(active=True),
        "batch": args.batch,
        "context": context,
        "prompt": prompt,
        "precisions": {
            "weights": p.weights,
            "activations": p.activations,
            "kv": p.kv,
            "scheme": p.scheme,
            "zero_point": p.zero_point,
            "embeddings": p.table_precision,
        },
        "sliding_window": config.sliding_window,
        "local_layers": config.local_layers,
        "kv_cache_bytes_per_token": kv_bytes_per_token(config, p),
        "kv_cache_bytes_per_sequence": per_sequence,
        "kv_cache_bytes": args.batch * per_sequence,
        "weight_bytes": weight_bytes(config, p),
        "activation_peak_bytes": activation_peak(config, p),
        "max_batch": fits,
        "decode_batch_to_ridge": decode_batch_to_ridge(config, device, p),
        "devices": split.devices,
        "tp": split.tp,
        "pp": split.pp,
        "ep": split.ep,
        "weight_bytes_per_device": weights_here,
        "kv_cache_bytes_per_sequence_per_device": kv_here,
        "communication_time_s": communication,
        "communication_latency_s": latency,
        "prefill_communication_time_s": prefill_communication,
        "interconnect": {
            "link": device.link or None,
            "link_bandwidth_Bps": device.link_bandwidth,
            "link_latency_s": device.link_latency,
            "link_reduces": device.link_reduces,
        },
    }
    if args.json:
        precision = p.activations
        prefill_steps = step_entries(config, args.batch, prompt, prompt, p)
        decode_steps = step_entries(config, args.batch, 1, context, p)

        def layer(new: int, ctx: int) -> list[dict[str, Any]]:
            return [
                {"id": op.id, "name": op.name} | cost_figures(op.cost, device, precision)
                for op in layer_ops(config, args.batch, new, ctx, p)
            ]

        def whole(entries: list[StepOp]) -> list[dict[str, Any]]:
            return [
                {"id": e.key, "name": e.name, "layers": e.layers, "layer_kind": e.layer_kind}
                | cost_figures(e.cost, device, precision)
                for e in entries
            ]

        emit_json(
            "infer",
            figures
            | {
                "device": device_json(device, precision),
                "prefill": {
                    "time_lower_bound_s": prefill_s,
                    "any_implementation_time_lower_bound_s": f_prefill,
                    "layer_ops": layer(prompt, prompt),
                    "ops": whole(prefill_steps),
                },
                "decode": {
                    "time_lower_bound_s": decode_s,
                    "any_implementation_time_lower_bound_s": f_decode,
                    "tokens_per_s": args.batch / decode_s,
                    "any_implementation_tokens_per_s": args.batch / f_decode,
                    "layer_ops": layer(1, context),
                    "ops": whole(decode_steps),
                },
            },
        )
        return 0
    window = ""
    if config.sliding_window is not None:
        window = (
            f"; {config.local_layers} of {config.layers} layers attend to a "
            f"{config.sliding_window}-token window"
        )
    print(
        f"{config.name} ({config.parameters() / 1e9:.2f} B parameters), batch {args.batch}, "
        f"prompt {prompt}, context {context}; weights {p.weights} ({p.scheme}), activations "
        f"{p.activations}, KV cache {p.kv}{window}"
    )
    print(f"device: {device_line(device, p.activations)}")
    if group is not None:
        print(
            f"split: {split.devices} devices (TP {split.tp}, PP {split.pp}, EP {split.ep}) over "
            f"{device.link}, {si(device.link_bandwidth or 0, 'B/s')} per direction"
        )
    kind = config.layer_kind(0)
    which = "" if config.local_layers in (0, config.layers) else f" (layer 0, {kind})"
    for title, new, ctx in (("prefill", prompt, prompt), ("decode step", 1, context)):
        print()
        unsplit = "" if group is None else ", before the split"
        print(f"one layer{which}{unsplit}, {title}:")
        print(text_table(_HEADER, _rows(layer_ops(config, args.batch, new, ctx, p), device, p),
                         right={1, 2, 3, 5}))  # fmt: skip
    if group is not None:
        print()
        print("one decode step, communication (whole model):")
        rows = [
            (
                c.what,
                str(c.count),
                si(c.nbytes, "B"),
                str(c.devices),
                c.link,
                si(c.time.bandwidth_s, "s"),
                si(c.time.latency_s, "s"),
            )
            for c in group.decode.comms
        ]
        head = ("collective", "times", "bytes each", "devices", "link", "bandwidth", "latency")
        print(text_table(head, rows, right={1, 2, 3, 5, 6}))
    print()
    lines = [
        ("weights", si(figures["weight_bytes"], "B")),
        ("KV cache per token", si(figures["kv_cache_bytes_per_token"], "B")),
        ("KV cache per sequence", si(per_sequence, "B")),
        ("KV cache, whole batch", si(figures["kv_cache_bytes"], "B")),
        ("largest batch that fits", "-" if fits is None else str(fits)),
        ("prefill, kernel by kernel", si(prefill_s, "s") + " (lower bound)"),
        ("prefill, any implementation", si(f_prefill, "s") + " (lower bound)"),
        ("decode step, kernel by kernel", si(decode_s, "s") + " (lower bound)"),
        ("decode step, any implementation", si(f_decode, "s") + " (lower bound)"),
        ("decode tokens per second", f"{args.batch / decode_s:,.0f} (upper bound)"),
        ("decode batch to the ridge", f"{figures['decode_batch_to_ridge']:.0f}"),
    ]
    if group is not None:
        lines[1:1] = [("weights per device", si(weights_here, "B"))]
        lines[5:5] = [("KV cache per sequence per device", si(kv_here, "B"))]
        lines += [
            ("decode communication, bandwidth", si(communication, "s") + " (in the bound)"),
            (
                "decode communication, latency",
                si(latency, "s") + " (NCCL model estimate, not in the bound)",
            ),
        ]
    print(text_table(None, lines, right=set()))
    return 0


def _fit_hint(
    args: argparse.Namespace,
    config,
    device: Hardware,
    split: Split,
    batch: int,
    context: int,
    prompt: int,
    p: Precisions,
) -> str:
    """不装下时的提示：装得下 ``batch`` 条序列的最小 ``--tp``（同一节点内），没有则为空。"""
    if device.link_bandwidth is None:
        return "; a device with more memory, or smaller --weights-dtype/--kv-dtype/--context"
    for tp in range(split.tp + 1, GPUS_PER_NODE + 1):
        wider = Split(tp=tp, pp=split.pp, ep=split.ep)
        try:
            wider.check(config)
            group = infer_split(
                config, device, wider, batch=1, context=context, prompt=prompt, precisions=p
            )
        except ValueError:  # tp does not divide the heads, ep does not divide tp, ...
            continue
        if group.max_batch is not None and group.max_batch >= batch:
            more = "" if args.batch is None else f", at most {group.max_batch} sequence(s)"
            return f"; add --tp {tp} to split each layer over {tp} devices{more}"
    return (
        f"; it does not fit with --tp {GPUS_PER_NODE} either: add --pp, or use smaller "
        "--weights-dtype/--kv-dtype/--context"
    )


def _split(args: argparse.Namespace, config, device: Hardware) -> Split:
    """``--tp --pp --ep`` 的切分；不允许的切分是一行写明参数的错误。"""
    try:
        split = Split(tp=args.tp, pp=args.pp, ep=args.ep)
        split.check(config)
    except ValueError as exc:
        raise UsageError(f"--{exc}") from None
    if (split.devices > 1 or split.ep > 1) and device.link_bandwidth is None:
        raise UsageError(
            f"--tp/--pp/--ep need a catalog device with an interconnect; {device.key} has none"
        )
    if split.tp > GPUS_PER_NODE:
        raise UsageError(f"--tp {split.tp} must fit in one node of {GPUS_PER_NODE} GPUs")
    return split


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``infer`` 加到 ``sub`` 中。"""
    infer = sub.add_parser(
        "infer",
        parents=[common],
        help="a language model's prefill and decode on a device, and the batch that fits",
        description=(
            "Prefill and one decode step of a decoder-only language model: one layer's "
            "operators with their bounds, the whole model's time lower bounds, the KV cache "
            "and the largest batch that fits in the device's memory."
        ),
    )
    infer.add_argument(
        "--model", required=True, metavar="NAME", help=f"one of: {', '.join(models())}"
    )
    infer.add_argument("--batch", type=parse_size, metavar="N", help="sequences (1)")
    infer.add_argument(
        "--context",
        type=parse_size,
        metavar="N",
        help=(
            "tokens each sequence's decode step attends to, the new one included: the cache "
            "holds N - 1 before the step and N after it, and the batch that fits is sized for "
            "N (4096, or the model's window if shorter)"
        ),
    )
    infer.add_argument(
        "--prompt", type=parse_size, metavar="N", help="prompt tokens prefilled (--context)"
    )
    infer.add_argument("--dtype", default="bf16", help="activations and compute (bf16)")
    infer.add_argument(
        "--weights-dtype",
        default="bf16",
        help=(
            "linear layers' weights: bf16, fp8, int8, int4 (bf16); with --dtype bf16 they are "
            "weight-only (W8A16, W4A16), --weights-dtype fp8 --dtype fp8 is W8A8"
        ),
    )
    infer.add_argument(
        "--zero-point",
        action="store_true",
        help="int8/int4 weights quantized asymmetrically: a zero point per group (AWQ)",
    )
    infer.add_argument(
        "--quantize-embeddings",
        action="store_true",
        help="store the embedding table and the LM head in the weights' format (default BF16)",
    )
    infer.add_argument("--kv-dtype", default="bf16", help="KV cache (bf16)")
    split = infer.add_argument_group("split over devices")
    split.add_argument(
        "--tp",
        type=parse_size,
        default=1,
        metavar="N",
        help="tensor parallel: devices each layer is split over (1)",
    )
    split.add_argument(
        "--pp",
        type=parse_size,
        default=1,
        metavar="N",
        help="pipeline parallel: stages the layers are split into (1)",
    )
    split.add_argument(
        "--ep",
        type=parse_size,
        default=1,
        metavar="N",
        help="expert parallel: devices of the TP group the experts spread over (1)",
    )
    add_device_arguments(infer)
    infer.set_defaults(handler=run)
