"""GPU 的结构图：整块芯片、一个 SM、存储层级、输出分块按 wave 分给 SM。

每张图的数都取自设备目录（:func:`roofline_book.hardware`、:func:`roofline_book.devices.sm.sm_facts`）
与 :func:`roofline_book.devices.waves.gemm_waves`，换一个 ``device`` 图就跟着变。画出的 SM 格子、
忙碌的 SM 区段带 ``gid`` （``"sm"``、``"wave-busy"``），测试按它数图里画了什么。
"""

from __future__ import annotations

import math
from typing import Any

from ...devices.catalog import hardware
from ...devices.device import Hardware
from ...devices.sm import sm_facts
from ...devices.waves import DEFAULT_TILE, gemm_waves
from ...units import binary, si
from ..plotting.style import PALETTE
from . import _draw

_SM_COLOR = PALETTE["blue"]
_L2_COLOR = PALETTE["green"]
_HBM_COLOR = PALETTE["orange"]
_LINK_COLOR = PALETTE["purple"]
_IDLE_COLOR = PALETTE["vermillion"]


def _device(device: Hardware | str) -> Hardware:
    return hardware(device) if isinstance(device, str) else device


def _rate(value: float) -> str:
    return si(value, "B/s", 3)


def _short_name(dev: Hardware) -> str:
    return dev.name.removeprefix("NVIDIA ").removeprefix("AMD ")


def gpu_chip(*, device: Hardware | str = "h100-sxm", ax: Any = None) -> Any:
    """整块 GPU：目录里的全部 SM 排成两片格子，中间是 L2，下方是 HBM，右侧是到其他 GPU 的互连与到
    CPU 的 PCIe。

    SM 个数（H100 SXM 为 132）、L2 容量与带宽、HBM 容量与带宽、互连的种类与每个方向的带宽都读自
    设备目录；目录没有的数（如 H100 到 CPU 的 PCIe 带宽）不画。HBM 画成一整条，不按 stack 分。

    Returns
    -------
    matplotlib.figure.Figure
    """
    dev = _device(device)
    if dev.sms is None:
        from ..._base.validate import InvalidArgument

        raise InvalidArgument("device", f"{dev.key} publishes no SM count to draw")
    rows = 6
    half = math.ceil(dev.sms / 2)
    cols = math.ceil(half / rows)
    cell, gap = 0.15, 0.03
    grid_w = cols * cell
    chip_x, chip_y = 0.05, 0.7
    l2_w = 0.85
    chip_w = 2 * grid_w + l2_w + 0.6
    chip_h = rows * cell + 0.6
    arrow_w, end_w = 1.25, 0.95
    width = chip_x + chip_w + arrow_w + end_w + 0.05
    fig, ax = _draw.canvas(width, chip_y + chip_h + 0.05, ax)
    _draw.box(ax, chip_x, chip_y, chip_w, chip_h, fill=False, lw=1.2)
    _draw.label(
        ax, chip_x + 0.1, chip_y + chip_h - 0.17, f"{_short_name(dev)}：{dev.sms} 个 SM", ha="left"
    )
    y0 = chip_y + 0.15
    left_x = chip_x + 0.2
    right_x = left_x + grid_w + l2_w + 0.2
    for i in range(dev.sms):
        side, k = divmod(i, half)
        r, c = divmod(k, cols)
        x = (left_x if side == 0 else right_x) + c * cell
        y = y0 + (rows - 1 - r) * cell
        patch = _draw.box(
            ax, x + gap / 2, y + gap / 2, cell - gap, cell - gap, color=_SM_COLOR, lw=0.4
        )
        patch.set_gid("sm")
    l2_x = left_x + grid_w + 0.1
    _draw.box(ax, l2_x, y0, l2_w, rows * cell, color=_L2_COLOR)
    l2_lines = ["L2"]
    if dev.l2_cache:
        l2_lines.append(binary(dev.l2_cache))
    if dev.l2_bandwidth:
        l2_lines.append(_rate(dev.l2_bandwidth))
    _draw.label(ax, l2_x + l2_w / 2, y0 + rows * cell / 2, "\n".join(l2_lines), size=7.5)
    # HBM below the chip, joined to it by the memory bus.
    hbm_y = 0.05
    _draw.box(ax, chip_x, hbm_y, chip_w, 0.35, color=_HBM_COLOR)
    cap = binary(dev.memory_capacity, "B", 3) if dev.memory_capacity else ""
    _draw.label(
        ax, chip_x + chip_w / 2, hbm_y + 0.175, f"HBM {cap}，{_rate(dev.memory_bandwidth)}".strip()
    )
    _draw.arrow(ax, (chip_x + chip_w / 2, hbm_y + 0.35), (chip_x + chip_w / 2, chip_y), both=True)
    # Links to the right: other GPUs and the host.
    lx = chip_x + chip_w
    link_y = chip_y + chip_h * 0.68
    host_y = chip_y + chip_h * 0.25
    box_x = lx + arrow_w
    box_w = end_w
    if dev.link and dev.link != "pcie" and dev.link_bandwidth:
        _draw.arrow(ax, (lx, link_y), (box_x, link_y), both=True, color=_LINK_COLOR)
        _draw.label(
            ax, (lx + box_x) / 2, link_y + 0.14, dev.link.replace("nvlink", "NVLink"), size=7.5
        )
        _draw.label(
            ax, (lx + box_x) / 2, link_y - 0.14, f"每个方向 {_rate(dev.link_bandwidth)}", size=7
        )
        _draw.box(ax, box_x, link_y - 0.22, box_w, 0.44, color=_LINK_COLOR, text="其他 GPU")
    _draw.arrow(ax, (lx, host_y), (box_x, host_y), both=True)
    host = "PCIe"
    if dev.link == "pcie" and dev.link_bandwidth:
        host = f"PCIe，每个方向 {_rate(dev.link_bandwidth)}"
    _draw.label(ax, (lx + box_x) / 2, host_y + 0.14, host, size=7.5)
    _draw.box(ax, box_x, host_y - 0.22, box_w, 0.44, text="CPU")
    return fig


