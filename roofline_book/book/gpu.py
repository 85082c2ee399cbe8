"""GPU 一章正文里的数：芯片与 SM 的组成、三种计算单元的峰值，以及让 kernel 够不着 roof 的
occupancy、coalescing 与 wave，都从设备目录和 :mod:`roofline_book.devices.sm` 算出。

每个函数返回一个 dict，键就是粘贴（glue）时用的名字，所以一章只需写
``glue(**gpu.chip_figures(h100))``。

Examples
--------
>>> from roofline_book import hardware
>>> h100 = hardware("h100-sxm")
>>> f = chip_figures(h100)
>>> f["sms"], f["lanes_part"], f["l2"]
(132, 32, '50 MiB')
>>> occupancy_figures(h100, registers_per_thread=128, threads_per_block=256)["occ"]
0.25
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..devices.catalog import Hardware
from ..devices.sm import resident_warps, sm_facts, warp_load_bytes
from ..devices.waves import DEFAULT_TILE, gemm_waves
from ..ops import gemm
from ..units import binary, si


def _given(device: Hardware, field: str) -> Any:
    """One of the catalog's optional figures, or a clear error where the device lacks it."""
    value = getattr(device, field)
    if value is None:
        raise ValueError(f"device {device.key!r} has no {field} in the catalog")
    return value


def _clock(device: Hardware, unit: str, dtype: str) -> float:
    """The SM clock of a unit's published rate, or a clear error where the catalog lacks it."""
    clock = device.rated_clock(unit, dtype)
    if clock is None:
        raise ValueError(f"device {device.key!r} has no rated {unit} clock for {dtype}")
    return clock


def chip_figures(device: Hardware) -> dict[str, Any]:
    """芯片的组成：SM 与子分区、thread 的组织、各层存储的容量与带宽。

    Parameters
    ----------
    device : roofline_book.Hardware
        目录中的 GPU，需有 SM 的各项数据（寄存器堆、L1、shared memory、FP32 lane 数）。

    Returns
    -------
    dict
        ``sms``、``warp`` （一个 warp 的 thread 数）、``parts`` （每个 SM 的子分区数）、
        ``max_warps`` （每个 SM 至多驻留的 warp 数）、``block_max``
        （每个 block 至多的 thread 数）、``lanes`` 与 ``lanes_part`` （每个 SM、每个子分区的
        FP32 lane 数）；写成带单位的文字的
        ``l2``、``hbm_cap``、``regs_sm``、``regs_part``、``l1``、``smem``、``onchip`` （全卡的
        寄存器与 L1 之和，二进制前缀）和 ``hbm_bw``、``l2_bw``、``link_bw`` （byte/s，SI 前缀）；
        ``hbm_over_onchip`` （HBM 容量是片上存储的几倍）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = chip_figures(hardware("h100-sxm"))
    >>> f["regs_part"], f["onchip"], f["hbm_bw"]
    ('64 KiB', '66 MiB', '3.35 TB/s')
    """
    sm = sm_facts(device)
    regs, l1 = _given(device, "register_file_per_sm"), _given(device, "l1_shared_per_sm")
    lanes, sms = _given(device, "fp32_lanes_per_sm"), _given(device, "sms")
    capacity = _given(device, "memory_capacity")
    onchip = (regs + l1) * sms
    return dict(
        sms=sms,
        warp=sm.warp_size,
        parts=sm.sub_partitions,
        max_warps=sm.max_warps_per_sm,
        block_max=sm.max_threads_per_block,
        lanes=lanes,
        lanes_part=lanes // sm.sub_partitions,
        l2=binary(_given(device, "l2_cache")),
        hbm_cap=binary(capacity, "B", 3),
        hbm_bw=si(device.memory_bandwidth, "B/s", 3),
        l2_bw=si(_given(device, "l2_bandwidth"), "B/s", 3),
        link_bw=si(_given(device, "link_bandwidth"), "B/s", 3),
        regs_sm=binary(regs),
        regs_part=binary(regs / sm.sub_partitions),
        l1=binary(l1),
        smem=binary(_given(device, "shared_memory_per_sm")),
        onchip=binary(onchip),
        hbm_over_onchip=capacity / onchip,
    )


