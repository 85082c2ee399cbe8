"""The benchmark cases: each operator registered once, with its torch call and its model.

Each operator is one :func:`~roofline_book.measure.registry.register` entry;
the streaming operators (the bandwidth probes and the elementwise operators)
are one row each of :data:`STREAMS`. A case is checked against a float64
reference before it is timed (correct before fast), and carries the model's
FLOPs and bytes from :mod:`roofline_book.ops`.

Examples
--------
>>> case_for("gemm", {"m": 32, "k": 128, "n": 128}, "fp32", "mm").id
'gemm/fp32/mm/m=32,k=128,n=128'
>>> [name for name, op in OPERATORS.items() if op.family == "elementwise"]
['add', 'relu']
>>> shape_text("attention", dict(batch=1, heads=8, seq_q=1024, seq_k=1024, head_dim=64))
'b1 h8 s1024 d64'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _validate, ops
from ..dtypes import bytes_per_element
from ..ops import Cost
from .registry import (
    REGISTRY,
    Case,
    Incorrect,
    Operator,
    Prepared,
    Unsupported,
    compare,
    power_text,
    register,
)

OPERATORS = REGISTRY
"""Every benchmarked operator by name (the registry, read-only)."""

CHECK_ROWS = 64
"""Rows (GEMM, norms) or query rows (attention) compared with the reference."""

CHECK_ELEMENTS = 2**20
"""Elementwise results are compared on an evenly strided sample of this many values."""

TRIAD_SCALAR = 3.0
"""The ``s`` of the triad ``a = b + s * c``."""


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


def _randn(shape, precision: str, device, gen):
    import torch

    return torch.randn(shape, generator=gen, device=device, dtype=_dtype(precision))


def _generator(device):
    import torch

    return torch.Generator(device=device).manual_seed(0)


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether an exception is torch (or the OS) running out of memory."""
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or any(
        s in text for s in ("out of memory", "can't allocate memory", "cannot allocate memory")
    )


def _strided(t):
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // CHECK_ELEMENTS)]


# --------------------------------------------------------------------------
# GEMM


def gemm_case(m: int, k: int, n: int, *, impl: str = "mm", precision: str = "fp32") -> Case:
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
    return Case("gemm", shape, precision, impl, cost, footprint, build)


register(
    Operator(
        "gemm",
        ("m", "k", "n"),
        ("mm",),
        "gemm",
        gemm_case,
        label=lambda s: f"{s['m']}x{s['k']}x{s['n']}",
        marker="o",
        colour="blue",
    )
)


# --------------------------------------------------------------------------
# Streaming: the bandwidth probes and the elementwise operators


@dataclass(frozen=True)
class Stream:
    """A streaming case: one pass over ``numel`` elements per input.

    Attributes
    ----------
    impl : str
        The torch function, as the run file names it.
    family : str
        ``"ceiling"`` (a bandwidth probe) or ``"elementwise"`` (an operator).
    cost : callable
        ``cost(numel, precision) -> Cost``, the model.
    inputs : int
        Input arrays, 1 (``x``) or 2 (``x``, ``y``).
    inplace : bool
        Whether the result is written over ``x``.
    call : callable
        ``call(x, y, out)``, the timed work (``y`` is None for one input).
    reference : callable
        ``reference(x, y)`` in float64, on the sampled values.
    colour : str
        A key of :data:`roofline_book.plotting.PALETTE`.
    """

    impl: str
    family: str
    cost: Callable[[int, str], Cost]
    inputs: int
    inplace: bool
    call: Callable[[Any, Any, Any], object]
    reference: Callable[[Any, Any], Any]
    colour: str = "black"


def _torch():
    import torch

    return torch


