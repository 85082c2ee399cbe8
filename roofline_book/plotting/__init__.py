"""The book's figures: one style, one palette, roofline charts and intensity curves.

Plot helpers take a matplotlib ``Axes`` and return what they drew, so they
compose with any figure. Axis labels are English; no CJK font is needed.
"""

from .marks import reference_line, ridge_line, time_bars, traffic_bars
from .roofs import (
    achieved_gap,
    device_rooflines,
    gemm_intensity,
    measured,
    points,
    roof_labels,
    roofline,
)
from .style import PALETTE, UNITS, setup_notebook, use_style

__all__ = [
    "PALETTE",
    "UNITS",
    "achieved_gap",
    "device_rooflines",
    "gemm_intensity",
    "measured",
    "points",
    "reference_line",
    "ridge_line",
    "roof_labels",
    "roofline",
    "setup_notebook",
    "time_bars",
    "traffic_bars",
    "use_style",
]
