"""Measure a device: its ceilings, and the book's operators against the model.

A run measures the ceilings first (memory bandwidth from a large copy, a
STREAM triad and the triad in place; peak FLOP/s per precision as the best
GEMM of a sweep), then
each operator case of the suite: GEMMs, elementwise add and ReLU, RMSNorm,
softmax, AdamW (loop, foreach, fused) and attention (materialized and SDPA).
Each case carries the model's FLOPs and bytes from :mod:`roofline_book.ops`.

Method, per case:

1. Correct before fast: the result is compared with a float64 reference
   (``torch.allclose``); a wrong result is recorded as ``failed``, not timed.
2. Warm up, then time. On the CPU, ``torch.utils.benchmark.Timer`` with
   ``adaptive_autorange`` (blocks of calls long enough for the timer's
   overhead to vanish; at least :data:`MIN_SAMPLES` blocks, more while they
   disagree), with torch's threads. On CUDA, CUDA events
   around each sample; memory-bound cases write a buffer larger than the L2
   before every call (outside the timed region), so no call finds its data
   left in the cache by the one before.
3. Report the median and interquartile range of the per-call times, the
   number of samples (``reps``) and calls per sample (``inner``).

A case that does not fit in memory, or that this PyTorch or device does not
support, is recorded as ``skipped`` with the reason. The result is a run (see
:mod:`roofline_book.runfile`). torch is imported inside the functions, so
``import roofline_book`` stays light.

Examples
--------
>>> spec = suite_spec("cpu", "tiny")
>>> spec.gemm_sizes, spec.gemm_precisions
((32, 64, 128), ('fp32', 'bf16'))
>>> [c.id for c in cases("cpu", "tiny")][2:4]
['triad_inplace/fp32/add_(alpha)/numel=65536', 'gemm/fp32/mm/m=32,k=32,n=32']
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate, ops, runfile
from .dtypes import bytes_per_element
from .ops import Cost
from .units import si

DEVICES = ("cpu", "cuda")
"""Devices the suite runs on."""

SMALL_GEMM = (32, 128, 128)
"""``(m, k, n)`` of the reference chapter's small GEMM, measured in every suite."""

CEILING_CACHE_MULTIPLE = 8
"""The bandwidth ceilings' copy touches at least this many times the last-level
cache (CPU) or L2 (GPU), so that neither read nor write can be served by it."""

FALLBACK_CACHE_BYTES = 64 * 2**20
"""Cache size assumed where the device does not report one (byte)."""

MIN_SAMPLES = 5
"""Fewest timed samples behind a median on the CPU."""

CPU_IQR_TARGET = 0.1
"""On the CPU, sampling goes on while the IQR exceeds this fraction of the median ..."""

CPU_MAX_RUN_FACTOR = 4
"""... up to this many times the least timed duration."""

CUDA_MIN_REPS = 10
"""Fewest timed samples behind a median on CUDA."""

CUDA_MAX_REPS = 2000
"""Most timed samples per case on CUDA."""

CUDA_SAMPLE_S = 1e-3
"""On CUDA, calls that need no cache flush are batched until a sample lasts
this long (second), so the events' own cost is negligible."""

FLUSH_MIN_BYTES = 256 * 2**20
"""Smallest buffer written between calls to flush the GPU's L2 (byte)."""

MEMORY_HEADROOM = 0.5
"""A case is skipped when its tensors would take more than this fraction of the
memory free on the device: on Linux an over-committed CPU allocation ends in
the OOM killer rather than an exception."""

CHECK_ROWS = 64
"""Rows (GEMM, norms) or query rows (attention) compared with the reference."""

CHECK_ELEMENTS = 2**20
"""Elementwise results are compared on an evenly strided sample of this many values."""

RTOL = {"fp64": 1e-12, "fp32": 1e-4, "tf32": 5e-3, "bf16": 1.6e-2, "fp16": 2e-3}
"""Relative tolerance of the correctness check per precision: a few units in the
last place of the result (bf16 keeps 8 significant bits, fp16 11, tf32 11 in
its products)."""

TRIAD_SCALAR = 3.0
"""The ``s`` of the triad ``a = b + s * c``."""

_WARMUP_S = 0.02  # warm-up calls continue until this long has passed (at least one call)
_WARMUP_CALLS = 10  # ... or this many calls


# --------------------------------------------------------------------------
# Suites


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
        Elements per tensor for add and ReLU.
    elementwise_precisions : tuple of str
    norm_shapes : tuple of (rows, d)
        Shapes for RMSNorm and softmax (softmax over the last dimension).
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
    suite = _validate.choice("suite", suite, runfile.SUITES)
    return _SUITES[device, suite]


# --------------------------------------------------------------------------
# Cases


class Unsupported(Exception):
    """This PyTorch or this device cannot run the case; the message says why."""


class Incorrect(Exception):
    """The case's result disagrees with its reference; the message gives the error."""


@dataclass
class Prepared:
    """A case's tensors, allocated: the call to time and its correctness check.

    Attributes
    ----------
    fn : callable
        The timed call; no arguments.
    check : callable
        Calls ``fn`` once and compares its result with a reference; returns the
        run file's ``check`` record or raises :class:`Incorrect`.
    close : callable
        Restores any global setting the case changed.
    note : str
        What a reader of the run should know about how the case ran.
    """

    fn: Callable[[], object]
    check: Callable[[], dict[str, Any]]
    close: Callable[[], None] = field(default=lambda: None)
    note: str = ""