STREAMS: dict[str, Stream] = {
    "copy": Stream(
        "copy_",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=1, outputs=1, flops_per_element=0),
        1,
        False,
        lambda x, y, out: out.copy_(x),
        lambda x, y: x,
    ),
    "triad": Stream(
        "add(alpha)",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=2, outputs=1, flops_per_element=2),
        2,
        False,
        lambda x, y, out: _torch().add(x, y, alpha=TRIAD_SCALAR, out=out),
        lambda x, y: x + TRIAD_SCALAR * y,
    ),
    "triad_inplace": Stream(
        "add_(alpha)",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=2, outputs=1, flops_per_element=2),
        2,
        True,
        lambda x, y, out: x.add_(y, alpha=TRIAD_SCALAR),
        lambda x, y: x + TRIAD_SCALAR * y,
    ),
    "add": Stream(
        "add",
        "elementwise",
        ops.add,
        2,
        False,
        lambda x, y, out: _torch().add(x, y, out=out),
        lambda x, y: x + y,
        colour="vermillion",
    ),
    "relu": Stream(
        # torch.relu has no out=; clamp_min is how it computes
        "clamp_min",
        "elementwise",
        ops.relu,
        1,
        False,
        lambda x, y, out: _torch().clamp_min(x, 0, out=out),
        lambda x, y: x.clamp_min(0),
        colour="orange",
    ),
}
"""The streaming cases, one row each. ``copy``: ``dst.copy_(src)``; ``triad``:
``torch.add(b, c, alpha=3, out=a)``; ``triad_inplace``: ``a.add_(b, alpha=3)``;
``add``: ``torch.add(x, y, out=z)``; ``relu``: ``torch.clamp_min(x, 0, out=y)``.
Models: :func:`ops.add`, :func:`ops.relu`, and :func:`ops.elementwise` for copy
(one read, one write, no FLOP) and both triads (two reads, one write, two FLOPs
per element)."""

BANDWIDTH_KINDS = tuple(name for name, s in STREAMS.items() if s.family == "ceiling")
"""The memory-bandwidth ceilings: ``dst = src``, ``a = b + s * c`` and ``a += s * b``."""


def elementwise_case(name: str, numel: int, precision: str = "fp32") -> Case:
    """The streaming case ``name`` (a key of :data:`STREAMS`) over ``numel`` elements.

    Outputs are preallocated, which keeps the allocator out of the time: on
    the CPU a fresh large output is fresh pages from the kernel, each first
    written through a page fault. On a CPU, a store to an array not in cache
    first reads the line (write-allocate), traffic the model does not count;
    the in-place triad stores to lines it has just read, so it shows the
    memory's bandwidth without that extra read.
    """
    name = _validate.choice("name", name, tuple(STREAMS))
    stream = STREAMS[name]
    cost = stream.cost(numel, precision)
    arrays = stream.inputs + (0 if stream.inplace else 1)
    footprint = cost.bytes + 8 * (arrays + 1) * min(numel, CHECK_ELEMENTS)

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((numel,), precision, device, gen)
        y = _randn((numel,), precision, device, gen) if stream.inputs == 2 else None
        out = x if stream.inplace else torch.empty_like(x)

        def fn() -> None:
            stream.call(x, y, out)

        def check() -> dict:
            xs = _strided(x).to(torch.float64, copy=True)  # before the call, which may write x
            ys = None if y is None else _strided(y).double()
            fn()
            return compare(_strided(out), stream.reference(xs, ys), precision, scale=TRIAD_SCALAR)

        return Prepared(fn, check)

    return Case(name, (("numel", numel),), precision, stream.impl, cost, footprint, build)


def _numel_label(shape: Mapping[str, int]) -> str:
    return f"n={power_text(shape['numel'])}"


for _name, _stream in STREAMS.items():
    register(
        Operator(
            _name,
            ("numel",),
            (_stream.impl,),
            _stream.family,
            lambda numel, *, impl, precision, _n=_name: elementwise_case(_n, numel, precision),
            label=_numel_label,
            marker="s" if _stream.family == "elementwise" else "o",
            colour=_stream.colour,
        )
    )


# --------------------------------------------------------------------------
# Norms

RMSNORM_EPS = 1e-6
"""The epsilon of the measured RMSNorm."""


def rmsnorm_case(rows: int, d: int, *, impl: str = "rms_norm", precision: str = "fp32") -> Case:
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

    return Case("rmsnorm", (("rows", rows), ("d", d)), precision, impl, cost, footprint, build)


