"""The streaming cases: the bandwidth probes and the elementwise operators, a row each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ... import _validate, ops
from ...ops import Cost
from ..registry import (
    Case,
    Operator,
    Prepared,
    compare,
    power_text,
    register,
)
from ._tensors import CHECK_ELEMENTS, _generator, _randn, _strided

TRIAD_SCALAR = 3.0
"""The ``s`` of the triad ``a = b + s * c``."""


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

    shape = (("numel", numel),)
    return Case(name, shape, precision, stream.impl, cost, footprint, build, inplace=stream.inplace)


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