def sm_detail(*, device: Hardware | str = "h100-sxm", ax: Any = None) -> Any:
    """一个 SM：若干子分区（Hopper 与 Ampere 为 4 个），每个有一个 warp scheduler、一份寄存器堆、
    一排 CUDA core（FP32 单元）、一个 Tensor Core 与几个 SFU；下方是全 SM 共用的
    L1 / shared memory。

    子分区数、每 SM 的 Tensor Core 数读自目录的 ``[architectures]`` 表
    （:func:`roofline_book.devices.sm.sm_facts`）；寄存器堆、CUDA core 数（目录的
    ``fp32_lanes_per_sm``）、SFU 数（每 SM 每时钟的特殊函数结果数）、L1 与 shared memory 的容量
    读自设备目录，按子分区均分。每个 CUDA core 画一个小格子（``gid`` 为 ``"cuda-core"``），
    格子上不写字。

    Returns
    -------
    matplotlib.figure.Figure
    """
    dev = _device(device)
    facts = sm_facts(dev)
    parts = facts.sub_partitions
    lanes = (dev.fp32_lanes_per_sm or 0) // parts
    sfus = (dev.sfu_per_sm_per_clock or 0) // parts
    tensor = facts.tensor_cores_per_sm // parts
    part_w, pad = 1.55, 0.12
    width = parts * part_w + (parts + 1) * pad
    fig, ax = _draw.canvas(width, 3.75, ax)
    _draw.box(ax, 0.02, 0.02, width - 0.04, 3.71, fill=False, lw=1.2)
    _draw.label(ax, pad, 3.53, f"一个 SM（{_short_name(dev)}）", ha="left")
    lane_cols = 8
    lane_rows = max(1, math.ceil(lanes / lane_cols))
    lane_cell = 0.14
    for p in range(parts):
        x = pad + p * (part_w + pad)
        top = 3.3
        _draw.box(ax, x, 0.78, part_w, top - 0.78, fill=False, lw=0.8)
        _draw.box(
            ax,
            x + 0.08,
            top - 0.34,
            part_w - 0.16,
            0.26,
            color=PALETTE["sky"],
            text="warp scheduler",
            size=7,
        )
        regs = ""
        if dev.register_file_per_sm:
            regs = " " + binary(dev.register_file_per_sm / parts)
        _draw.box(
            ax,
            x + 0.08,
            top - 0.68,
            part_w - 0.16,
            0.26,
            color=PALETTE["yellow"],
            text=f"寄存器{regs}",
            size=7,
        )
        gx = x + (part_w - lane_cols * lane_cell) / 2
        gy = top - 0.8 - lane_rows * lane_cell
        for i in range(lanes):
            r, c = divmod(i, lane_cols)
            patch = _draw.box(
                ax,
                gx + c * lane_cell + 0.015,
                gy + (lane_rows - 1 - r) * lane_cell + 0.015,
                lane_cell - 0.03,
                lane_cell - 0.03,
                color=_SM_COLOR,
                lw=0.3,
            )
            patch.set_gid("cuda-core")
        _draw.label(ax, x + part_w / 2, gy - 0.12, f"{lanes} 个 CUDA core（FP32）", size=6.5)
        ty = gy - 0.56
        tc = _draw.box(
            ax,
            x + 0.08,
            ty,
            part_w - 0.16,
            0.3,
            color=_L2_COLOR,
            text="Tensor Core" + (f"（{tensor} 个）" if tensor > 1 else ""),
            size=7,
        )
        tc.set_gid("tensor-core")
        sy = ty - 0.36
        sf = _draw.box(
            ax,
            x + 0.08,
            sy,
            part_w - 0.16,
            0.28,
            color=PALETTE["purple"],
            text=f"{sfus} 个 SFU",
            size=7,
        )
        sf.set_gid("sfu")
    smem = []
    if dev.l1_shared_per_sm:
        smem.append(f"L1 / shared memory 共 {binary(dev.l1_shared_per_sm)}")
    if dev.shared_memory_per_sm:
        smem.append(f"其中 shared memory 至多 {binary(dev.shared_memory_per_sm)}")
    _draw.box(
        ax,
        pad,
        0.14,
        width - 2 * pad,
        0.5,
        color=_HBM_COLOR,
        text="，".join(smem) or "L1 / shared memory",
        size=7.5,
    )
    return fig


