"""``roofline-book infer``：一个语言模型在一块设备上的 prefill 与 decode，以及装得下多少。"""

from __future__ import annotations

import argparse
from typing import Any

from ..hardware import Hardware
from ..inference import (
    Precisions,
    decode_batch_to_ridge,
    kv_bytes_per_token,
    layer_ops,
    max_batch,
    model,
    models,
    step_ops,
    step_time,
    weight_bytes,
)
from ..roofline import time_bound
from ..units import si
from .common import (
    RESOURCE_TEXT,
    UsageError,
    add_device_arguments,
    device_from_args,
    device_line,
    emit,
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
    p = Precisions(weights=args.weights_dtype, activations=args.dtype, kv=args.kv_dtype)
    context = args.context if args.context is not None else min(4096, config.max_context)
    prompt = args.prompt if args.prompt is not None else context
    if context > config.max_context:
        raise UsageError(
            f"--context {context} is beyond {config.key}'s context window ({config.max_context})"
        )
    if prompt > context:
        raise UsageError(f"--prompt ({prompt}) must be <= --context ({context})")
    fits = None if device.memory_capacity is None else max_batch(config, device, context, p)
    if fits is not None and args.batch > fits:
        raise UsageError(
            f"--batch {args.batch} does not fit on {device.key} at --context {context}: "
            f"at most {fits} sequence(s) (weights {si(weight_bytes(config, p), 'B')}, "
            f"KV cache {si(context * kv_bytes_per_token(config, p), 'B')} per sequence, "
            f"of {si(device.memory_capacity or 0, 'B')} with 10% kept free)"
        )
    prefill = step_ops(config, args.batch, prompt, prompt, p)
    decode = step_ops(config, args.batch, 1, context, p)
    t_prefill, t_decode = step_time(prefill, device, p), step_time(decode, device, p)
    figures: dict[str, Any] = {
        "model": config.key,
        "parameters": config.parameters(),
        "active_parameters": config.parameters(active=True),
        "batch": args.batch,
        "context": context,
        "prompt": prompt,
        "precisions": {"weights": p.weights, "activations": p.activations, "kv": p.kv},
        "kv_cache_bytes_per_token": kv_bytes_per_token(config, p),
        "kv_cache_bytes": args.batch * context * kv_bytes_per_token(config, p),
        "weight_bytes": weight_bytes(config, p),
        "prefill_time_lower_bound_s": t_prefill.seconds,
        "decode_time_lower_bound_s": t_decode.seconds,
        "decode_tokens_per_s": args.batch / t_decode.seconds,
        "max_batch": fits,
        "decode_batch_to_ridge": decode_batch_to_ridge(config, device, p),
    }
    if args.json:
        emit(
            figures
            | {
                "device": device.key,
                "prefill_by_op_s": dict(t_prefill.by_op),
                "decode_by_op_s": dict(t_decode.by_op),
            }
        )
        return 0
    print(
        f"{config.name} ({config.parameters() / 1e9:.2f} B parameters), batch {args.batch}, "
        f"prompt {prompt}, context {context}; weights {p.weights}, activations "
        f"{p.activations}, KV cache {p.kv}"
    )
    print(f"device: {device_line(device, p.activations)}")
    for title, new, ctx in (("prefill", prompt, prompt), ("decode step", 1, context)):
        print()
        print(f"one layer, {title}:")
        print(text_table(_HEADER, _rows(layer_ops(config, args.batch, new, ctx, p), device, p),
                         right={1, 2, 3, 5}))  # fmt: skip
    print()
    lines = [
        ("weights", si(figures["weight_bytes"], "B")),
        ("KV cache per token", si(figures["kv_cache_bytes_per_token"], "B")),
        ("KV cache, whole batch", si(figures["kv_cache_bytes"], "B")),
        ("largest batch that fits", "-" if fits is None else str(fits)),
        ("prefill, whole model", si(t_prefill.seconds, "s") + " (lower bound)"),
        ("decode step, whole model", si(t_decode.seconds, "s") + " (lower bound)"),
        ("decode tokens per second", f"{figures['decode_tokens_per_s']:,.0f} (upper bound)"),
        ("decode batch to the ridge", f"{figures['decode_batch_to_ridge']:.0f}"),
    ]
    print(text_table(None, lines, right=set()))
    return 0


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
    infer.add_argument("--batch", type=parse_size, default=1, metavar="N", help="sequences (1)")
    infer.add_argument(
        "--context", type=parse_size, metavar="N", help="tokens in each sequence's cache (4096)"
    )
    infer.add_argument(
        "--prompt", type=parse_size, metavar="N", help="prompt tokens prefilled (--context)"
    )
    infer.add_argument("--dtype", default="bf16", help="activations and compute (bf16)")
    infer.add_argument(
        "--weights-dtype", default="bf16", help="weights: bf16, fp8, int8, int4 (bf16)"
    )
    infer.add_argument("--kv-dtype", default="bf16", help="KV cache (bf16)")
    add_device_arguments(infer)
    infer.set_defaults(handler=run)
