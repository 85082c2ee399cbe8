"""The result of every operator model: :class:`Cost`, FLOPs and bytes moved."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes moved by one or more kernels.

    Costs add, so the cost of three separate kernels can be set beside the
    cost of one fused kernel.

    Parameters
    ----------
    flops : int
        Floating-point operations (FLOP).
    bytes_read : int
        Bytes read from main memory (byte).
    bytes_written : int
        Bytes written to main memory (byte).
    kernels : int
        Kernel launches the work takes.

    Examples
    --------
    >>> c = Cost(flops=10, bytes_read=40, bytes_written=20)
    >>> c.bytes, c.intensity
    (60, 0.16666666666666666)
    >>> (c + c).kernels
    2
    >>> sum([c, c, c]) == 3 * c
    True
    """

    flops: int
    bytes_read: int
    bytes_written: int
    kernels: int = 1

    def __post_init__(self) -> None:
        for field in ("flops", "bytes_read", "bytes_written", "kernels"):
            _validate.size(field, getattr(self, field), minimum=0)

    @property
    def bytes(self) -> int:
        """Total bytes moved, read plus written (byte)."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte moved (FLOP/byte)."""
        if self.bytes == 0:
            raise ValueError("this Cost moves no bytes, so its intensity is undefined")
        return self.flops / self.bytes

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.kernels + other.kernels,
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
        )

    __rmul__ = __mul__


ZERO = Cost(0, 0, 0, 0)
"""The cost of doing nothing, the start of a sum of costs."""
