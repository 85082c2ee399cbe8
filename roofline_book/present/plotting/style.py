"""统一的图表样式：一套配色、一个 .mplstyle、速率轴的单位，notebook 中输出 SVG。"""

from __future__ import annotations

from pathlib import Path

from ..._base.extras import require
from ..._base.validate import InvalidArgument
from ..words import RESOURCES

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

#: 本书的图中画出 roof 或 ridge point 的（目录设备，精度）各有一种固定的颜色，每张图都相同：
#: H100 SXM 的 BF16 出现在哪里都是蓝色。其他的由 ``roof_color`` 按目录的顺序取色。
ROOF_COLORS = {
    ("h100-sxm", "bf16"): PALETTE["blue"],
    ("h100-sxm", "fp8"): PALETTE["purple"],
    ("h100-sxm", "fp32"): PALETTE["orange"],
    ("a100-sxm", "bf16"): PALETTE["green"],
    ("a100-sxm", "fp32"): PALETTE["black"],
    ("h200-sxm", "bf16"): PALETTE["vermillion"],
    ("h200-sxm", "fp32"): PALETTE["sky"],
}

PRECISION_COLORS = {d: c for (key, d), c in ROOF_COLORS.items() if key == "h100-sxm"}
"""H100 SXM 各精度的颜色（取自 :data:`~roofline_book.present.plotting.style.ROOF_COLORS`
），供只画这块设备的图使用。"""