@dataclass(frozen=True)
class Case:
    """One operator case of a suite.

    Attributes
    ----------
    name : str
        Operator, one of :data:`roofline_book.runfile.OPERATORS`.
    shape : tuple of (str, int)
        Sizes, named as the :mod:`roofline_book.ops` function names them.
    precision : str
    impl : str
        How it is computed (a torch function, or an implementation the model
        distinguishes: ``loop``/``foreach``/``fused``, ``materialized``/``sdpa``).
    cost : Cost
        The model's FLOPs and bytes.
    footprint : int
        Bytes the case allocates, its check included (byte).
    build : callable
        ``build(torch.device) -> Prepared``.
    """

    name: str
    shape: tuple[tuple[str, int], ...]
    precision: str
    impl: str
    cost: Cost
    footprint: int
    build: Callable[[Any], Prepared] = field(compare=False, repr=False)

    @property
    def id(self) -> str:
        """Unique within a run: ``name/precision/impl/size=value,...``."""
        sizes = ",".join(f"{k}={v}" for k, v in self.shape)
        return f"{self.name}/{self.precision}/{self.impl}/{sizes}"

    @property
    def memory_bound(self) -> bool:
        """Whether its time is a matter of memory traffic (all but GEMM): flush caches."""
        return self.name != "gemm"


def _dtype(precision: str):
    import torch

    table = {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
    }
    if precision not in table:
        raise Unsupported(f"the suite has no {precision} tensors; it runs {', '.join(table)}")
    return table[precision]


def _generator(device):
    import torch

    return torch.Generator(device=device).manual_seed(0)


def _randn(shape, precision: str, device, gen):
    import torch

    return torch.randn(shape, generator=gen, device=device, dtype=_dtype(precision))


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compare(out, ref, precision: str, *, scale: float = 1.0, reference: str = "fp64") -> dict:
    """Compare a result with its reference; the run file's ``check`` record.

    ``torch.allclose(out, ref, rtol, atol)`` with ``rtol = RTOL[precision]``
    and ``atol = rtol * scale``, ``scale`` being the typical magnitude of the
    values (``sqrt(k)`` for a GEMM of random normal inputs).

    Raises
    ------
    Incorrect
        With the largest absolute error, if the two disagree.

    Examples
    --------
    >>> import torch
    >>> compare(torch.ones(3), torch.ones(3, dtype=torch.float64), "fp32")["max_abs_err"]
    0.0
    >>> compare(torch.zeros(3), torch.ones(3, dtype=torch.float64), "fp32")
    Traceback (most recent call last):
    ...
    roofline_book.bench.Incorrect: max |error| 1 against the fp64 reference exceeds rtol=0.0001, ...
    """
    import torch

    if precision not in RTOL:
        raise ValueError(f"precision must be one of {', '.join(RTOL)}; got {precision!r}")
    rtol = RTOL[precision]
    atol = rtol * scale
    got = out.detach().to(device=ref.device, dtype=torch.float64)
    if got.shape != ref.shape:
        raise Incorrect(f"result has shape {tuple(got.shape)}, reference {tuple(ref.shape)}")
    error = float((got - ref).abs().max()) if got.numel() else 0.0
    if not torch.allclose(got, ref, rtol=rtol, atol=atol) or not math.isfinite(error):
        raise Incorrect(
            f"max |error| {error:.3g} against the {reference} reference "
            f"exceeds rtol={rtol:g}, atol={atol:g}"
        )
    return {"reference": reference, "max_abs_err": error, "rtol": rtol, "atol": atol}


def _strided(t):
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // CHECK_ELEMENTS)]


def gemm_case(m: int, k: int, n: int, precision: str = "fp32") -> Case:
    """``torch.mm(a, b, out=c)`` with ``a`` (m, k) and ``b`` (k, n); model :func:`ops.gemm`.

    ``"tf32"`` runs float32 tensors with ``torch.set_float32_matmul_precision("high")``
    (TF32 tensor cores, CUDA only); ``"fp32"`` with ``"highest"`` (true FP32).
    The setting is restored afterwards.
    """
    cost = ops.gemm(m, k, n, precision)
    rows = min(m, CHECK_ROWS)
    footprint = cost.bytes + 8 * (rows * k + k * n + rows * n)

    def build(device) -> Prepared:
        import torch

        if precision == "tf32" and device.type != "cuda":
            raise Unsupported("tf32 is a CUDA tensor-core mode")
        gen = _generator(device)
        a = _randn((m, k), precision, device, gen)
        b = _randn((k, n), precision, device, gen)
        c = torch.empty((m, n), device=device, dtype=a.dtype)
        try:
            before = torch.get_float32_matmul_precision()
        except RuntimeError:  # torch >= 2.9 refuses to read a mix of its old and new settings
            before = None
        setting = {"tf32": "high", "fp32": "highest"}.get(precision, before)
        if setting is not None:
            torch.set_float32_matmul_precision(setting)

        def close() -> None:
            if before is not None:
                torch.set_float32_matmul_precision(before)

        def fn() -> None:
            torch.mm(a, b, out=c)

        def check() -> dict:
            fn()
            ref = a[:rows].double() @ b.double()
            return compare(c[:rows], ref, precision, scale=math.sqrt(k))

        note = f"float32_matmul_precision={setting}" if precision in ("fp32", "tf32") else ""
        return Prepared(fn, check, close, note)

    shape = (("m", m), ("k", k), ("n", n))
    return Case("gemm", shape, precision, "mm", cost, footprint, build)


