"""读代价表格：各行的占比，扫描中第一个越过 ridge point 的尺寸。"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..ops import gemm
from ..present.tables import Row


def share(rows: Iterable[Row], *, contains: Sequence[str] = (), bound: str | None = None) -> float:
    """按名称和/或限制资源挑出的各行，其时间下界占比之和。

    Parameters
    ----------
    rows : iterable of roofline_book.Row
        来自 :func:`roofline_book.cost_table` 或 :func:`roofline_book.block_table`。
    contains : sequence of str
        保留名称包含其中任一字符串的行（为空时保留全部）。
    bound : {"memory", "compute"}, optional
        只保留受这条 roof 限制的行。

    Returns
    -------
    float
        0 到 1 之间：保留的行占整张表时间下界之和的比例。

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
    """GEMM 扫描中算术强度首次达到 ``ridge`` （FLOP/byte）的尺寸。

    shape 的规则同 :func:`roofline_book.present.plotting.gemm_intensity`：``m``、``k``、``n`` 中留作
    ``None`` 的取被扫描的尺寸，所以都不给时扫描的是方阵（``s x s x s``）。

    Parameters
    ----------
    sizes : iterable of int
        扫描的尺寸，从小到大（例如 2 的幂）。
    ridge : float
        要达到的算术强度（FLOP/byte）。
    dtype : str
        GEMM 的精度。

    Returns
    -------
    int
        第一个满足 ``gemm(...).intensity >= ridge`` 的尺寸。

    Examples
    --------
    BF16 方阵 GEMM：I = 2n / 6 在 n = 1024 时首次达到 295 FLOP/byte（341）：

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
