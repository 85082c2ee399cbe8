"""The book's figures: one style, one palette, roofline charts and intensity curves.

Plot helpers take a matplotlib ``Axes`` and return what they drew, so they
compose with any figure. Axis labels are English; no CJK font is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from . import _validate
from .ops import Cost, gemm
from .roofline import attainable, ridge_point

#: Okabe-Ito colours, safe for colour-blind readers.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}

#: Scale and label of each unit the y axis can be drawn in.
UNITS = {"PFLOP/s": 1e15, "TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6, "FLOP/s": 1.0}


def use_style() -> None:
    """Apply the house style (``roofline_book/data/roofline.mplstyle``) to matplotlib."""
    from importlib import resources

    from matplotlib import pyplot as plt

    with resources.as_file(resources.files(__package__) / "data" / "roofline.mplstyle") as path:
        plt.style.use(str(path))


def setup_notebook() -> None:
    """House style plus deterministic inline SVG output (no date, fixed hash salt).

    Call it from a notebook or IPython kernel; outside one it only applies the style.
    """
    use_style()
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    # The inline backend re-reads these when the formats change, so set kwargs first.
    shell.run_line_magic(
        "config",
        "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Date': None}}",
    )
    shell.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")


def _scale(unit: str) -> float:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    return UNITS[unit]


def roofline(
    ax,
    peak_flops: float,
    bandwidth: float,
    *,
    label: str | None = None,
    color: str = PALETTE["blue"],
    intensity_range: tuple[float, float] = (1e-2, 1e4),
    unit: str = "TFLOP/s",
    ridge: bool = True,
    linestyle: str = "-",
):
    """Draw ``min(P, B * I)`` on log-log axes, with the ridge point marked.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    peak_flops, bandwidth : float
        FLOP/s and byte/s.
    label : str, optional
        Legend label of the roof.
    intensity_range : tuple of float
        Smallest and largest intensity drawn (FLOP/byte).
    unit : str
        Unit of the y axis, a key of :data:`UNITS`.
    ridge : bool
        Mark the ridge point with a dot and a dotted vertical line.

    Returns
    -------
    list of matplotlib artists
    """
    lo, hi = (_validate.positive("intensity_range", v) for v in intensity_range)
    if lo >= hi:
        raise ValueError(f"intensity_range must be increasing, got {intensity_range!r}")
    scale = _scale(unit)
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    ridge_x = ridge_point(peak_flops, bandwidth)
    x = np.unique(np.append(x, ridge_x if lo < ridge_x < hi else []))
    drawn = ax.loglog(
        x,
        attainable(x, peak_flops, bandwidth) / scale,
        color=color,
        label=label,
        linestyle=linestyle,
    )
    if ridge and lo < ridge_x < hi:
        drawn.append(ax.axvline(ridge_x, color=color, linestyle=":", linewidth=1.0))
        drawn.append(ax.scatter([ridge_x], [peak_flops / scale], color=color, s=30, zorder=4))
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel(f"Attainable performance [{unit}]")
    return drawn


def points(
    ax,
    named: Iterable[tuple[str, Cost]],
    peak_flops: float,
    bandwidth: float,
    *,
    unit: str = "TFLOP/s",
    colors: Sequence[str] | None = None,
    annotate: bool = True,
):
    """Place operators on the roof: x is the intensity, y the attainable rate there.

    Returns
    -------
    list of matplotlib artists
    """
    scale = _scale(unit)
    palette = list(
        colors or [PALETTE[k] for k in ("vermillion", "green", "purple", "orange", "sky", "black")]
    )
    drawn = []
    for i, (name, cost) in enumerate(named):
        x = cost.intensity
        y = attainable(x, peak_flops, bandwidth) / scale
        drawn.append(
            ax.scatter(
                [x],
                [y],
                color=palette[i % len(palette)],
                s=36,
                zorder=5,
                label=name,
                edgecolor="white",
                linewidth=0.5,
            )
        )
        if annotate:
            drawn.append(
                ax.annotate(
                    name,
                    (x, y),
                    xytext=(5, -12),
                    textcoords="offset points",
                    fontsize=8,
                    color="#222222",
                )
            )
    return drawn


def measured(
    ax,
    named: Iterable[tuple[str, float, float]],
    *,
    unit: str = "TFLOP/s",
    color: str = PALETTE["vermillion"],
    marker: str = "o",
    annotate: bool = True,
):
    """Measured operators as dots: ``(label, intensity FLOP/byte, achieved FLOP/s)``.

    Returns
    -------
    list of matplotlib artists
    """
    scale = _scale(unit)
    drawn = []
    for label, x, y in named:
        drawn.append(
            ax.scatter(
                [x],
                [y / scale],
                color=color,
                marker=marker,
                s=30,
                zorder=5,
                edgecolor="white",
                linewidth=0.5,
            )
        )
        if annotate:
            drawn.append(
                ax.annotate(
                    label,
                    (x, y / scale),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=7,
                    color="#222222",
                )
            )
    return drawn


def gemm_intensity(
    ax,
    sizes: Sequence[int],
    dtype: str = "bf16",
    *,
    m: int | None = None,
    k: int | None = None,
    n: int | None = None,
    label: str | None = None,
    color: str | None = None,
):
    """Intensity of GEMMs as one size is swept, the others fixed (``None`` = the swept size).

    With ``m = k = n = None`` the sweep is square, ``n x n x n``.

    Returns
    -------
    list of matplotlib artists
    """
    sizes = [_validate.size("sizes", s) for s in sizes]
    ys = [gemm(m or s, k or s, n or s, dtype).intensity for s in sizes]
    drawn = ax.loglog(
        sizes, ys, marker="o", markersize=3, label=label or dtype, color=color, base=10
    )
    ax.set_ylabel("Arithmetic intensity [FLOP/byte]")
    return drawn