def memory_hierarchy(*, device: Hardware | str = "h100-sxm", ax: Any = None) -> Any:
    """存储层级：寄存器、L1 / shared memory、L2、HBM，越往下越大、越慢；最下面隔一条虚线，
    是到其他 GPU 的互连（画成双向箭头：它是一条连接，不是一层存储）。

    容量与带宽都读自设备目录：寄存器与 L1 / shared memory 是每个 SM 的容量（再乘 SM 数给出
    全卡合计）；L2 的容量是厂商的数，带宽是目录里他人测得的最高值（NVIDIA 不公布）；HBM 与互连
    是厂商的数，互连为每个方向。目录没有寄存器与 L1 / shared memory 的带宽，图中不写，只写容量。
    各层的方框带 ``gid`` ``"level"``，互连的箭头带 ``"link"``。

    Returns
    -------
    matplotlib.figure.Figure
    """
    dev = _device(device)
    sms = dev.sms or 0
    levels: list[tuple[str, str, str, str]] = []
    if dev.register_file_per_sm:
        total = f"，全卡 {binary(dev.register_file_per_sm * sms, 'B', 3)}" if sms else ""
        levels.append(
            ("寄存器", f"每个 SM {binary(dev.register_file_per_sm)}{total}", "", PALETTE["yellow"])
        )
    if dev.l1_shared_per_sm:
        total = f"，全卡 {binary(dev.l1_shared_per_sm * sms, 'B', 3)}" if sms else ""
        levels.append(
            (
                "L1 / shared memory",
                f"每个 SM {binary(dev.l1_shared_per_sm)}{total}",
                "",
                PALETTE["sky"],
            )
        )
    if dev.l2_cache:
        bw = f"带宽 {_rate(dev.l2_bandwidth)}" if dev.l2_bandwidth else ""
        levels.append(("L2", f"全卡 {binary(dev.l2_cache)}", bw, _L2_COLOR))
    cap = f"全卡 {binary(dev.memory_capacity, 'B', 3)}" if dev.memory_capacity else ""
    levels.append(("HBM", cap, f"带宽 {_rate(dev.memory_bandwidth)}", _HBM_COLOR))
    link, link_bw = "", dev.link_bandwidth or 0.0
    if link_bw:
        link = (
            "NVLink"
            if dev.link == "nvlink"
            else dev.link.upper()
            if dev.link == "pcie"
            else dev.link
        )
    row_h, gap, apart = 0.42, 0.1, 0.3
    height = len(levels) * (row_h + gap) + 0.45 + (row_h + apart if link else 0.0)
    fig, ax = _draw.canvas(5.4, height, ax)
    _draw.label(
        ax, 0.1, height - 0.2, f"{_short_name(dev)} 的存储层级：越往下越大、越慢", ha="left"
    )
    narrow, wide = 1.2, 2.9
    cx = 1.6

    def notes(y: float, lines: list[str], color: str = _draw.INK) -> None:
        for j, line in enumerate(lines):
            ty = y + row_h * (0.5 if len(lines) == 1 else 0.7 - 0.42 * j)
            _draw.label(ax, cx + wide / 2 + 0.2, ty, line, ha="left", size=7.5, color=color)

    y = height
    for i, (name, capacity, rate, color) in enumerate(levels):
        y = height - 0.45 - (i + 1) * (row_h + gap) + gap
        w = narrow + (wide - narrow) * i / max(1, len(levels) - 1)
        patch = _draw.box(ax, cx - w / 2, y, w, row_h, color=color, text=name, size=8)
        patch.set_gid("level")
        notes(y, [t for t in (capacity, rate) if t])
    if link:
        # The link is a connection, not a level: apart from the levels, below a dashed rule.
        rule = y - apart / 2
        ax.plot([0.1, 5.3], [rule, rule], color=_draw.INK, lw=0.5, ls="--", alpha=0.6)
        y = rule - apart / 2 - row_h
        ann = _draw.arrow(
            ax,
            (cx - wide / 2, y + row_h * 0.3),
            (cx + wide / 2, y + row_h * 0.3),
            both=True,
            color=_LINK_COLOR,
            text=f"{link}：连到其他 GPU，不是一层存储",
            offset=(0.0, 0.17),
        )
        ann.set_gid("link")
        notes(y, [f"每个方向 {_rate(link_bw)}"], color=_LINK_COLOR)
    return fig