def _elementwise_parts(name: str, numel: int, precision: str) -> tuple[str, Cost, int]:
    """The impl label, the model's cost and the number of arrays of a streaming case."""
    if name == "copy":
        cost = ops.elementwise(numel, precision, inputs=1, outputs=1, flops_per_element=0)
        return "copy_", cost, 2
    if name in ("triad", "triad_inplace"):
        cost = ops.elementwise(numel, precision, inputs=2, outputs=1, flops_per_element=2)
        return ("add(alpha)", cost, 3) if name == "triad" else ("add_(alpha)", cost, 2)
    if name == "add":
        return "add", ops.add(numel, precision), 3
    if name == "relu":
        return "clamp_min", ops.relu(numel, precision), 2
    raise ValueError(f"name must be one of copy, triad, triad_inplace, add, relu; got {name!r}")


def elementwise_case(name: str, numel: int, precision: str = "fp32") -> Case:
    """A streaming elementwise operator over ``numel`` elements.

    ``copy``: ``dst.copy_(src)``; ``triad``: ``torch.add(b, c, alpha=3, out=a)``;
    ``triad_inplace``: ``a.add_(b, alpha=3)``; ``add``: ``torch.add(x, y,
    out=z)``; ``relu``: ``torch.clamp_min(x, 0, out=y)``, which is how
    ``torch.relu`` computes (it has no ``out=``).

    Outputs are preallocated, which keeps the allocator out of the time: on
    the CPU a fresh large output is fresh pages from the kernel, each first
    written through a page fault. On a CPU, a store to an array not in cache
    first reads the line (write-allocate), traffic the model does not count;
    the in-place triad stores to lines it has just read, so it shows the
    memory's bandwidth without that extra read.

    Models: :func:`ops.add`, :func:`ops.relu`, and :func:`ops.elementwise` for
    copy (one read, one write, no FLOP) and both triads (two reads, one write,
    two FLOPs per element).
    """
    impl, cost, arrays = _elementwise_parts(name, numel, precision)
    footprint = cost.bytes + 8 * (arrays + 1) * min(numel, CHECK_ELEMENTS)

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((numel,), precision, device, gen)
        y = _randn((numel,), precision, device, gen) if name not in ("copy", "relu") else None
        out = x if name == "triad_inplace" else torch.empty_like(x)
        fn = {
            "copy": lambda: out.copy_(x),
            "triad": lambda: torch.add(x, y, alpha=TRIAD_SCALAR, out=out),
            "triad_inplace": lambda: x.add_(y, alpha=TRIAD_SCALAR),
            "add": lambda: torch.add(x, y, out=out),
            "relu": lambda: torch.clamp_min(x, 0, out=out),
        }[name]

        def check() -> dict:
            xs = _strided(x).to(torch.float64, copy=True)  # before the call, which may write x
            ys = None if y is None else _strided(y).double()
            fn()
            if name == "copy":
                ref = xs
            elif name == "relu":
                ref = xs.clamp_min(0)
            else:
                ref = xs + (1.0 if name == "add" else TRIAD_SCALAR) * ys
            return compare(_strided(out), ref, precision, scale=TRIAD_SCALAR)

        return Prepared(fn, check)

    return Case(name, (("numel", numel),), precision, impl, cost, footprint, build)


RMSNORM_EPS = 1e-6
"""The epsilon of the measured RMSNorm."""


def rmsnorm_case(rows: int, d: int, precision: str = "fp32") -> Case:
    """``torch.nn.functional.rms_norm`` over the last dimension; model :func:`ops.rmsnorm`.

    Needs torch >= 2.4 (skipped before). Each call allocates its output, as a
    model's forward pass does.
    """
    cost = ops.rmsnorm(rows, d, precision)
    footprint = (
        cost.bytes + rows * d * bytes_per_element(precision) + 8 * 3 * min(rows, CHECK_ROWS) * d
    )

    def build(device) -> Prepared:
        import torch

        rms_norm = getattr(torch.nn.functional, "rms_norm", None)
        if rms_norm is None:
            raise Unsupported(
                f"torch.nn.functional.rms_norm needs torch >= 2.4 ({torch.__version__})"
            )
        gen = _generator(device)
        x = _randn((rows, d), precision, device, gen)
        w = _randn((d,), precision, device, gen)
        box = {}

        def fn() -> None:
            box["y"] = rms_norm(x, (d,), w, RMSNORM_EPS)

        def check() -> dict:
            fn()
            r = min(rows, CHECK_ROWS)
            xs = x[:r].double()
            ref = xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + RMSNORM_EPS) * w.double()
            return compare(box["y"][:r], ref, precision)

        return Prepared(fn, check, note="output allocated per call")

    return Case(
        "rmsnorm", (("rows", rows), ("d", d)), precision, "rms_norm", cost, footprint, build
    )


def softmax_case(rows: int, cols: int, precision: str = "fp32") -> Case:
    """``torch.softmax(x, -1, out=y)``; model :func:`ops.softmax`."""
    cost = ops.softmax(rows, cols, precision)
    footprint = cost.bytes + 8 * 2 * min(rows, CHECK_ROWS) * cols

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((rows, cols), precision, device, gen)
        y = torch.empty_like(x)

        def fn() -> None:
            torch.softmax(x, -1, out=y)

        def check() -> dict:
            fn()
            r = min(rows, CHECK_ROWS)
            return compare(y[:r], torch.softmax(x[:r].double(), -1), precision, scale=1 / cols)

        return Prepared(fn, check)

    shape = (("rows", rows), ("cols", cols))
    return Case("softmax", shape, precision, "softmax", cost, footprint, build)


