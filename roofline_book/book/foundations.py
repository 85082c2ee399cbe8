"""memory traffic、算术强度与 roofline 三章正文里的数：时间下界、存储各层的容量、融合与分块
省下的流量、roof 与算子的相对位置，以及各章习题的答案。

返回 dict 的函数，键就是章节粘贴（glue）时用的名字，所以隐藏的 cell 只需选好输入，再写
``glue(**foundations.elementwise_bounds(act, h100))``。单位写在名字的结尾：``_us``、``_ms``
（时间），``_gb`` （:math:`10^9` 字节）、``_mb`` （:math:`10^6` 字节）、``_mib``、``_kib``
（:math:`2^{20}`、:math:`2^{10}` 字节），``_tflops`` （:math:`10^{12}` FLOP/s），``_pct``
（百分数），``_i`` （FLOP/byte），``_si`` 与 ``_bin`` （写好单位的字符串）。名字里的设备（``h100``）
与形状（``g1024``）是章节所取的输入，函数对任何输入都照样计算。
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..devices.catalog import Hardware
from ..dtypes import Precision, bytes_per_element
from ..ops import Cost, add, elementwise, fa3_tile, gemm, relu
from ..ops import optimizer as optim
from ..present import plotting
from ..present.tables import Row
from ..roofline.roofs import attainable_on, ridge_point, time_bound
from ..units import binary, sci, si
from . import basics


def _known(device: Hardware, field: str) -> float:
    """A catalog field the page needs; a clear error where the device lacks it."""
    value = getattr(device, field)
    if value is None:
        raise ValueError(f"device {device.key!r}: the catalog has no {field}")
    return float(value)


# --------------------------------------------------------------------------------------------
# Memory traffic


def elementwise_bounds(cost: Cost, device: Hardware, dtype: Precision = "bf16") -> dict[str, Any]:
    """一个 elementwise 算子在 ``device`` 上的两个时间下界：HBM 搬运 ``add_h100_tmem_us`` 与
    向量单元 ``add_h100_tcomp_us``，两者之比与之和，算子最多能到向量峰值的比例
    ``add_vector_frac``，以及 HBM 带宽 ``h100_bw_si`` 与向量峰值 ``h100_vec_tflops`` （按 FMA 计）。

    Examples
    --------
    >>> from roofline_book import add, hardware
    >>> b = elementwise_bounds(add(4096 * 4096), hardware("h100-sxm"))
    >>> b["h100_bw_si"], round(b["add_h100_tmem_us"], 2), b["add_vector_frac"]
    ('3.35 TB/s', 30.05, 0.5)
    """
    t = time_bound(cost, device, dtype).by_resource
    vector = device.vector_peak(dtype)
    return {
        "h100_bw_si": si(device.memory_bandwidth, "B/s"),
        "h100_vec_tflops": vector / 1e12,
        "add_h100_tmem_us": t["hbm"] * 1e6,
        "add_h100_tcomp_us": t["vector"] * 1e6,
        "add_h100_ratio": t["hbm"] / t["vector"],
        "add_h100_sum_us": (t["hbm"] + t["vector"]) * 1e6,
        "add_vector_frac": cost.flops / t["vector"] / vector,
    }


def memory_levels(device: Hardware) -> dict[str, Any]:
    """``device`` 各级存储的容量，写成读者读的字符串（按二进制）：HBM、L2，以及每个 SM 的
    L1 与 shared memory 合计、shared memory 最多可划的部分和 register file；外加 SM 数与
    HBM 的 MiB 数。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> m = memory_levels(hardware("h100-sxm"))
    >>> m["h100_l2_mib"], m["h100_smem_kib"], m["h100_sms"]
    ('50 MiB', '228 KiB', 132)
    """
    capacity = _known(device, "memory_capacity")
    return {
        "h100_hbm_bin": binary(capacity),
        "h100_capacity_bin": binary(capacity),
        "h100_capacity_mib": capacity / 2**20,
        "h100_l2_mib": f"{_known(device, 'l2_cache') / 2**20:.0f} MiB",
        "h100_sms": int(_known(device, "sms")),
        "h100_l1smem_kib": f"{_known(device, 'l1_shared_per_sm') / 2**10:.0f} KiB",
        "h100_smem_kib": f"{_known(device, 'shared_memory_per_sm') / 2**10:.0f} KiB",
        "h100_rf_kib": f"{_known(device, 'register_file_per_sm') / 2**10:.0f} KiB",
    }


def two_pass_standardization(numel: int, dtype: Precision = "bf16") -> Cost:
    """``(x - mean) / std`` 写成两个 kernel 时的代价：流量最少的写法。

    第一个 kernel 读一遍 ``x``，累加 :math:`\\sum x` 与 :math:`\\sum x^2` （每个元素 3 FLOP），
    只写回两个标量（记 0 字节）；第二个再读一遍 ``x``，减均值、乘 :math:`1/\\sigma`，写出 ``y``
    （每个元素 2 FLOP）。

    Examples
    --------
    >>> c = two_pass_standardization(10**9 // 2)       # 1 GB of BF16: read twice, write once
    >>> c.bytes_read, c.bytes_written, c.kernels
    (2000000000, 1000000000, 2)
    """
    first = elementwise(numel, dtype, inputs=1, outputs=0, flops_per_element=3)
    return first + elementwise(numel, dtype, inputs=1, outputs=1, flops_per_element=2)


def standardization_traffic(
    eager: Cost, numel: int, device: Hardware, dtype: Precision = "bf16"
) -> dict[str, Any]:
    """标准化 ``numel`` 个元素：逐操作写法 ``eager`` 的流量（``std_*``：kernel 数、把张量读写了
    几遍、除以 HBM 带宽的时间），与最少流量的两遍写法 :func:`two_pass_standardization`
    （``ans_q3_*``，``ans_q3_ratio`` 是 ``eager`` 的流量对它的倍数）。
    """
    tensor_bytes, bw = bytes_per_element(dtype) * numel, device.memory_bandwidth
    least = two_pass_standardization(numel, dtype)
    return {
        "std_tensor_gb": tensor_bytes / 1e9,
        "std_total_gb": eager.bytes / 1e9,
        "std_kernels": eager.kernels,
        "std_reads": eager.bytes_read // tensor_bytes,
        "std_writes": eager.bytes_written // tensor_bytes,
        "std_h100_ms": eager.bytes / bw * 1e3,
        "ans_q3_gb": least.bytes / 1e9,
        "ans_q3_ms": least.bytes / bw * 1e3,
        "ans_q3_ratio": eager.bytes / least.bytes,
        "ans_q3_kernels": least.kernels,
    }


def traffic_answers(
    numel: int, device: Hardware, *, wide: Precision, params: int, dtype: Precision = "bf16"
) -> dict[str, Any]:
    """memory traffic 一章习题 1、2、4、5 的答案。

    原地加法每个元素的字节数；``numel`` 个元素的加法从 ``dtype`` 换成 ``wide`` 后的流量与时间；
    ``wide`` 加法的算术强度与向量单元的 ridge point（``wide`` 的向量峰值除以 HBM 带宽），
    以及越过它每个元素要做的 FLOP 与运算次数；``params`` 个 ``dtype`` 权重读一遍的字节与时间。
    """
    bw = device.memory_bandwidth
    narrow, wider, one = add(numel, dtype), add(numel, wide), add(1, wide)
    ridge = device.ridge_point(wide, unit="vector")
    weights = elementwise(params, dtype, inputs=1, outputs=0)  # each weight read once
    return {
        "ans_q1_bytes": elementwise(1, dtype, inputs=2, outputs=1).bytes,
        "ans_q2_bytes_per_elem": one.bytes,
        "ans_q2_mb": wider.bytes / 1e6,
        "ans_q2_us": wider.bytes / bw * 1e6,
        "ans_q2_ratio": wider.bytes / narrow.bytes,
        "h100_vec_fp32_tflops": device.vector_peak(wide) / 1e12,
        "ans_q4_i": one.intensity,
        "ans_q4_ridge": ridge,
        "ans_q4_left": ridge / one.intensity,
        "ans_q4_flops": one.bytes * ridge,
        "ans_q4_slots": one.bytes * ridge / 2,  # the peak counts an FMA as 2 FLOP
        "ans_q5_gb": weights.bytes / 1e9,
        "ans_q5_ms": weights.bytes / bw * 1e3,
    }


# --------------------------------------------------------------------------------------------
# Arithmetic intensity


def intensity_gap(elementwise_cost: Cost, gemm_cost: Cost) -> dict[str, float]:
    """一个 elementwise 算子与一个 GEMM 的算术强度、前者每 FLOP 的字节数，以及两者之比。

    Examples
    --------
    >>> from roofline_book import add, gemm
    >>> g = intensity_gap(add(4096 * 4096), gemm(4096, 4096, 4096))
    >>> g["i_add_inv"], g["i_gemm_over_add"]          # 6 bytes a FLOP; 1365.33 / (1/6)
    (6.0, 8192.0)
    """
    i_add = elementwise_cost.intensity
    return {
        "i_add": i_add,
        "i_add_inv": 1 / i_add,
        "i_gemm4096": gemm_cost.intensity,
        "i_gemm_over_add": gemm_cost.intensity / i_add,
    }


def _per_element(separate: Cost, fused: Cost, numel: int, prefix: str) -> dict[str, float]:
    """Bytes per element and intensity of the unfused and the fused version."""
    return {
        f"{prefix}_sep_bpe": separate.bytes // numel,
        f"{prefix}_fused_bpe": fused.bytes // numel,
        f"{prefix}_sep_i": separate.intensity,
        f"{prefix}_fused_i": fused.intensity,
    }


def fusion_figures(
    separate: Cost, fused: Cost, numel: int, device: Hardware, dtype: Precision = "bf16"
) -> dict[str, float]:
    """同一串 elementwise 运算逐操作执行（``separate``）与融合成一个 kernel（``fused``）：
    每个元素的字节数、算术强度、流量之比，以及一个中间张量与 ``device`` 的 L2 各有几 MiB。

    Examples
    --------
    >>> from roofline_book import elementwise, hardware, relu
    >>> n, h100 = 4096 * 4096, hardware("h100-sxm")
    >>> sep = elementwise(n, inputs=2) + elementwise(n) + relu(n)
    >>> f = fusion_figures(sep, elementwise(n, inputs=2, flops_per_element=3), n, h100)
    >>> f["fuse_sep_bpe"], f["fuse_fused_bpe"], f["fuse_t_mib"], f["l2_mib"]
    (14, 6, 32.0, 50.0)
    """
    return {
        **_per_element(separate, fused, numel, "fuse"),
        "fuse_t_mib": numel * bytes_per_element(dtype) / 2**20,
        "l2_mib": _known(device, "l2_cache") / 2**20,
        "fuse_ratio": separate.bytes / fused.bytes,
    }


def adamw_launch_figures(loop: Cost, fused: Cost, params: int, tensors: int = 1) -> dict[str, Any]:
    """不融合与融合的 AdamW（``params`` 个参数分在 ``tensors`` 个张量里）：算术强度、流量之比、
    kernel 数，以及 ``multi_tensor_apply`` 每次启动最多处理的块数（PyTorch 源码，CUDA 12 与 13
    构建）和 CUDA 13 构建下融合 kernel 的启动次数。
    """
    return {
        "adamw_loop_i": loop.intensity,
        "adamw_fused_i": fused.intensity,
        "adamw_fused_kernels": fused.kernels,
        "adamw_ratio": loop.bytes / fused.bytes,
        "adamw_loop_kernels": loop.kernels,
        # depth 4: parameters, gradients and the two moments
        "adamw_fused_kernels_cuda13": optim.multi_tensor_launches(params, tensors, 4, cuda=13),
        "adamw_max_blocks": optim.MULTI_TENSOR_MAX_BLOCKS,
        "adamw_max_blocks_cuda13": optim.MULTI_TENSOR_MAX_BLOCKS_CUDA13,
    }


def tiling_figures(
    intensities: Mapping[int, float], n: int, device: Hardware, tile: int = 128
) -> dict[str, float | int]:
    """边长 ``n`` 的方阵乘法按分块边长 ``t`` 的 :math:`I(t)` （``intensities``，键含 1、``tile``
    与 ``n``）：两端与 ``t = tile`` 处的值、两端之比、此时 ``A`` 从 HBM 读几遍、一个分块的 FP32
    累加器，对照 ``device`` BF16 矩阵单元的 ridge point 与每个 SM 的片上存储（KiB）。
    """
    return {
        "tile1_i": intensities[1],
        "tile128_i": intensities[tile],
        "tile128_a_reads": n // tile,
        "tilen_i": intensities[n],
        "tile_span": intensities[n] / intensities[1],
        "ridge_h100_bf16": device.ridge_point("bf16"),
        "acc128_kib": tile * tile * 4 / 2**10,  # FP32 accumulator
        "smem_kib": _known(device, "shared_memory_per_sm") / 2**10,
        "rf_kib": _known(device, "register_file_per_sm") / 2**10,
        "l1smem_kib": _known(device, "l1_shared_per_sm") / 2**10,
    }


def tiling_figure(
    intensities: Mapping[int, float], n: int, device: Hardware, dtype: Precision = "bf16"
) -> Any:
    """:math:`I(t)` 随分块边长 ``t`` 的变化（双对数，``intensities`` 按 ``t`` 从小到大），对照
    必需流量的 :math:`2n/(3s)` （虚线）与 ``device`` 矩阵单元的 ridge point（点线）。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from roofline_book import hardware, tiled_gemm
    >>> tiled = {t: tiled_gemm(64, 64, 64, t).intensity for t in (1, 8, 64)}
    >>> fig = tiling_figure(tiled, 64, hardware("h100-sxm"))
    >>> fig.axes[0].get_legend_handles_labels()[1][2]
    'H100 SXM 矩阵单元 BF16 的 ridge point'
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    tiles, name = list(intensities), str(dtype).upper()
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    label = "分块：每个分块各自重读条带"
    ax.loglog(tiles, list(intensities.values()), marker="o", markersize=4, label=label)
    plotting.log2_axis(ax, tiles[::2])
    label = "必需流量：每个输入只读一次，2n/(3s)"
    green = plotting.PALETTE["green"]
    plotting.reference_line(ax, gemm(n, n, n, dtype).intensity, color=green, label=label)
    label = f"{device.key.upper().replace('-', ' ')} 矩阵单元 {name} 的 ridge point"
    plotting.ridge_line(ax, device.ridge_point(dtype), linestyle=":", label=label)
    ax.set(
        xlabel=f"分块边长 t（n = {n}，{name}）",
        ylabel="算术强度 [FLOP/byte]",
        title="分块越大，复用越多，算术强度越高",
    )
    ax.legend(loc="lower right")
    return fig


def intensity_answers(
    separate: Cost,
    fused: Cost,
    numel: int,
    intensities: Mapping[int, float],
    optimizer: Cost,
    device: Hardware,
    *,
    bench_numel: int,
) -> dict[str, Any]:
    """算术强度一章习题的答案。

    FP32 加法与 BF16 ReLU 的算术强度；``separate`` 与 ``fused`` 两种写法（各 ``numel`` 个元素）
    每个元素的字节数与算术强度；``intensities`` 中第一个达到 ``device`` BF16 ridge point 的分块
    边长及其 FP32 累加器（MiB）；``optimizer`` 的流量与时间；``bench_numel`` 个元素的 BF16
    加法与 ReLU 的时间下界及算术强度之比。
    """
    bw, ridge = device.memory_bandwidth, device.ridge_point("bf16")
    tile = next(t for t in intensities if intensities[t] >= ridge)
    add_n, relu_n = add(bench_numel, "bf16"), relu(bench_numel, "bf16")
    return {
        "ans_q1_add_fp32": add(1, "fp32").intensity,
        "ans_q1_add_fp32_bytes": add(1, "fp32").bytes,
        "ans_q1_relu_bytes": relu(1, "bf16").bytes,
        "ans_q1_relu_bf16": relu(1, "bf16").intensity,
        **_per_element(separate, fused, numel, "ans_q2"),
        "ans_q3_tile": tile,
        "ans_q3_i": intensities[tile],
        "ans_q3_acc_mib": tile * tile * 4 / 2**20,  # FP32 accumulator
        "ans_q4_gb": optimizer.bytes / 1e9,
        "ans_q4_ms": optimizer.bytes / bw * 1e3,
        "h100_bw_si": si(bw, "B/s"),
        "ans_q5_add_us": add_n.bytes / bw * 1e6,
        "ans_q5_relu_us": relu_n.bytes / bw * 1e6,
        "ans_q5_i_ratio": relu_n.intensity / add_n.intensity,
    }


# --------------------------------------------------------------------------------------------
# The roofline


def ridge_figures(peak: float, bandwidth: float) -> dict[str, Any]:
    """一个峰值（FLOP/s）与一个带宽（byte/s）的 ridge point，连同两者的读法。

    Examples
    --------
    >>> ridge_figures(100e12, 1e12)
    {'ex_peak_si': '100 TFLOP/s', 'ex_bw_si': '1 TB/s', 'ex_ridge': 100.0}
    """
    return {
        "ex_peak_si": si(peak, "FLOP/s"),
        "ex_bw_si": si(bandwidth, "B/s"),
        "ex_ridge": ridge_point(peak, bandwidth),
    }


def placement_figures(
    rows: Sequence[Row],
    peak: float,
    *,
    elementwise: str = "add",
    optimizer: str = "AdamW (loop)",
    gemms: tuple[str, str, str] = ("GEMM 256", "GEMM 1024", "GEMM 4096"),
) -> dict[str, Any]:
    """:func:`roofline_book.cost_table` 的几行（按名字取）在峰值为 ``peak`` （FLOP/s）的设备上：
    ``elementwise`` 与 ``optimizer`` 的可达性能，三个 GEMM 中前两个的算术强度，``optimizer``
    与中间那个 GEMM 的 FLOPs，以及 ``elementwise`` 与最大的 GEMM 每 FLOP 的字节数。
    """
    row = {r.name: r for r in rows}
    ew, opt = row[elementwise], row[optimizer]
    small, middle, large = (row[g] for g in gemms)
    return {
        "add_att_tflops": ew.attainable / 1e12,
        "add_att_pct": ew.attainable / peak * 100,
        "g256_i": small.cost.intensity,
        "g1024_i": middle.cost.intensity,
        "adamw_flops_sci": sci(opt.cost.flops),
        "g1024_flops_sci": sci(middle.cost.flops),
        "adamw_loop_att": opt.attainable / 1e12,
        "bytes_per_flop_add": 1 / ew.cost.intensity,
        "bytes_per_flop_g4096": 1 / large.cost.intensity,
    }


def unit_roofs(device: Hardware, dtype: str = "bf16") -> dict[str, Any]:
    """``device`` 每种计算单元的 roof（特殊函数单元按每秒 :math:`10^{12}` 次求值）、矩阵对向量
    之比、每 SM 每时钟的特殊函数求值次数、L2 容量与向量单元对 HBM 的 ridge point，加上
    :func:`basics.roof_sentences` 与 :func:`basics.unit_rates` 的各项。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> r = unit_roofs(hardware("h100-sxm"))
    >>> r["h100_matrix"], r["h100_vector"], r["h100_sfu"], round(r["h100_vec_ridge"], 2)
    (989.4, 133.8, 16, 39.94)
    """
    roofs = {u: device.ceiling(u, dtype) for u in ("matrix", "vector", "special")}
    return {
        "h100_matrix": roofs["matrix"] / 1e12,
        "h100_vector": roofs["vector"] / 1e12,
        "h100_special": roofs["special"] / 1e12,
        "h100_mat_over_vec": roofs["matrix"] / roofs["vector"],
        "h100_sfu": int(_known(device, "sfu_per_sm_per_clock")),
        "h100_l2_mib": _known(device, "l2_cache") / 2**20,
        "h100_vec_ridge": device.ridge_point(dtype, unit="vector"),
        **basics.roof_sentences(device),
        **basics.unit_rates(device, dtype),
    }


def exp_limit_figures(
    softmax_cost: Cost, flash: Cost, device: Hardware, *, head_dim: int, compare_head_dim: int
) -> dict[str, Any]:
    """exp 离限制有多近：单独的 softmax（HBM 时间对特殊函数时间），与 head dim 为 ``head_dim``
    的 FlashAttention（特殊函数所需时钟对矩阵单元所需时钟）；``compare_head_dim`` 时后者之比。

    两种单元跑在同一个 SM 时钟上，所以各按每 SM 每时钟的速率相除，时钟约掉；每个得分有
    :math:`4d` 次矩阵 FLOP 和 1 次 exp。
    """
    t = time_bound(softmax_cost, device).by_resource
    matrix_clock = device.per_sm_clock("matrix", "bf16")
    special_clock = device.per_sm_clock("special")
    mat_over_sfu = matrix_clock / special_clock  # matrix FLOPs per exp
    exp_clocks = flash.special_flops / special_clock
    return {
        "sm_hbm_over_special": t["hbm"] / t["special"],
        "fa_special_over_matrix": exp_clocks / (flash.matrix_flops / matrix_clock),
        "h100_mat_per_clock": mat_over_sfu * _known(device, "sfu_per_sm_per_clock"),
        "h100_mat_over_sfu": mat_over_sfu,
        "fa_flops_per_score_64": 4 * head_dim,
        "fa_ratio_128": mat_over_sfu / (4 * compare_head_dim),
    }


def flash_reread_figures(flash: Cost, head_dims: Sequence[int] = (64, 128, 256)) -> dict[str, Any]:
    """FlashAttention 的必需流量、从 L2 重读的字节、装下重读所需的 L2（一个 head 的 K 与 V），
    以及每个 head dim 的 FlashAttention-3 query 块行数（:func:`roofline_book.fa3_tile`）。

    Examples
    --------
    >>> from roofline_book import Cost
    >>> f = flash_reread_figures(Cost(0, 2**20, 0, reread_bytes=10**9, reread_footprint=2**20))
    >>> f["fa_kv_mib"], f["fa_reread_gb"], f["fa3_bm_64"], f["fa3_bm_128"]
    (1.0, 1.0, 192, 128)
    """
    return {
        "fa_kv_mib": flash.reread_footprint / 2**20,
        "fa_reread_gb": flash.reread_bytes / 1e9,
        "fa_hbm_gb": flash.bytes / 1e9,
        **{f"fa3_bm_{d}": fa3_tile(d).block_m for d in head_dims},
    }


def roofline_answers(
    rows: Sequence[Row],
    example: Hardware,
    h100: Hardware,
    a100: Hardware,
    h200: Hardware,
    *,
    n: int,
    sizes: tuple[int, int],
) -> dict[str, Any]:
    """roofline 一章习题的答案。

    ``rows`` 是 ``example`` 上的 :func:`roofline_book.cost_table`，含 ``"add"``、``"RMSNorm"``
    与 ``"GEMM 4096"`` 三行。边长 ``n`` 的 BF16 方阵乘法在三台设备上受哪条 roof 限制；
    ``example`` 上达到半峰值所需的算术强度与 RMSNorm 的可达比例；加法与 4096 的 GEMM 从
    ``h100`` 换到带宽更高的 ``h200`` 时可达性能之比；``n`` 与 ``sizes`` 这几个边长在 ``h100``
    上的可达性能，以及方阵乘法越过 ridge point 的边长 ``ans_q5_ncross``。
    """
    row = {r.name: r for r in rows}
    peak, bw = example.peak_flops("bf16"), example.memory_bandwidth
    square, h100_peak = gemm(n, n, n, "bf16"), h100.ceiling("matrix", "bf16")
    add_i, gemm_i = row["add"].cost.intensity, row["GEMM 4096"].cost.intensity
    att_add, att_gemm = (
        [attainable_on(i, d, unit=u) for d in (h100, h200)]
        for i, u in ((add_i, "vector"), (gemm_i, "matrix"))
    )
    att = {m: attainable_on(gemm(m, m, m).intensity, h100, unit="matrix") for m in (*sizes, n)}
    bounds = (("example", example), ("a100", a100), ("h100", h100))
    return {
        "ans_q1_i": square.intensity,
        "ans_q1_ridge_a100": a100.ridge_point(),
        "ans_q1_ridge_h100": h100.ridge_point(),
        "a100_bf16_tflops": a100.ceiling("matrix", "bf16") / 1e12,
        "a100_bw_si": si(a100.memory_bandwidth, "B/s"),
        "h200_bw_si": si(h200.memory_bandwidth, "B/s"),
        **{f"ans_q1_bound_{k}": time_bound(square, d).bound for k, d in bounds},
        "ans_q2_i_half": 0.5 * peak / bw,
        "ans_q2_rms_pct": row["RMSNorm"].attainable / peak * 100,
        "ans_q3_add_h100": att_add[0] / 1e12,
        "ans_q3_add_h200": att_add[1] / 1e12,
        "ans_q3_add_ratio": att_add[1] / att_add[0],
        "ans_q3_gemm_ratio": att_gemm[1] / att_gemm[0],
        "h100_bf16_tflops": h100_peak / 1e12,
        "h100_bw_si": si(h100.memory_bandwidth, "B/s"),
        "ans_q4_tflops": att[n] / 1e12,
        "ans_q4_pct": att[n] / h100_peak * 100,
        **{f"ans_q5_att_{m}": att[m] / 1e12 for m in sizes},
        # 2n/(3s) = I*  =>  n* = 3 s I* / 2
        "ans_q5_ncross": 3 * bytes_per_element("bf16") * h100.ridge_point() / 2,
    }
