"""The result of every operator model: :class:`Cost`, FLOPs per unit and bytes per memory level."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate

UNITS = ("matrix", "vector", "special")
"""The compute units an operator's FLOPs can run on: Tensor Cores / Matrix Cores
(``"matrix"``), the ordinary FP32/FP64 lanes (``"vector"``, CUDA cores), and the
special function units that evaluate exp, tanh, rsqrt and the like (``"special"``)."""


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes moved by one or more kernels, and which units and levels they need.

    Costs add, so the cost of three separate kernels can be set beside the
    cost of one fused kernel.

    Parameters
    ----------
    flops : int
        Floating-point operations (FLOP), all units together.
    bytes_read : int
        Bytes each kernel must read from main memory (byte): its inputs,
        once. This is compulsory traffic, the lower bound at HBM with a cold
        cache.
    bytes_written : int
        Bytes each kernel must write to main memory (byte): its outputs, once.
    kernels : int
        Kernel launches the work takes.
    vector_flops : int
        The part of ``flops`` that runs on the vector units (elementwise
        arithmetic, reductions, softmax's max and sum).
    vector_fma_flops : int
        The part of ``vector_flops`` that pairs into fused multiply-adds, 2
        FLOP per FMA (an even number). A vendor's vector peak counts an FMA
        as 2 FLOP in one lane slot; every other vector FLOP (add, multiply,
        max, compare) takes a lane slot of its own, so vector time goes by
        :attr:`vector_slots`. Mark every pair whose formula is a multiply
        then an add: a compiler contracts it into one FMA, so an unmarked pair
        would count two slots where a kernel spends one and could put the
        bound above a real kernel. Other operations cannot pair.
    special_flops : int
        The part of ``flops`` that runs on the special function units, one
        per evaluation (exp, tanh, erf, rsqrt, sqrt, and the reciprocal an
        IEEE division compiles to). The rest,
        ``flops - vector_flops - special_flops``, runs on the matrix units
        (:attr:`matrix_flops`); a Cost built without these two is all matrix
        work, the fastest unit, so a bound from it can only be too low.
    reread_bytes : int
        Reads beyond the compulsory ones (byte): data a kernel fetches again,
        which a cache may serve (FlashAttention's K and V, once per query block).
    reread_footprint : int
        Bytes a cache must hold for those re-reads to hit it (byte); the
        roofline charges them to L2 when this fits in the device's L2, to HBM
        otherwise.

    Examples
    --------
    >>> c = Cost(flops=10, bytes_read=40, bytes_written=20)
    >>> c.bytes, c.intensity, c.matrix_flops
    (60, 0.16666666666666666, 10)
    >>> (c + c).kernels
    2
    >>> sum([c, c, c]) == 3 * c
    True
    >>> Cost(6, 12, 6, vector_flops=4, special_flops=1).flops_by_unit
    {'matrix': 1, 'vector': 4, 'special': 1}

    Two multiply-adds and an add: 5 vector FLOPs in 3 lane slots.

    >>> Cost(5, 4, 4, vector_flops=5, vector_fma_flops=4).vector_slots
    3
    """

    flops: int
    bytes_read: int
    bytes_written: int
    kernels: int = 1
    vector_flops: int = 0
    special_flops: int = 0
    reread_bytes: int = 0
    reread_footprint: int = 0
    vector_fma_flops: int = 0

    def __post_init__(self) -> None:
        for field in (
            "flops",
            "bytes_read",
            "bytes_written",
            "kernels",
            "vector_flops",
            "special_flops",
            "reread_bytes",
            "reread_footprint",
            "vector_fma_flops",
        ):
            _validate.size(field, getattr(self, field), minimum=0)
        if self.vector_fma_flops > self.vector_flops or self.vector_fma_flops % 2:
            raise ValueError(
                f"vector_fma_flops must be an even number <= vector_flops ({self.vector_flops}), "
                f"2 FLOP per FMA; got {self.vector_fma_flops}"
            )
        if self.vector_flops + self.special_flops > self.flops:
            raise ValueError(
                f"vector_flops + special_flops ({self.vector_flops} + {self.special_flops}) "
                f"must not exceed flops ({self.flops})"
            )

    @property
    def bytes(self) -> int:
        """Compulsory bytes, read plus written (byte); re-reads are not in it."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per compulsory byte (FLOP/byte)."""
        if self.bytes == 0:
            raise ValueError("this Cost moves no bytes, so its intensity is undefined")
        return self.flops / self.bytes

    @property
    def matrix_flops(self) -> int:
        """FLOPs on the matrix units, ``flops - vector_flops - special_flops`` (FLOP)."""
        return self.flops - self.vector_flops - self.special_flops

    @property
    def vector_slots(self) -> int:
        """Vector lane slots the vector FLOPs take, one per FMA and one per other FLOP.

        ``vector_flops - vector_fma_flops / 2``; the vector time is this over
        the lane rate, half the vendor's FMA-counted peak
        (:meth:`roofline_book.hardware.Hardware.vector_op_rate`).
        """
        return self.vector_flops - self.vector_fma_flops // 2

    @property
    def flops_by_unit(self) -> dict[str, int]:
        """FLOPs per compute unit, keyed by :data:`UNITS` (FLOP)."""
        return {
            "matrix": self.matrix_flops,
            "vector": self.vector_flops,
            "special": self.special_flops,
        }

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.kernels + other.kernels,
            vector_flops=self.vector_flops + other.vector_flops,
            special_flops=self.special_flops + other.special_flops,
            reread_bytes=self.reread_bytes + other.reread_bytes,
            reread_footprint=max(self.reread_footprint, other.reread_footprint),
            vector_fma_flops=self.vector_fma_flops + other.vector_fma_flops,
        )

    def __radd__(self, other: object) -> Cost:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # lets sum() start from 0
        return NotImplemented

    def __mul__(self, times: object) -> Cost:
        if isinstance(times, bool) or not isinstance(times, int):
            return NotImplemented
        times = _validate.size("times", times, minimum=0)
        return Cost(
            self.flops * times,
            self.bytes_read * times,
            self.bytes_written * times,
            self.kernels * times,
            vector_flops=self.vector_flops * times,
            special_flops=self.special_flops * times,
            reread_bytes=self.reread_bytes * times,
            reread_footprint=self.reread_footprint,
            vector_fma_flops=self.vector_fma_flops * times,
        )

    __rmul__ = __mul__


ZERO = Cost(0, 0, 0, 0)
"""The cost of doing nothing, the start of a sum of costs."""
