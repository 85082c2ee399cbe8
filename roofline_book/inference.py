"""LLM inference on the roofline: prefill and decode, the KV cache, GQA, sliding windows, MoE.

A serving step runs every layer of a decoder over the step's new tokens:
``prefill`` pushes a whole prompt through (``tokens = prompt``), ``decode``
adds one token to each sequence against its cached context. Each layer is a
list of :class:`~roofline_book.ops.Cost` (norms, the projections, attention
over the KV cache, the MLP or its experts, the residual adds); the model
adds the embedding lookup, the final norm and the language-model head for
the last position of each sequence. Two time bounds come from
:func:`roofline_book.roofline.time_bound`: :func:`step_time`, the operators
one kernel after another, and :func:`step_floor`, under any implementation
that fuses or overlaps them.

The model shapes and their catalog are in :mod:`roofline_book.decoders`, the
weight formats in :mod:`roofline_book.quantization` (both re-exported here);
the batch that fits in memory and speculative decoding's gain in
:mod:`roofline_book.serving`.

Examples
--------
Llama-2-7B in BF16 keeps 2 x 32 layers x 32 KV heads x 128 x 2 bytes of
KV cache per token:

>>> llama = model("Llama-2-7B")
>>> kv_bytes_per_token(llama)
524288
>>> kv_bytes_per_token(model("llama-3-8b"))  # GQA: 8 KV heads for 32 query heads
131072
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _validate

# re-exported: the chapters and the command line take the whole inference model from here
from .decoders import ModelConfig as ModelConfig
from .decoders import adhoc_model as adhoc_model
from .decoders import model as model
from .decoders import models as models
from .dtypes import bytes_per_element
from .hardware import Hardware
from .ops import ZERO, Cost, gelu, residual_add, rmsnorm, swiglu
from .ops.attn import SOFTMAX_FLOPS_PER_ELEMENT, _causal_pairs
from .ops.pointwise import GELU_FLOPS_PER_ELEMENT, elementwise
from .quantization import INT4 as INT4
from .quantization import QUANT_GROUP as QUANT_GROUP
from .quantization import Precisions as Precisions
from .roofline import TimeBound, time_bound


def kv_bytes_per_token(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """KV-cache bytes one token keeps in all layers: ``2 x layers x kv_heads x head_dim x s_kv``.

    This is what a cached token costs while it is inside every layer's window;
    a sliding-window layer keeps only its last ``sliding_window`` tokens
    (:func:`kv_cache_bytes`).

    Examples
    --------
    >>> kv_bytes_per_token(model("llama-2-7b"), Precisions(kv="fp8"))
    262144
    """
    p = precisions or Precisions()
    return 2 * config.layers * config.kv_dim * bytes_per_element(p.kv)


def kv_cache_bytes(config: ModelConfig, context: int, precisions: Precisions | None = None) -> int:
    """KV-cache bytes of one sequence of ``context`` tokens (byte).

    A global layer keeps every token; a local layer keeps the last
    ``min(context, sliding_window)`` (Mistral's rolling buffer, Gemma 2's
    local layers).

    Examples
    --------
    Mistral-7B at 8192 tokens keeps its 4096-token window in all 32 layers:

    >>> kv_cache_bytes(model("mistral-7b"), 8192) == 4096 * kv_bytes_per_token(model("mistral-7b"))
    True
    """
    p = precisions or Precisions()
    context = _validate.size("context", context)
    per_layer_token = 2 * config.kv_dim * bytes_per_element(p.kv)
    kept = sum(min(context, config.window(i) or context) for i in range(config.layers))
    return per_layer_token * kept


def _linear(tokens: int, k: int, n: int, p: Precisions, *, table: bool = False) -> Cost:
    """``(tokens x k) @ (k x n)``: activations in ``p.activations``, the weight in ``p.weights``.

    ``table``: the weight is the LM head, stored in ``p.table_precision``.
    """
    a = bytes_per_element(p.activations)
    w = p.table_bytes(k * n) if table else p.weight_bytes(k * n)
    return Cost(2 * tokens * k * n, a * tokens * k + w, a * tokens * n)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """Distinct experts a step touches when ``tokens`` each pick ``per_token`` at random.

    Under uniform routing an expert is missed by one token with probability
    ``1 - k/E``, so ``E (1 - (1 - k/E)^tokens)`` experts are read.

    Examples
    --------
    >>> round(expected_experts(8, 2, 1), 3), round(expected_experts(8, 2, 16), 2)
    (2.0, 7.92)
    """
    experts = _validate.size("experts", experts)
    per_token = _validate.size("per_token", per_token)
    tokens = _validate.size("tokens", tokens)
    if per_token > experts:
        raise ValueError(f"per_token ({per_token}) must be <= experts ({experts})")
    return experts * (1 - (1 - per_token / experts) ** tokens)


def _window_pairs(new: int, context: int, window: int | None) -> int:
    """(query, key) pairs of ``new`` queries at the end of ``context``, each seeing ``window`` keys.

    Query ``t`` (1-based position, ``t = context - new + 1 .. context``) sees
    ``min(t, window)`` keys, itself included; without a window, all ``t``.
    """
    if window is None:
        return _causal_pairs(new, context)
    lo, hi = context - new + 1, context
    cut = min(hi, window)
    rising = cut * (cut + 1) // 2 - (lo - 1) * lo // 2 if cut >= lo else 0
    return rising + (window * (hi - max(lo - 1, window)) if hi > window else 0)


def _keys_read(new: int, context: int, window: int | None) -> int:
    """Keys (and values) of the cache some query of the step sees."""
    return context if window is None else min(context, new + window - 1)


def _attention(
    config: ModelConfig, batch: int, new: int, context: int, p: Precisions, window: int | None
) -> Cost:
    """One layer's attention over the cache: ``new`` queries per sequence, ``context`` keys.

    Causal, aligned bottom-right (the last query sees every key), each query
    limited to the last ``window`` keys if a window is given. Compulsory
    traffic: the new queries read, every cached key and value some query sees
    read once (a flash-decoding style kernel reads the cache once per KV head,
    whatever the group of query heads sharing it), the output written.
    """
    a, s_kv, d = bytes_per_element(p.activations), bytes_per_element(p.kv), config.d
    pairs = batch * config.heads * _window_pairs(new, context, window)
    keys = _keys_read(new, context, window)
    return Cost(
        flops=pairs * (4 * d + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=batch * (a * config.q_dim * new + 2 * s_kv * config.kv_dim * keys),
        bytes_written=batch * a * config.q_dim * new,
        vector_flops=pairs * (SOFTMAX_FLOPS_PER_ELEMENT - 1),
        special_flops=pairs,
    )


def _activation(config: ModelConfig, numel: int, dtype: str) -> tuple[str, Cost]:
    if not config.gated:
        return "activation (GELU)", gelu(numel, dtype)
    if config.activation == "silu":
        return "activation (SwiGLU)", swiglu(numel, dtype)
    # GeGLU: gelu(gate) * up, the tanh form of GELU and one product, two inputs and one output
    cost = elementwise(
        numel,
        dtype,
        inputs=2,
        outputs=1,
        flops_per_element=GELU_FLOPS_PER_ELEMENT + 1,
        special_per_element=1,
    )
    return "activation (GeGLU)", cost


def _check_step(batch: int, new: int, context: int) -> tuple[int, int, int]:
    batch = _validate.size("batch", batch)
    new = _validate.size("new", new)
    context = _validate.size("context", context)
    if new > context:
        raise ValueError(f"new ({new}) must be <= context ({context})")
    return batch, new, context


def layer_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    layer: int = 0,
) -> list[tuple[str, Cost]]:
    """One decoder layer for ``batch`` sequences, ``new`` tokens each, over ``context`` keys.

    ``context`` counts the tokens the step attends to: the cached ones plus
    the ``new`` ones. Prefill is ``new = context = prompt``; a decode step is
    ``new = 1`` with ``context`` the cached tokens plus the new one. ``layer``
    (0-based) picks a local (sliding-window) or global layer where the model
    has both. The new keys and values leave the QKV projection with its output
    and are then copied into the cache (read in the activations' precision,
    written in the cache's), a kernel of their own (``"KV cache write"``, as
    vLLM's ``reshape_and_cache``). An MoE MLP reads the weights of the
    :func:`expected_experts` a step touches.

    Examples
    --------
    >>> ops = dict(layer_ops(model("llama-2-7b"), 1, 1, 4096))
    >>> ops["attention"].bytes_read     # the whole cache of one layer: 2 x 4096 x 4096 x 2
    67117056
    >>> ops = dict(layer_ops(model("mistral-7b"), 1, 1, 8192))
    >>> ops["attention"].bytes_read     # its 4096-token window: 2 x 4096 x 1024 x 2, and q
    16785408
    """
    p = precisions or Precisions()
    batch, new, context = _check_step(batch, new, context)
    window = config.window(layer)
    tokens, h, a = batch * new, config.hidden, p.activations
    qkv = _linear(tokens, h, config.q_dim + 2 * config.kv_dim, p)
    new_kv = batch * new * 2 * config.kv_dim
    kv_write = Cost(0, new_kv * bytes_per_element(a), new_kv * bytes_per_element(p.kv), 1)
    ops = [
        ("attention norm", rmsnorm(tokens, h, a)),
        ("QKV projection", qkv),
        ("KV cache write", kv_write),
        ("attention", _attention(config, batch, new, context, p, window)),
        ("output projection", _linear(tokens, config.q_dim, h, p)),
        ("residual add", residual_add(tokens * h, a)),
        ("MLP norm", rmsnorm(tokens, h, a)),
    ]
    k = config.experts_per_token
    width = (2 if config.gated else 1) * config.ffn
    if config.experts > 1:
        ops.append(("router", _linear(tokens, h, config.experts, p)))
        touched = expected_experts(config.experts, k, tokens)
        up = _linear(tokens * k, h, width, p)
        down = _linear(tokens * k, config.ffn, h, p)
        # up and down above read one expert's weights; a step reads those of every expert
        # its tokens touch
        per_expert = p.weight_bytes(h * width) + p.weight_bytes(config.ffn * h)
        ops.append(("experts up", up + Cost(0, round((touched - 1) * per_expert), 0, 0)))
    else:
        up = _linear(tokens, h, width, p)
        down = _linear(tokens, config.ffn, h, p)
        ops.append(("MLP up (gate, up)" if config.gated else "MLP up", up))
    ops.append(_activation(config, tokens * k * config.ffn, a))
    ops.append(("MLP down" if config.experts == 1 else "experts down", down))
    ops.append(("residual add (MLP)", residual_add(tokens * h, a)))
    return ops


def _kinds(config: ModelConfig) -> dict[str, list[int]]:
    kinds: dict[str, list[int]] = {}
    for i in range(config.layers):
        kinds.setdefault(config.layer_kind(i), []).append(i)
    return kinds


def step_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> list[tuple[str, Cost]]:
    """The whole model for one step: embedding, every layer, final norm, LM head.

    Each layer's operators are summed over the layers (``"<op> (x layers)"``);
    where local and global layers differ (their attention), each kind has a
    line of its own (``"attention, sliding window (x 21)"``). The LM head
    computes the logits of the last ``logits`` positions of each sequence (1;
    a speculative verification step needs all its positions).

    Examples
    --------
    >>> names = [n for n, _ in step_ops(model("llama-2-7b"), 1, 1, 4096)]
    >>> names[0], names[4], names[-1]
    ('embedding', 'attention (x 32)', 'LM head')
    >>> [n for n, _ in step_ops(model("gemma-2-9b"), 1, 1, 8192) if n.startswith("attention,")]
    ['attention, sliding window (x 21)', 'attention, global (x 21)']
    """
    p = precisions or Precisions()
    batch, new, context = _check_step(batch, new, context)
    logits = _validate.size("logits", logits)
    if logits > new:
        raise ValueError(f"logits ({logits}) must be <= new ({new})")
    if context > config.max_context:
        raise ValueError(
            f"context ({context}) must be <= the model's context window ({config.max_context})"
        )
    a = bytes_per_element(p.activations)
    tokens = batch * new
    embed = Cost(0, p.table_bytes(tokens * config.hidden), a * tokens * config.hidden, 1)
    by_kind = {
        kind: (len(idx), layer_ops(config, batch, new, context, p, layer=idx[0]))
        for kind, idx in _kinds(config).items()
    }
    ops = [("embedding", embed)]
    first = next(iter(by_kind.values()))[1]
    for j, (name, cost) in enumerate(first):
        if all(layer[j][1] == cost for _, layer in by_kind.values()):
            ops.append((f"{name} (x {config.layers})", cost * config.layers))
            continue
        for kind, (n, layer) in by_kind.items():
            label = "sliding window" if kind == "local" else "global"
            ops.append((f"{name}, {label} (x {n})", layer[j][1] * n))
    ops += [
        ("final norm", rmsnorm(tokens, config.hidden, p.activations)),
        ("LM head", _linear(batch * logits, config.hidden, config.vocab, p, table=True)),
    ]
    return ops


@dataclass(frozen=True)
class StepBound:
    """A serving step's time lower bound on a device: each operator's, summed (second)."""

    seconds: float
    by_op: Mapping[str, float]
    compute: float
    """Seconds of the operators whose bound is a compute unit."""
    memory: float
    """Seconds of the operators whose bound is a memory level."""


def step_time(ops: list[tuple[str, Cost]], device: Hardware, precisions: Precisions) -> StepBound:
    """Sum of the operators' time lower bounds, one kernel after another (second).

    This is the floor of an implementation that runs these kernels one after
    another, each moving its own inputs and outputs through HBM. Fusing kernels
    (a norm into the residual add, the activation into a GEMM) or overlapping
    a memory-bound kernel with a compute-bound one can go below it, never below
    :func:`step_floor`. The compute ceilings are those of the activations'
    precision, in which the products run (weight-only formats are widened on
    the fly).
    """
    times = {name: time_bound(cost, device, precisions.activations) for name, cost in ops}
    return StepBound(
        seconds=sum(t.seconds for t in times.values()),
        by_op=MappingProxyType({n: t.seconds for n, t in times.items()}),
        compute=sum(t.seconds for t in times.values() if t.bound == "compute"),
        memory=sum(t.seconds for t in times.values() if t.bound == "memory"),
    )


def weight_bytes(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """Bytes of all the model's weights (byte).

    The linear layers in ``precisions.weights``; the embedding table, the LM
    head and the norms in ``precisions.table_precision`` (BF16 under weight
    quantization unless ``quantize_embeddings``).

    Examples
    --------
    >>> round(weight_bytes(model("llama-2-7b")) / 1e9, 2)
    13.48
    >>> round(weight_bytes(model("llama-3-8b"), Precisions(weights="int4")) / 1e9, 2)
    5.7
    """
    p = precisions or Precisions()
    c = config
    tables = c.vocab * c.hidden * (1 if c.tied_embeddings else 2)
    norms = c.layers * 2 * c.hidden + c.hidden
    return p.weight_bytes(c.layers * c.layer_matrix_parameters()) + p.table_bytes(tables + norms)


def step_traffic(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> int:
    """Bytes any implementation of the step must move through HBM (byte).

    The weights the step reads (the linear layers, the MoE experts its tokens
    touch, the norms, the LM head, one embedding row per token), the cached
    keys and values its queries see, the new keys and values it writes, and the
    logits. Activations between operators are left out: a fused kernel keeps
    them on chip.
    """
    p = precisions or Precisions()
    batch, new, context = _check_step(batch, new, context)
    c, s_kv = config, bytes_per_element(p.kv)
    h, tokens = c.hidden, batch * new
    attention = 2 * h * c.q_dim + 2 * h * c.kv_dim
    per_expert = p.weight_bytes(h * (2 if c.gated else 1) * c.ffn) + p.weight_bytes(c.ffn * h)
    if c.experts > 1:
        mlp = p.weight_bytes(h * c.experts) + round(
            expected_experts(c.experts, c.experts_per_token, tokens) * per_expert
        )
    else:
        mlp = per_expert
    weights = c.layers * (p.weight_bytes(attention) + mlp)
    weights += p.table_bytes(c.layers * 2 * h + h + c.vocab * h + tokens * h)
    cache = 0
    for i in range(c.layers):
        window = c.window(i)
        cached = _keys_read(new, context, window) - new
        written = new if window is None else min(new, window)
        cache += batch * 2 * c.kv_dim * s_kv * (max(cached, 0) + written)
    return weights + cache + batch * logits * c.vocab * bytes_per_element(p.activations)


def step_floor(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    device: Hardware,
    precisions: Precisions | None = None,
    *,
    logits: int = 1,
) -> TimeBound:
    """A time lower bound for any implementation of the step, fused or overlapped (second).

    ``max(FLOPs / P, bytes / B)`` over the whole step: each compute unit's
    FLOPs of every operator over that unit's ceiling, and
    :func:`step_traffic` over the bandwidth. Kernels that overlap memory-bound
    attention with compute-bound GEMMs (NanoFlow) or fuse the small operators
    approach it; none goes below it.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> m, h100 = model("llama-2-7b"), hardware("h100-sxm")
    >>> p = Precisions()
    >>> step_floor(m, 1, 4096, 4096, h100).seconds < step_time(
    ...     step_ops(m, 1, 4096, 4096), h100, p).seconds
    True
    """
    p = precisions or Precisions()
    ops = step_ops(config, batch, new, context, p, logits=logits)
    total = sum((cost for _, cost in ops), ZERO)
    traffic = step_traffic(config, batch, new, context, p, logits=logits)
    floor = Cost(
        total.flops,
        traffic,
        0,
        1,
        vector_flops=total.vector_flops,
        special_flops=total.special_flops,
        vector_fma_flops=total.vector_fma_flops,
    )
    return time_bound(floor, device, p.activations)


def decode_batch_to_ridge(
    config: ModelConfig, device: Hardware, precisions: Precisions | None = None
) -> float:
    """Decode batch at which the MLP's up projection reaches the matrix ridge point.

    A weight-streaming GEMM, ``(B x k) @ (k x n)``, has intensity
    ``2Bkn / (w kn + a B (k + n))`` with ``w`` weight and ``a`` activation
    bytes per element; setting it to the ridge ``R`` of the activations'
    precision gives ``B* = R w kn / (2kn - R a (k + n))``, about ``R w / 2``.
    Weight-only formats lower ``w`` at the BF16 ridge, so ``B*`` falls with
    them; W8A8 FP8 halves ``w`` but doubles ``R``, so ``B*`` stays. In an MoE
    layer each expert's GEMM gets about ``B k / E`` of the rows (uniform
    routing), so the batch is ``E / k`` times larger.

    Examples
    --------
    >>> from roofline_book.hardware import adhoc
    >>> gpu = adhoc("example", 1e15, 5e12)        # ridge 200 FLOP/byte
    >>> round(decode_batch_to_ridge(model("llama-2-7b"), gpu))   # 200 x 2 / 2, and a little
    212
    """
    p = precisions or Precisions()
    k, n = config.hidden, (2 if config.gated else 1) * config.ffn
    ridge = device.ridge_point(p.activations)
    w = p.weight_bytes(k * n) / (k * n)
    a = bytes_per_element(p.activations)
    denominator = 2 * k * n - ridge * a * (k + n)
    rows = ridge * w * k * n / denominator if denominator > 0 else math.inf
    return rows * config.experts / config.experts_per_token
