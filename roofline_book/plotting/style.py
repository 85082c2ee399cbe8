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

#: The words figures write, by language: English for the command line (no CJK font
#: needed), Chinese for the book. Quantities, units and formulas stay as they are.
TEXTS = {
    "en": {
        "memory roof": "memory roof\nP = B I",
        "compute roof": "compute roof",
        "ridge point": "ridge point",
        "memory-bound": "memory-bound",
        "compute-bound": "compute-bound",
        "roof": "roof",
        "achieved": "achieved",
        "of roof": "{name}: {fraction:.0%} of roof",
        "read": "read",
        "written": "written",
        "matrix": "matrix units",
        "vector": "vector units",
        "vector fma": "vector units, FMA",
        "vector ops": "vector units, add or multiply",
        "special": "special functions",
        "hbm": "HBM",
        "l2": "L2",
        "compute": "compute",
        "l2 intensity": "intensity with re-reads",
        "measured roof": "measured roof ({precision})",
        "cache roof": "{level} roof (data that stays in {level})",
        "predicted time": "predicted time [s]",
        "measured time": "measured time [s]",
        "equal": "predicted = measured",
        "within": "within {pct:.0f}%",
        "fitted": "ceilings and fitted cases",
        "datasheet roof": "datasheet roof ({key}, dense {precision})",
        "compute units": "compute units (Tensor Cores, CUDA cores, SFUs)",
        "hbm level": "HBM\n{size}, {bandwidth}",
        "l2 level": "L2 cache\n{size}",
        "l1 level": "L1 / shared memory\n{size} per SM\nup to {shared} of it as shared memory",
        "register level": "registers\n{size} per SM",
        "sms": "one per SM, {sms} SMs",
        "shared": "all SMs share it",
        "traffic boundary": "memory traffic is counted here",
    },
    "zh": {
        "memory roof": "memory roof\nP = B I",
        "compute roof": "compute roof",
        "ridge point": "ridge point",
        "memory-bound": "memory-bound",
        "compute-bound": "compute-bound",
        "roof": "roof",
        "achieved": "实测",
        "of roof": "{name}：roof 的 {fraction:.0%}",
        "read": "读",
        "written": "写",
        "matrix": "矩阵单元",
        "vector": "向量单元",
        "vector fma": "向量单元（FMA）",
        "vector ops": "向量单元（加法、乘法）",
        "special": "特殊函数单元",
        "hbm": "HBM",
        "l2": "L2",
        "compute": "计算",
        "l2 intensity": "计入重复读取的算术强度",
        "measured roof": "实测 roof（{precision}）",
        "cache roof": "{level} roof（数据留在 {level} 中）",
        "predicted time": "预测时间 [s]",
        "measured time": "实测时间 [s]",
        "equal": "预测 = 实测",
        "within": "相差 {pct:.0f}% 以内",
        "fitted": "上限探针与拟合所用的条目",
        "datasheet roof": "datasheet roof（{key}，dense {precision}）",
        "compute units": "计算单元（Tensor Core、CUDA core、SFU）",
        "hbm level": "HBM\n{size}，{bandwidth}",
        "l2 level": "L2 cache\n{size}",
        "l1 level": "L1 / shared memory\n每个 SM {size}\n其中最多 {shared} 可作 shared memory",
        "register level": "registers\n每个 SM {size}",
        "sms": "每个 SM 一份，共 {sms} 个 SM",
        "shared": "所有 SM 共享",
        "traffic boundary": "本书的 memory traffic 在这条边界上计数",
    },
}
_LANGUAGE = {"current": "en"}

#: Fonts for Chinese figures: Latin text in DejaVu Sans, CJK text from Noto Sans CJK
#: (Debian's fonts-noto-cjk), matplotlib falling back glyph by glyph.
CJK_FONTS = ["DejaVu Sans", "Noto Sans CJK SC"]


def set_language(language: str) -> None:
    """Write figure words in ``"en"`` (the default) or ``"zh"`` (the book)."""
    if language not in TEXTS:
        raise ValueError(f"language must be one of {', '.join(TEXTS)}; got {language!r}")
    _LANGUAGE["current"] = language


def text(word: str, **fields: object) -> str:
    """A figure's word in the current language, formatted with ``fields``.

    Examples
    --------
    >>> set_language("en")
    >>> text("of roof", name="add", fraction=0.5)
    'add: 50% of roof'
    """
    return TEXTS[_LANGUAGE["current"]][word].format(**fields)


def use_style() -> None:
    """Apply the house style (``roofline_book/data/roofline.mplstyle``) to matplotlib."""
    from importlib import resources

    plt = require("matplotlib.pyplot", "plotting")

    with resources.as_file(resources.files("roofline_book") / "data" / "roofline.mplstyle") as path:
        plt.style.use(str(path))


def setup_notebook(language: str = "en") -> None:
    """House style plus deterministic inline SVG output (no date, fixed hash salt).

    Call it from a notebook or IPython kernel; outside one it only applies the
    style. ``language="zh"`` writes figure words in Chinese (:data:`TEXTS`)
    and adds a CJK font (:data:`CJK_FONTS`).
    """
    use_style()
    set_language(language)
    if language == "zh":
        plt = require("matplotlib.pyplot", "plotting")
        plt.rcParams["font.family"] = CJK_FONTS
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


def _label(ax, name: str, xy, offsets, fontsize: float):
    """An operator's name beside its point: ``offsets[name]`` points away, (5, -12) by default."""
    return ax.annotate(
        name,
        xy,
        xytext=(offsets or {}).get(name, (5, -12)),
        textcoords="offset points",
        fontsize=fontsize,
        color="#222222",
    )


def _scale(unit: str) -> float:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    return UNITS[unit]