ADAMW_HYPER = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2}
"""Hyperparameters of the measured AdamW step (they do not change its cost)."""

_ADAMW_FLAGS = {
    "loop": {"foreach": False},
    "foreach": {"foreach": True},
    "fused": {"fused": True},
}


def adamw_case(params: int, tensors: int, impl: str, precision: str = "fp32") -> Case:
    """One ``torch.optim.AdamW.step`` over ``params`` parameters in ``tensors`` equal tensors.

    ``impl``: ``"loop"`` (``foreach=False``), ``"foreach"`` (``foreach=True``)
    or ``"fused"`` (``fused=True``). Model :func:`ops.adamw`. The check runs
    one step against a float64 ``foreach=False`` AdamW from the same state.
    """
    impl = _validate.choice("impl", impl, tuple(_ADAMW_FLAGS))
    if params % tensors:
        raise ValueError(f"params ({params}) must be a multiple of tensors ({tensors})")
    cost = ops.adamw(params, impl, tensors=tensors, param_dtype=precision)
    footprint = 4 * params * bytes_per_element(precision) + 4 * 8 * params

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        size = params // tensors
        weights = [
            torch.nn.Parameter(_randn((size,), precision, device, gen)) for _ in range(tensors)
        ]
        for w in weights:
            w.grad = _randn((size,), precision, device, gen)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                opt = torch.optim.AdamW(weights, **ADAMW_HYPER, **_ADAMW_FLAGS[impl])
        except (RuntimeError, ValueError, TypeError) as exc:
            raise Unsupported(f"AdamW({_flags(impl)}) on {device.type}: {exc}") from None
        if caught:
            raise Unsupported(f"AdamW({_flags(impl)}) warns: {caught[0].message}")

        def fn() -> None:
            opt.step()

        def check() -> dict:
            ref = [torch.nn.Parameter(w.detach().double().clone()) for w in weights]
            for r, w in zip(ref, weights, strict=True):
                r.grad = w.grad.double()
            ref_opt = torch.optim.AdamW(ref, **ADAMW_HYPER, foreach=False)
            try:
                fn()
            except RuntimeError as exc:
                if _is_out_of_memory(exc):
                    raise
                raise Unsupported(f"AdamW({_flags(impl)}).step on {device.type}: {exc}") from None
            ref_opt.step()
            got = torch.cat([w.detach().reshape(-1) for w in weights])
            want = torch.cat([r.detach().reshape(-1) for r in ref])
            return compare(got, want, precision, reference="fp64 AdamW(foreach=False)")

        return Prepared(fn, check)

    shape = (("params", params), ("tensors", tensors))
    return Case("adamw", shape, precision, impl, cost, footprint, build)


def _flags(impl: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in _ADAMW_FLAGS[impl].items())


ATTENTION_IMPLS = ("materialized", "sdpa")
"""``materialized``: ``S = scale * Q K^T`` (baddbmm), ``P = softmax(S)``, ``O = P V``
(bmm), each into a preallocated tensor; ``sdpa``:
``torch.nn.functional.scaled_dot_product_attention``, on CUDA with the flash
backend forced."""


def attention_case(
    batch: int, heads: int, seq: int, head_dim: int, impl: str, precision: str = "bf16"
) -> Case:
    """Self-attention forward, no mask, ``seq_q = seq_k = seq``; model :func:`ops.attention`.

    ``impl="materialized"`` is modelled as ``impl="materialized"`` (three
    kernels, the scores written to memory and read back), ``"sdpa"`` as
    ``impl="flash"``.
    """
    impl = _validate.choice("impl", impl, ATTENTION_IMPLS)
    model_impl = "materialized" if impl == "materialized" else "flash"
    cost = ops.attention(batch, heads, seq, seq, head_dim, precision, impl=model_impl)
    s = bytes_per_element(precision)
    bh = batch * heads
    rows = min(seq, CHECK_ROWS)
    footprint = 4 * bh * seq * head_dim * s + 8 * bh * (2 * seq * head_dim + 2 * rows * seq)
    if impl == "materialized":
        footprint += 2 * bh * seq * seq * s

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        q, k, v = (_randn((batch, heads, seq, head_dim), precision, device, gen) for _ in range(3))
        scale = 1.0 / math.sqrt(head_dim)
        close, note = lambda: None, ""
        if impl == "materialized":
            q3, k3, v3 = (t.reshape(bh, seq, head_dim) for t in (q, k, v))
            kt = k3.transpose(1, 2)
            scores = torch.empty((bh, seq, seq), device=device, dtype=q.dtype)
            probs = torch.empty_like(scores)
            out = torch.empty_like(q3)

            def fn() -> None:
                scores.baddbmm_(q3, kt, beta=0.0, alpha=scale)
                torch.softmax(scores, -1, out=probs)
                torch.bmm(probs, v3, out=out)

            def result():
                return out

        else:
            sdpa = torch.nn.functional.scaled_dot_product_attention
            if device.type == "cuda":
                context = _flash_only()
                context.__enter__()

                def close() -> None:
                    context.__exit__(None, None, None)

                note = "flash backend forced"
            else:
                note = "default CPU backend"
            box = {}

            def fn() -> None:
                box["o"] = sdpa(q, k, v)

            def result():
                return box["o"].reshape(bh, seq, head_dim)

        def check() -> dict:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    fn()
            except RuntimeError as exc:
                if _is_out_of_memory(exc):
                    raise
                why = "; ".join(str(w.message) for w in caught) or str(exc)
                raise Unsupported(
                    f"{impl} attention in {precision} on {device.type}: {why}"
                ) from None
            qd, kd, vd = (t.reshape(bh, seq, head_dim).double() for t in (q, k, v))
            weights = torch.softmax(qd[:, :rows] @ kd.transpose(1, 2) * scale, -1)
            return compare(result()[:, :rows], weights @ vd, precision)

        return Prepared(fn, check, close, note)

    shape = (
        ("batch", batch),
        ("heads", heads),
        ("seq_q", seq),
        ("seq_k", seq),
        ("head_dim", head_dim),
    )
    return Case("attention", shape, precision, impl, cost, footprint, build)


