"""The suites: which sizes of which operators one run measures, on CPU or CUDA.

Examples
--------
>>> spec = suite_spec("cpu", "tiny")
>>> spec.gemm_sizes, spec.gemm_precisions
((32, 64, 128), ('fp32', 'bf16'))
>>> [c.id for c in cases("cpu", "tiny")][2:4]
['triad_inplace/fp32/add_(alpha)/numel=65536', 'gemm/fp32/mm/m=32,k=32,n=32']
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import _validate
from . import machine
from .cases import ADAMW_FLAGS, ATTENTION_IMPLS, BANDWIDTH_KINDS, names
from .cases import make as make_case
from .registry import Case

DEVICES = ("cpu", "cuda")
"""Devices the suite runs on."""

SUITES = ("tiny", "quick", "full")
"""Size presets of a run: ``tiny`` for tests, ``quick`` for a first look, ``full``."""

SMALL_GEMM = (32, 128, 128)
"""``(m, k, n)`` of the reference chapter's small GEMM, measured in every suite."""

CEILING_CACHE_MULTIPLE = 8
"""The bandwidth ceilings' copy touches at least this many times the last-level
cache (CPU) or L2 (GPU), so that neither read nor write can be served by it."""

FALLBACK_CACHE_BYTES = 64 * 2**20
"""Cache size assumed where the device does not report one (byte)."""


@dataclass(frozen=True)
class Suite:
    """The sizes one run measures.

    Attributes
    ----------
    name : str
        ``"tiny"``, ``"quick"`` or ``"full"``.
    gemm_sizes : tuple of int
        Square GEMM sizes ``n`` (``n x n`` times ``n x n``); :data:`SMALL_GEMM`
        is added.
    gemm_precisions : tuple of str
        Precisions of the GEMM sweep; each gets a measured peak.
    elementwise_sizes : tuple of int
        Elements per tensor for every elementwise operator.
    elementwise_precisions : tuple of str
    norm_shapes : tuple of (rows, d)
        Shapes for every norm (RMSNorm, and softmax over the last dimension).
    norm_precisions : tuple of str
    adamw : (params, tensors)
        Parameters of the AdamW step, spread evenly over ``tensors`` tensors.
    attention_shapes : tuple of (batch, heads, seq, head_dim)
        Self-attention shapes (``seq_q = seq_k``), no mask.
    attention_precision : str
    min_run_time : float
        Timed seconds per case, at least (second).
    ceiling_numel : int or None
        Elements per array of the bandwidth ceilings; None sizes them from the cache
        (:data:`CEILING_CACHE_MULTIPLE`).
    """

    name: str
    gemm_sizes: tuple[int, ...]
    gemm_precisions: tuple[str, ...]
    elementwise_sizes: tuple[int, ...]
    elementwise_precisions: tuple[str, ...]
    norm_shapes: tuple[tuple[int, int], ...]
    norm_precisions: tuple[str, ...]
    adamw: tuple[int, int]
    attention_shapes: tuple[tuple[int, int, int, int], ...]
    attention_precision: str
    min_run_time: float
    ceiling_numel: int | None = None


def _powers(lo: int, hi: int, step: int = 1) -> tuple[int, ...]:
    return tuple(2**e for e in range(lo, hi + 1, step))


_TINY_CPU = Suite(
    name="tiny",
    gemm_sizes=(32, 64, 128),
    gemm_precisions=("fp32", "bf16"),
    elementwise_sizes=(2**10, 2**14),
    elementwise_precisions=("fp32",),
    norm_shapes=((64, 256),),
    norm_precisions=("fp32",),
    adamw=(2**14, 4),
    attention_shapes=((1, 2, 128, 32),),
    attention_precision="fp32",
    min_run_time=0.002,
    ceiling_numel=2**16,
)

