"""各章的开头与粘贴：把值、图和表格放进页面（myst-nb）。"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ..present import plotting


def plain(value: object) -> object:
    """把 NumPy 标量换成它所含的 Python ``int``/``float``/``bool``；其他值原样返回。

    粘贴的数字必须是普通的 Python 数：NumPy 2 标量的 repr（``np.float64(0.5)``）会破坏
    ``{glue:text}`` 的格式说明。

    Examples
    --------
    >>> plain(np.float64(0.25)), type(plain(np.int64(3))).__name__, plain("6 B")
    (0.25, 'int', '6 B')
    """
    return value.item() if isinstance(value, np.generic) else value


def glue(name: str | None = None, value: object = None, /, **named: object) -> None:
    """把值粘贴进页面而不显示：``glue("a-b", x)`` 或 ``glue(a=x, b=y)``。

    每个值经过 :func:`plain` 后用 myst-nb 的 ``glue(name, value, display=False)`` 保存，正文用
    ``{glue:text}`name:.2f``` 读取。不是 Python 标识符的名字（``"fig-04-roofline"``）放在前面，
    按位置给出；是标识符的名字可以按关键字给出任意多个。

    Parameters
    ----------
    name : str, optional
        一个名字，``value`` 是它的值。
    value : object
        粘贴在 ``name`` 之下的值。
    **named : object
        更多的值，各自粘贴在关键字名之下。

    Examples
    --------
    在 kernel 之外 myst-nb 什么也不粘贴，所以这里只检查参数：

    >>> glue(ratio=8.0, sms=132)
    >>> glue(None, 1.0)
    Traceback (most recent call last):
    ...
    TypeError: glue: a positional value needs a name (a str), got None
    """
    from myst_nb import glue as myst_glue

    pairs: list[tuple[str, object]] = []
    if name is not None or value is not None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"glue: a positional value needs a name (a str), got {name!r}")
        pairs.append((name, value))
    pairs.extend(named.items())
    for key, item in pairs:
        myst_glue(key, plain(item), display=False)


def glue_figure(name: str, fig: Any) -> None:
    """为 ``{glue:figure}`` 指令粘贴一张 matplotlib 图，然后关闭它。

    关闭图，是为了不让它在 cell 所在处也显示一次。

    Parameters
    ----------
    name : str
        页面的 ``{glue:figure}`` 读取的名字。
    fig : matplotlib.figure.Figure
        要粘贴的图；粘贴后关闭。

    Raises
    ------
    ValueError
        图上有文字压住另一段文字或一个数据点时
        （:func:`roofline_book.present.plotting.layout.overlaps`）：这样的图不粘贴。
    """
    from IPython import get_ipython
    from matplotlib import pyplot as plt

    from ..present.plotting.layout import overlaps

    # Outside a kernel nothing is glued (a reader running a page's code in plain Python, with
    # other fonts): the check is for the figures the book shows.
    hidden = overlaps(fig) if get_ipython() is not None else []
    if hidden:
        plt.close(fig)
        pairs = "; ".join(f"{a} over {b}" for a, b in hidden[:8])
        raise ValueError(f"figure {name!r}: labels overlap ({len(hidden)}): {pairs}")
    glue(name, fig)
    plt.close(fig)


def preamble() -> tuple[Callable[..., None], ModuleType, ModuleType]:
    """一章的第一个 cell：本书样式、可复现的 SVG，以及每个 cell 都用到的名字。

    调用 :func:`roofline_book.present.plotting.setup_notebook` （样式，加上不写日期的内嵌
    SVG，图上文字用
    中文），返回 ``(glue, plt, plotting)``：即本模块的 :func:`glue`、``matplotlib.pyplot`` 和
    :mod:`roofline_book.present.plotting`。

    Examples
    --------
    >>> glue_, plt, plotting = preamble()
    >>> glue_ is glue, plt.__name__, plotting.__name__
    (True, 'matplotlib.pyplot', 'roofline_book.present.plotting')
    """
    from matplotlib import pyplot as plt

    plotting.setup_notebook("zh")
    return glue, plt, plotting
