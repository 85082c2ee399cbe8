"""kernel 的示意图：工厂模型、GEMM 的分块与条带、cluster 共享条带、kernel fusion。

FlashAttention 的分块在 :mod:`.flash`。

每个函数的数都取自包里的模型（:func:`~roofline_book.ops.tiled_gemm`、
:func:`~roofline_book.ops.attention`、elementwise 算子的 :class:`~roofline_book.ops.Cost`）
与设备目录（:func:`~roofline_book.hardware`），所以模型或目录变了，图也跟着变。
"""

from __future__ import annotations

from typing import Any

from ...dtypes import Precision, bytes_per_element, precision_name
from ...ops import gemm, tiled_gemm
from ...units import si
from . import _draw
from ._common import COLORS, dims, key_row, nbytes, rich, sizes

#: C 上最多画几条格线（每边）：更多的分块按几个一格画，格子的大小写在图上。
MAX_GRID = 8
THIN_ROW = 0.2  # inches: the least height of a tile row of a thin A and C


def _mb(value: float) -> str:
    """字节数的十进制写法（MB、GB，三位有效数字），与正文按十进制计数一致。

    >>> _mb(2**25)
    '33.6 MB'
    """
    return si(value, "B", 3)


def _cells(extent: int, tile: int) -> int:
    """每条格线之间画几个分块：使每边至多 :data:`MAX_GRID` 格。"""
    tiles = -(-extent // tile)
    return -(-tiles // MAX_GRID)


def gemm_tiles(
    *, m: int = 4096, n: int = 4096, k: int = 4096, tile: int = 128, dtype: Precision = "bf16",
    ax: Any = None,
) -> Any:  # fmt: skip
    """GEMM ``C = A W`` 按 ``tile x tile`` 的输出分块计算：每个分块读 A 的行条与 W 的列条。

    图中 A（M x K）在左下，W（K x N）在右上，C（M x N）在右下，按同一比例画出（A、C 很扁时沿 M
    放大，使一行分块至少高 :data:`THIN_ROW` 英寸，图上注明）；C 上的细线把
    分块按几个一格画出（每边至多 :data:`MAX_GRID` 格，一格含几个分块写在图上）。高亮的是一个输出分块
    （黑）、它读的 A 的行条（``tile x k``，蓝）与 W 的列条（``k x tile``，橙）。

    数的来源：分块个数是 ``ceil(m / tile) * ceil(n / tile)``，A 被 C 的每一列分块读一遍（共
    ``ceil(n / tile)`` 遍），W 被每一行读一遍（``ceil(m / tile)`` 遍），与
    :func:`~roofline_book.ops.tiled_gemm` 的计数相同；条带的字节数是 ``tile * k * s``
    （``s`` 取自 ``dtype``）；一个分块的 FLOPs、读写字节数与算术强度取自
    :func:`roofline_book.ops.tiled_gemm` 对一个分块（``tile x k`` 乘 ``k x tile``）的代价；
    一个分块单独读写时的强度只由 ``tile`` 与 ``k`` 决定，与 ``m`` 无关。旁边（朱红）是整个 GEMM
    按必需流量（A、W 各读一次，C 写一次）的理想强度，取自 :func:`roofline_book.ops.gemm`：
    token 少（``m`` 小）时低的是它。
    单位：字节按二进制前缀（KiB、MiB），强度为 FLOP/byte。

    Parameters
    ----------
    m, n, k : int
        GEMM 的尺寸：A 为 ``m x k``，W 为 ``k x n``。
    tile : int
        方形输出分块的边长 ``t`` （元素）。
    dtype : str or torch.dtype
        A、W、C 的精度。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    d = sizes(m=m, n=n, k=k, tile=tile)
    m, n, k, tile = d["m"], d["n"], d["k"], d["tile"]
    s = bytes_per_element(dtype)
    tm, tn = -(-m // tile), -(-n // tile)
    rows, cols = min(tile, m), min(tile, n)  # the highlighted tile, inside C
    one = tiled_gemm(rows, k, cols, tile, dtype)  # one tile's reads, writes and FLOPs
    whole = gemm(m, k, n, dtype)  # the whole GEMM over its compulsory traffic
    a_strip, w_strip = s * rows * k, s * k * cols

    sc = 2.0 / max(m, n, k)  # inches per element: the largest side is 2 inches
    # a thin A and C (few tokens) are drawn taller along M, so that a tile row stays readable:
    # at least THIN_ROW inches a tile row, while A stays under 0.8 inch
    sc_m = max(sc, min(THIN_ROW / tile, 0.8 / m))
    stretched = sc_m > sc * 1.01

    def side(v: int, per: float = sc) -> float:
        return max(v * per, 0.06)

    am, ak, wn = side(m, sc_m), side(k), side(n)
    legend_w, legend_h = 2.5, 1.9
    x_a = 0.15 + max(0.0, legend_w - ak)
    x_c = x_a + ak + 0.3
    y_c = 0.4
    y_w = y_c + am + 0.3
    right = x_c + wn + 0.2
    width, height = right + 1.85, y_w + max(ak, legend_h) + 0.1
    fig, ax = _draw.canvas(width, height, ax)

    # the three operands, to scale
    _draw.box(ax, x_a, y_c, ak, am, color=COLORS["a"], alpha=0.08)
    _draw.box(ax, x_c, y_w, wn, ak, color=COLORS["w"], alpha=0.08)
    _draw.box(ax, x_c, y_c, wn, am, color=COLORS["c"], alpha=0.08)
    # grid on C: a line every `g` tiles
    g_m, g_n = _cells(m, tile), _cells(n, tile)
    for i in range(g_m * tile, m, g_m * tile):
        y = y_c + am - i * sc_m
        ax.plot([x_c, x_c + wn], [y, y], color=COLORS["c"], lw=0.4)
    for j in range(g_n * tile, n, g_n * tile):
        x = x_c + j * sc
        ax.plot([x, x], [y_c, y_c + am], color=COLORS["c"], lw=0.4)
    # the highlighted tile: a row and a column near the middle, on a grid line
    ti, tj = min(tm - 1, g_m * ((tm // g_m) // 3)), min(tn - 1, g_n * ((2 * tn // g_n) // 3))
    th, tw = max(rows * sc_m, 0.05), max(cols * sc, 0.05)
    ty = y_c + am - ti * tile * sc_m - th
    tx = x_c + tj * tile * sc
    _draw.box(ax, x_a, ty, ak, th, color=COLORS["a"], alpha=0.75, lw=0.5)
    _draw.box(ax, tx, y_w, tw, ak, color=COLORS["w"], alpha=0.75, lw=0.5)
    _draw.box(ax, tx, ty, tw, th, color=COLORS["tile"], alpha=0.9, lw=0.5)
    ax.plot([x_a + ak, x_c], [ty + th / 2] * 2, color=COLORS["a"], lw=0.6, ls=":")
    ax.plot([tx + tw / 2] * 2, [y_w, y_c + am], color=COLORS["w"], lw=0.6, ls=":")

    # names under and beside the operands
    tall = "（M 方向放大画）" if stretched else ""
    _draw.label(ax, x_a + ak / 2, y_c - 0.17, f"A：{dims(m, k)}{tall}", size=8)
    _draw.label(ax, x_c + wn / 2, y_c - 0.17, f"C = A W：{dims(m, n)}", size=8)
    _draw.label(ax, right, y_w + ak / 2, f"W：{dims(k, n)}", size=8, ha="left")
    grid_note = f"细线每格 {dims(g_m, g_n)} 个分块" if g_m * g_n > 1 else "细线每格 1 个分块"
    _draw.label(
        ax, right, y_c + am / 2,
        f"C 切成 {dims(tm, tn)} = {tm * tn}\n个 {dims(tile, tile)} 的输出分块\n{grid_note}\n"
        f"A 读 {tn} 遍，W 读 {tm} 遍",
        size=8, ha="left",
    )  # fmt: skip

    # the key, top left: what one tile reads and writes, and its intensity
    lh = _draw.line_height(8) * 1.25
    top = height - 0.2
    key_row(ax, 0.15, top, COLORS["tile"], f"一个输出分块：{dims(rows, cols)}")
    key_row(ax, 0.15, top - lh, COLORS["a"], f"A 的行条：{dims(rows, k)}，{nbytes(a_strip)}")
    key_row(ax, 0.15, top - 2 * lh, COLORS["w"], f"W 的列条：{dims(k, cols)}，{nbytes(w_strip)}")
    _draw.label(
        ax, 0.15, top - 3.2 * lh,
        f"每个分块读 {nbytes(one.bytes_read)}、写 {nbytes(one.bytes_written)}", size=8, ha="left",
    )  # fmt: skip
    rich(
        ax, 0.15, top - 4.2 * lh,
        ["一个分块单独读写：", f"$I$ = {one.intensity:.1f} FLOP/byte"],
        size=8, ha="left",
    )  # fmt: skip
    rich(
        ax, 0.15, top - 5.2 * lh,
        ["整个 GEMM 按必需流量：", f"$I$ = {whole.intensity:.1f} FLOP/byte"],
        size=8, ha="left", color=COLORS["hot"],
    )  # fmt: skip
    _draw.label(
        ax, 0.15, top - 6.2 * lh, f"（{precision_name(dtype).upper()}，A、W 各读一次，C 写一次）",
        size=8, ha="left",
    )  # fmt: skip
    return fig


def _roof(ax: Any, x: float, y: float, w: float, h: float, color: str, *, teeth: int = 0) -> None:
    """房顶：``teeth == 0`` 是一个三角形（仓库），否则是 ``teeth`` 个锯齿（工厂）。"""
    from matplotlib.patches import Polygon

    if teeth:
        step = w / teeth
        pts = [(x, y)]
        for i in range(teeth):
            pts += [(x + i * step, y + h), (x + (i + 1) * step, y)]
    else:
        pts = [(x, y), (x + w / 2, y + h), (x + w, y)]
    face = (*_rgb(color), _draw.FILL_ALPHA)
    ax.add_patch(Polygon(pts, closed=True, facecolor=face, edgecolor=color, linewidth=0.8))


def _rgb(color: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def factory(
    *, device: str = "h100-sxm", dtype: Precision = "bf16", overhead: float | None = None,
    ax: Any = None,
) -> Any:  # fmt: skip
    """Horace He 的心智模型：工厂（计算单元）、仓库（显存）、之间的道路（带宽）与开工前的固定开销。

    工厂每秒能做 ``P_peak`` 次运算，仓库存着全部数据，道路每秒能运 ``B_peak`` 字节；
    每个 kernel 开工前还有一段与数据量无关的固定时间 ``T_0`` （Python 下发、kernel launch）。
    道路下写出 ridge point ``I* = P_peak / B_peak``：每运来一字节，工厂要做这么多次运算才不闲着。

    数的来源：设备目录 :func:`roofline_book.hardware` 的 ``peak_flops(dtype)`` （FLOP/s）、
    ``memory_bandwidth`` （byte/s）、``memory_capacity`` （byte，按二进制前缀写出）与 ``sms``。
    ``T_0`` 不是设备的数字：给了 ``overhead`` （秒）就按微秒写出，否则只写它的含义。

    Parameters
    ----------
    device : str
        设备目录中的键。
    dtype : str or torch.dtype
        ``P_peak`` 所用的精度（矩阵单元的 dense 峰值）。
    overhead : float, optional
        每个 kernel 的固定开销 ``T_0`` （秒），仅作示意。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...devices.catalog import hardware
    from ...units import binary, si

    hw = hardware(device)
    peak, bw = hw.peak_flops(dtype), hw.memory_bandwidth
    fig, ax = _draw.canvas(7.0, 3.2, ax)
    ink = _draw.INK

    # the warehouse: memory
    _draw.box(ax, 0.2, 0.5, 1.8, 1.45, color=COLORS["a"])
    _roof(ax, 0.2, 1.95, 1.8, 0.45, COLORS["a"])
    _draw.label(ax, 1.1, 1.5, "仓库：显存（HBM）", size=9)
    if hw.memory_capacity:
        _draw.label(ax, 1.1, 1.15, f"容量 {binary(hw.memory_capacity)}", size=8.5)

    # the factory: compute units
    _draw.box(ax, 4.9, 0.5, 1.9, 1.45, color=COLORS["hot"])
    _roof(ax, 4.9, 1.95, 1.9, 0.3, COLORS["hot"], teeth=3)
    _draw.label(ax, 5.85, 1.6, "工厂：计算单元", size=9)
    _draw.label(ax, 5.85, 1.27, "$P_{\\rm peak}$ = " + si(peak, "FLOP/s"), size=8.5)
    rich(ax, 5.85, 1.0, [f"（{precision_name(dtype).upper()}", "，dense）"], size=8)
    if hw.sms:
        _draw.label(ax, 5.85, 0.72, f"{hw.sms} 个 SM", size=8)

    # the road between them: bandwidth, both ways
    road_y0, road_y1 = 0.85, 1.45
    _draw.box(ax, 2.0, road_y0, 2.9, road_y1 - road_y0, color=COLORS["grey"], alpha=0.15, lw=0)
    for y in (road_y0, road_y1):
        ax.plot([2.0, 4.9], [y, y], color=ink, lw=1.0)
    ax.plot([2.0, 4.9], [(road_y0 + road_y1) / 2] * 2, color=ink, lw=0.6, ls=(0, (4, 3)))
    _draw.arrow(ax, (2.25, 1.3), (4.65, 1.3), color=COLORS["a"], lw=1.2)
    _draw.arrow(ax, (4.65, 1.0), (2.25, 1.0), color=COLORS["c"], lw=1.2)
    rich(ax, 3.45, 1.68, ["道路：带宽 ", "$B_{\\rm peak}$ = " + si(bw, "B/s")], size=8.5)
    _draw.label(
        ax,
        3.45,
        0.58,
        f"$I^* = P_{{\\rm peak}} / B_{{\\rm peak}}$ = {peak / bw:.0f} FLOP/byte",
        size=8,
    )
    _draw.label(ax, 3.45, 0.3, "每运来 1 字节，工厂要做这么多次运算才不闲着", size=8)

    # the overhead: a fixed time before any work starts
    _draw.box(ax, 2.2, 2.45, 2.5, 0.62, color=COLORS["grey"], alpha=0.12, dashed=True)
    rich(ax, 3.45, 2.9, ["开工前的固定开销 ", "$T_0$"], size=8.5)
    when = f"约 {overhead * 1e6:.3g} µs，" if overhead is not None else ""
    _draw.label(ax, 3.45, 2.63, f"Python 下发、kernel 启动：{when}与数据量无关", size=7.5)
    _draw.arrow(ax, (4.7, 2.76), (5.5, 2.3), color=ink, lw=0.9)
    return fig


def fusion(*, numel: int = 4096 * 4096, dtype: Precision = "bf16", ax: Any = None) -> Any:
    """kernel fusion：``y = GELU(a x + b)`` 写成 3 个 elementwise kernel，与合成 1 个 kernel 相比。

    上一行是不融合的写法：每个 kernel 从 HBM 读入它的输入、把输出写回 HBM，中间张量 ``u``、``v``
    写出一次又读回一次；下一行是融合的 kernel：只读 ``x`` 一次、写 ``y`` 一次，中间结果留在寄存器。
    向上的箭头是读（蓝），向下的是写（绿）。

    数的来源：三个 kernel 的代价是 :func:`roofline_book.ops.elementwise` （乘 ``a``、加 ``b``）与
    :func:`roofline_book.ops.gelu` 之和，融合的 kernel 是一个读一个、写一个张量的
    :func:`~roofline_book.ops.elementwise`，FLOPs 相同；图中写出各自的读、写字节数（:class:`Cost`
    的 ``bytes_read``、``bytes_written``，十进制前缀 MB、GB，与正文一致）与 kernel 个数。
    每个张量 ``numel`` 个元素。

    Parameters
    ----------
    numel : int
        每个张量的元素个数。
    dtype : str or torch.dtype
        所有张量的精度。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...ops import elementwise, gelu
    from ...ops.pointwise import GELU_FLOPS_PER_ELEMENT, GELU_FMA_FLOPS_PER_ELEMENT

    numel = sizes(numel=numel)["numel"]
    chain = [elementwise(numel, dtype), elementwise(numel, dtype), gelu(numel, dtype)]
    unfused = sum(chain[1:], chain[0])
    fused = elementwise(
        numel,
        dtype,
        flops_per_element=2 + GELU_FLOPS_PER_ELEMENT,
        special_per_element=1,
        fma_per_element=2 + GELU_FMA_FLOPS_PER_ELEMENT,  # a x + b is one FMA
    )
    tensor = bytes_per_element(dtype) * numel
    fig, ax = _draw.canvas(7.0, 3.75, ax)

    def hbm(y: float, x1: float) -> None:
        _draw.box(ax, 0.15, y, x1 - 0.15, 0.4, color=COLORS["a"], alpha=0.1)
        _draw.label(ax, 0.2, y + 0.2, "HBM", size=8, ha="left")

    def cell(x: float, y: float, name: str) -> None:
        _draw.box(ax, x - 0.22, y + 0.07, 0.44, 0.26, color=COLORS["a"], alpha=0.35, text=name)

    def kernel(x: float, y: float, w: float, name: str) -> None:
        _draw.box(ax, x - w / 2, y, w, 0.42, color=COLORS["hot"], text=name, size=8)

    read, write = COLORS["a"], COLORS["c"]
    # unfused: x -> [u = a x] -> u -> [v = u + b] -> v -> [y = GELU(v)] -> y
    y_top, k_top = 2.15, 2.85
    xs = [0.95, 2.15, 3.35, 4.55]
    names = ["x", "u", "v", "y"]
    ops = ["u = a·x", "v = u + b", "y = GELU(v)"]
    hbm(y_top, 4.95)
    for x, name in zip(xs, names, strict=True):
        cell(x, y_top, name)
    for i, op in enumerate(ops):
        mid = (xs[i] + xs[i + 1]) / 2
        kernel(mid, k_top, 0.95, op)
        _draw.arrow(ax, (xs[i] + 0.1, y_top + 0.35), (mid - 0.25, k_top), color=read)
        _draw.arrow(ax, (mid + 0.25, k_top), (xs[i + 1] - 0.1, y_top + 0.35), color=write)
    _draw.label(
        ax, 0.15, 3.55, f"不融合：{unfused.kernels} 个 kernel，中间张量 u、v 写回 HBM 再读回",
        size=8.5, ha="left",
    )  # fmt: skip

    # fused: x -> [y = GELU(a x + b)] -> y
    y_bot, k_bot = 0.15, 0.85
    hbm(y_bot, 4.95)
    cell(xs[0], y_bot, "x")
    cell(xs[3], y_bot, "y")
    mid = (xs[0] + xs[3]) / 2
    kernel(mid, k_bot, 2.3, "y = GELU(a·x + b)")
    _draw.arrow(ax, (xs[0] + 0.1, y_bot + 0.35), (mid - 1.15, k_bot + 0.1), color=read)
    _draw.arrow(ax, (mid + 1.15, k_bot + 0.1), (xs[3] - 0.1, y_bot + 0.35), color=write)
    _draw.label(
        ax, 0.15, 1.6, f"融合：{fused.kernels} 个 kernel，中间结果留在寄存器里", size=8.5, ha="left"
    )

    # bytes, on the right
    for y, cost in ((2.65, unfused), (0.65, fused)):
        _draw.label(ax, 5.2, y + 0.22, f"读 {_mb(cost.bytes_read)}", size=8.5, ha="left")
        _draw.label(ax, 5.2, y, f"写 {_mb(cost.bytes_written)}", size=8.5, ha="left")
        _draw.label(ax, 5.2, y - 0.24, f"共 {_mb(cost.bytes)}", size=8.5, ha="left")
    key_row(ax, 5.2, 1.75, read, "↑ 读", size=8)
    key_row(ax, 5.95, 1.75, write, "↓ 写", size=8)
    _draw.label(ax, 5.2, 1.45, f"每个张量 {numel} 个元素", size=7.5, ha="left")
    _draw.label(
        ax, 5.2, 1.25, f"{precision_name(dtype).upper()}，{_mb(tensor)}", size=7.5, ha="left"
    )
    return fig


def cluster_strips(
    *, tile: int = 128, cluster: int = 2, k: int = 4096, dtype: Precision = "bf16",
    ax: Any = None,
) -> Any:  # fmt: skip
    """thread-block cluster：同一行相邻的 ``cluster`` 个输出分块共用 A 的行条，只读一次。

    中间一行是 cluster 里的几个 thread block，各算 C 的一个 ``tile x tile`` 输出分块（它们在 C 的
    同一行、相邻）；上面是各自读的 W 列条（``k x tile``），左边是它们共用的 A 行条（``tile x k``），
    读一次后由 multicast 送给每个 block。图不按比例，尺寸写在图上。

    数的来源：:func:`roofline_book.ops.tiled_gemm` 对这一行 ``tile x (cluster * tile)`` 的输出：
    各自读时分块边长为 ``tile`` （A 行条读 ``cluster`` 次），组成 cluster 时相当于边长
    ``cluster * tile`` 的一个分块（A 行条读一次）；两者 ``bytes_read`` 之差就是省下的字节，
    ``(cluster - 1) * tile * k * s``。字节按二进制前缀。

    Parameters
    ----------
    tile : int
        输出分块的边长 ``t`` （元素）。
    cluster : int
        一个 cluster 中的 thread block 个数（同一行相邻的输出分块数）。
    k : int
        GEMM 的 ``K``：A 行条与 W 列条的长度。
    dtype : str or torch.dtype
        A、W 的精度。
    ax : matplotlib.axes.Axes, optional
        画在这个 Axes 上；不给则新建一张图。

    Returns
    -------
    matplotlib.figure.Figure
    """
    d = sizes(tile=tile, cluster=cluster, k=k)
    tile, cluster, k = d["tile"], d["cluster"], d["k"]
    s = bytes_per_element(dtype)
    row = cluster * tile
    apart = tiled_gemm(tile, k, row, tile, dtype)  # each block reads its own A strip
    shared = tiled_gemm(tile, k, row, row, dtype)  # the cluster reads the A strip once
    saved = apart.bytes_read - shared.bytes_read
    strip = s * tile * k

    size = min(0.9, 3.4 / cluster - 0.15)  # one output tile, drawn
    gap = 0.15
    x0, y0 = 3.2, 1.35
    span = cluster * size + (cluster - 1) * gap
    fig, ax = _draw.canvas(max(7.0, x0 + span + 1.6), y0 + size + 1.85, ax)
    # the cluster: its blocks, each computing one output tile
    _draw.box(ax, x0 - 0.12, y0 - 0.12, span + 0.24, size + 0.24, color=COLORS["grey"], alpha=0.05,
              dashed=True)  # fmt: skip
    _draw.label(ax, x0 + span + 0.25, y0 + size / 2 + 0.1, "一个 cluster：", size=8, ha="left")
    _draw.label(
        ax, x0 + span + 0.25, y0 + size / 2 - 0.1, f"{cluster} 个 thread block", size=8, ha="left"
    )
    for b in range(cluster):
        x = x0 + b * (size + gap)
        _draw.box(ax, x, y0, size, size, color=COLORS["c"], alpha=0.35)
        _draw.label(ax, x + size / 2, y0 + size / 2 + 0.1, f"block {b}", size=7.5)
        _draw.label(ax, x + size / 2, y0 + size / 2 - 0.1, dims(tile, tile), size=6.5)
        # its own W strip, above it
        wx = x + size / 2 - 0.13
        _draw.box(ax, wx, y0 + size + 0.35, 0.26, 1.2, color=COLORS["w"], alpha=0.6)
        _draw.arrow(ax, (x + size / 2, y0 + size + 0.33), (x + size / 2, y0 + size + 0.02),
                    color=COLORS["w"], lw=1.1)  # fmt: skip
    top = y0 + size + 1.55
    _draw.label(
        ax,
        x0 + span / 2,
        top + 0.15,
        f"各读自己的 W 列条：{dims(k, tile)}，{nbytes(strip)}",
        size=8,
    )

    # the shared A strip, to the left, multicast to every block from below
    ax_, ay = 0.3, y0 + size / 2
    _draw.box(ax, ax_, ay - 0.13, 2.3, 0.26, color=COLORS["a"], alpha=0.6)
    _draw.label(
        ax, ax_ + 1.15, ay + 0.3, f"共用的 A 行条：{dims(tile, k)}，{nbytes(strip)}", size=8
    )
    hub = (2.85, y0 - 0.45)
    ax.plot([ax_ + 2.3, hub[0]], [ay, ay], color=COLORS["a"], lw=1.1)
    ax.plot([hub[0], hub[0]], [ay, hub[1]], color=COLORS["a"], lw=1.1)
    for b in range(cluster):
        x = x0 + b * (size + gap) + size / 2
        ax.plot([hub[0], x], [hub[1], hub[1]], color=COLORS["a"], lw=1.1)
        _draw.arrow(ax, (x, hub[1]), (x, y0 - 0.14), color=COLORS["a"], lw=1.1)
    _draw.label(
        ax, hub[0] - 0.1, hub[1], f"读一次，TMA multicast 送给 {cluster} 个 block", size=7.5,
        ha="right",
    )  # fmt: skip

    # the bytes the row's blocks read, apart and as a cluster
    lines = (
        f"各自读：每个 block 读一条 A 行条、一条 W 列条，共 {nbytes(apart.bytes_read)}",
        f"组成 cluster：A 行条只读一次，共 {nbytes(shared.bytes_read)}，"
        f"省 {nbytes(saved)}（{saved / apart.bytes_read:.0%}）",
    )
    for n, text in enumerate(lines):
        _draw.label(ax, 0.3, 0.42 - n * 0.24, text, size=8, ha="left")
    return fig
