"""Reading tables of costs: shares of rows, the first size of a sweep past a ridge."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..ops import gemm
from ..tables import Row


def share(rows: Iterable[Row], *, contains: Sequence[str] = (), bound: str | None = None) -> float:
    """Summed share of the time bound of the rows picked by name and/or bound.

    Parameters
    ----------
    rows : iterable of roofline_book.Row
        From :func:`roofline_book.cost_table` or :func:`roofline_book.block_table`.
    contains : sequence of str
        Keep a row whose name contains any of these (all rows when empty).
    bound : {"memory", "compute"}, optional
        Keep only rows under this roof.

    Returns
    -------
    float
        Between 0 and 1: the kept rows' fraction of the table's summed time bounds.

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, cost_table, gemm
    >>> rows = cost_table([("add", add(4096 * 4096)), ("gemm", gemm(4096, 4096, 4096))], EXAMPLE)
    >>> round(share(rows, contains=["add"]), 3)  # 100.7 us / (100.7 + 1374.4) us
    0.068
    >>> share(rows, bound="compute") == share(rows, contains=["gemm"]), round(share(rows), 9)
    (True, 1.0)
    """
    if bound not in (None, "memory", "compute"):
        raise ValueError(f"bound must be 'memory', 'compute' or None; got {bound!r}")
    return sum(
        r.share
        for r in rows
        if (not contains or any(part in r.name for part in contains))
        and (bound is None or r.bound == bound)
    )


def first_size(
    sizes: Iterable[int],
    ridge: float,
    dtype: str = "bf16",
    *,
    m: int | None = None,
    k: int | None = None,
    n: int | None = None,
) -> int:
    """The first size of a GEMM sweep whose intensity reaches ``ridge`` (FLOP/byte).

    The shape follows :func:`roofline_book.plotting.gemm_intensity`: each of
    ``m``, ``k``, ``n`` left ``None`` is the swept size, so with none given the
    sweep is square (``s x s x s``).

    Parameters
    ----------
    sizes : iterable of int
        The sweep, smallest first (e.g. powers of two).
    ridge : float
        Intensity to reach, FLOP/byte.
    dtype : str
        Precision of the GEMM.

    Returns
    -------
    int
        The first size whose ``gemm(...).intensity >= ridge``.

    Examples
    --------
    Square BF16 GEMM: I = 2n / 6 reaches 295 FLOP/byte first at n = 1024 (341):

    >>> first_size([2**p for p in range(4, 15)], 295.0)
    1024
    >>> first_size([1, 2, 4], 1e6)
    Traceback (most recent call last):
    ...
    ValueError: no size in the sweep reaches intensity 1e+06 FLOP/byte
    """
    for s in sizes:
        if gemm(m or s, k or s, n or s, dtype).intensity >= ridge:
            return s
    raise ValueError(f"no size in the sweep reaches intensity {ridge:g} FLOP/byte")