def _flash_only():
    """A context in which SDPA may use only the flash backend (torch >= 2.1)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
    except ImportError:
        import torch

        return torch.backends.cuda.sdp_kernel(
            enable_flash=True, enable_math=False, enable_mem_efficient=False
        )
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def case_for(name: str, shape: Mapping[str, int], precision: str, impl: str) -> Case:
    """The case a run entry describes, from its ``name``, ``shape``, ``precision`` and ``impl``.

    Examples
    --------
    >>> case_for("gemm", {"m": 32, "k": 128, "n": 128}, "fp32", "mm").id
    'gemm/fp32/mm/m=32,k=128,n=128'
    >>> case_for("add", {"numel": 8}, "fp32", "sub")
    Traceback (most recent call last):
    ...
    ValueError: impl must be 'add' for add, got 'sub'
    """
    if not isinstance(shape, Mapping):
        raise TypeError(f"shape must be a mapping of sizes, got {type(shape).__name__}")
    s = dict(shape)
    try:
        if name == "gemm":
            case = gemm_case(s["m"], s["k"], s["n"], precision)
        elif name in ("copy", "triad", "triad_inplace", "add", "relu"):
            case = elementwise_case(name, s["numel"], precision)
        elif name == "rmsnorm":
            case = rmsnorm_case(s["rows"], s["d"], precision)
        elif name == "softmax":
            case = softmax_case(s["rows"], s["cols"], precision)
        elif name == "adamw":
            case = adamw_case(s["params"], s["tensors"], impl, precision)
        elif name == "attention":
            if s["seq_q"] != s["seq_k"]:
                raise ValueError(f"shape: the suite's attention has seq_q == seq_k, got {s}")
            case = attention_case(
                s["batch"], s["heads"], s["seq_q"], s["head_dim"], impl, precision
            )
        else:
            raise ValueError(f"name must be one of {', '.join(runfile.OPERATORS)}; got {name!r}")
    except KeyError as missing:
        raise ValueError(f"shape of {name} lacks {missing}; got {s}") from None
    if case.impl != impl:
        raise ValueError(f"impl must be {case.impl!r} for {name}, got {impl!r}")
    if case.id != f"{name}/{precision}/{impl}/" + ",".join(f"{k}={v}" for k, v in s.items()):
        raise ValueError(f"shape of {name} must have exactly {[k for k, _ in case.shape]}; got {s}")
    return case


def cases(
    device: str = "cpu", suite: str = "quick", *, cache_bytes: int | None = None
) -> list[Case]:
    """The cases of a suite, in the order a run measures them: ceilings first.

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
            cache_bytes = (_cpu_cache_bytes() if device == "cpu" else None) or FALLBACK_CACHE_BYTES
        cache_bytes = _validate.size("cache_bytes", cache_bytes)
        # copy touches 2 fp32 arrays: 8 bytes per element
        numel = 2 ** math.ceil(math.log2(CEILING_CACHE_MULTIPLE * cache_bytes / 8))
    out = [elementwise_case(kind, numel, "fp32") for kind in runfile.BANDWIDTH_KINDS]
    for precision in spec.gemm_precisions:
        out += [gemm_case(n, n, n, precision) for n in spec.gemm_sizes]
        out.append(gemm_case(*SMALL_GEMM, precision))
    for name in ("add", "relu"):
        for precision in spec.elementwise_precisions:
            out += [elementwise_case(name, n, precision) for n in spec.elementwise_sizes]
    for precision in spec.norm_precisions:
        out += [rmsnorm_case(r, d, precision) for r, d in spec.norm_shapes]
        out += [softmax_case(r, d, precision) for r, d in spec.norm_shapes]
    params, tensors = spec.adamw
    out += [adamw_case(params, tensors, impl) for impl in ("loop", "foreach", "fused")]
    for b, h, s, d in spec.attention_shapes:
        for impl in ATTENTION_IMPLS:
            out.append(attention_case(b, h, s, d, impl, spec.attention_precision))
    return out


# --------------------------------------------------------------------------
# Timing


@dataclass(frozen=True)
class Timing:
    """Per-call time of a timed call (second).

    Attributes
    ----------
    median_s, iqr_s : float
        Median and interquartile range over the samples of the per-call time.
    reps : int
        Samples.
    inner : int
        Calls per sample (the sample's time is divided by it).
    """

    median_s: float
    iqr_s: float
    reps: int
    inner: int

    def as_dict(self) -> dict[str, float | int]:
        """The run file's ``time`` record."""
        return {
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "reps": self.reps,
            "inner": self.inner,
        }


def _warm_up(fn: Callable[[], object], sync: Callable[[], None]) -> float:
    """Call ``fn`` until warm; return the fastest single call seen (second)."""
    fastest, start = math.inf, time.perf_counter()
    for _ in range(_WARMUP_CALLS):
        t0 = time.perf_counter()
        fn()
        sync()
        fastest = min(fastest, time.perf_counter() - t0)
        if time.perf_counter() - start >= _WARMUP_S:
            break
    return fastest


