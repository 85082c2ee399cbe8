"""The chapter preamble and gluing: values, figures, tables into a page (myst-nb)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .. import plotting


def plain(value: object) -> object:
    """A NumPy scalar as the Python ``int``/``float``/``bool`` it holds; anything else as is.

    Glued numbers must be plain Python numbers: a NumPy 2 scalar's repr
    (``np.float64(0.5)``) breaks ``{glue:text}`` format specs.

    Examples
    --------
    >>> plain(np.float64(0.25)), type(plain(np.int64(3))).__name__, plain("6 B")
    (0.25, 'int', '6 B')
    """
    return value.item() if isinstance(value, np.generic) else value


def glue(name: str | None = None, value: object = None, /, **named: object) -> None:
    """Glue values into the page without displaying them: ``glue("a-b", x)`` or ``glue(a=x, b=y)``.

    Each value is stored with myst-nb's ``glue(name, value, display=False)``
    after :func:`plain`, so the prose reads it with ``{glue:text}`name:.2f```.
    Names that are not Python identifiers (``"fig-04-roofline"``) go first,
    positionally; any number of identifier names go as keywords.

    Parameters
    ----------
    name : str, optional
        One name, with ``value`` its value.
    value : object
        The value glued under ``name``.
    **named : object
        More values, each under its keyword.

    Examples
    --------
    Outside a kernel myst-nb glues nothing, so this only checks the arguments:

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
    """Glue a matplotlib figure for a ``{glue:figure}`` directive, then close it.

    Closing keeps the figure from also being shown where the cell is.

    Parameters
    ----------
    name : str
        The name the page's ``{glue:figure}`` reads.
    fig : matplotlib.figure.Figure
        The figure; closed afterwards.
    """
    from matplotlib import pyplot as plt

    glue(name, fig)
    plt.close(fig)


def preamble() -> tuple[Callable[..., None], ModuleType, ModuleType]:
    """A chapter's first cell: house style, deterministic SVG, and the names every cell uses.

    Applies :func:`roofline_book.plotting.setup_notebook` (style plus inline
    SVG without a date, figure words in Chinese) and returns
    ``(glue, plt, plotting)``: this module's
    :func:`glue`, ``matplotlib.pyplot`` and :mod:`roofline_book.plotting`.

    Examples
    --------
    >>> glue_, plt, plotting = preamble()
    >>> glue_ is glue, plt.__name__, plotting.__name__
    (True, 'matplotlib.pyplot', 'roofline_book.plotting')
    """
    from matplotlib import pyplot as plt

    plotting.setup_notebook("zh")
    return glue, plt, plotting
