"""No published measurement beats a bound or a capacity the package prints.

Each row of ``roofline_book/measure/data/published_measurements.toml`` (read through
:mod:`roofline_book.measure.published`, the book's measured side) is a figure someone measured
on real hardware, with its source. Its ``kind`` names the function below that
computes, with the package's public functions, what the package says about that
configuration: a time lower bound (turned into the largest rate it allows, or kept
as a time) or a capacity. A lower bound a real kernel beats is wrong, so each
measured value must sit on the allowed side; a failure prints the margin.

A row with a ``sweep`` stands for one row per swept value (``value`` is then a list).
Add a kind by adding a function to :data:`KINDS`.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from roofline_book import InvalidArgument, attention, elementwise, gemm, hardware, time_bound
from roofline_book.devices.catalog import Hardware, network
from roofline_book.devices.kernels import device_sram_bytes
from roofline_book.distributed.allreduce import multi_node_all_reduce
from roofline_book.distributed.collectives import bus_bandwidth
from roofline_book.distributed.parallel import (
    Comm,
    Split,
    all_reduce,
    dispatch_copies,
    infer,
    inference_comms,
)
from roofline_book.distributed.training import TrainingStep, TrainSplit, train, training_flops
from roofline_book.llm.inference import adhoc_model, model, step_ops, step_time
from roofline_book.llm.quantization import Precisions
from roofline_book.llm.shape import ModelConfig
from roofline_book.measure import published
from roofline_book.ops import mla_attention
from roofline_book.serving.search import Load
from roofline_book.serving.search import run as run_serving
from roofline_book.serving.simulate import Deployment, ServeResult
from roofline_book.serving.workload import Lengths

FIELDS = ("id", "kind", "what", "device", "config", "value", "unit", "source", "url", "note")

#: Each unit in SI base units (FLOP/s, byte/s, token/s, second, byte).
UNITS = published.UNITS


@dataclass(frozen=True)
class Limit:
    """What the package allows for a measurement, in SI base units.

    ``at_most``: the measured value may not exceed ``value`` (a rate a time lower
    bound allows, or a capacity the catalog must hold); otherwise it may not fall
    below it (a time lower bound).
    """

    value: float
    at_most: bool
    why: str


def _attention_forward(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.attention`` (flash, the device's shared memory per SM) and
    ``roofline.time_bound``: the paper's FLOPs (4 s^2 d h per sequence, halved when
    causal) over the bound is the fastest rate the bound allows."""
    seqlen, d, causal = c["seqlen"], c["head_dim"], c["causal"]
    batch, heads = c.get("batch", 16384 // seqlen), c.get("heads", 2048 // d)
    cost = attention(
        batch,
        heads,
        seqlen,
        seqlen,
        d,
        c["dtype"],
        causal=causal,
        sram_bytes=device_sram_bytes(device),
    )
    bound = time_bound(cost, device, c["dtype"])
    flops = 4 * seqlen**2 * d * heads * batch / (2 if causal else 1)
    return Limit(flops / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})")


def _gemm(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.gemm`` and ``roofline.time_bound``: 2 m k n over the bound."""
    if "n" in c and "m" not in c:
        m = n = k = c["n"]
    else:
        m, (n, k) = c["m"], c["nk"]
    cost = gemm(m, k, n, c["dtype"], out_dtype=c.get("out_dtype"))
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        2 * m * k * n / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})"
    )


def _peak_rate(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``Hardware.ceiling``: the unit's peak, which no kernel of any shape exceeds."""
    return Limit(device.ceiling(c["unit"], c["dtype"]), True, f"{c['unit']} ceiling")


def _gemm_bandwidth(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.gemm`` and ``roofline.time_bound``: DeepGEMM's bytes over the bound. DeepGEMM
    (``tests/test_core.py``) counts ``m k + k n + 2 m n`` bytes: FP8 A and B once, the BF16
    output once, the FP32 scales left out; the package's ``gemm(m, k, n, "fp8",
    out_dtype="bf16")`` moves exactly these bytes, so the two conventions agree."""
    m, (n, k) = c["m"], c["nk"]
    cost = gemm(m, k, n, c["dtype"], out_dtype=c.get("out_dtype"))
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        (m * k + k * n + 2 * m * n) / bound.seconds,
        True,
        f"bound {bound.seconds:.4g} s ({bound.resource})",
    )


def _grouped_gemm(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``groups`` x ``ops.gemm(m, k, n)`` (each group multiplies its own tokens by its own
    expert's weights, nothing shared) and ``roofline.time_bound`` of the sum: DeepGEMM's FLOPs
    ``2 groups m n k`` (``tests/test_core.py``; the masked layout is timed with every row
    valid) over the bound."""
    groups, m, n, k = c["groups_m_n_k"]
    cost = gemm(m, k, n, c["dtype"], out_dtype=c.get("out_dtype")) * groups
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        2 * groups * m * n * k / bound.seconds,
        True,
        f"bound {bound.seconds:.4g} s ({bound.resource})",
    )