def unit_peak_figures(device: Hardware) -> dict[str, float]:
    """三种计算单元的峰值，以及它们由每个 SM 每时钟的运算与时钟怎样乘出来。

    Returns
    -------
    dict
        矩阵单元的 dense 峰值 ``bf16_tflops``、``fp8_tflops``，向量单元的 ``vec_bf16``、
        ``vec_fp32`` （TFLOP/s），特殊函数单元的 ``special_t`` （每秒 10^12 次求值）；
        ``matrix_over_vector`` （BF16 的矩阵与向量峰值之比）；``per_sm_matrix`` 与 ``per_tc``
        （每个 SM、每个 Tensor Core 每时钟的 BF16 FLOP）；``matrix_mhz``、``boost_mhz``
        （矩阵单元与 FP32 向量单元峰值所用的时钟，MHz）；``sparse_over_dense``、``fp8_over_bf16``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> p = unit_peak_figures(hardware("h100-sxm"))
    >>> p["bf16_tflops"], p["vec_bf16"], p["matrix_mhz"], round(p["per_sm_matrix"])
    (989.4, 133.8, 1830.0, 4096)
    """
    bf16 = device.peak_flops("bf16")
    per_sm = device.per_sm_clock("matrix", "bf16")
    return dict(
        bf16_tflops=bf16 / 1e12,
        fp8_tflops=device.peak_flops("fp8") / 1e12,
        vec_bf16=device.vector_peak("bf16") / 1e12,
        vec_fp32=device.vector_peak("fp32") / 1e12,
        special_t=device.special_peak_flops() / 1e12,
        matrix_over_vector=bf16 / device.vector_peak("bf16"),
        per_sm_matrix=per_sm,
        per_tc=per_sm / sm_facts(device).tensor_cores_per_sm,
        matrix_mhz=_clock(device, "matrix", "bf16") / 1e6,
        boost_mhz=_clock(device, "vector", "fp32") / 1e6,
        sparse_over_dense=device.sparse_peak_flops("bf16") / bf16,
        fp8_over_bf16=device.peak_flops("fp8") / bf16,
    )


