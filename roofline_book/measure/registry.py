"""What a benchmark case is, and the registry every operator is entered in once.

An :class:`Operator` is registered with :func:`register` (in the manner of
PyTorch's ``register_flop_formula``): its name, the names of its sizes, its
implementations, its family, how its shape reads in a label and how it is
drawn. Everything that lists operators (the suites, the run-file schema, the
claims, the report's plot styles, :func:`roofline_book.measure.cases.case_for`)
reads this registry, so adding an operator is one entry in
:mod:`roofline_book.measure.cases`.

Also here: what a built case is (:class:`Case`, :class:`Prepared`), the two
ways a case does not get timed (:class:`Unsupported`, :class:`Incorrect`), and
the correctness check against a float64 reference (:func:`compare`). torch is
imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..ops import Cost

FAMILIES = ("ceiling", "gemm", "elementwise", "norm", "optimizer", "attention")
"""``ceiling``: the bandwidth probes; the rest group operators as the claims do."""

RTOL = {"fp64": 1e-12, "fp32": 1e-4, "tf32": 5e-3, "bf16": 1.6e-2, "fp16": 2e-3}
"""Relative tolerance of the correctness check per precision: a few units in the
last place of the result (bf16 keeps 8 significant bits, fp16 11, tf32 11 in
its products)."""


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
        Operator, a key of :data:`roofline_book.measure.cases.OPERATORS`.
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
    inplace : bool
        Whether the case writes only over data it has just read (``x.add_(y)``,
        an optimizer step): then no store lands on a line the cache must fetch first.
    implementation : Cost, optional
        What the CPU implementation runs, where it is known to do more than the
        model counts (``torch.rms_norm`` on the CPU is a composite of six to eight
        kernels, with an FP32 upcast for 16-bit input): a prediction of its time on
        the CPU uses this, a bound uses the model.
    """

    name: str
    shape: tuple[tuple[str, int], ...]
    precision: str
    impl: str
    cost: Cost
    footprint: int
    build: Callable[[Any], Prepared] = field(compare=False, repr=False)
    inplace: bool = False
    implementation: Cost | None = None

    @property
    def id(self) -> str:
        """Unique within a run: ``name/precision/impl/size=value,...``."""
        sizes = ",".join(f"{k}={v}" for k, v in self.shape)
        return f"{self.name}/{self.precision}/{self.impl}/{sizes}"

    @property
    def allocate_bytes(self) -> int:
        """Bytes a write-allocate cache (x86 CPUs) reads beyond the model: before a store to
        a line it does not hold, it fetches the line. Out-of-place writes pay it once per
        byte written; in-place ones do not (byte)."""
        return 0 if self.inplace else self.cost.bytes_written

    @property
    def memory_bound(self) -> bool:
        """Whether its time is a matter of memory traffic (all but GEMM): flush caches."""
        return self.name != "gemm"


def power_text(value: int) -> str:
    """``2^k`` for a power of two, else the plain number.

    Examples
    --------
    >>> power_text(2**20), power_text(1000)
    ('2^20', '1000')
    """
    return f"2^{value.bit_length() - 1}" if value > 0 and value & (value - 1) == 0 else str(value)


def _sizes_text(shape: Mapping[str, int]) -> str:
    return "x".join(str(v) for v in shape.values())


@dataclass(frozen=True)
class Operator:
    """One operator of the benchmark suite, as every reader of the registry sees it.

    Attributes
    ----------
    name : str
        The run file's ``name``.
    sizes : tuple of str
        The names of its sizes, in the order the case builder takes them.
    impls : tuple of str
        Its implementations; the first is the default.
    family : str
        One of :data:`FAMILIES`.
    make : callable
        ``make(*sizes, impl=..., precision=...) -> Case``.
    label : callable
        ``label(shape) -> str``, the shape as a short label.
    marker : str
        Matplotlib marker on a measured roofline.
    colour : str
        A key of :data:`roofline_book.plotting.PALETTE`.
    """

    name: str
    sizes: tuple[str, ...]
    impls: tuple[str, ...]
    family: str
    make: Callable[..., Case] = field(compare=False, repr=False)
    label: Callable[[Mapping[str, int]], str] = field(
        default=_sizes_text, compare=False, repr=False
    )
    marker: str = "o"
    colour: str = "black"


_REGISTRY: dict[str, Operator] = {}
REGISTRY: Mapping[str, Operator] = MappingProxyType(_REGISTRY)
"""Every registered operator by name (read-only), ordered by family as :data:`FAMILIES`
lists them and, within a family, in registration order."""


def register(operator: Operator) -> Operator:
    """Enter an operator in :data:`REGISTRY`; a name may be registered once.

    Raises
    ------
    ValueError
        For a name already registered or a family not in :data:`FAMILIES`.
    """
    if operator.name in _REGISTRY:
        raise ValueError(f"operator {operator.name!r} is registered already")
    if operator.family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {operator.family!r}")
    if not operator.impls or not operator.sizes:
        raise ValueError(f"operator {operator.name!r} needs at least one impl and one size")
    ordered = sorted([*_REGISTRY.values(), operator], key=lambda o: FAMILIES.index(o.family))
    _REGISTRY.clear()
    _REGISTRY.update((o.name, o) for o in ordered)
    return operator


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
    roofline_book.measure.registry.Incorrect: max |error| 1 against the fp64 reference exceeds ...
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
