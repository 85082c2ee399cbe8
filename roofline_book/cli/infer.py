"""``roofline-book infer``：一个语言模型在一块或一组设备上的 prefill 与 decode，以及装得下多少。

数字都来自 :func:`roofline_book.distributed.report.inference_report`；这里解析参数、把它的回答写成
:class:`InferResult` （``--json``）或文本。
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..distributed.parallel import DEFAULT_NETWORK, GPUS_PER_NODE, Split
from ..distributed.report import InferenceReport, ep_that_fits, inference_report, tp_that_fits
from ..llm.config import ModelConfig
from ..llm.inference import Precisions
from ..llm.serving import MEMORY_RESERVE
from ..roofline.roofs import time_bound
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
from .infer_result import InferResult

RESULT = InferResult

_HEADER = ("operator", "FLOPs", "bytes", "FLOP/B", "bound", "time bound")


def precisions_from_args(args: argparse.Namespace, config: ModelConfig) -> tuple[Precisions, bool]:
    """权重、激活与 KV cache 的精度，以及它们是否取自 checkpoint。

    ``config.json`` 有 ``quantization_config``
    （:attr:`~roofline_book.llm.shape.ModelConfig.checkpoint`）而用户没有给 ``--weights-dtype`` 与
    ``--dtype`` 时，权重与激活取 checkpoint 的格式（DeepSeek-V3：FP8 W8A8、
    每 128x128 块一个 scale）；给了其中一个时按所给的（另一个默认 BF16），所给的权重格式与
    checkpoint 的相同时仍计 checkpoint 的块 scale。``--kv-dtype``、
    ``--zero-point``、``--quantize-embeddings`` 总是照所给的。
    """
    given = args.weights_dtype is not None or args.dtype is not None
    ckpt = config.checkpoint
    if ckpt is not None and not given:
        p = Precisions(
            weights=ckpt.weights,
            activations=ckpt.activations,
            kv=args.kv_dtype,
            zero_point=ckpt.zero_point or args.zero_point,
            quantize_embeddings=args.quantize_embeddings,
            weight_block=ckpt.weight_block,
        )
        return p, True
    p = Precisions(
        weights=args.weights_dtype or "bf16",
        activations=args.dtype or "bf16",
        kv=args.kv_dtype,
        zero_point=args.zero_point,
        quantize_embeddings=args.quantize_embeddings,
    )
    if ckpt is not None and ckpt.weight_block is not None and p.weights == ckpt.weights:
        # the checkpoint's weights in their own format keep their block scales
        p = dataclasses.replace(p, weight_block=ckpt.weight_block)
    return p, False


def run(args: argparse.Namespace) -> int:
    """``infer`` 子命令。"""
    config = model_arg(args.model)
    device = device_from_args(args)
    p, from_checkpoint = precisions_from_args(args, config)
    split = Split(tp=args.tp, pp=args.pp, ep=args.ep)
    batch = 1 if args.batch is None else args.batch
    r = inference_report(
        config, device, split, batch=batch, context=args.context, prompt=args.prompt, precisions=p
    )
    if not r.fits:
        raise UsageError(_does_not_fit(r, given=args.batch is not None))
    if args.json:
        emit_result(InferResult.of(r, from_checkpoint=from_checkpoint))
        return 0
    _text(r, from_checkpoint=from_checkpoint)
    return 0


def _does_not_fit(r: InferenceReport, *, given: bool) -> str:
    """装不下时的一行：装得下多少、内存花在哪里，以及可以试的选项。"""
    split, device = r.split, r.device
    where = (
        device.key if split.devices == 1 and split.ep == 1 else f"{split.devices} x {device.key}"
    )
    what = (
        f"{r.config.key} does not fit on {where} at --context {r.context}, not even one sequence"
        if r.max_batch == 0
        else f"--batch {r.batch} does not fit on {where} at --context {r.context}: at most "
        f"{r.max_batch} sequence(s)"
    )
    what = (
        f"{what} (weights {si(r.weight_bytes_per_device, 'B')} per device, "
        f"activations about {si(r.activation_bytes_per_device, 'B')}, "
        f"KV cache {si(r.kv_bytes_per_sequence_per_device, 'B')} per sequence per device, "
        f"of {si(device.memory_capacity or 0, 'B')} with {MEMORY_RESERVE:.0%} left unused)"
    )
    if device.link_bandwidth is None:
        return f"{what}; a device with more memory, or smaller --weights-dtype/--kv-dtype/--context"
    if split.ep <= split.tp:  # wider TP first: the same devices' memory, split finer
        wider = tp_that_fits(r.config, device, split, r.batch, context=r.context,
                             prompt=r.prompt, precisions=r.precisions)  # fmt: skip
        if wider is not None:
            tp, most = wider
            more = f", at most {most} sequence(s)" if given else ""
            return f"{what}; add --tp {tp} to split each layer over {tp} devices{more}"
    more_ep = ep_that_fits(r.config, device, split, r.batch, context=r.context,
                           prompt=r.prompt, precisions=r.precisions)  # fmt: skip
    if more_ep is not None:  # a mixture of experts: more devices, fewer experts on each
        ep, most = more_ep
        more = f", at most {most} sequence(s)" if given else ""
        nodes = -(-Split(tp=split.tp, pp=split.pp, ep=ep).devices // GPUS_PER_NODE)
        return (
            f"{what}; add --ep {ep} to spread the experts over {ep} devices with attention "
            f"data-parallel ({nodes} node(s) of {GPUS_PER_NODE}){more}"
        )
    widest = f"--tp {GPUS_PER_NODE}" + (" or more --ep" if r.config.experts > 1 else "")
    return (
        f"{what}; it does not fit with {widest} either: add --pp, or use smaller "
        "--weights-dtype/--kv-dtype/--context"
    )


def _rows(ops: Any, r: InferenceReport) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, cost in ops:
        t = time_bound(cost, r.device, r.precisions.activations)
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


def _precision_line(r: InferenceReport, from_checkpoint: bool) -> str | None:
    """精度从哪里来：checkpoint 的 ``quantization_config``，或 flag 代替了它；没有 checkpoint
    格式时为 None。"""
    ckpt, p = r.config.checkpoint, r.precisions
    if ckpt is None:
        return None
    block = "" if ckpt.weight_block is None else (
        f", one FP32 scale per {ckpt.weight_block}x{ckpt.weight_block} block"
    )  # fmt: skip
    zero = ", a zero point per group" if ckpt.zero_point else ""
    theirs = f"{ckpt.weights} weights{block}{zero}, {ckpt.activations} activations ({ckpt.scheme})"
    if from_checkpoint:
        return (
            f"precisions: the checkpoint's, from the config.json's quantization_config: {theirs}; "
            "--weights-dtype or --dtype runs others"
        )
    kept = "" if p.weight_block is None else ", keeping the checkpoint's block scales"
    return f"precisions: {p.weights} weights, {p.activations} activations as given{kept}; the " \
        f"checkpoint's are {theirs}"  # fmt: skip


def _split_lines(r: InferenceReport) -> list[str]:
    """切分的说明：设备数怎么来的、跨几个节点，DP attention 与 EP 各自做什么、走哪条链路。"""
    config, device, split = r.config, r.device, r.split
    nodes = "one node" if r.nodes == 1 else f"{r.nodes} nodes"
    lines = [
        f"split: {split.devices} devices = max(TP {split.tp}, EP {split.ep}) x PP {split.pp}, "
        f"{nodes} of {r.per_node} GPUs; {device.link}, {si(device.link_bandwidth or 0, 'B/s')} "
        "per direction inside a node"
        + (f", one {DEFAULT_NETWORK} NIC per GPU between nodes" if r.nodes > 1 else "")
    ]
    if split.ep > split.tp:
        per = -(-config.experts // split.ep)
        groups = f"{split.attention_dp} groups" + (f" of TP {split.tp}" if split.tp > 1 else "")
        lines.append(
            f"DP attention: attention, the dense layers and the shared experts run data-parallel "
            f"in {groups}, the batch of {r.batch} split among them, at most "
            f"{r.batch_per_device} sequence(s) to a group; the "
            f"{config.experts} routed experts spread over {split.ep} devices, {per} on each. "
            "Dispatch and combine (all-to-all) send a token once to each other GPU of its node "
            "that holds one of its experts, over NVLink"
            + (", and once to each other node that does, over the NIC (nvlink+"
               f"{DEFAULT_NETWORK} below; both at once)" if r.nodes > 1 else "")
            + "."
        )  # fmt: skip
    elif split.ep > 1:
        lines.append(
            f"EP: the {config.experts} routed experts spread over {split.ep} devices of the TP "
            f"group, {config.experts // split.ep} on each; attention is split by TP"
        )
    return lines


def _ridge_words(r: InferenceReport) -> str:
    """The decode batch whose weight GEMMs reach the ridge; for MoE, what that batch counts."""
    b = f"{r.decode_batch_to_ridge:.0f}"
    if r.config.experts == 1:
        return b
    per = ""
    if r.split.ep > r.split.tp:
        per = f", {r.decode_batch_to_ridge / r.split.expert_shards:.0f} a device"
    return f"{b} (each routed expert's GEMM, uniform routing: sequences across the group{per})"


def _text(r: InferenceReport, *, from_checkpoint: bool = False) -> None:
    """``r`` 的文本报告。"""
    config, device, split, p = r.config, r.device, r.split, r.precisions
    group = split.devices > 1 or split.ep > 1
    window = ""
    if config.sliding_window is not None:
        window = (
            f"; {config.local_layers} of {config.layers} layers attend to a "
            f"{config.sliding_window}-token window"
        )
    print(
        f"{config.name} ({config.parameters() / 1e9:.2f} B parameters), batch {r.batch}, "
        f"prompt {r.prompt}, context {r.context}; weights {p.weights} ({p.scheme}), activations "
        f"{p.activations}, KV cache {p.kv}{window}"
    )
    why = _precision_line(r, from_checkpoint)
    if why is not None:
        print(why)
    print(f"device: {device_line(device, p.activations)}")
    if group:
        for line in _split_lines(r):
            print(line)
    kind = config.layer_kind(0)
    which = "" if config.local_layers in (0, config.layers) else f" (layer 0, {kind})"
    if config.experts > 1 and config.dense_layers:
        which = f" (layer 0: dense, as the first {config.dense_layers}; the others are MoE)"
    for title, step in (("prefill", r.prefill), ("decode step", r.decode)):
        print()
        unsplit = ", before the split" if group else ""
        print(f"one layer{which}{unsplit}, {title}:")
        print(text_table(_HEADER, _rows(step.layer_ops, r), right={1, 2, 3, 5}))
    if group:
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
            for c in r.decode.comms
        ]
        head = ("collective", "times", "bytes each", "devices", "link", "bandwidth", "latency")
        print(text_table(head, rows, right={1, 2, 3, 5, 6}))
    print()
    lines = [
        ("weights", si(r.weight_bytes, "B")),
        ("KV cache per token", si(r.kv_bytes_per_token, "B")),
        ("KV cache per sequence", si(r.kv_bytes_per_sequence, "B")),
        ("KV cache, whole batch", si(r.kv_bytes, "B")),
        ("largest batch that fits", "-" if r.max_batch is None else str(r.max_batch)),
        ("prefill, kernel by kernel", si(r.prefill.seconds, "s") + " (lower bound)"),
        ("prefill, any implementation", si(r.prefill.floor_s, "s") + " (lower bound)"),
        ("decode step, kernel by kernel", si(r.decode.seconds, "s") + " (lower bound)"),
        ("decode step, any implementation", si(r.decode.floor_s, "s") + " (lower bound)"),
        ("decode tokens per second", f"{r.tokens_per_s:,.0f} (upper bound)"),
        ("decode batch to the ridge", _ridge_words(r)),
    ]
    if split.attention_dp > 1:
        lines[5:5] = [("sequences per device", f"{r.batch_per_device} (attention)")]
    if group:
        lines[1:1] = [("weights per device", si(r.weight_bytes_per_device, "B"))]
        lines[5:5] = [
            ("KV cache per sequence per device", si(r.kv_bytes_per_sequence_per_device, "B"))
        ]
        lines += [
            (
                "decode communication, bandwidth",
                si(r.decode.communication_s, "s") + " (in the bound)",
            ),
            (
                "decode communication, latency",
                si(r.decode.latency_s, "s") + " (NCCL model estimate, not in the bound)",
            ),
        ]
    print(text_table(None, lines, right=set()))


def add_precision_arguments(parser: argparse.ArgumentParser) -> None:
    """精度的 flag：``--dtype``、``--weights-dtype``、``--zero-point``、
    ``--quantize-embeddings`` 与 ``--kv-dtype`` （``infer`` 与 ``serve`` 共用；
    :func:`precisions_from_args` 读它们）。"""
    parser.add_argument(
        "--dtype",
        help="activations and compute (bf16, or the checkpoint's: see --weights-dtype)",
    )
    parser.add_argument(
        "--weights-dtype",
        help=(
            "linear layers' weights: bf16, fp8, int8, int4 (bf16); with --dtype bf16 they are "
            "weight-only (W8A16, W4A16), --weights-dtype fp8 --dtype fp8 is W8A8. Without "
            "either flag, a config.json's quantization_config sets both (DeepSeek-V3: FP8 W8A8 "
            "with 128x128 block scales)"
        ),
    )
    parser.add_argument(
        "--zero-point",
        action="store_true",
        help="int8/int4 weights quantized asymmetrically: a zero point per group (AWQ)",
    )
    parser.add_argument(
        "--quantize-embeddings",
        action="store_true",
        help="store the embedding table and the LM head in the weights' format (default BF16)",
    )
    parser.add_argument("--kv-dtype", default="bf16", help="KV cache (bf16)")


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
    infer.add_argument("--model", required=True, metavar="NAME|PATH", help=model_help())
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
    add_precision_arguments(infer)
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
        help=(
            "expert parallel: experts over N devices (1); N <= --tp uses the TP group's, "
            "N > --tp (a multiple of it) runs attention data-parallel in N / tp groups "
            "(DeepSeek's DP attention), with the all-to-all over NVLink and, beyond 8 GPUs, "
            "the NIC"
        ),
    )
    add_device_arguments(infer)
    infer.set_defaults(handler=run)
