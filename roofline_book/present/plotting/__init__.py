"""本书的图：一种样式、一套配色、roofline 图和算术强度曲线。

作图函数接收一个 matplotlib ``Axes``，返回画出的对象，因此能放进任何图里。
图上的文字（坐标轴、roof 的名称、图例）默认是英文（命令行用），书中是中文
（:func:`set_language`、:data:`~roofline_book.present.plotting.style.TEXTS`），
汉字的字体来自 PyPI 的 noto-cjk-sans-otc（extra ``zh``，:func:`use_cjk_font`）。
同一设备、同一精度在每张图里颜色相同
（:data:`~roofline_book.present.plotting.style.ROOF_COLORS`）。
"""

from .ceilings import RESOURCE_COLORS, ceilings, level_intensities, placed
from .comm import collective_busbw, collective_times, comm_axes, measured_sizes
from .links import comm_roofline
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
    CJK_FONT,
    CJK_FONTS,
    PALETTE,
    PRECISION_COLORS,
    ROOF_COLORS,
    TEXTS,
    UNITS,
    cjk_font_file,
    roof_color,
    set_language,
    setup_notebook,
    text,
    use_cjk_font,
    use_style,
)

__all__ = [
    "CJK_FONT",
    "CJK_FONTS",
    "PALETTE",
    "PRECISION_COLORS",
    "RESOURCE_COLORS",
    "ROOF_COLORS",
    "TEXTS",
    "UNITS",
    "achieved_gap",
    "cjk_font_file",
    "attention_sweep",
    "ceilings",
    "collective_busbw",
    "collective_times",
    "comm_axes",
    "comm_roofline",
    "device_rooflines",
    "gemm_intensity",
    "level_intensities",
    "log2_axis",
    "measured",
    "measured_sizes",
    "memory_hierarchy",
    "placed",
    "points",
    "reference_line",
    "ridge_line",
    "roof_color",
    "roof_labels",
    "roofline",
    "set_language",
    "setup_notebook",
    "square_gemm_fraction",
    "text",
    "time_bars",
    "traffic_bars",
    "use_cjk_font",
    "use_style",
]
