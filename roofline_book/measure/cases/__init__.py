"""The benchmark cases: each operator registered once, with its torch call and its model.

One module per family (:mod:`.gemm`, :mod:`.streams`, :mod:`.norms`, :mod:`.adamw`,
:mod:`.attention`); importing this package registers them all, in that order.

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

from collections.abc import Mapping

from ... import _validate
from ..registry import REGISTRY, Case, Operator

# importing each family's module registers its operators (ordered by family in the registry)
from ._tensors import is_out_of_memory
from .adamw import ADAMW_FLAGS, ADAMW_HYPER, adamw_case
from .attention import ATTENTION_IMPLS, attention_case
from .gemm import gemm_case
from .norms import RMSNORM_EPS, rmsnorm_case, softmax_case
from .streams import BANDWIDTH_KINDS, STREAMS, TRIAD_SCALAR, Stream, elementwise_case

OPERATORS = REGISTRY
"""Every benchmarked operator by name (the registry, read-only)."""


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
    """由 run 条目的 ``name``、``shape``、``precision`` 和 ``impl`` 找回它描述的 case。

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
    "ADAMW_FLAGS",
    "ADAMW_HYPER",
    "ATTENTION_IMPLS",
    "BANDWIDTH_KINDS",
    "OPERATORS",
    "RMSNORM_EPS",
    "STREAMS",
    "TRIAD_SCALAR",
    "Stream",
    "adamw_case",
    "attention_case",
    "case_for",
    "elementwise_case",
    "gemm_case",
    "is_out_of_memory",
    "make",
    "names",
    "operator",
    "rmsnorm_case",
    "shape_text",
    "softmax_case",
]