#: y 轴可用的各个单位及其倍率。
UNITS = {"PFLOP/s": 1e15, "TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6, "FLOP/s": 1.0}

#: 图上的文字，按语言分：命令行用英文（不需要 CJK 字体），书中用中文。
#: 物理量的符号、单位和公式两种语言相同；资源的叫法取自
#: :data:`roofline_book.present.words.RESOURCES`。
TEXTS = {
    "en": {
        **RESOURCES["en"],
        "memory roof": "memory roof\n$P = B_{{\\rm peak}}\\,I$",
        "compute roof": "compute roof",
        "ridge point": "ridge point",
        "memory-bound": "memory-bound",
        "compute-bound": "compute-bound",
        "roof": "roof",
        "achieved": "achieved",
        "of roof": "{name}: {fraction:.0%} of roof",
        "read": "read",
        "written": "written",
        "vector fma": "vector units, FMA",
        "vector ops": "vector units, add or multiply",
        "l2 intensity": "intensity with re-reads",
        "measured roof": "measured roof ({precision})",
        "cache roof": "{level} roof (data that stays in {level})",
        "predicted time": "predicted time [s]",
        "message size axis": "size per rank m [byte]",
        "comm time axis": "time [s]",
        "busbw axis": "busbw [GB/s]",
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
        "intensity axis": "Arithmetic intensity I [FLOP/byte]",
        "comm intensity axis": "FLOPs per byte sent [FLOP/byte]",
        "attainable axis": "Attainable performance [{unit}]",
        "achieved axis": "Achieved performance [{unit}]",
        "time bound axis": "Time lower bound [{unit}]",
        "square gemm axis": "Square GEMM size n (M = K = N = n)",
        "sequence axis": "Sequence length ℓ",
        "traffic axis": "HBM traffic [bytes]",
        "qkvo once": "Q, K, V, O once",
        "precision ridge": "{precision} (ridge {ridge:.0f} FLOP/byte)",
    },
    "zh": {
        **RESOURCES["zh"],
        "memory roof": "memory roof\n$P = B_{{\\rm peak}}\\,I$",
        "compute roof": "compute roof",
        "ridge point": "ridge point",
        "memory-bound": "memory-bound",
        "compute-bound": "compute-bound",
        "roof": "roof",
        "achieved": "实测",
        "of roof": "{name}：roof 的 {fraction:.0%}",
        "read": "读",
        "written": "写",
        "vector fma": "向量单元（FMA）",
        "vector ops": "向量单元（加法、乘法）",
        "l2 intensity": "计入重复读取的算术强度",
        "measured roof": "实测 roof（{precision}）",
        "cache roof": "{level} roof（数据留在 {level} 中）",
        "predicted time": "预测时间 [s]",
        "message size axis": "每个 rank 的消息大小 m [byte]",
        "comm time axis": "时间 [s]",
        "busbw axis": "busbw [GB/s]",
        "measured time": "实测时间 [s]",
        "equal": "预测 = 实测",
        "within": "相差 {pct:.0f}% 以内",
        "fitted": "上限探针与拟合所用的条目",
        "datasheet roof": "datasheet roof（{key}，dense {precision}）",
        "compute units": "计算单元（Tensor Core、CUDA core、SFU）",
        "hbm level": "HBM\n{size}，{bandwidth}",
        "l2 level": "L2 cache\n{size}",
        "l1 level": "L1 / shared memory\n每个 SM {size}\n其中最多 {shared} 可作 shared memory",
        "register level": "寄存器\n每个 SM {size}",
        "sms": "每个 SM 一份，共 {sms} 个 SM",
        "shared": "所有 SM 共享",
        "traffic boundary": "本书的 memory traffic 在这条边界上计数",
        "intensity axis": "算术强度 I [FLOP/byte]",
        "comm intensity axis": "每送出一个字节的 FLOPs [FLOP/byte]",
        "attainable axis": "可达性能 [{unit}]",
        "achieved axis": "实测性能 [{unit}]",
        "time bound axis": "时间下界 [{unit}]",
        "square gemm axis": "方阵 GEMM 的边长 n（M = K = N = n）",
        "sequence axis": "序列长度 ℓ",
        "traffic axis": "HBM 流量 [bytes]",
        "qkvo once": "Q、K、V、O 各读写一次",
        "precision ridge": "{precision}，ridge point 为 {ridge:.0f} FLOP/byte",
    },
}
_LANGUAGE = {"current": "en"}

#: 汉字所用的字体。它的文件来自 PyPI 的 noto-cjk-sans-otc（extra ``zh``），由
#: :func:`~roofline_book.present.plotting.use_cjk_font` 显式登记给 matplotlib：
#: 图上有没有汉字的字形，不取决于系统装了什么字体，也不取决于 matplotlib 的字体缓存。
CJK_FONT = "Noto Sans CJK SC"

#: 中文图所用的字体：拉丁字母用 matplotlib 自带的 DejaVu Sans，汉字用
#: :data:`~roofline_book.present.plotting.style.CJK_FONT`，
#: matplotlib 逐字形回退。
CJK_FONTS = ["DejaVu Sans", CJK_FONT]


def cjk_font_file() -> Path:
    """:data:`~roofline_book.present.plotting.style.CJK_FONT` 所在的字体文件：Noto Sans CJK 的
    OpenType collection
    ``NotoSansCJK-Regular.ttc`` （其中一个 face 是 SC），来自 noto-cjk-sans-otc。

    Raises
    ------
    ImportError
        没装 noto-cjk-sans-otc（``MissingExtra``）；信息写明 ``pip install 'roofline-book[zh]'``。
    """
    package = require("noto_cjk_sans_otc", "Chinese figure text")
    return Path(str(package.FONT_PATH))


def use_cjk_font() -> Path:
    """把 :func:`cjk_font_file` 登记给 matplotlib（``fontManager.addfont``），返回该文件。

    登记的 face 排在同名的系统字体之前，所以 :data:`~roofline_book.present.plotting.style.CJK_FONT`
    总是这个文件；再次调用不会
    重复登记。

    Raises
    ------
    ImportError
        没装 noto-cjk-sans-otc（``MissingExtra``）。
    RuntimeError
        matplotlib 读不出 collection 中的 SC face（3.11 之前的版本只读第一个 face）。
    """
    import matplotlib
    from matplotlib import font_manager

    path = cjk_font_file()
    manager = font_manager.fontManager
    if not any(f.name == CJK_FONT and Path(f.fname) == path for f in manager.ttflist):
        before = len(manager.ttflist)
        manager.addfont(path)  # clears findfont's cache
        ours = manager.ttflist[before:]
        del manager.ttflist[before:]
        manager.ttflist[:0] = ours  # findfont keeps the first of equally good matches
    try:
        found = str(
            font_manager.findfont(
                font_manager.FontProperties(family=CJK_FONT), fallback_to_default=False
            )
        )
    except ValueError:
        found = ""
    if not found or Path(found).resolve() != path.resolve():  # findfont returns a realpath
        raise RuntimeError(
            f"matplotlib {matplotlib.__version__} finds no {CJK_FONT} face in {path.name}: "
            "Chinese figure text needs matplotlib >= 3.11"
        )
    return path


def set_language(language: str) -> None:
    """图上的文字用 ``"en"`` （默认）还是 ``"zh"`` （本书）。"""
    if language not in TEXTS:
        raise InvalidArgument("language", f"must be one of {', '.join(TEXTS)}; got {language!r}")
    _LANGUAGE["current"] = language


def text(word: str, **fields: object) -> str:
    """当前语言下图上的一段文字，用 ``fields`` 填入格式。

    Examples
    --------
    >>> set_language("en")
    >>> text("of roof", name="add", fraction=0.5)
    'add: 50% of roof'
    """
    return TEXTS[_LANGUAGE["current"]][word].format(**fields)


def use_style() -> None:
    """把本书的样式（``roofline_book/present/data/roofline.mplstyle``）应用到 matplotlib。"""
    from importlib import resources

    plt = require("matplotlib.pyplot", "plotting")

    with resources.as_file(
        resources.files("roofline_book.present") / "data" / "roofline.mplstyle"
    ) as path:
        plt.style.use(str(path))


def setup_notebook(language: str = "en") -> None:
    """本书的样式，加上可复现的内嵌 SVG 输出（不写日期，固定 hash salt）。

    在 notebook 或 IPython kernel 中调用；在它们之外只应用样式。
    ``language="zh"`` 让图上的文字用中文（:data:`~roofline_book.present.plotting.style.TEXTS`），
    先登记汉字的字体（:func:`use_cjk_font`），再让图用
    :data:`~roofline_book.present.plotting.style.CJK_FONTS`。没装 noto-cjk-sans-otc 时
    抛出 ``MissingExtra`` （一种 ImportError），写明 ``pip install 'roofline-book[zh]'``，
    而不是画出没有汉字字形的图。
    """
    if language == "zh":
        use_cjk_font()
    use_style()
    set_language(language)
    if language == "zh":
        plt = require("matplotlib.pyplot", "plotting")
        plt.rcParams["font.family"] = CJK_FONTS
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    # The inline backend's display formatters exist once it is active: a figure made without
    # pyplot (the diagrams' Figure) before any pyplot figure would otherwise show as text.
    if getattr(shell, "kernel", None) is not None:  # a notebook's kernel, not a terminal shell
        shell.run_line_magic("matplotlib", "inline")
    # The inline backend re-reads these when the formats change, so set kwargs first.
    shell.run_line_magic(
        "config",
        "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Date': None}}",
    )
    shell.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")


def roof_color(device: str, precision: str) -> str:
    """``device`` 在 ``precision`` 下的 roof 的颜色。

    本书的图所用的几条 roof 有固定的颜色（
    :data:`~roofline_book.present.plotting.style.ROOF_COLORS`）；目录中其他设备的 roof 按目录的顺序
    （设备，再按它的精度）依次取 ``PALETTE`` 的颜色，所以目录里新加的设备不改代码也能画。

    Examples
    --------
    >>> roof_color("h100-sxm", "bf16") == PALETTE["blue"]
    True
    >>> roof_color("a100-sxm", "fp64") in PALETTE.values()
    True
    """
    if (device, precision) in ROOF_COLORS:
        return ROOF_COLORS[device, precision]
    from ...devices.catalog import catalog

    others = [
        (key, p)
        for key, hw in catalog().items()
        for p in hw.precisions
        if (key, p) not in ROOF_COLORS
    ]
    if (device, precision) not in others:
        raise InvalidArgument(
            "device",
            f"must be a catalog device with a {precision!r} roof "
            f"({', '.join(catalog())}); got {device!r}",
        )
    colours = list(PALETTE.values())
    return colours[others.index((device, precision)) % len(colours)]


def _label(ax, name: str, xy, offsets, fontsize: float, leader: bool = False):
    """把算子的名字写在它的点旁边：偏移 ``offsets[name]`` 个 point，默认 (5, -12)。

    ``leader`` 时从名字到点画一条细线（几个点挤在一起、名字只能离远一些时用）。
    """
    return ax.annotate(
        name,
        xy,
        xytext=(offsets or {}).get(name, (5, -12)),
        textcoords="offset points",
        fontsize=fontsize,
        color="#222222",
        arrowprops={"arrowstyle": "-", "color": "#888888", "lw": 0.6, "shrinkA": 1, "shrinkB": 0}
        if leader
        else None,
    )


def _scale(unit: str) -> float:
    if unit not in UNITS:
        raise InvalidArgument("unit", f"must be one of {', '.join(UNITS)}; got {unit!r}")
    return UNITS[unit]
