"""页面用的表格：数字格式、roofline 表，以及 DataFrame -> Markdown。"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..present.tables import RESOURCE_ZH, Row, table_frame
from ..present.tables import markdown_table as markdown_table_text
from ..units import si


def short(value: float) -> str:
    """表格中的数字：小于 100 时保留三位有效数字，100 及以上取整数。

    Parameters
    ----------
    value : float
        任意量，已换算到该列的单位（FLOP/byte、TFLOP/s 等）。

    Examples
    --------
    >>> short(1 / 6), short(42.67), short(100.0), short(1365.33)
    ('0.167', '42.7', '100', '1365')
    """
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def resource_zh(resource: str) -> str:
    """The book's Chinese name of a resource (``"matrix"`` -> ``"矩阵单元"``).

    Examples
    --------
    >>> resource_zh("hbm"), resource_zh("special")
    ('HBM', '特殊函数单元')
    """
    if resource not in RESOURCE_ZH:
        raise ValueError(f"resource must be one of {', '.join(RESOURCE_ZH)}; got {resource!r}")
    return RESOURCE_ZH[resource]


def bound_zh(resource: str) -> str:
    """用 ``受 … 限制`` 包住本书对一种资源的称呼，空格按本书对拉丁字母词的排法。

    拉丁字母的名字（HBM、L2）两边各加一个空格；中文名字不加。

    Examples
    --------
    >>> bound_zh("hbm"), bound_zh("matrix")
    ('受 HBM 限制', '受矩阵单元限制')
    """
    name = resource_zh(resource)
    pad = " " if name.isascii() else ""
    return f"受{pad}{name}{pad}限制"


def reader_si(value: float, unit: str) -> str:
    """页面用的 :func:`roofline_book.units.si`：micro 写作 ``µ``，单位前用不换行空格。

    Examples
    --------
    >>> [reader_si(t, "s").replace("\u00a0", " ") for t in (6.291e-6, 1.5e-3)]
    ['6.291 µs', '1.5 ms']
    """
    number, _, rest = si(value, unit).partition(" ")
    if rest.startswith("u"):
        rest = "µ" + rest[1:]
    return f"{number}\u00a0{rest}" if rest else number


def roof_frame(rows: Iterable[Row], unit: str = "TFLOP/s") -> Any:
    """把 roof 上的算子写成文字：FLOPs、字节数、算术强度、可达速率与限制它的资源。

    各列为 ``算子``，``FLOPs`` 与 ``字节`` （带 SI 前缀），``I [FLOP/byte]`` 与 ``可达性能
    [<unit>]`` （都用 :func:`short`），``受限于`` （决定下界的资源，:data:`RESOURCE_ZH`）；每个算子
    一行，按原顺序，索引为普通的 0、1、……。

    Parameters
    ----------
    rows : iterable of roofline_book.Row
        来自 :func:`roofline_book.cost_table`。
    unit : str
        可达速率的单位，:data:`roofline_book.present.plotting.UNITS` 的一个键。

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, cost_table, gemm
    >>> rows = cost_table([("add", add(4096 * 4096)), ("gemm", gemm(64, 64, 64))], EXAMPLE)
    >>> df = roof_frame(rows)
    >>> df.iloc[0].tolist()  # 1 / 6 FLOP/byte at 1 TB/s: 0.167 TFLOP/s
    ['add', '16.78 MFLOP', '100.7 MB', '0.167', '0.167', 'HBM']
    >>> df.iloc[1, 3:].tolist()  # 2 * 64 / (3 * 2) = 21.3 FLOP/byte
    ['21.3', '21.3', 'HBM']
    """
    import pandas as pd

    from ..present.plotting import UNITS

    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    table = table_frame(rows)
    return pd.DataFrame(
        {
            "算子": table["operator"],
            "FLOPs": [si(v, "FLOP") for v in table["FLOPs"]],
            "字节": [si(v, "B") for v in table["bytes"]],
            "I [FLOP/byte]": [short(v) for v in table["intensity [FLOP/B]"]],
            f"可达性能 [{unit}]": [short(v / UNITS[unit]) for v in table["attainable [FLOP/s]"]],
            "受限于": [resource_zh(r) for r in table["resource"]],
        }
    )


def bound_frame(rows: Iterable[Row], *, share: bool = True) -> Any:
    """算子及其时间下界，供阅读：每个算子一行，表头用中文。

    各列为 ``FLOPs``、``字节`` （必需字节数）、``I [FLOP/B]``、``受限于`` （:data:`RESOURCE_ZH`）、
    ``时间下界``，给了 ``share`` 时还有 ``占比`` （占各行下界之和的比例）；索引 ``算子`` 是算子名。
    数字与单位之间用不换行空格连接。

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, cost_table, gemm
    >>> rows = cost_table([("add", add(2**20)), ("gemm", gemm(4096, 4096, 4096))], EXAMPLE)
    >>> df = bound_frame(rows)
    >>> list(df.columns), df.index.name
    (['FLOPs', '字节', 'I [FLOP/B]', '受限于', '时间下界', '占比'], '算子')
    >>> df.loc["gemm", "受限于"], df.loc["add", "时间下界"].replace("\u00a0", " ")
    ('计算', '6.291 µs')
    """
    import pandas as pd

    rows = list(rows)
    table = table_frame(rows)
    unit = reader_si
    columns = {
        "FLOPs": [unit(v, "FLOP") for v in table["FLOPs"]],
        "字节": [unit(v, "B") for v in table["bytes"]],
        "I [FLOP/B]": [short(v) for v in table["intensity [FLOP/B]"]],
        "受限于": [resource_zh(r) for r in table["resource"]],
        "时间下界": [unit(t * 1e-6, "s") for t in table["time bound [us]"]],
    }
    if share:
        columns["占比"] = [f"{v:.1%}" for v in table["share"]]
    return pd.DataFrame(columns, index=pd.Index(table["operator"], name="算子"))


def markdown_table(
    table: Any | Sequence[Mapping[str, object]],
    align: Sequence[str] | None = None,
) -> Any:
    """把表格写成 GitHub Markdown，供 ``glue`` 和 ``{glue:md}`` 指令使用。

    有名字的 index（或 MultiIndex）成为最前面的列；没有名字的 0、1、…… index 被丢掉。单元格照原样
    写出（``disable_numparse=True``），所以 ``"0.170"`` 这样的文本保留它的各位数字。

    Parameters
    ----------
    table : pandas.DataFrame or sequence of mapping
        单元格；也接受以列名到值的 mapping 表示的各行。
    align : sequence of str, optional
        每列 ``"left"``、``"right"`` 或 ``"center"``；默认第一列左对齐、其余右对齐（名字靠左，
        数字靠右）。

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
    roofline_book.InvalidArgument: align must hold 1 of 'left', 'right', 'center'; got ['middle']
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