def softmax_case(rows: int, cols: int, *, impl: str = "softmax", precision: str = "fp32") -> Case:
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
    return Case("softmax", shape, precision, impl, cost, footprint, build)


register(Operator("rmsnorm", ("rows", "d"), ("rms_norm",), "norm", rmsnorm_case, marker="D",
                  colour="green"))  # fmt: skip
register(Operator("softmax", ("rows", "cols"), ("softmax",), "norm", softmax_case, marker="D",
                  colour="sky"))  # fmt: skip


# --------------------------------------------------------------------------
# AdamW

ADAMW_HYPER = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2}
"""Hyperparameters of the measured AdamW step (they do not change its cost)."""

ADAMW_FLAGS = {
    "loop": {"foreach": False},
    "foreach": {"foreach": True},
    "fused": {"fused": True},
}
"""The ``torch.optim.AdamW`` flags of each implementation."""


def _flags(impl: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in ADAMW_FLAGS[impl].items())


def adamw_case(params: int, tensors: int, *, impl: str, precision: str = "fp32") -> Case:
    """One ``torch.optim.AdamW.step`` over ``params`` parameters in ``tensors`` equal tensors.

    ``impl``: ``"loop"`` (``foreach=False``), ``"foreach"`` (``foreach=True``)
    or ``"fused"`` (``fused=True``). Model :func:`ops.adamw`. The check runs
    one step against a float64 ``foreach=False`` AdamW from the same state.
    """
    impl = _validate.choice("impl", impl, tuple(ADAMW_FLAGS))
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
                opt = torch.optim.AdamW(weights, **ADAMW_HYPER, **ADAMW_FLAGS[impl])
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
                if is_out_of_memory(exc):
                    raise
                raise Unsupported(f"AdamW({_flags(impl)}).step on {device.type}: {exc}") from None
            ref_opt.step()
            got = torch.cat([w.detach().reshape(-1) for w in weights])
            want = torch.cat([r.detach().reshape(-1) for r in ref])
            return compare(got, want, precision, reference="fp64 AdamW(foreach=False)")

        return Prepared(fn, check)

    shape = (("params", params), ("tensors", tensors))
    return Case("adamw", shape, precision, impl, cost, footprint, build)


register(
    Operator(
        "adamw",
        ("params", "tensors"),
        tuple(ADAMW_FLAGS),
        "optimizer",
        adamw_case,
        label=lambda s: f"{power_text(s['params'])} in {s['tensors']}",
        marker="^",
        colour="purple",
    )
)


# --------------------------------------------------------------------------
# Attention

ATTENTION_IMPLS = ("materialized", "sdpa")
"""``materialized``: ``S = scale * Q K^T`` (baddbmm), ``P = softmax(S)``, ``O = P V``
(bmm), each into a preallocated tensor; ``sdpa``:
``torch.nn.functional.scaled_dot_product_attention``, on CUDA with the flash
backend forced. The models: ``ops.attention(impl="materialized")`` and
``ops.attention(impl="flash")``."""


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


def _materialized(q, k, v, scale: float):
    """The three kernels of attention written out, into preallocated tensors: (fn, result)."""
    import torch

    bh, seq, head_dim = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
    q3, k3, v3 = (t.reshape(bh, seq, head_dim) for t in (q, k, v))
    kt = k3.transpose(1, 2)
    scores = torch.empty((bh, seq, seq), device=q.device, dtype=q.dtype)
    probs = torch.empty_like(scores)
    out = torch.empty_like(q3)

    def fn() -> None:
        scores.baddbmm_(q3, kt, beta=0.0, alpha=scale)
        torch.softmax(scores, -1, out=probs)
        torch.bmm(probs, v3, out=out)

    return fn, lambda: out


def attention_case(
    batch: int,
    heads: int,
    seq_q: int,
    seq_k: int,
    head_dim: int,
    *,
    impl: str,
    precision: str = "bf16",
) -> Case:
    """Self-attention forward, no mask, ``seq_q = seq_k``; model :func:`ops.attention`."""
    impl = _validate.choice("impl", impl, ATTENTION_IMPLS)
    if seq_q != seq_k:
        raise ValueError(f"the suite's attention has seq_q == seq_k, got {seq_q} and {seq_k}")
    seq = seq_q
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
        close, note = (lambda: None), ""
        if impl == "materialized":
            fn, result = _materialized(q, k, v, scale)
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
                if is_out_of_memory(exc):
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


