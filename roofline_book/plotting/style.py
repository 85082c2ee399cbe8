"""The house style: one palette, one .mplstyle, units of the rate axis, SVG in notebooks."""

from __future__ import annotations

from ..extras import require

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
PRECISION_COLORS = {"fp8": PALETTE["purple"], "bf16": PALETTE["blue"], "fp32": PALETTE["orange"]}
"""One colour per precision, the same in every figure that compares precisions."""

UNITS = {"PFLOP/s": 1e15, "TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6, "FLOP/s": 1.0}


def use_style() -> None:
    """Apply the house style (``roofline_book/data/roofline.mplstyle``) to matplotlib."""
    from importlib import resources

    plt = require("matplotlib.pyplot", "plotting")

    with resources.as_file(resources.files("roofline_book") / "data" / "roofline.mplstyle") as path:
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