def grid_figures(device: Hardware, *, numel: int, threads_per_block: int) -> dict[str, Any]:
    """每个 thread 算一个元素的 elementwise kernel 的 grid：block 数，与平均每个 SM
    先后接的 block 数。``numel`` 不是 ``threads_per_block`` 的整数倍时 block 数向上取整：
    最后一个 block 只有一部分 thread 有元素。

    Returns
    -------
    dict
        ``add_threads`` （每个 block 的 thread 数）、``add_blocks``、``add_per_sm``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> grid_figures(hardware("h100-sxm"), numel=2**24, threads_per_block=256)["add_blocks"]
    65536
    >>> grid_figures(hardware("h100-sxm"), numel=1000, threads_per_block=256)["add_blocks"]
    4
    """
    # a grid launches whole blocks: the last one may be partly idle
    blocks = -(-numel // threads_per_block)
    return dict(
        add_threads=threads_per_block, add_blocks=blocks, add_per_sm=blocks / _given(device, "sms")
    )


def occupancy_figures(
    device: Hardware, *, registers_per_thread: int, threads_per_block: int
) -> dict[str, Any]:
    """只看寄存器时，一个 SM 驻留几个 block，occupancy 是多少
    （:func:`~roofline_book.devices.sm.resident_warps`）。

    Returns
    -------
    dict
        ``occ_regs``、``occ_threads`` （输入）、``occ_blocks`` （驻留的 block 数）、``occ``
        （驻留的 warp 数与上限之比）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = occupancy_figures(hardware("h100-sxm"), registers_per_thread=64, threads_per_block=256)
    >>> f["occ_blocks"], f["occ"]
    (4, 0.5)
    """
    sm = sm_facts(device)
    warps = resident_warps(
        device, registers_per_thread=registers_per_thread, threads_per_block=threads_per_block
    )
    return dict(
        occ_regs=registers_per_thread,
        occ_threads=threads_per_block,
        occ_blocks=warps // (threads_per_block // sm.warp_size),
        occ=warps / sm.max_warps_per_sm,
    )


def coalescing_figures(device: Hardware, *, element_bytes: int, stride: int) -> dict[str, Any]:
    """一个 warp 读相邻元素与相隔 ``stride`` 个元素时，各要搬多少字节
    （:func:`~roofline_book.devices.sm.warp_load_bytes`）。

    Returns
    -------
    dict
        ``sector`` （搬运的对齐段，byte）、``fp32`` （每个元素的字节数）、``coal_useful``
        （一个 warp 用到的字节）、``coal_sectors`` （相邻读取时的段数）、``coal_bad``
        （跨步读取时搬的字节）、``coal_waste`` （搬的字节是用到的几倍）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = coalescing_figures(hardware("h100-sxm"), element_bytes=4, stride=4096)
    >>> f["coal_sectors"], f["coal_bad"], f["coal_waste"]
    (4, 1024, 8.0)
    """
    sm = sm_facts(device)
    useful = sm.warp_size * element_bytes
    good = warp_load_bytes(device, element_bytes=element_bytes, stride=1)
    bad = warp_load_bytes(device, element_bytes=element_bytes, stride=stride)
    return dict(
        sector=sm.memory_transaction_bytes,
        fp32=element_bytes,
        coal_useful=useful,
        coal_sectors=good // sm.memory_transaction_bytes,
        coal_bad=bad,
        coal_waste=bad / useful,
    )


def wave_figures(
    device: Hardware, m: int, n: int, *, tile: tuple[int, int] = DEFAULT_TILE
) -> dict[str, Any]:
    """``m`` × ``n`` 的输出按 ``tile`` 分块、每个 SM 一轮算一块时的 wave
    （:func:`~roofline_book.devices.waves.gemm_waves`）。

    Returns
    -------
    dict
        ``w_tiles``、``w_waves``、``w_last`` （最后一轮的块数）、``w_fill`` （最后一轮有活干的
        SM 的比例）、``w_loss`` （按整轮计损失的算力比例）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = wave_figures(hardware("h100-sxm"), 4096, 4096, tile=(128, 128))
    >>> f["w_tiles"], f["w_waves"], f["w_last"]
    (1024, 8, 100)
    """
    w = gemm_waves(m, n, tile=tile, device=device)
    return dict(
        w_tiles=w.tiles, w_waves=w.waves, w_last=w.last, w_fill=w.last_fill, w_loss=1 - w.efficiency
    )


def problem_answers(
    device: Hardware,
    *,
    registers_per_thread: int,
    threads_per_block: int,
    square_gemm: int,
    element_bytes: int,
    stride: int,
    numel: int,
    measured_sizes: Sequence[int],
) -> dict[str, Any]:
    """习题的答案：全卡的 CUDA core 与 Tensor Core 数；只看寄存器时的 occupancy；
    ``square_gemm`` 方阵 GEMM 的 wave；跨步读取 ``numel`` 个元素的张量时用到与搬运的字节和
    :math:`T_{\\text{memory}}`；``measured_sizes`` （三个由小到大的方阵边长）在 BF16 下的
    算术强度与 wave。

    分块一律取 :data:`~roofline_book.devices.waves.DEFAULT_TILE`。

    Returns
    -------
    dict
        ``ans_q1_*``、``regs_count`` 与 ``ans_q2_*``、``ans_q3_*``、``ans_q4_*`` （字节；
        ``_us`` 为 µs）、``ridge`` （BF16 的 ridge point，FLOP/byte）与 ``ans_q5_*``，
        键尾是边长：三个边长 ``s < m < l`` 给出 ``ans_q5_i{s}`` （算术强度）、``ans_q5_t{s}``
        （块数）、``ans_q5_fill{s}`` （最后一轮有活干的 SM 的比例）、``ans_q5_t{m}``、
        ``ans_q5_w{m}`` （轮数）、``ans_q5_eff{m}`` 与 ``ans_q5_eff{l}`` （按整轮计的效率）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> a = problem_answers(hardware("h100-sxm"), registers_per_thread=64, threads_per_block=256,
    ...                     square_gemm=8192, element_bytes=4, stride=2, numel=2**28,
    ...                     measured_sizes=(1024, 2048, 4096))
    >>> a["ans_q1_lanes"], a["ans_q2_blocks"], a["ans_q3_waves"], a["ans_q4_moved"]
    (16896, 4, 32, 256)
    """
    sm, sms = sm_facts(device), _given(device, "sms")
    warps = resident_warps(
        device, registers_per_thread=registers_per_thread, threads_per_block=threads_per_block
    )
    square = gemm_waves(square_gemm, square_gemm, device=device)
    moved = warp_load_bytes(device, element_bytes=element_bytes, stride=stride)
    useful = sm.warp_size * element_bytes
    useful_bytes = numel * element_bytes // stride
    small, middle, large = measured_sizes
    waves = {n: gemm_waves(n, n, device=device) for n in measured_sizes}
    return dict(
        ans_q1_lanes=sms * _given(device, "fp32_lanes_per_sm"),
        ans_q1_tc=sms * sm.tensor_cores_per_sm,
        regs_count=int(_given(device, "register_file_per_sm")) // 4,  # 32-bit registers
        ans_q2_blocks=warps // (threads_per_block // sm.warp_size),
        ans_q2_warps=warps,
        ans_q2_occ=warps / sm.max_warps_per_sm,
        ans_q3_tiles=square.tiles,
        ans_q3_waves=square.waves,
        ans_q3_last=square.last,
        ans_q3_fill=square.last_fill,
        ans_q3_eff=square.efficiency,
        ans_q4_moved=moved,
        ans_q4_useful=useful,
        ans_q4_t_useful_us=useful_bytes / device.memory_bandwidth * 1e6,
        ans_q4_t_moved_us=useful_bytes * moved // useful / device.memory_bandwidth * 1e6,
        ridge=device.ridge_point("bf16"),
        **{
            f"ans_q5_i{small}": gemm(small, small, small, "bf16").intensity,
            f"ans_q5_t{small}": waves[small].tiles,
            f"ans_q5_fill{small}": waves[small].last_fill,
            f"ans_q5_t{middle}": waves[middle].tiles,
            f"ans_q5_w{middle}": waves[middle].waves,
            f"ans_q5_eff{middle}": waves[middle].efficiency,
            f"ans_q5_eff{large}": waves[large].efficiency,
        },
    )
