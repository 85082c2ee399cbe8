"""The book's figures: one style, one palette, roofline charts and intensity curves.

Plot helpers take a matplotlib ``Axes`` and return what they drew, so they
compose with any figure. Axis labels are English; no CJK font is needed.
"""

from .marks import log2_axis, reference_line, ridge_line, time_bars, traffic_bars
from .roofs import (
    achieved_gap,
    attention_sweep,
    device_rooflines,
    gemm_intensity,
    measured,
    points,
    roof_labels,
    roofline,
    square_gemm_fraction,
)
from .style import PALETTE, PRECISION_COLORS, UNITS, setup_notebook, use_style

__all__ = [
    "PALETTE",
    "PRECISION_COLORS",
    "UNITS",
    "achieved_gap",
    "attention_sweep",
    "device_rooflines",
    "gemm_intensity",
    "log2_axis",
    "measured",
    "points",
    "reference_line",
    "ridge_line",
    "roof_labels",
    "roofline",
    "setup_notebook",
    "square_gemm_fraction",
    "time_bars",
    "traffic_bars",
    "use_style",
]