def _mla_decode_bound(device: Hardware, c: Mapping[str, Any]) -> float:
    cost = mla_attention(
        c["batch"],
        c["heads"],
        c["seq_q"],
        c["seq_k"],
        c["d_qk"],
        c["d_v"],
        c["dtype"],
        kv_heads=c["kv_heads"],
        value_in_key=c["value_in_key"],
        kv_dtype=c.get("kv_dtype"),
        causal=c["causal"],
    )
    return time_bound(cost, device, c["dtype"]).seconds


def _mla_decode_attention(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.mla_attention`` (absorbed: ``kv_heads=1``, the value the first ``d_v`` columns of
    the key row) and ``roofline.time_bound``: FlashMLA's FLOPs over the bound. FlashMLA
    (``tests/test_flash_mla.py``) counts ``2 s_q (b s_k) h_q (d_qk + d_v)``: every query
    against every key of its cache, the causal mask not subtracted (it drops at most
    ``s_q - 1`` keys)."""
    b, h, sq, sk = c["batch"], c["heads"], c["seq_q"], c["seq_k"]
    seconds = _mla_decode_bound(device, c)
    flops = 2 * sq * b * sk * h * (c["d_qk"] + c["d_v"])
    return Limit(flops / seconds, True, f"bound {seconds:.4g} s")


def _mla_decode_bandwidth(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """The bound of :func:`_mla_decode_attention`; FlashMLA's bytes over it. FlashMLA counts
    ``2 (b s_k d_qk + b s_q h_q d_qk + b s_q h_q d_v)`` (BF16): the cache once per key
    (K and V share the row), the queries and the output, which are the package's bytes for
    the absorbed kernel as well."""
    b, h, sq, sk = c["batch"], c["heads"], c["seq_q"], c["seq_k"]
    seconds = _mla_decode_bound(device, c)
    nbytes = 2 * (b * sk * c["kv_heads"] * c["d_qk"] + b * sq * h * (c["d_qk"] + c["d_v"]))
    return Limit(nbytes / seconds, True, f"bound {seconds:.4g} s")


def _mla_sparse_attention(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """Token-level sparse MLA (each query attends the ``topk`` keys it chose): the fewest keys a
    sequence must read is ``topk`` (all its queries choosing the same ones), so the bound is
    ``ops.mla_attention(batch, heads, seq_q, topk, causal=False)`` (``seq_q x topk`` pairs per
    sequence and head, ``topk`` latent rows read once, in ``kv_dtype``) under
    ``roofline.time_bound``. FlashMLA's FLOPs ``2 b s_q h_q topk (d_qk + d_v)``
    (``tests/test_flash_mla_decoding.py``, ``tests/test_flash_mla_prefill.py``) over it.
    FlashMLA's FP8 cache row (656 B: 512 FP8, 4 FP32 scales, 64 BF16) is more than the
    package's 576 B, the safe side."""
    b, h, sq, topk = c["batch"], c["heads"], c["seq_q"], c["topk"]
    cost = mla_attention(
        b,
        h,
        sq,
        topk,
        c["d_qk"],
        c["d_v"],
        c["dtype"],
        kv_heads=c["kv_heads"],
        value_in_key=c["value_in_key"],
        kv_dtype=c.get("kv_dtype"),
        causal=False,
    )
    bound = time_bound(cost, device, c["dtype"])
    flops = 2 * b * sq * h * topk * (c["d_qk"] + c["d_v"])
    return Limit(flops / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})")


#: BabelStream's kernels: (arrays read, arrays written, FLOPs per element).
_STREAM = {
    "copy": (1, 1, 0),
    "mul": (1, 1, 1),
    "add": (2, 1, 1),
    "triad": (2, 1, 2),
    "dot": (2, 0, 2),
}


