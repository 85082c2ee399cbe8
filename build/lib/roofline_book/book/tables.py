"""Tables for the page: number formatting, the roofline table, and DataFrame -> Markdown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..tables import Row, table_frame
from ..tables import markdown_table as markdown_table_text
from ..units import si


def short(value: float) -> str:
    """A table number: three significant digits below 100, whole numbers from 100 up.

    Parameters
    ----------
    value : float
        Any quantity, already in the column's unit (FLOP/byte, TFLOP/s, ...).

    Examples
    --------
    >>> short(1 / 6), short(42.67), short(100.0), short(1365.33)
    ('0.167', '42.7', '100', '1365')
    """
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def roof_frame(rows: Iterable[Row], unit: str = "TFLOP/s") -> Any:
    """Operators on a roof as text: FLOPs, bytes, intensity, attainable rate and bound.

    Columns ``operator``, ``FLOPs`` and ``bytes`` (SI-prefixed), ``I [FLOP/byte]``
    and ``attainable [<unit>]`` (both :func:`short`), ``bound``; one row per
    operator, in order, with a plain 0, 1, ... index.

    Parameters
    ----------
    rows : iterable of roofline_book.Row
        From :func:`roofline_book.cost_table`.
    unit : str
        Unit of the attainable rate, a key of :data:`roofline_book.plotting.UNITS`.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, cost_table, gemm
    >>> rows = cost_table([("add", add(4096 * 4096)), ("gemm", gemm(64, 64, 64))], EXAMPLE)
    >>> df = roof_frame(rows)
    >>> df.iloc[0].tolist()  # 1 / 6 FLOP/byte at 1 TB/s: 0.167 TFLOP/s
    ['add', '16.78 MFLOP', '100.7 MB', '0.167', '0.167', 'memory']
    >>> df.iloc[1, 3:].tolist()  # 2 * 64 / (3 * 2) = 21.3 FLOP/byte
    ['21.3', '21.3', 'memory']
    """
    import pandas as pd

    from ..plotting import UNITS

    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    table = table_frame(rows)
    return pd.DataFrame(
        {
            "operator": table["operator"],
            "FLOPs": [si(v, "FLOP") for v in table["FLOPs"]],
            "bytes": [si(v, "B") for v in table["bytes"]],
            "I [FLOP/byte]": [short(v) for v in table["intensity [FLOP/B]"]],
            f"attainable [{unit}]": [short(v / UNITS[unit]) for v in table["attainable [FLOP/s]"]],
            "bound": table["bound"],
        }
    )


def markdown_table(
    table: Any | Sequence[Mapping[str, object]],
    align: Sequence[str] | None = None,
) -> Any:
    """A table as GitHub Markdown, ready for ``glue`` and a ``{glue:md}`` directive.

    A named index (or a MultiIndex) becomes the leading column(s); an unnamed
    0, 1, ... index is dropped. Cells are written as they are
    (``disable_numparse=True``), so text such as ``"0.170"`` keeps its digits.

    Parameters
    ----------
    table : pandas.DataFrame or sequence of mapping
        The cells; rows as mappings of column name to value are accepted too.
    align : sequence of str, optional
        ``"left"``, ``"right"`` or ``"center"`` per column; by default the first
        column left, the others right (names left, numbers right).

    Returns
    -------
    IPython.display.Markdown

    Examples
    --------
    >>> print(markdown_table([{"op": "add", "I": "0.17"}, {"op": "gemm", "I": "1365"}]).data)
    | op   |    I |
    |:-----|-----:|
    | add  | 0.17 |
    | gemm | 1365 |
    >>> markdown_table([{"op": "add"}], align=["middle"])
    Traceback (most recent call last):
    ...
    ValueError: align must hold 1 of 'left', 'right', 'center'; got ['middle']
    """
    import pandas as pd
    from IPython.display import Markdown

    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    named = any(name is not None for name in frame.index.names)
    frame = frame.reset_index() if named else frame
    columns = frame.shape[1]
    align = list(align) if align is not None else ["left"] + ["right"] * (columns - 1)
    header = [str(c) for c in frame.columns]
    return Markdown(markdown_table_text(header, frame.values.tolist(), align=align))