register(
    Operator(
        "attention",
        ("batch", "heads", "seq_q", "seq_k", "head_dim"),
        ATTENTION_IMPLS,
        "attention",
        attention_case,
        label=lambda s: f"b{s['batch']} h{s['heads']} s{s['seq_q']} d{s['head_dim']}",
        marker="v",
        colour="black",
    )
)


# --------------------------------------------------------------------------
# Reading the registry


def operator(name: str) -> Operator:
    """The registered operator ``name``; a ValueError names the allowed ones."""
    return OPERATORS[_validate.choice("name", name, tuple(OPERATORS))]


def names(family: str) -> tuple[str, ...]:
    """The operators of one family, in registration order.

    Examples
    --------
    >>> names("ceiling")
    ('copy', 'triad', 'triad_inplace')
    """
    return tuple(name for name, op in OPERATORS.items() if op.family == family)


def make(
    name: str,
    shape: Mapping[str, int] | tuple[int, ...],
    precision: str,
    impl: str | None = None,
) -> Case:
    """The case of operator ``name``: ``shape`` maps its size names to sizes, or
    gives the sizes in the operator's order; ``impl`` defaults to its first.

    Examples
    --------
    >>> make("rmsnorm", (64, 256), "fp32").id
    'rmsnorm/fp32/rms_norm/rows=64,d=256'
    """
    op = operator(name)
    impl = op.impls[0] if impl is None else _validate.choice("impl", impl, op.impls)
    sizes = tuple(shape[k] for k in op.sizes) if isinstance(shape, Mapping) else tuple(shape)
    return op.make(*sizes, impl=impl, precision=precision)


def case_for(name: str, shape: Mapping[str, int], precision: str, impl: str) -> Case:
    """The case a run entry describes, from its ``name``, ``shape``, ``precision`` and ``impl``.

    Examples
    --------
    >>> case_for("add", {"numel": 8}, "fp32", "sub")
    Traceback (most recent call last):
    ...
    ValueError: impl must be 'add' for add, got 'sub'
    """
    if not isinstance(shape, Mapping):
        raise TypeError(f"shape must be a mapping of sizes, got {type(shape).__name__}")
    op = operator(name)
    s = dict(shape)
    if impl not in op.impls:
        allowed = " or ".join(repr(i) for i in op.impls)
        raise ValueError(f"impl must be {allowed} for {name}, got {impl!r}")
    missing = [k for k in op.sizes if k not in s]
    if missing:
        raise ValueError(f"shape of {name} lacks {missing[0]!r}; got {s}")
    if list(s) != list(op.sizes):
        raise ValueError(f"shape of {name} must have exactly {list(op.sizes)}; got {s}")
    try:
        return make(name, s, precision, impl)
    except TypeError as exc:
        raise ValueError(f"shape of {name}: {exc}") from None


def shape_text(name: str, shape: Mapping[str, int]) -> str:
    """A short label for an entry's shape, as its operator writes it.

    Examples
    --------
    >>> shape_text("gemm", {"m": 32, "k": 128, "n": 128})
    '32x128x128'
    >>> shape_text("add", {"numel": 2**20})
    'n=2^20'
    >>> shape_text("rmsnorm", {"rows": 1024, "d": 4096})
    '1024x4096'
    """
    return operator(name).label(shape)


__all__ = [
    "ADAMW_HYPER",
    "ATTENTION_IMPLS",
    "BANDWIDTH_KINDS",
    "OPERATORS",
    "STREAMS",
    "Case",
    "Incorrect",
    "Prepared",
    "Stream",
    "Unsupported",
    "adamw_case",
    "attention_case",
    "case_for",
    "elementwise_case",
    "gemm_case",
    "make",
    "names",
    "operator",
    "rmsnorm_case",
    "shape_text",
    "softmax_case",
]