def time_cpu(fn: Callable[[], object], *, min_run_time: float = 0.2) -> Timing:
    """Time ``fn`` on the CPU with ``torch.utils.benchmark.Timer.adaptive_autorange``.

    The timer runs blocks of calls long enough that its own overhead is
    negligible (a sample is a block's time over its calls), with all of
    torch's threads, for at least ``min_run_time`` seconds and
    :data:`MIN_SAMPLES` samples; while the samples' IQR exceeds
    :data:`CPU_IQR_TARGET` of their median it keeps sampling, up to
    :data:`CPU_MAX_RUN_FACTOR` times as long, so that a burst of work from
    another process moves the median less.

    Examples
    --------
    >>> t = time_cpu(lambda: time.sleep(0.001), min_run_time=0.02)
    >>> 0.001 <= t.median_s < 0.01, t.reps >= MIN_SAMPLES
    (True, True)
    """
    import torch
    from torch.utils.benchmark import Timer

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    min_run_time = _validate.positive("min_run_time", min_run_time)
    once = _warm_up(fn, lambda: None)
    timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    least = max(min_run_time, MIN_SAMPLES * once)
    m = timer.adaptive_autorange(
        CPU_IQR_TARGET, min_run_time=least, max_run_time=CPU_MAX_RUN_FACTOR * least
    )
    times = list(m.times)
    while len(times) < MIN_SAMPLES:  # blocks came out longer than the time asked for
        times += timer.timeit(m.number_per_run).times
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return Timing(float(median), float(q3 - q1), len(times), int(m.number_per_run))


def time_cuda(fn: Callable[[], object], *, min_run_time: float = 0.2, flush=None) -> Timing:
    """Time ``fn`` on the current CUDA device with CUDA events.

    Parameters
    ----------
    fn : callable
        Launches the work; it is not synchronized inside.
    min_run_time : float
        Timed seconds, at least (second); between :data:`CUDA_MIN_REPS` and
        :data:`CUDA_MAX_REPS` samples.
    flush : torch.Tensor, optional
        A buffer larger than the L2, zeroed before every call outside the
        timed region. Without it, calls are batched until a sample lasts
        :data:`CUDA_SAMPLE_S`.
    """
    import torch

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    min_run_time = _validate.positive("min_run_time", min_run_time)
    _warm_up(fn, torch.cuda.synchronize)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(3):
        fn()
    end.record()
    torch.cuda.synchronize()
    once = max(begin.elapsed_time(end) * 1e-3 / 3, 1e-7)
    inner = 1 if flush is not None else max(1, math.ceil(CUDA_SAMPLE_S / once))
    reps = min(CUDA_MAX_REPS, max(CUDA_MIN_REPS, math.ceil(min_run_time / (once * inner))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, stop in zip(starts, ends, strict=True):
        if flush is not None:
            flush.zero_()
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
    torch.cuda.synchronize()
    times = np.array([s.elapsed_time(e) * 1e-3 / inner for s, e in zip(starts, ends, strict=True)])
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return Timing(float(median), float(q3 - q1), reps, inner)


# --------------------------------------------------------------------------
# Measuring


def _is_out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or any(
        s in text for s in ("out of memory", "can't allocate memory", "cannot allocate memory")
    )


def _available_memory(device) -> int | None:
    """Bytes free for new tensors on the device, or None if unknown."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def measure(case: Case, device: Any = "cpu", *, min_run_time: float = 0.1, flush=None) -> dict:
    """Check, then time, one case; its run-file entry.

    Parameters
    ----------
    case : Case
    device : str or torch.device
    min_run_time : float
        Timed seconds, at least (second).
    flush : torch.Tensor, optional
        CUDA only: the L2 flush buffer, used if the case is memory-bound.

    Returns
    -------
    dict
        ``status`` is ``"ok"`` with ``time`` and ``check``; ``"skipped"`` with a
        ``reason`` (unsupported here, or too large for the free memory);
        ``"failed"`` with a ``reason`` if the result was wrong or the case
        raised an error (a run goes on past a broken case).
    """
    import torch

    if not isinstance(case, Case):
        raise TypeError(f"case must be a roofline_book.bench.Case, got {type(case).__name__}")
    device = torch.device(device)
    flushed = device.type == "cuda" and flush is not None and case.memory_bound
    entry: dict[str, Any] = {
        "id": case.id,
        "name": case.name,
        "shape": dict(case.shape),
        "precision": case.precision,
        "impl": case.impl,
        "status": "ok",
    }
    tail: dict[str, Any] = {"model": dataclasses.asdict(case.cost)}
    available = _available_memory(device)
    if available is not None and case.footprint > MEMORY_HEADROOM * available:
        reason = (
            f"needs about {si(case.footprint, 'B')}, more than {MEMORY_HEADROOM:.0%} "
            f"of the {si(available, 'B')} free"
        )
        return entry | {"status": "skipped", "reason": reason} | tail
    prepared = None
    try:
        prepared = case.build(device)
        check = prepared.check()
        _sync(device)
        if device.type == "cuda":
            timing = time_cuda(
                prepared.fn, min_run_time=min_run_time, flush=flush if flushed else None
            )
        else:
            timing = time_cpu(prepared.fn, min_run_time=min_run_time)
    except Unsupported as exc:
        return entry | {"status": "skipped", "reason": str(exc)} | tail
    except Incorrect as exc:
        return entry | {"status": "failed", "reason": f"wrong result: {exc}"} | tail
    except Exception as exc:  # one broken case must not lose the whole run
        text = str(exc).strip()
        first_line = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
        if _is_out_of_memory(exc):
            return entry | {"status": "skipped", "reason": f"out of memory: {first_line}"} | tail
        return entry | {"status": "failed", "reason": f"error: {first_line}"} | tail
    finally:
        if prepared is not None:
            prepared.close()
        note = prepared.note if prepared is not None else ""
        del prepared
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if note:
        entry["note"] = note
    return entry | tail | {"time": timing.as_dict(), "check": check, "l2_flush": flushed}


# --------------------------------------------------------------------------
# The machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _parse_cache_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _cpu_cache_bytes() -> int | None:
    """Size of the CPU's largest (last-level) data or unified cache, from sysfs (byte)."""
    best_level, best_size = 0, None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = _parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if level > best_level:
            best_level, best_size = level, size
    return best_size


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _driver_version() -> str | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if lines else None


def _load_average() -> float | None:
    """The host's 1-minute load average, where the OS reports one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def describe_device(device: Any) -> dict[str, Any]:
    """The run file's ``device`` record for a ``torch.device``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        cache = getattr(props, "L2_cache_size", None)
        return {
            "type": "cuda",
            "name": props.name,
            "cache_bytes": int(cache) if cache else None,
            "memory_bytes": int(props.total_memory),
            "sm_count": int(props.multi_processor_count),
            "compute_capability": f"{props.major}.{props.minor}",
        }
    model = _cpu_model()
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: None)()
    return {
        "type": "cpu",
        "name": model,
        "cache_bytes": _cpu_cache_bytes(),
        "memory_bytes": _memory_bytes(),
        "cpu_model": model,
        "threads": torch.get_num_threads(),
        "cpu_capability": capability,
    }


def describe_software(device: Any) -> dict[str, str | None]:
    """The run file's ``software`` record: Python, torch, CUDA (or HIP) and driver versions."""
    import torch

    device = torch.device(device)
    hip = getattr(torch.version, "hip", None)
    toolkit = torch.version.cuda or (f"hip {hip}" if hip else None)
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": toolkit,
        "driver": _driver_version() if device.type == "cuda" else None,
    }


