"""What a serving engine decides: how many sequences fit in memory, what speculation gains.

:func:`max_batch` sizes the KV cache as vLLM does, from the device's memory
less the weights and the activation peak; :func:`speculative_speedup` is the
walltime gain of speculative decoding with the draft model's cost counted.
The step bounds they rest on are in :mod:`roofline_book.inference`.
"""

from __future__ import annotations

import math

from . import _validate
from .decoders import ModelConfig
from .decoders import model as model  # the examples' models
from .dtypes import bytes_per_element
from .hardware import Hardware
from .inference import kv_cache_bytes, weight_bytes
from .quantization import Precisions

#: The share of device memory the serving engine leaves unused. vLLM's default
#: ``gpu_memory_utilization`` is 0.9, and vLLM takes the weights, the profiled
#: activation peak and non-torch allocations out of the other 0.9 before it sizes the
#: KV cache (:func:`max_batch` subtracts :func:`activation_peak` for the second).
MEMORY_RESERVE = 0.1

#: Tokens of the forward pass whose activation peak :func:`activation_peak` estimates
#: (vLLM profiles one forward pass of ``max_num_batched_tokens`` tokens).
PROFILE_TOKENS = 8192

#: Sequences whose FP32 logits that forward pass holds at once.
PROFILE_SEQUENCES = 256


def activation_peak(
    config: ModelConfig,
    precisions: Precisions | None = None,
    *,
    tokens: int = PROFILE_TOKENS,
    sequences: int = PROFILE_SEQUENCES,
) -> int:
    """An estimate of the activation peak of one forward pass of ``tokens`` tokens (byte).

    The largest moment of a layer is its MLP: the residual stream
    (``tokens x hidden``), the gate and up projections' output
    (``tokens x k x 2 ffn`` for a gated MLP, ``k`` experts per token) and the
    activation's (``tokens x k x ffn``) are alive together, in the
    activations' precision. Add the FP32 logits of ``sequences`` sequences.
    This leaves out what vLLM also subtracts: CUDA graphs' memory and non-torch
    allocations (the CUDA context, NCCL, cuBLAS workspaces), so the KV cache
    it leaves room for is, if anything, too large.

    Examples
    --------
    >>> activation_peak(model("llama-3-8b")) == 2 * 8192 * (4096 + 3 * 14336) + 256 * 128256 * 4
    True
    """
    p = precisions or Precisions()
    tokens = _validate.size("tokens", tokens)
    sequences = _validate.size("sequences", sequences)
    c, a = config, bytes_per_element(p.activations)
    mlp = ((3 if c.gated else 2) * c.ffn) * c.experts_per_token
    return a * tokens * (c.hidden + mlp) + 4 * sequences * c.vocab


def max_batch(
    config: ModelConfig,
    device: Hardware,
    context: int,
    precisions: Precisions | None = None,
    *,
    reserve: float = MEMORY_RESERVE,
    activations: int | None = None,
) -> int:
    """The most sequences of ``context`` tokens whose KV cache fits beside the weights.

    vLLM's rule: of ``(1 - reserve) x capacity`` (``gpu_memory_utilization``),
    the weights and the activation peak are taken first, and the rest holds the
    KV cache::

        floor(((1 - reserve) x capacity - weights - activations) / kv_cache_bytes(context))

    ``activations`` defaults to :func:`activation_peak`. 0 when even the
    weights do not fit.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from roofline_book.hardware import hardware
    >>> gpu = replace(hardware("h100-sxm"), memory_capacity=80e9)
    >>> m = model("llama-2-7b")
    >>> max_batch(m, gpu, 4096, activations=0)   # (72e9 - 13.48e9) / 2.15e9 = 27.3
    27
    """
    p = precisions or Precisions()
    if device.memory_capacity is None:
        raise ValueError(f"{device.key} has no published memory capacity")
    context = _validate.size("context", context)
    reserve = _validate.non_negative("reserve", reserve)
    if reserve >= 1:
        raise ValueError(f"reserve must be below 1, got {reserve}")
    if activations is None:
        activations = activation_peak(config, p)
    activations = _validate.size("activations", activations, minimum=0)
    free = (1 - reserve) * device.memory_capacity - weight_bytes(config, p) - activations
    return max(0, math.floor(free / kv_cache_bytes(config, context, p)))


def _acceptance(acceptance: float) -> float:
    a = _validate.non_negative("acceptance", acceptance)
    if a >= 1:
        raise ValueError(f"acceptance must be below 1, got {acceptance}")
    return a


def speculative_tokens(acceptance: float, draft: int) -> float:
    """Expected tokens one verification step yields: ``(1 - a^(g+1)) / (1 - a)``.

    With ``g`` draft tokens each accepted with probability ``a`` (Leviathan
    et al. 2023, eq. 1), the target model checks ``g + 1`` positions in one step.

    Examples
    --------
    >>> round(speculative_tokens(0.8, 4), 3)
    3.362
    >>> speculative_tokens(0.0, 4)
    1.0
    """
    a = _acceptance(acceptance)
    g = _validate.size("draft", draft, minimum=0)
    return (1 - a ** (g + 1)) / (1 - a)


def speculative_speedup(
    acceptance: float, draft: int, cost_ratio: float, *, verify_ratio: float = 1.0
) -> float:
    """Walltime speedup of speculative decoding over plain decoding.

    Leviathan et al. 2023, Theorem 3.8: ``(1 - a^(g+1)) / ((1 - a) (g c + 1))``,
    with ``c`` (``cost_ratio``) the time of one draft-model step over one
    target-model step. Their theorem takes the verification of ``g + 1``
    positions to cost one target step; ``verify_ratio`` is that time over a
    plain step's, when it is more (compute-bound, large batch).

    Examples
    --------
    >>> round(speculative_speedup(0.8, 4, 0.05), 2)     # 3.3616 / 1.2
    2.8
    """
    c = _validate.non_negative("cost_ratio", cost_ratio)
    v = _validate.positive("verify_ratio", verify_ratio)
    g = _validate.size("draft", draft, minimum=0)
    return speculative_tokens(acceptance, g) / (g * c + v)