_SUITES: dict[tuple[str, str], Suite] = {
    ("cpu", "tiny"): _TINY_CPU,
    ("cpu", "quick"): Suite(
        name="quick",
        gemm_sizes=_powers(6, 10),
        gemm_precisions=("fp32", "bf16"),
        elementwise_sizes=(2**14, 2**18, 2**22, 2**25),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((1024, 4096),),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**23, 8),
        attention_shapes=((1, 4, 1024, 64),),
        attention_precision="fp32",
        min_run_time=0.08,
    ),
    ("cpu", "full"): Suite(
        name="full",
        gemm_sizes=_powers(6, 12),
        gemm_precisions=("fp32", "bf16"),
        elementwise_sizes=_powers(10, 26, 2),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((512, 4096), (2048, 4096)),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**24, 16),
        attention_shapes=((1, 8, 512, 64), (1, 8, 1024, 64), (1, 8, 2048, 64)),
        attention_precision="fp32",
        min_run_time=0.4,
    ),
    # the flash backend wants a half-precision input and a head_dim it supports
    ("cuda", "tiny"): dataclasses.replace(
        _TINY_CPU, attention_shapes=((1, 2, 128, 64),), attention_precision="bf16"
    ),
    ("cuda", "quick"): Suite(
        name="quick",
        gemm_sizes=_powers(8, 12),
        gemm_precisions=("fp32", "tf32", "bf16", "fp16"),
        elementwise_sizes=_powers(16, 28, 4),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((4096, 4096),),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**24, 8),
        attention_shapes=((4, 16, 1024, 128), (4, 16, 4096, 128)),
        attention_precision="bf16",
        min_run_time=0.05,
    ),
    ("cuda", "full"): Suite(
        name="full",
        gemm_sizes=_powers(7, 13),
        gemm_precisions=("fp32", "tf32", "bf16", "fp16"),
        elementwise_sizes=_powers(12, 28, 2),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((4096, 4096), (16384, 8192)),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**26, 8),
        attention_shapes=tuple((4, 16, s, 128) for s in (1024, 2048, 4096, 8192)),
        attention_precision="bf16",
        min_run_time=0.15,
    ),
}


def suite_spec(device: str = "cpu", suite: str = "quick") -> Suite:
    """The sizes of a suite on a device.

    Parameters
    ----------
    device : {"cpu", "cuda"}
    suite : {"tiny", "quick", "full"}

    Examples
    --------
    >>> suite_spec("cuda", "full").gemm_precisions
    ('fp32', 'tf32', 'bf16', 'fp16')
    >>> suite_spec("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device must be one of cpu, cuda; got 'tpu'
    """
    device = _validate.choice("device", device, DEVICES)
    suite = _validate.choice("suite", suite, SUITES)
    return _SUITES[device, suite]


def ceiling_numel(cache_bytes: int) -> int:
    """Elements per fp32 array of the bandwidth probes: a power of two, the copy's
    two arrays at least :data:`CEILING_CACHE_MULTIPLE` times ``cache_bytes``.

    Examples
    --------
    >>> ceiling_numel(32 * 2**20)    # 8 * 32 MiB / 8 bytes per element = 2^25
    33554432
    """
    cache_bytes = _validate.size("cache_bytes", cache_bytes)
    return 2 ** math.ceil(math.log2(CEILING_CACHE_MULTIPLE * cache_bytes / 8))


def cases(
    device: str = "cpu", suite: str = "quick", *, cache_bytes: int | None = None
) -> list[Case]:
    """The cases of a suite, in the order a run measures them: ceilings first.

    Every registered operator of a family takes the suite's sizes for that
    family, so a newly registered elementwise operator or norm is measured
    without a change here.

    Parameters
    ----------
    device : {"cpu", "cuda"}
    suite : {"tiny", "quick", "full"}
    cache_bytes : int, optional
        Last-level cache or L2 (byte) that sizes the bandwidth ceilings; read
        from the device if omitted (CPU) or :data:`FALLBACK_CACHE_BYTES`.
    """
    spec = suite_spec(device, suite)
    numel = spec.ceiling_numel
    if numel is None:
        if cache_bytes is None:
            found = machine.cpu_cache_bytes() if device == "cpu" else None
            cache_bytes = found or FALLBACK_CACHE_BYTES
        numel = ceiling_numel(cache_bytes)
    out = [make_case(kind, (numel,), "fp32") for kind in BANDWIDTH_KINDS]
    for precision in spec.gemm_precisions:
        for m, k, n in [(n, n, n) for n in spec.gemm_sizes] + [SMALL_GEMM]:
            out.append(make_case("gemm", (m, k, n), precision))
    for name in names("elementwise"):
        for precision in spec.elementwise_precisions:
            out += [make_case(name, (n,), precision) for n in spec.elementwise_sizes]
    for precision in spec.norm_precisions:
        for name in names("norm"):
            out += [make_case(name, shape, precision) for shape in spec.norm_shapes]
    params, tensors = spec.adamw
    for impl in ADAMW_FLAGS:
        out.append(make_case("adamw", (params, tensors), "fp32", impl))
    for b, h, s, d in spec.attention_shapes:
        for impl in ATTENTION_IMPLS:
            out.append(make_case("attention", (b, h, s, s, d), spec.attention_precision, impl))
    return out