def _ceilings(entries: list[dict], copy_case: Case) -> dict[str, Any]:
    peaks: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry["name"] == "gemm" and entry["status"] == "ok":
            value = runfile.rates(entry)[0]
            best = peaks.get(entry["precision"])
            if best is None or value > best["value"]:
                peaks[entry["precision"]] = {"value": value, "entry": entry["id"]}
    bandwidth = {
        e["name"]: {"value": runfile.rates(e)[1], "entry": e["id"]}
        for e in entries
        if e["name"] in runfile.BANDWIDTH_KINDS and e["status"] == "ok"
    }
    return {"peak_flops": peaks, "bandwidth": bandwidth, "working_set_bytes": copy_case.cost.bytes}


def run_suite(device: str = "cpu", suite: str = "quick", *, progress: bool = False) -> dict:
    """Measure the ceilings and every case of a suite; the run, validated.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        ``"cuda"`` runs on the current CUDA device.
    suite : {"tiny", "quick", "full"}
        Sizes; see :func:`suite_spec`. ``tiny`` is for tests: its bandwidth
        ceilings fit in cache and mean little.
    progress : bool
        Show a progress bar (tqdm) on stderr.

    Raises
    ------
    ValueError
        For an unknown device or suite, or ``device="cuda"`` without CUDA.
    """
    device = _validate.choice("device", device, DEVICES)
    suite = _validate.choice("suite", suite, runfile.SUITES)
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(_no_cuda_message())
    dev = (
        torch.device("cuda", torch.cuda.current_device())
        if device == "cuda"
        else torch.device("cpu")
    )
    load = [_load_average()]
    now = datetime.now(timezone.utc)  # noqa: UP017 - datetime.UTC needs Python >= 3.11
    date = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    info = describe_device(dev)
    spec = suite_spec(device, suite)
    todo = cases(device, suite, cache_bytes=info["cache_bytes"] or FALLBACK_CACHE_BYTES)
    flush = None
    if device == "cuda":
        size = max(FLUSH_MIN_BYTES, 2 * (info["cache_bytes"] or FALLBACK_CACHE_BYTES))
        flush = torch.empty(size, dtype=torch.int8, device=dev)
    entries = [
        measure(case, dev, min_run_time=spec.min_run_time, flush=flush)
        for case in _progress(todo, progress)
    ]
    load.append(_load_average())
    run = {
        "format": runfile.FORMAT,
        "version": runfile.VERSION,
        "date": date,
        "host": socket.gethostname(),
        "suite": suite,
        "device": info,
        "software": describe_software(dev),
        "ceilings": _ceilings(entries, todo[0]),
        "results": entries,
    }
    if None not in load:
        run["load_average"] = load
    runfile.validate_run(run, require_schema=False)
    return run


def _progress(todo: list[Case], enabled: bool):
    """Yield the cases, with a tqdm bar on stderr (a line per case where tqdm is missing)."""
    if not enabled:
        yield from todo
        return
    try:
        from tqdm import tqdm
    except ImportError:
        for i, case in enumerate(todo, 1):
            print(f"bench [{i}/{len(todo)}] {case.id}", file=sys.stderr, flush=True)
            yield case
        return
    with tqdm(todo, file=sys.stderr, unit="case", mininterval=0.5) as bar:
        for case in bar:
            bar.set_postfix_str(case.id, refresh=False)
            yield case