def waves(
    m: int,
    n: int,
    *,
    tile: tuple[int, int] = DEFAULT_TILE,
    device: Hardware | str = "h100-sxm",
    ax: Any = None,
) -> Any:
    """$M\\times N$ 的输出按 ``tile`` 切块后，一轮一轮分给 SM：每行是一轮，每个小格是一个 SM，
    涂色的是这一轮有分块要算的 SM；最后一轮只涂了一部分，旁边写出忙碌的 SM 比例。

    分块数、轮数与最后一轮的块数来自 :func:`roofline_book.devices.waves.gemm_waves`，SM 数来自目录。
    轮数多于 6 时，中间的满轮折叠成一行省略号。

    Returns
    -------
    matplotlib.figure.Figure
    """
    dev = _device(device)
    w = gemm_waves(m, n, tile=tile, device=dev)
    shown: list[int | None] = list(range(1, w.waves + 1))
    if w.waves > 6:
        shown = [1, 2, None, w.waves - 1, w.waves]
    row_h, gap = 0.2, 0.12
    width = 6.6
    height = len(shown) * (row_h + gap) + 0.65
    fig, ax = _draw.canvas(width, height, ax)
    title = (
        f"{m}×{n} 的输出，{tile[0]}×{tile[1]} 分块：{w.tiles} 块，"
        f"{_short_name(dev)} 的 {w.sms} 个 SM，共 {w.waves} 轮"
    )
    _draw.label(ax, 0.05, height - 0.2, title, ha="left", size=8)
    x0, bar_w = 0.75, 4.0
    cell = bar_w / w.sms
    for i, k in enumerate(shown):
        y = height - 0.5 - (i + 1) * (row_h + gap) + gap
        if k is None:
            _draw.label(
                ax,
                x0 + bar_w / 2,
                y + row_h / 2,
                f"⋯ 第 3 到第 {w.waves - 2} 轮，每轮 {w.sms} 块 ⋯",
                size=7,
            )
            continue
        busy = w.last if k == w.waves else w.sms
        _draw.label(ax, x0 - 0.08, y + row_h / 2, f"第 {k} 轮", ha="right", size=7.5)
        patch = _draw.box(ax, x0, y, busy * cell, row_h, color=_SM_COLOR, alpha=0.6, lw=0.5)
        patch.set_gid("wave-busy")
        if busy < w.sms:
            _draw.box(
                ax,
                x0 + busy * cell,
                y,
                (w.sms - busy) * cell,
                row_h,
                color=_IDLE_COLOR,
                fill=False,
                lw=0.6,
                dashed=True,
            )
        # One path for the SM boundaries of the row keeps the SVG small.
        xs = [v for j in range(1, w.sms) for v in (x0 + j * cell, x0 + j * cell, math.nan)]
        ys = [v for _ in range(1, w.sms) for v in (y, y + row_h, math.nan)]
        ax.plot(xs, ys, color=_draw.INK, linewidth=0.15, alpha=0.5)
        ax.add_patch(_frame(x0, y, bar_w, row_h))
        note = f"{busy}/{w.sms} 个 SM 忙（{busy / w.sms:.0%}）"
        _draw.label(
            ax,
            x0 + bar_w + 0.1,
            y + row_h / 2,
            note,
            ha="left",
            size=7,
            color=_IDLE_COLOR if busy < w.sms else _draw.INK,
        )
    return fig


def _frame(x: float, y: float, w: float, h: float) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor="none", edgecolor=_draw.INK, linewidth=0.6)
