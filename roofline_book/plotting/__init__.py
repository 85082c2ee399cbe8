"""The book's figures: one style, one palette, roofline charts and intensity curves.

Plot helpers take a matplotlib ``Axes`` and return what they drew, so they
compose with any figure. Axis quantities are English; the words a figure
writes (roof names, legends) are English by default and Chinese in the book
(:func:`set_language`, :data:`TEXTS`), which needs a CJK font (Debian's
fonts-noto-cjk).
"""

from .ceilings import RESOURCE_COLORS, ceilings, level_intensities, placed
from .marks import log2_axis, memory_hierarchy, reference_line, ridge_line, time_bars, traffic_bars
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
from .style import (
    PALETTE,
    PRECISION_COLORS,
    TEXTS,
    UNITS,
    set_language,
    setup_notebook,
    text,
    use_style,
)

__all__ = [
    "PALETTE",
    "PRECISION_COLORS",
    "RESOURCE_COLORS",
    "TEXTS",
    "UNITS",
    "achieved_gap",
    "attention_sweep",
    "ceilings",
    "device_rooflines",
    "gemm_intensity",
    "level_intensities",
    "log2_axis",
    "measured",
    "memory_hierarchy",
    "placed",
    "points",
    "reference_line",
    "ridge_line",
    "roof_labels",
    "roofline",
    "set_language",
    "setup_notebook",
    "square_gemm_fraction",
    "text",
    "time_bars",
    "traffic_bars",
    "use_style",
]