# --------------------------------------------------------------------------
# Reporting


def _exponent(value: int) -> str:
    return f"2^{value.bit_length() - 1}" if value > 0 and value & (value - 1) == 0 else str(value)


def shape_text(name: str, shape: Mapping[str, int]) -> str:
    """A short label for an entry's shape.

    Examples
    --------
    >>> shape_text("gemm", {"m": 32, "k": 128, "n": 128})
    '32x128x128'
    >>> shape_text("add", {"numel": 2**20})
    'n=2^20'
    >>> shape_text("attention", dict(batch=1, heads=8, seq_q=1024, seq_k=1024, head_dim=64))
    'b1 h8 s1024 d64'
    """
    if name == "gemm":
        return f"{shape['m']}x{shape['k']}x{shape['n']}"
    if "numel" in shape:
        return f"n={_exponent(shape['numel'])}"
    if name == "adamw":
        return f"{_exponent(shape['params'])} in {shape['tensors']}"
    if name == "attention":
        return f"b{shape['batch']} h{shape['heads']} s{shape['seq_q']} d{shape['head_dim']}"
    return "x".join(str(v) for v in shape.values())


def summary_table(run: Mapping[str, Any]) -> str:
    """The ceilings and one line per entry: time and the model's rates."""
    lines = [
        f"{run['device']['name']} ({run['device']['type']}), {run['suite']} suite, {run['date']}"
    ]
    for precision, c in run["ceilings"]["peak_flops"].items():
        label = f"peak {precision}"
        lines.append(f"  {label:<14}{si(c['value'], 'FLOP/s'):>14}   best: {c['entry']}")
    for kind, c in run["ceilings"]["bandwidth"].items():
        lines.append(f"  {kind:<14}{si(c['value'], 'B/s'):>14}   {c['entry']}")
    head = ("operator", "shape", "prec", "impl", "median", "IQR", "FLOP/s", "B/s", "status")
    rows = [head]
    for e in run["results"]:
        row = [e["name"], shape_text(e["name"], e["shape"]), e["precision"], e["impl"]]
        if e["status"] == "ok":
            flops, bytes_ = runfile.rates(e)
            t = e["time"]
            row += [
                si(t["median_s"], "s"),
                f"{100 * t['iqr_s'] / t['median_s']:.0f}%",
                si(flops, "FLOP/s"),
                si(bytes_, "B/s"),
                "ok",
            ]
        else:
            row += ["", "", "", "", f"{e['status']}: {e['reason']}"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    for r in rows:
        cells = [
            c.ljust(w) if i < 4 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=False))
        ]
        lines.append("  ".join(cells + [r[-1]]))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Command line


def _no_cuda_message() -> str:
    import torch

    built = torch.version.cuda or "none"
    return (
        f"--device cuda asked, but no CUDA device is available "
        f"(torch {torch.__version__}, built for CUDA {built})"
    )


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser``, a subcommand's parser."""
    parser.add_argument(
        "--device", choices=DEVICES, default="cpu", help="where to measure (default: cpu)"
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        dest="suite",
        action="store_const",
        const="quick",
        help="smaller sizes, for a first look (same as --suite quick)",
    )
    size.add_argument(
        "--suite",
        choices=runfile.SUITES,
        help="sizes to run: tiny (tests), quick, full (default)",
    )
    parser.set_defaults(suite="full")
    parser.add_argument("--out", required=True, type=Path, help="run file (JSON) to write")
    parser.add_argument(
        "--force", action="store_true", help="replace --out if it exists (default: refuse)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``bench`` from parsed options; the exit status.

    0: measured and written. 2: nothing measured, because CUDA was asked for
    without a CUDA device, ``--out`` exists without ``--force`` or cannot be
    written, or torch is missing (one line on stderr says which). 1: measured,
    but a file took the name ``--out`` meanwhile; the run went next to it.
    """
    device = _validate.choice("device", args.device, DEVICES)
    suite = _validate.choice("suite", args.suite, runfile.SUITES)
    out = Path(args.out)
    force = bool(getattr(args, "force", False))
    if out.is_dir():
        print(f"bench: --out {out} is a folder; give a file name", file=sys.stderr)
        return 2
    if out.exists() and not force:
        print(f"bench: {out} exists; pass --force to replace it", file=sys.stderr)
        return 2
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"bench: cannot create the folder of --out: {exc}", file=sys.stderr)
        return 2
    if not os.access(out.parent, os.W_OK):
        print(f"bench: cannot write in {out.parent}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("bench: needs torch and tqdm (pip install 'roofline-book[bench]')", file=sys.stderr)
        return 2
    if device == "cuda" and not torch.cuda.is_available():
        print(f"bench: {_no_cuda_message()}", file=sys.stderr)
        return 2
    run = run_suite(device, suite, progress=not getattr(args, "no_progress", False))
    status = 0
    try:
        runfile.write_run(run, out, force=force)
    except FileExistsError:
        out = out.with_name(f"{out.stem}.{run['date'].replace(':', '')}{out.suffix}")
        runfile.write_run(run, out)
        print(f"bench: {args.out} appeared during the run; wrote {out} instead", file=sys.stderr)
        status = 1
    from .claims import check_claims, format_checks

    print(summary_table(run))
    print()
    print(format_checks(check_claims(run)))
    print(f"\nwrote {out}")
    return status
