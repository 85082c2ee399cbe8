"""LLM inference on the roofline: prefill and decode, the KV cache, GQA, quantized weights, MoE.

A serving step runs every layer of a decoder over the step's new tokens:
``prefill`` pushes a whole prompt through (``tokens = prompt``), ``decode``
adds one token to each sequence against its cached context. Each layer is a
list of :class:`~roofline_book.ops.Cost` (norms, the projections, attention
over the KV cache, the MLP or its experts, the residual adds); the model
adds the embedding lookup, the final norm and the language-model head for
the last position of each sequence. Time lower bounds come from
:func:`roofline_book.roofline.time_bound`, one kernel after another.

Model configurations live in ``roofline_book/data/models.toml`` with their
sources; :func:`model` finds one by name, :func:`adhoc_model` builds your own.

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

import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from . import _validate
from .dtypes import bytes_per_element, precision_name
from .hardware import Hardware, Source
from .ops import Cost, residual_add, rmsnorm, swiglu
from .ops.attn import SOFTMAX_FLOPS_PER_ELEMENT, _causal_pairs
from .roofline import time_bound

#: The one weight format beyond the tensor dtypes, 4-bit integers (half a byte per weight).
INT4 = "int4"

#: Weights per quantization group; each group stores one FP16 scale (2 bytes).
QUANT_GROUP = 128

#: Share of device memory kept for activations, the CUDA context and fragmentation when
#: sizing the KV cache: vLLM's default ``gpu_memory_utilization`` is 0.9.
MEMORY_RESERVE = 0.1


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only language model's shape.

    Parameters
    ----------
    key, name : str
        Catalog key (``"llama-2-7b"``) and display name.
    hidden, layers, heads, kv_heads, ffn, vocab : int
        Model width, decoder layers, query heads, key/value heads (fewer than
        ``heads`` for GQA, 1 for MQA), MLP width (per expert), vocabulary.
    head_dim : int, optional
        Width of a head; ``hidden // heads`` by default.
    gated : bool
        SwiGLU-style MLP (gate, up, down projections) or a plain two-matrix one.
    tied_embeddings : bool
        The LM head shares the embedding matrix.
    max_context : int
        Longest context the model was trained for (tokens).
    experts, experts_per_token : int
        Routed experts per MLP and how many each token uses (1, 1 for a dense model).
    source : roofline_book.hardware.Source, optional
        Where the configuration was published.
    """

    key: str
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int | None = None
    gated: bool = True
    tied_embeddings: bool = False
    max_context: int = 4096
    experts: int = 1
    experts_per_token: int = 1
    source: Source | None = None

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "max_context"):
            _validate.size(field, getattr(self, field))
        _validate.size("experts", self.experts)
        _validate.size("experts_per_token", self.experts_per_token)
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be <= experts ({self.experts})"
            )
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(
                    f"hidden ({self.hidden}) must be divisible by heads ({self.heads})"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        _validate.size("head_dim", self.head_dim)

    @property
    def d(self) -> int:
        """Width of one head (``head_dim``, filled in)."""
        assert self.head_dim is not None
        return self.head_dim

    @property
    def q_dim(self) -> int:
        """Width of all query heads together, ``heads * head_dim``."""
        return self.heads * self.d

    @property
    def kv_dim(self) -> int:
        """Width of all key (or value) heads together, ``kv_heads * head_dim``."""
        return self.kv_heads * self.d

    def layer_parameters(self, *, active: bool = False) -> int:
        """Weights of one layer: attention, MLP (all experts, or ``active`` ones), router, norms.

        Examples
        --------
        >>> llama = model("llama-2-7b")
        >>> llama.layer_parameters()    # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        h = self.hidden
        attention = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        per_expert = (3 if self.gated else 2) * h * self.ffn
        experts = self.experts_per_token if active else self.experts
        router = h * self.experts if self.experts > 1 else 0
        return attention + experts * per_expert + router + 2 * h

    def parameters(self, *, active: bool = False) -> int:
        """All weights: layers, embedding, final norm, and the LM head unless tied.

        Examples
        --------
        >>> round(model("llama-2-7b").parameters() / 1e9, 2)     # "7B"
        6.74
        """
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return (
            self.layers * self.layer_parameters(active=active)
            + self.vocab * self.hidden
            + (self.hidden + head)
        )


@dataclass(frozen=True)
class Precisions:
    """Precisions of a served model: weights, activations (and the compute), the KV cache.

    ``weights`` may also be ``"int4"`` (half a byte per weight) for
    weight-only quantization; weights narrower than the activations are
    stored in groups of :data:`QUANT_GROUP` with one FP16 scale each, and
    the products run in the activations' precision.

    Examples
    --------
    >>> Precisions(weights="int4").weight_bytes(4096 * 4096)   # 0.5 B + 2 B per 128 weights
    8650752
    """

    weights: str = "bf16"
    activations: str = "bf16"
    kv: str = "bf16"

    def __post_init__(self) -> None:
        if not (isinstance(self.weights, str) and self.weights.strip().lower() == INT4):
            object.__setattr__(self, "weights", precision_name(self.weights))
        else:
            object.__setattr__(self, "weights", INT4)
        object.__setattr__(self, "activations", precision_name(self.activations))
        object.__setattr__(self, "kv", precision_name(self.kv))

    @property
    def quantized(self) -> bool:
        """Weights stored narrower than the activations, with group scales."""
        if self.weights == INT4:
            return True
        return bytes_per_element(self.weights) < bytes_per_element(self.activations)

    def weight_bytes(self, count: int) -> int:
        """Bytes of ``count`` weights, group scales included (byte)."""
        count = _validate.size("count", count, minimum=0)
        per = 0.5 if self.weights == INT4 else bytes_per_element(self.weights)
        scales = 2 * math.ceil(count / QUANT_GROUP) if self.quantized else 0
        return math.ceil(per * count) + scales


def kv_bytes_per_token(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """KV-cache bytes one token keeps: ``2 x layers x kv_heads x head_dim x s_kv`` (byte).

    Examples
    --------
    >>> kv_bytes_per_token(model("llama-2-7b"), Precisions(kv="fp8"))
    262144
    """
    p = precisions or Precisions()
    return 2 * config.layers * config.kv_dim * bytes_per_element(p.kv)


def _linear(tokens: int, k: int, n: int, p: Precisions) -> Cost:
    """``(tokens x k) @ (k x n)``: activations in ``p.activations``, the weight in ``p.weights``."""
    a = bytes_per_element(p.activations)
    return Cost(2 * tokens * k * n, a * tokens * k + p.weight_bytes(k * n), a * tokens * n)


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


def _attention(config: ModelConfig, batch: int, new: int, context: int, p: Precisions) -> Cost:
    """One layer's attention over the cache: ``new`` queries per sequence, ``context`` keys.

    Causal, aligned bottom-right (the last query sees every key). Compulsory
    traffic: the new queries read, every cached key and value read once (a
    flash-decoding style kernel reads the cache once per KV head, whatever
    the group of query heads sharing it), the output written.
    """
    a, s_kv, d = bytes_per_element(p.activations), bytes_per_element(p.kv), config.d
    pairs = batch * config.heads * _causal_pairs(new, context)
    return Cost(
        flops=pairs * (4 * d + SOFTMAX_FLOPS_PER_ELEMENT),
        bytes_read=batch * (a * config.q_dim * new + 2 * s_kv * config.kv_dim * context),
        bytes_written=batch * a * config.q_dim * new,
        vector_flops=pairs * (SOFTMAX_FLOPS_PER_ELEMENT - 1),
        special_flops=pairs,
    )


def layer_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
) -> list[tuple[str, Cost]]:
    """One decoder layer for ``batch`` sequences, ``new`` tokens each, over ``context`` keys.

    Prefill is ``new = context = prompt``; a decode step is ``new = 1`` with
    ``context`` the cached tokens plus the new one. The new keys and values
    leave the QKV projection with its output and are then copied into the
    cache (read in the activations' precision, written in the cache's), a
    kernel of their own (``"KV cache write"``, as vLLM's ``reshape_and_cache``).
    An MoE MLP reads the weights of the :func:`expected_experts` a step touches.

    Examples
    --------
    >>> ops = dict(layer_ops(model("llama-2-7b"), 1, 1, 4096))
    >>> ops["attention"].bytes_read     # the whole cache of one layer: 2 x 4096 x 4096 x 2
    67117056
    """
    p = precisions or Precisions()
    batch = _validate.size("batch", batch)
    new = _validate.size("new", new)
    context = _validate.size("context", context)
    if new > context:
        raise ValueError(f"new ({new}) must be <= context ({context})")
    tokens, h, a = batch * new, config.hidden, p.activations
    qkv = _linear(tokens, h, config.q_dim + 2 * config.kv_dim, p)
    new_kv = batch * new * 2 * config.kv_dim
    kv_write = Cost(0, new_kv * bytes_per_element(a), new_kv * bytes_per_element(p.kv), 1)
    ops = [
        ("attention norm", rmsnorm(tokens, h, a)),
        ("QKV projection", qkv),
        ("KV cache write", kv_write),
        ("attention", _attention(config, batch, new, context, p)),
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
    if config.gated:
        ops.append(("activation (SwiGLU)", swiglu(tokens * k * config.ffn, a)))
    ops.append(("MLP down" if config.experts == 1 else "experts down", down))
    ops.append(("residual add (MLP)", residual_add(tokens * h, a)))
    return ops


def step_ops(
    config: ModelConfig,
    batch: int,
    new: int,
    context: int,
    precisions: Precisions | None = None,
) -> list[tuple[str, Cost]]:
    """The whole model for one step: embedding, every layer, final norm, LM head.

    Each layer's operators are summed over the layers (``"<op> (x layers)"``);
    the LM head computes the logits of each sequence's last position only.

    Examples
    --------
    >>> names = [n for n, _ in step_ops(model("llama-2-7b"), 1, 1, 4096)]
    >>> names[0], names[-1]
    ('embedding', 'LM head')
    """
    p = precisions or Precisions()
    if context > config.max_context:
        raise ValueError(
            f"context ({context}) must be <= the model's context window ({config.max_context})"
        )
    a = bytes_per_element(p.activations)
    tokens = batch * new
    embed = Cost(0, p.weight_bytes(tokens * config.hidden), a * tokens * config.hidden, 1)
    layer = layer_ops(config, batch, new, context, p)
    ops = [("embedding", embed)]
    ops += [(f"{name} (x {config.layers})", cost * config.layers) for name, cost in layer]
    ops += [
        ("final norm", rmsnorm(tokens, config.hidden, p.activations)),
        ("LM head", _linear(batch, config.hidden, config.vocab, p)),
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

    The compute ceilings are those of the activations' precision, in which the
    products run (quantized weights are widened on the fly).
    """
    times = {name: time_bound(cost, device, precisions.activations) for name, cost in ops}
    return StepBound(
        seconds=sum(t.seconds for t in times.values()),
        by_op=MappingProxyType({n: t.seconds for n, t in times.items()}),
        compute=sum(t.seconds for t in times.values() if t.bound == "compute"),
        memory=sum(t.seconds for t in times.values() if t.bound == "memory"),
    )


def weight_bytes(config: ModelConfig, precisions: Precisions | None = None) -> int:
    """Bytes of all the model's weights in the weights' precision (byte).

    Examples
    --------
    >>> round(weight_bytes(model("llama-2-7b")) / 1e9, 2)
    13.48
    """
    return (precisions or Precisions()).weight_bytes(config.parameters())


def max_batch(
    config: ModelConfig,
    device: Hardware,
    context: int,
    precisions: Precisions | None = None,
    *,
    reserve: float = MEMORY_RESERVE,
) -> int:
    """The most sequences of ``context`` tokens whose KV cache fits beside the weights.

    ``floor(((1 - reserve) x capacity - weight bytes) / (context x KV bytes per token))``;
    0 when even the weights do not fit.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> max_batch(model("llama-2-7b"), hardware("h100-sxm"), 4096)   # (72e9 - 13.5e9) / 2.1 GB
    27
    """
    p = precisions or Precisions()
    if device.memory_capacity is None:
        raise ValueError(f"{device.key} has no published memory capacity")
    context = _validate.size("context", context)
    reserve = _validate.non_negative("reserve", reserve)
    if reserve >= 1:
        raise ValueError(f"reserve must be below 1, got {reserve}")
    free = (1 - reserve) * device.memory_capacity - weight_bytes(config, p)
    return max(0, math.floor(free / (context * kv_bytes_per_token(config, p))))


def decode_batch_to_ridge(
    config: ModelConfig, device: Hardware, precisions: Precisions | None = None
) -> float:
    """Decode batch at which the MLP's up projection reaches the matrix ridge point.

    A weight-streaming GEMM, ``(B x k) @ (k x n)``, has intensity
    ``2Bkn / (w kn + a B (k + n))`` with ``w`` weight and ``a`` activation
    bytes per element; setting it to the ridge ``R`` gives
    ``B* = R w kn / (2kn - R a (k + n))``, about ``R w / 2``. In an MoE
    layer each expert's GEMM gets about ``B k / E`` of the rows (uniform
    routing), so the batch is ``E / k`` times larger.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> round(decode_batch_to_ridge(model("llama-2-7b"), hardware("h100-sxm")))
    323
    """
    p = precisions or Precisions()
    k, n = config.hidden, (2 if config.gated else 1) * config.ffn
    ridge = device.ridge_point(p.activations)
    w = p.weight_bytes(k * n) / (k * n)
    a = bytes_per_element(p.activations)
    denominator = 2 * k * n - ridge * a * (k + n)
    rows = ridge * w * k * n / denominator if denominator > 0 else math.inf
    return rows * config.experts / config.experts_per_token


def speculative_tokens(acceptance: float, draft: int) -> float:
    """Expected tokens one verification step yields: ``(1 - a^(g+1)) / (1 - a)``.

    With ``g`` draft tokens each accepted with probability ``a`` (Leviathan
    et al. 2023), the target model checks ``g + 1`` positions in one step.

    Examples
    --------
    >>> round(speculative_tokens(0.8, 4), 3)
    3.362
    >>> speculative_tokens(0.0, 4)
    1.0
    """
    a = _validate.non_negative("acceptance", acceptance)
    if a >= 1:
        raise ValueError(f"acceptance must be below 1, got {acceptance}")
    g = _validate.size("draft", draft, minimum=0)
    return (1 - a ** (g + 1)) / (1 - a)


# --------------------------------------------------------------------------
# The catalog


def _key(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").split())


_FIELDS = (
    "hidden",
    "layers",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "head_dim",
    "gated",
    "tied_embeddings",
    "max_context",
    "experts",
    "experts_per_token",
)


@functools.cache
def models() -> Mapping[str, ModelConfig]:
    """Every model of the data file, by key."""
    text = resources.files(__package__).joinpath("data/models.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = {k: Source(key=k, **v) for k, v in data["sources"].items()}
    out = {}
    for key, entry in data["models"].items():
        if entry.get("source") not in sources:
            raise ValueError(f"models.toml: {key} names no known source")
        fields = {f: entry[f] for f in _FIELDS if f in entry}
        out[key] = ModelConfig(
            key=key, name=entry["name"], source=sources[entry["source"]], **fields
        )
    return MappingProxyType(out)


def model(name: str) -> ModelConfig:
    """A catalog model by name; case, spaces and underscores do not matter.

    Examples
    --------
    >>> model("Mixtral 8x7B").experts
    8
    >>> model("gpt-5")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'gpt-5'; allowed: llama-2-7b, ...
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a model name such as 'llama-2-7b', got {name!r}")
    catalog = models()
    key = _key(name)
    if key not in catalog:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(catalog)}")
    return catalog[key]


def adhoc_model(name: str, **sizes: int | bool) -> ModelConfig:
    """A model of your own sizes (the fields of :class:`ModelConfig`).

    Examples
    --------
    >>> tiny = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    >>> tiny.kv_dim, kv_bytes_per_token(tiny)
    (128, 1024)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    unknown = set(sizes) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(_FIELDS)}")
    return ModelConfig(key=_key(name), name=name, **sizes)  # type: ignore[arg-type]