def _stream(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.elementwise`` and ``roofline.time_bound``: bytes over the bound is the
    fastest bandwidth the bound allows."""
    reads, writes, flops = _STREAM[c["kernel"]]
    cost = elementwise(
        c["numel"], c["dtype"], inputs=reads, outputs=writes, flops_per_element=flops
    )
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        cost.bytes / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})"
    )


# The rows' configuration fields read as the package reads them (one reader of the data file).
from roofline_book.measure.published.rows import _precisions, _shape  # noqa: E402


def _generation(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``inference.step_ops`` and ``inference.step_time``: a prefill of the prompt
    (which gives the first token) plus one decode step per further token, each at its
    own context; batch x generated tokens over that time is the fastest rate."""
    config, p = model(c["model"]), _precisions(c)
    batch, prompt, generated = _shape(c)
    seconds = step_time(step_ops(config, batch, prompt, prompt, p), device, p).seconds
    for context in range(prompt + 1, prompt + generated):
        seconds += step_time(step_ops(config, batch, 1, context, p), device, p).seconds
    return Limit(batch * generated / seconds, True, f"bound {seconds:.4g} s for the request")


def _prefill(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``inference.step_ops`` and ``inference.step_time`` of the prompt: the first
    token cannot come sooner."""
    p = _precisions(c)
    ops = step_ops(model(c["model"]), c["batch"], c["prompt"], c["prompt"], p)
    return Limit(step_time(ops, device, p).seconds, False, "prefill bound")


def _capacity(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``Hardware.memory_capacity``: what the driver reports fits, so the catalog must
    hold at least as much (a largest batch from less is beaten by reality)."""
    if device.memory_capacity is None:
        pytest.fail(f"{device.key} has no memory capacity to check")
    return Limit(device.memory_capacity, True, "catalog memory_capacity")


def _all_reduce_busbw(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``parallel.all_reduce`` on the catalog's link, its bandwidth term: the busbw it allows
    (nccl-tests: algbw = bytes / time, busbw = algbw x 2(n-1)/n)."""
    n, nbytes = c["devices"], c["bytes"]
    seconds = all_reduce(nbytes, n, device).bandwidth_s
    return Limit(bus_bandwidth("all_reduce", nbytes / seconds, n), True, f"bound {seconds:.4g} s")


def _all_reduce_busbw_nodes(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``allreduce.multi_node_all_reduce`` across ``devices / per_node`` nodes, the catalog's
    link inside (its NVLink SHARP where the switch reduces) and one NIC of ``network`` per GPU:
    the busiest link's bandwidth term, as the busbw it allows."""
    n, p, nbytes = c["devices"], c["per_node"], c["bytes"]
    if device.link_bandwidth is None or device.link_latency is None:
        pytest.fail(f"{device.key} has no link in the catalog")
    nic = network(c["network"])
    t = multi_node_all_reduce(
        nbytes,
        p,
        n // p,
        device.link_bandwidth,
        device.link_latency,
        nic.bandwidth,
        nic.latency,
        intra_reduces=device.link_reduces,
    )
    seconds = t.bandwidth_s
    return Limit(bus_bandwidth("all_reduce", nbytes / seconds, n), True, f"bound {seconds:.4g} s")


def _all_reduce_time(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``parallel.all_reduce`` on the catalog's link: its bandwidth term is a time lower bound
    (the latency term is not: one-shot kernels beat NCCL's ring latency)."""
    seconds = all_reduce(c["bytes"], c["devices"], device).bandwidth_s
    return Limit(seconds, False, "all-reduce bandwidth term")


def _all_to_all_comm(device: Hardware, c: Mapping[str, Any]) -> tuple[Comm, float]:
    """The package's dispatch or combine of one MoE layer (``parallel.inference_comms``, the
    ``.comms`` of an ``infer`` step with ``Split(tp=1, ep=ep)``: attention data-parallel, each
    token sent once to every other GPU of its node that holds one of its experts over the
    catalog link, once to every other node over one NIC of ``network``, both at once) for
    ``tokens`` tokens per GPU, uniform routing over ``experts`` with top-``topk``, FP8 dispatch
    and BF16 combine; and the copies per token DeepEP's byte count counts, in the package's
    routing (``parallel.dispatch_copies``). ``counted``: ``"rank"`` (intranode normal kernels:
    every receiving rank, the own one included, which under uniform routing is hit as often as
    each other rank, so ``intra x n / (n - 1)``), ``"node"`` (internode normal kernels: every
    receiving node, the own one included, ``inter x nodes / (nodes - 1)``), ``"expert"``
    (low-latency kernels: every (token, expert) pair, ``topk``)."""
    ep, per_node, topk = c["ep"], c["per_node"], c["topk"]
    moe = adhoc_model(
        "deepep",
        hidden=c["hidden"],
        layers=1,
        heads=1,
        kv_heads=1,
        ffn=c["hidden"],
        vocab=1,
        experts=c["experts"],
        experts_per_token=topk,
    )
    comms = inference_comms(
        moe,
        Split(tp=1, ep=ep),
        c["tokens"] * ep,
        1,
        device,
        Precisions(activations="fp8"),
        per_node=per_node,
        net=network(c["network"]),
    )
    (comm,) = [x for x in comms if x.what == f"EP all-to-all ({c['op']})"]
    intra, inter = dispatch_copies(moe, ep, per_node)
    n, nodes = min(ep, per_node), -(-ep // per_node)
    copies = {
        "rank": intra * n / max(n - 1, 1),
        "node": inter * nodes / max(nodes - 1, 1),
        "expert": float(topk),
    }[c["counted"]]
    return comm, copies


def _moe_all_to_all_bw(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """DeepEP's bandwidth over the package's time for the same all-to-all
    (:func:`_all_to_all_comm`, its bandwidth term). DeepEP counts logical bytes, not bytes on
    the wire: ``tokens x copies x width`` with the copies of ``counted`` and its widths
    (``tests/test_intranode.py``, ``test_internode.py``, ``test_low_latency.py``): a normal FP8
    dispatch ``hidden x (1 + 4/128)`` (FP8 and one FP32 scale per 128), a low-latency FP8
    dispatch ``hidden + hidden/128 x 4 + 16``, a BF16 combine ``2 hidden``. The copies that
    stay on the GPU (``rank``, ``expert``) or in the node (``node``) cross no NIC, so the
    logical bandwidth allowed exceeds the link's: ``logical bytes / package time``."""
    comm, copies = _all_to_all_comm(device, c)
    h = c["hidden"]
    if c["op"] == "combine":
        width = 2.0 * h
    elif c["counted"] == "expert":
        width = h + h / 128 * 4 + 16
    else:
        width = h * (1 + 4 / 128)
    seconds = comm.time.bandwidth_s
    return Limit(
        c["tokens"] * copies * width / seconds, True, f"bound {seconds:.4g} s ({comm.link})"
    )


def _moe_all_to_all_time(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """The bandwidth term of the package's dispatch or combine (:func:`_all_to_all_comm`) is a
    time lower bound for the kernel (DeepEP's latency is its kernel time). The latency term is
    left out: DeepEP's kernels are not NCCL's."""
    comm, _ = _all_to_all_comm(device, c)
    return Limit(comm.time.bandwidth_s, False, f"all-to-all bandwidth term ({comm.link})")


def _serving_node_throughput(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """Tokens per second per ``per_node``-GPU node in one phase of a disaggregated service:
    ``parallel.infer`` of ``model`` with ``Split(tp=1, ep=ep)`` (attention data-parallel),
    ``Precisions`` from the row, the step's ``floor_s`` (fused floor of one GPU, or the
    all-to-all's bandwidth term, whichever is longer).

    - ``decode``: the largest batch that fits at ``context`` with no memory held back
      (``reserve=0``; throughput grows with the batch), one decode step; each step gives each
      sequence at most ``1 + mtp_layers`` tokens (multi-token prediction, every draft
      accepted), while the step costs at least the one-token step: allowed = node's sequences
      x (1 + mtp_layers) / step.
    - ``prefill``: ``batch_per_gpu`` prompts of ``prompt`` tokens per GPU. Cached input tokens
      (``cache_hit``) need no compute and are counted by the source: allowed = computed
      tokens per node / step / (1 - cache_hit)."""
    m, ep, per_node = model(c["model"]), c["ep"], c["per_node"]
    p = Precisions(
        weights=c["weights"],
        activations=c["activations"],
        kv=c["kv"],
        weight_block=c.get("weight_block"),
    )
    split = Split(tp=1, ep=ep)
    if c["phase"] == "decode":
        fits = infer(m, device, split, batch=ep, context=c["context"], precisions=p, reserve=0.0)
        batch = fits.max_batch
        assert batch, f"{c['model']} does not fit"
        step = infer(m, device, split, batch=batch, context=c["context"], precisions=p).decode
        tokens = per_node * batch / ep * (1 + m.mtp_layers)
        why = f"{batch // ep} sequences per GPU, step {step.floor_s:.4g} s"
        return Limit(tokens / step.floor_s, True, why)
    prompt, local = c["prompt"], c["batch_per_gpu"]
    step = infer(
        m, device, split, batch=local * ep, context=prompt, prompt=prompt, precisions=p
    ).prefill
    computed = per_node * local * prompt / step.floor_s
    return Limit(computed / (1 - c["cache_hit"]), True, f"prefill step {step.floor_s:.4g} s")


def _training_step(device: Hardware, c: Mapping[str, Any]) -> TrainingStep:
    """``training.train`` of the row's model and split, one sequence per micro-batch, no
    recompute: its ``floor_s`` (everything that can overlap overlapped, and no pipeline bubble,
    since Llama 3's interleaved schedule and DeepSeek's DualPipe shrink it below 1F1B's) is the
    step's lower bound under any schedule."""
    split = TrainSplit(
        dp=c["dp"],
        tp=c.get("tp", 1),
        pp=c.get("pp", 1),
        cp=c.get("cp", 1),
        ep=c.get("ep", 1),
        zero=c.get("zero", 0),
        reshard=c.get("reshard", True),
    )
    step = train(
        model(c["model"]),
        device,
        split,
        batch=c["batch_per_dp"] * c["dp"],
        seq=c["seq"],
        dtype=c.get("dtype", "bf16"),
    )
    assert step.devices == c["gpus"], f"{step.devices} devices, the source used {c['gpus']}"
    return step


def _training_rate(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """Model FLOP/s per GPU the training step bound allows (:func:`_training_step`), in the
    source's FLOP count: ``training.training_flops`` counts 6 N per token plus causal
    attention (each query against half the sequence, FlashAttention's count) for
    ``attention = "causal"``; ``"full"`` counts the whole score matrix (Megatron's, and PaLM's
    ``6 N + 12 L H Q T`` that Llama 3's MFU cites): attention is linear in ``seq`` in
    ``training_flops(seq)``, so the full count is ``3 f(seq) - 2 f(seq / 2)``."""
    step = _training_step(device, c)
    seq = c["seq"]
    tokens = c["batch_per_dp"] * c["dp"] * seq
    m = model(c["model"])
    flops = training_flops(m, tokens, seq)
    if c["attention"] == "full":
        flops = 3 * flops - 2 * training_flops(m, tokens, seq // 2)
    return Limit(flops / (step.devices * step.floor_s), True, f"step bound {step.floor_s:.4g} s")


def _training_step_time(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """The step bound of :func:`_training_step` as a time."""
    step = _training_step(device, c)
    return Limit(step.floor_s, False, "training step bound")


def _training_gpu_hours(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """GPU time per token: ``devices x`` the step bound (:func:`_training_step`) over the step's
    tokens, in GPU-seconds per token (the unit turns it into GPU-hours per 10^12 tokens). At the
    full batch the step's fixed costs are spread over the most tokens, so a run that ramped its
    batch up cannot average below it."""
    step = _training_step(device, c)
    tokens = c["batch_per_dp"] * c["dp"] * c["seq"]
    return Limit(step.devices * step.floor_s / tokens, False, f"step bound {step.floor_s:.4g} s")


# Serving: `roofline-book serve`'s simulation (roofline_book.serving), every step at its lower
# bound, so its latencies are lower bounds and its throughputs upper bounds.

#: The package's iteration-level schedulers a measured engine is held against: whole prompts
#: and chunked prefill (Sarathi-Serve). An engine's own scheduler is neither exactly, so the
#: bound is the more lenient of the two.
_SERVE_SCHEDULERS = ("continuous", "chunked")


def _opt_13b() -> ModelConfig:
    """OPT-13B (Zhang et al. 2022): 40 layers, d_model 5120, 40 heads of 128 and an FFN of
    4 d_model (facebookresearch/metaseq, metaseq/launcher/opt_job_constants.py, ``"13b"``),
    ReLU, a vocabulary of 50272 tied to the LM head and 2048 positions (facebook/opt-13b
    config.json: ffn_dim 20480, vocab_size 50272, max_position_embeddings 2048,
    activation_function relu). The package models a non-gated FFN with GELU, the one
    tighter-than-the-source choice here: GELU's vector FLOPs on the same bytes as ReLU. The whole
    activation bounds at 1.9% of a 512-token prefill step on an A100 and 0.5% of a decode step at
    batch 100, and the DistServe rows sit at 0.09 to 0.23 of their bounds."""
    return adhoc_model(
        "opt-13b", hidden=5120, layers=40, heads=40, kv_heads=40, ffn=20480, vocab=50272,
        gated=False, tied_embeddings=True, max_context=2048,
    )  # fmt: skip


#: Models a source serves that the catalog lacks, built from their published configs.
_SERVE_MODELS: dict[str, Callable[[], ModelConfig]] = {"opt-13b": _opt_13b}


@functools.cache
def _served(  # noqa: PLR0913
    device: str,
    name: str,
    tp: int,
    kv: str,
    prompt: int,
    output: int,
    requests: int,
    rate: float,
    scheduler: str,
    max_seqs: int | None,
    replicas: int,
    prefill: int | None,
) -> ServeResult:
    config = _SERVE_MODELS[name]() if name in _SERVE_MODELS else model(name)
    deployment = Deployment(
        config,
        hardware(device),
        Split(tp=tp),
        Precisions(kv=kv),
        scheduler=scheduler,
        chunk=2048,  # serve's --chunk default
        max_seqs=max_seqs,
        replicas=replicas,
        prefill=prefill,
    )
    load = Load(requests, Lengths.parse("prompt", prompt), Lengths.parse("output", output))
    return run_serving(deployment, load, rate)


def _serve_all(device: Hardware, c: Mapping[str, Any]) -> list[ServeResult]:
    """``serving.search.run`` of the row's load on ``Deployment(model, device, Split(tp))``,
    BF16 weights, ``kv`` cache, once per scheduler (the row's, or each of
    :data:`_SERVE_SCHEDULERS`). ``rate_requests = [rate, requests]`` sets both at once;
    ``rate = "inf"`` sends every request at time 0; arrivals are Poisson, seed 0."""
    rate, requests = c["rate_requests"] if "rate_requests" in c else (c["rate"], c["requests"])
    rate = math.inf if rate == "inf" else float(rate)
    schedulers = (c["scheduler"],) if "scheduler" in c else _SERVE_SCHEDULERS
    return [
        _served(
            device.key,
            c["model"],
            c.get("tp", 1),
            c.get("kv", "bf16"),
            c["prompt"],
            c["output"],
            requests,
            rate,
            s,
            c.get("max_seqs"),
            c.get("replicas", 1),
            c.get("prefill"),
        )
        for s in schedulers
    ]


def _serving_throughput(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """A published serving throughput against ``serve``'s upper bound (:func:`_serve_all`, the
    largest over the schedulers). ``quantity``: ``requests_per_s`` or ``output_tokens_per_s``
    (completed requests or output tokens over the time from the first arrival to the last
    completion, bench_serving's and ``vllm bench serve``'s definition), or ``max_rate``: the
    steady completion rate with every request queued at once
    (``ServeResult.steady_requests_per_s``), above which ``serve --max-rate`` finds no rate
    under any SLO; a goodput (the highest rate meeting SLOs) cannot exceed it."""
    got = _serve_all(device, c)
    field = "steady_requests_per_s" if c["quantity"] == "max_rate" else c["quantity"]
    best = max(getattr(r, field) for r in got)
    return Limit(best, True, f"serve's upper bound, {len(got)} scheduler(s)")


def _serving_latency(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """A published median latency (``quantity``: ``ttft``, ``tpot`` or ``e2e``) against
    ``serve``'s lower bound of the same median (:func:`_serve_all`, the smallest over the
    schedulers). TPOT is ``(e2e - TTFT) / (output - 1)`` per request, bench_serving's."""
    got = _serve_all(device, c)
    best = min(getattr(r, f"{c['quantity']}_s").p50 for r in got)
    return Limit(best, False, f"serve's lower bound of the median, {len(got)} scheduler(s)")


#: Row kind -> the function that computes its limit.
KINDS: dict[str, Callable[[Hardware, Mapping[str, Any]], Limit]] = {
    "attention_forward": _attention_forward,
    "gemm": _gemm,
    "gemm_bandwidth": _gemm_bandwidth,
    "grouped_gemm": _grouped_gemm,
    "mla_decode_attention": _mla_decode_attention,
    "mla_decode_bandwidth": _mla_decode_bandwidth,
    "mla_sparse_attention": _mla_sparse_attention,
    "peak_rate": _peak_rate,
    "stream": _stream,
    "generation": _generation,
    "prefill": _prefill,
    "capacity": _capacity,
    "all_reduce_busbw": _all_reduce_busbw,
    "all_reduce_busbw_nodes": _all_reduce_busbw_nodes,
    "all_reduce_time": _all_reduce_time,
    "moe_all_to_all_bw": _moe_all_to_all_bw,
    "moe_all_to_all_time": _moe_all_to_all_time,
    "serving_node_throughput": _serving_node_throughput,
    "serving_throughput": _serving_throughput,
    "serving_latency": _serving_latency,
    "training_rate": _training_rate,
    "training_step_time": _training_step_time,
    "training_gpu_hours": _training_gpu_hours,
}


@dataclass(frozen=True)
class Case:
    """One published value and the configuration it was measured in."""

    row: Mapping[str, Any]
    config: Mapping[str, Any]
    value: float

    @property
    def id(self) -> str:
        swept = {k: v for k, v in self.config.items() if k not in self.row["config"]}
        return self.row["id"] + "".join(f"[{k}={v}]" for k, v in swept.items())


def _rows() -> list[dict[str, Any]]:
    return list(tomllib.loads(published.data_text())["measurement"])


def _cases(row: Mapping[str, Any]) -> list[Case]:
    if "sweep" not in row:
        return [Case(row, row["config"], float(row["value"]))]
    ((field, values),) = row["sweep"].items()
    if len(values) != len(row["value"]):
        raise ValueError(f"{row['id']}: {len(values)} swept values, {len(row['value'])} measured")
    return [
        Case(row, {**row["config"], field: v}, float(x))
        for v, x in zip(values, row["value"], strict=True)
    ]


def _params() -> list[Any]:
    params = []
    for row in _rows():
        params += [pytest.param(case, id=case.id) for case in _cases(row)]
    return params


def test_rows_are_complete_and_sourced() -> None:
    rows = _rows()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for row in rows:
        missing = [f for f in FIELDS if f not in row]
        assert not missing, f"{row.get('id')}: missing {missing}"
        assert row["kind"] in KINDS, f"{row['id']}: unknown kind {row['kind']!r}"
        assert row["unit"] in UNITS, f"{row['id']}: unknown unit {row['unit']!r}"
        assert row["url"].startswith("https://"), row["id"]
        assert row["source"].strip(), row["id"]
        hardware(row["device"])  # a catalog device
    kinds = {r["kind"] for r in rows}
    assert kinds == set(KINDS), f"kinds without a row: {set(KINDS) - kinds}"


@pytest.mark.parametrize("case", _params())
def test_no_published_measurement_beats_the_package(case: Case) -> None:
    row = case.row
    limit = KINDS[row["kind"]](hardware(row["device"]), case.config)
    scale = UNITS[row["unit"]]
    allowed = limit.value / scale
    assert math.isfinite(allowed) and allowed > 0
    ok = case.value <= allowed if limit.at_most else case.value >= allowed
    relation = "at most" if limit.at_most else "at least"
    assert ok, (
        f"{case.id}: {row['what']} on {row['device']} measured {case.value:g} {row['unit']}, "
        f"but the package allows {relation} {allowed:.6g} {row['unit']} ({limit.why}); "
        f"measured / allowed = {case.value / allowed:.3f}. Source: {row['source']}"
    )


def test_a_beaten_bound_fails() -> None:
    """The check can fail: a GEMM measured 1 % above the H100 BF16 matrix peak."""
    config = {"dtype": "bf16", "n": 8192}
    row: dict[str, Any] = {"id": "x", "what": "GEMM", "device": "h100-sxm", "unit": "TFLOP/s",
                           "source": "-", "kind": "gemm", "config": config}  # fmt: skip
    peak = hardware("h100-sxm").ceiling("matrix", "bf16") / 1e12  # 989.5
    with pytest.raises(AssertionError, match="measured / allowed = 1.010"):
        test_no_published_measurement_beats_the_package(Case(row, config, 1.01 * peak))


def test_conversions_into_the_sources_conventions_by_hand() -> None:
    h800 = hardware("h800-sxm")
    # DeepEP intranode (EP 8, one node): the package sends a token once to each other GPU that
    # holds one of its experts, over 200 GB/s of NVLink each way (catalog); DeepEP also counts
    # the copy that stays on the own GPU (1 in 8 under uniform routing) and FP8 with its scales
    # (7168 x (1 + 4/128) bytes against the package's 7168): 200 x 8/7 x 1.03125 = 235.7 GB/s.
    c = {"ep": 8, "per_node": 8, "tokens": 4096, "hidden": 7168, "topk": 8, "experts": 256,
         "network": "ib-ndr", "counted": "rank", "op": "dispatch"}  # fmt: skip
    assert _moe_all_to_all_bw(h800, c).value == pytest.approx(200e9 * 8 / 7 * 1.03125)
    # Internode, EP 64 (8 nodes): the NIC (50 GB/s) is the bottleneck; DeepEP counts the own
    # node's copies too (1 in 8): a BF16 combine is allowed 50 x 8/7 = 57.14 GB/s.
    c = {**c, "ep": 64, "counted": "node", "op": "combine"}
    assert _moe_all_to_all_bw(h800, c).value == pytest.approx(50e9 * 8 / 7)
    # FlashMLA's bytes are the package's for the absorbed kernel: a memory-bound point is
    # allowed exactly the HBM bandwidth, 3.35 TB/s.
    row = published.row("flashmla-decode-bw-h800")
    assert _mla_decode_bandwidth(h800, row.config).value == pytest.approx(3.35e12)
    # DeepSeek-V3 at sequence 4096: 250 GFLOP per token with causal attention (ISCA '25,
    # Table 2); the whole attention matrix adds 432 / 385 of that, about 280 (Table 4).
    ds, tokens = model("deepseek-v3"), 4096
    causal = training_flops(ds, tokens, 4096) / tokens
    full = (3 * training_flops(ds, tokens, 4096) - 2 * training_flops(ds, tokens, 2048)) / tokens
    assert causal == pytest.approx(250e9, rel=0.01)
    assert full == pytest.approx(250e9 * 432 / 385, rel=0.01)


def test_serving_bounds_by_hand() -> None:
    a100 = hardware("a100-sxm")
    # Llama-3.1-8B (config.json: hidden 4096, 32 layers, 8 KV heads of 128, FFN 14336, vocab
    # 128256, untied): a step reads every weight once but the embedding table, which it only
    # indexes: 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336) + 128256 x 4096
    # = 7.5047e9 parameters, 15.009 GB in BF16, 7.361 ms at the A100's 2.039 TB/s.
    weights = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    step = 2 * weights / 2.039e12
    # At 4 req/s one request of one prompt token is in flight at a time: its median TTFT and TPOT
    # bounds are one step each, its E2E two.
    c = {"model": "llama-3.1-8b", "tp": 1, "prompt": 1, "output": 2, "rate": 4, "requests": 1200}
    for quantity, steps in (("ttft", 1), ("tpot", 1), ("e2e", 2)):
        got = _serving_latency(a100, {**c, "quantity": quantity})
        assert not got.at_most and got.value == pytest.approx(steps * step, rel=0.005)
    # 5000 requests at once, 194 output tokens each: the steps are compute-bound, so the time is
    # at least 5000 x 194 x 2 x 7.5047e9 FLOPs / 312 TFLOP/s = 46.67 s: at most 107.1 req/s,
    # less a little for attention and the first steps.
    c = {**c, "output": 194, "rate": "inf", "requests": 5000, "quantity": "requests_per_s"}
    floor = 5000 / (5000 * 194 * 2 * weights / 312e12)
    assert 0.97 * floor < _serving_throughput(a100, c).value <= floor


# The measured side of the book: roofline_book.measure.published, held to hand arithmetic.


def test_every_row_loads_with_its_values_and_source() -> None:
    rows = published.rows()
    assert [r.id for r in rows] == [r["id"] for r in _rows()]
    for r in rows:
        assert r.url.startswith("https://") and r.source.strip(), r.id
        n = 1 if r.sweep is None else len(r.sweep[1])
        assert len(r.measurements()) == len(r.values) == n, r.id


def test_gemm_point_by_hand() -> None:
    # cuBLAS BF16, n = 8192, 795 TFLOP/s (fast.cu README). I = 2n^3 / (3 * 2 n^2) = n / 3;
    # H100 SXM dense BF16 peak 989.4 TFLOP/s (NVIDIA datasheet), so eta = 795 / 989.4 = 0.8035.
    m = published.measurement("cublas-bf16-h100", n=8192)
    p = m.point()
    assert p is not None
    assert p.intensity == pytest.approx(8192 / 3)
    assert p.flops_per_s == pytest.approx(795e12)
    assert p.seconds == pytest.approx(2 * 8192**3 / 795e12)  # 1.383 ms
    assert m.eta() == pytest.approx(795 / 989.4)
    assert m.roof() == pytest.approx(989.4e12)


def test_stream_points_by_hand() -> None:
    # STREAM on H100 (Azure benchmarking guide): copy 2.90 TB/s, triad 2.97 TB/s, FP64.
    copy = published.measurement("stream-h100", kernel="copy")
    triad = published.measurement("stream-h100", kernel="triad")
    pc, pt = copy.point(), triad.point()
    assert pc is not None and pt is not None
    # copy c = a: 16 bytes per element, no FLOPs; eta = 2.90 / 3.35 (HBM3 datasheet)
    assert pc.intensity == 0 and pc.bytes_per_s == pytest.approx(2.90e12)
    assert pc.cost.bytes == 16 * 33554432
    assert copy.eta() == pytest.approx(2.90 / 3.35)
    # triad a = b + q * c (q a scalar): 2 FLOPs per 24 bytes, I = 1/12; 2.97 / 12 = 0.2475 TFLOP/s
    assert pt.intensity == pytest.approx(1 / 12)
    assert pt.flops_per_s == pytest.approx(0.2475e12)
    assert triad.roof() == pytest.approx(3.35e12 / 12)


def test_flashattention_point_by_hand() -> None:
    # FA3 BF16, d = 128, seqlen 16384, no mask, 648 TFLOP/s (Shah et al. Fig. 5): batch
    # 16384 / 16384 = 1, heads 2048 / 128 = 16. The paper's FLOPs 4 l^2 d h = 2.199e12;
    # Q, K, V read and O written once: 4 l d h * 2 bytes = 256 MiB, so the matrix I = l / 2.
    p = published.measurement("fa3-bf16-d128", seqlen=16384).point()
    assert p is not None
    paper_flops = 4 * 16384**2 * 128 * 16
    assert p.seconds == pytest.approx(paper_flops / 648e12)  # 3.39 ms
    assert p.cost.bytes == 4 * 16384 * 128 * 16 * 2
    assert p.cost.matrix_flops / p.cost.bytes == pytest.approx(8192)
    # softmax adds a few vector FLOPs per score: under 2 % on top of 4 d = 512 per score
    assert 1 < p.intensity / 8192 < 1.02


def test_decode_point_by_hand() -> None:
    # gpt-fast Llama-2-7B BF16 on A100, 104.9 tok/s at batch 1 (gpt-fast README). Each token
    # reads every weight once: 6.74e9 parameters (Touvron et al. 2023) less the embedding
    # table it only indexes (32000 x 4096), 2 bytes each, at 104.9 tok/s = 1.386 TB/s,
    # and does 2 FLOPs per weight, so I is about 1 FLOP/byte.
    p = published.measurement("gptfast-llama2-7b", weights="bf16").point()
    assert p is not None
    weights = (6.738e9 - 32000 * 4096) * 2
    assert p.bytes_per_s == pytest.approx(weights * 104.9, rel=0.02)
    assert p.intensity == pytest.approx(1.0, rel=0.05)


def test_rows_without_a_point_and_lookups_that_fail() -> None:
    assert published.measurement("capacity-h100-nvsmi").point() is None
    with pytest.raises(InvalidArgument, match="no roofline point"):
        published.measurement("capacity-h100-nvsmi").eta()
    with pytest.raises(InvalidArgument, match="not a published measurement"):
        published.row("no-such-row")
    with pytest.raises(InvalidArgument, match="its sweep is 'n'"):
        published.measurement("cublas-bf16-h100", n=1234)


def test_plot_places_the_rows_with_chinese_labels() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from test_figure_language import ALLOWED, _names, english_words

    from roofline_book.present import plotting

    chosen = [
        published.measurement("cublas-bf16-h100", n=8192),
        published.measurement("stream-h100", kernel="copy"),
        published.measurement("stream-h100", kernel="triad"),
        published.measurement("fa3-bf16-d128-causal", seqlen=16384),
    ]
    plotting.set_language("zh")
    try:
        fig, ax = plt.subplots()
        published.plot(ax, chosen, "h100-sxm", "bf16")
        texts = [t.get_text() for t in ax.texts] + [ax.get_xlabel(), ax.get_ylabel()]
        lines = [str(ln.get_label()) for ln in ax.get_lines()]
        lines = [name for name in lines if not name.startswith("_")]
        offsets = [np.asarray(c.get_offsets()) for c in ax.collections]
        xy = [tuple(o[0]) for o in offsets if len(o) == 1]
        plt.close(fig)
    finally:
        plotting.set_language("en")
    assert {"GEMM 8192³", "HBM triad", "FlashAttention-3 d=128，因果 mask"} <= set(texts)
    assert "HBM 复制 2.90 TB/s" in lines  # the measured memory roof of copy
    # the GEMM sits at (8192 / 3 FLOP/byte, 795 TFLOP/s)
    assert any(x == pytest.approx(8192 / 3) and y == pytest.approx(795) for x, y in xy)
    svg = "".join(f"<text>{t}</text>" for t in texts + lines)
    assert english_words(svg, ALLOWED | _names()) == []
