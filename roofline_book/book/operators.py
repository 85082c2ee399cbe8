"""低 FLOP 算子一章的数：各计算单元的上限、GELU、RMSNorm、softmax 与 AdamW 的时间下界和流量，
以及离计算上限最近的算子。

每个函数返回一个 dict，键就是章节粘贴（glue）时用的名字，所以隐藏的 cell 只需选好设备与形状，
再写 ``glue(**operators.softmax_figures(32 * 4096, 4096, h100, versus=gemm_t))``。习题的答案
带一个前缀（``prefix``），键就是前缀加上文档里列出的名字。

Examples
--------
>>> from roofline_book import hardware
>>> f = rmsnorm_figures(4096, 4096, hardware("h100-sxm"))
>>> f["rms_eager_kernels"], round(f["rms_eager_ratio"], 1), f["inter_mib"]  # 4 x 4096^2 B
(8, 9.0, 64.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..devices.catalog import Hardware
from ..dtypes import bytes_per_element
from ..measure.bench.suites import suite_spec
from ..ops import (
    GELU_FLOPS_PER_ELEMENT,
    SOFTMAX_FLOPS_PER_ELEMENT,
    Cost,
    adamw,
    adamw_passes,
    attention,
    elementwise,
    gelu,
    rmsnorm,
    rmsnorm_eager,
    softmax,
)
from ..ops.cost import ZERO
from ..ops.optimizer import (
    MULTI_TENSOR_CHUNK,
    MULTI_TENSOR_MAX_BLOCKS,
    MULTI_TENSOR_MAX_BLOCKS_CUDA13,
)
from ..ops.pointwise import SOFTMAX_SPECIAL_PER_ELEMENT_ATEN
from ..roofline.bounds import TimeBound
from ..roofline.roofs import time_bound
from .kernel_figures import closest_to_compute

__all__ = [
    "IMPLS",
    "adamw_bench_figures",
    "adamw_figures",
    "adamw_launch_figures",
    "add_versus_gemm_figures",
    "closest_figures",
    "gelu_figures",
    "headroom_figures",
    "loop_over_fused_figures",
    "masked_softmax_figures",
    "rmsnorm_figures",
    "softmax_figures",
    "unit_figures",
]

IMPLS = ("loop", "foreach", "fused")
"""AdamW 的三种实现：逐张量循环、``foreach=True`` 与 ``fused=True``。"""


def _us(t: TimeBound) -> dict[str, float]:
    """Each resource's time of a bound, in microseconds."""
    return {r: s * 1e6 for r, s in t.by_resource.items()}


def unit_figures(device: Hardware, dtype: str = "bf16") -> dict[str, float]:
    """``device`` 上三种计算单元的上限、HBM 带宽与 ridge point。

    Returns
    -------
    dict
        ``matrix_tflops``、``vector_tflops``、``special_tflops`` （``dtype`` 的上限，TFLOP/s；
        特殊函数单元是每秒 10^12 次求值）、``vector_op_tflops`` （每次 1 FLOP 的纯加法速率）、
        ``vector_fp32_tflops``、``bw_tbs`` （HBM，TB/s）、``ridge_{dtype}`` （矩阵单元）、
        ``ridge_vector`` 与 ``ridge_vector_fp32`` （向量单元，FLOP/byte）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = unit_figures(hardware("h100-sxm"))
    >>> f["vector_tflops"], f["vector_op_tflops"], f["ridge_vector_fp32"]   # 67 / 3.35 = 20
    (133.8, 66.9, 20.0)
    """
    return {
        **{f"{u}_tflops": device.ceiling(u, dtype) / 1e12 for u in ("matrix", "vector", "special")},
        "vector_op_tflops": device.vector_op_rate(dtype) / 1e12,
        "vector_fp32_tflops": device.ceiling("vector", "fp32") / 1e12,
        "bw_tbs": device.memory_bandwidth / 1e12,
        f"ridge_{dtype}": device.ridge_point(dtype),
        "ridge_vector": device.ridge_point(dtype, unit="vector"),
        "ridge_vector_fp32": device.ridge_point("fp32", unit="vector"),
    }


def gelu_figures(device: Hardware, numel: int, dtype: str = "bf16") -> dict[str, float | int]:
    """``numel`` 个元素的 GELU（tanh 形式）：算术强度、离两个 ridge point 多远、各项时间。

    Returns
    -------
    dict
        ``gelu_fpe`` （每元素的运算次数）、``gelu_I`` （FLOP/byte）、``gelu_gap`` 与
        ``gelu_gap_vector`` （矩阵单元、向量单元的 ridge point 是它的几倍）、``gelu_special_us``
        与 ``gelu_hbm_us`` （特殊函数单元与 HBM 的时间，µs）及两者之比 ``gelu_mem_over_special``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = gelu_figures(hardware("h100-sxm"), 4096 * 4096)
    >>> f["gelu_I"], round(f["gelu_hbm_us"], 2)   # 9 FLOP over 2 + 2 bytes; 4 x 4096^2 / 3.35e12
    (2.25, 20.03)
    """
    cost = gelu(numel, dtype)
    us = _us(time_bound(cost, device, dtype))
    return {
        "gelu_fpe": GELU_FLOPS_PER_ELEMENT,
        "gelu_I": cost.intensity,
        "gelu_gap": device.ridge_point(dtype) / cost.intensity,
        "gelu_gap_vector": device.ridge_point(dtype, unit="vector") / cost.intensity,
        "gelu_special_us": us["special"],
        "gelu_hbm_us": us["hbm"],
        "gelu_mem_over_special": us["hbm"] / us["special"],
    }


def add_versus_gemm_figures(add: Cost, gemm: Cost, device: Hardware) -> dict[str, float]:
    """一个 add 与一个 GEMM 的时间下界（µs）、两者之比，以及每 GB 流量的 HBM 时间。

    Returns
    -------
    dict
        ``add_us``、``gemm_us``、``time_ratio`` （GEMM 比 add）、``flops_ratio`` （GEMM 的 FLOPs
        比 add 的）与 ``ms_per_gb`` （ms）。

    Examples
    --------
    >>> from roofline_book import gemm, hardware, residual_add
    >>> big = gemm(4096, 4096, 4096)
    >>> f = add_versus_gemm_figures(residual_add(4096**2), big, hardware("h100-sxm"))
    >>> f["flops_ratio"], round(f["ms_per_gb"], 4)            # 2 x 4096 FLOP per add; 1 / 3.35
    (8192.0, 0.2985)
    """
    add_t, gemm_t = time_bound(add, device), time_bound(gemm, device)
    return {
        "add_us": add_t.seconds * 1e6,
        "gemm_us": gemm_t.seconds * 1e6,
        "time_ratio": gemm_t.seconds / add_t.seconds,
        "flops_ratio": gemm.flops / add.flops,
        "ms_per_gb": 1e9 / device.memory_bandwidth * 1e3,
    }


def rmsnorm_figures(
    rows: int, d: int, device: Hardware, dtype: str = "bf16"
) -> dict[str, float | int]:
    """``rows`` 行、每行 ``d`` 个元素的 RMSNorm：单个 kernel 与 eager 写法的流量。

    Returns
    -------
    dict
        ``rms_I`` （FLOP/byte）、``rms_us`` （µs）、``rms_weight_share`` （权重占全部字节的份额）；
        eager 写法（先转 FP32）的 ``rms_eager_kernels`` 与 ``rms_eager_ratio`` （字节是单 kernel
        的几倍），全程 ``dtype`` 的 ``rms_bf16_kernels`` 与 ``rms_bf16_ratio``；一个 FP32 中间
        张量的 ``inter_mib`` 与 ``device`` 的 ``l2_mib`` （MiB）。
    """
    if device.l2_cache is None:
        raise ValueError(f"device {device.key!r}: the catalog gives no L2 cache size")
    norm = rmsnorm(rows, d, dtype)
    step_by_step = sum((c for _, c in rmsnorm_eager(rows, d, dtype)), ZERO)
    same_dtype = sum((c for _, c in rmsnorm_eager(rows, d, dtype, upcast=False)), ZERO)
    return {
        "rms_I": norm.intensity,
        "rms_us": time_bound(norm, device, dtype).seconds * 1e6,
        "rms_weight_share": bytes_per_element(dtype) * d / norm.bytes,
        "rms_eager_kernels": step_by_step.kernels,
        "rms_eager_ratio": step_by_step.bytes / norm.bytes,
        "rms_bf16_kernels": same_dtype.kernels,
        "rms_bf16_ratio": same_dtype.bytes / norm.bytes,
        "inter_mib": bytes_per_element("fp32") * rows * d / 2**20,
        "l2_mib": device.l2_cache / 2**20,
    }


def softmax_figures(
    rows: int, cols: int, device: Hardware, dtype: str = "bf16", *, versus: TimeBound
) -> dict[str, float | int]:
    """``rows`` 行、每行 ``cols`` 个元素的 softmax （attention 的得分矩阵：head 数乘序列长行，
    每行序列长个）：流量、各单元的时间，以及是另一个算子的时间下界 ``versus`` 的几倍。

    Returns
    -------
    dict
        ``softmax_I`` （FLOP/byte）、``softmax_gb`` （GB）；``softmax_us``、
        ``softmax_vector_us``、``softmax_special_us`` （HBM、向量单元、特殊函数单元的时间，µs）
        与 ``softmax_mem_over_special``；每个元素的 ``softmax_fpe`` （运算）、
        ``softmax_bpe`` （字节）、``softmax_special_pe``、``softmax_vector_pe``；PyTorch
        自己的 kernel 每元素的特殊函数求值 ``softmax_special_aten`` 与它在特殊函数单元上的
        ``softmax_aten_special_us``；``softmax_vs_gemm`` （本算子的下界是 ``versus`` 的几倍）。

    Examples
    --------
    >>> from roofline_book import gemm, hardware
    >>> h100 = hardware("h100-sxm")
    >>> f = softmax_figures(32 * 4096, 4096, h100, versus=time_bound(gemm(4096, 4096, 4096), h100))
    >>> f["softmax_gb"], f["softmax_bpe"]                 # 2 x 2 bytes x 32 x 4096^2
    (2.147483648, 4)
    """
    scores = softmax(rows, cols, dtype)
    t = time_bound(scores, device, dtype)
    us, one = _us(t), softmax(1, 1, dtype)
    return {
        "softmax_fpe": SOFTMAX_FLOPS_PER_ELEMENT,
        "softmax_I": scores.intensity,
        "softmax_gb": scores.bytes / 1e9,
        "softmax_us": us["hbm"],
        "softmax_bpe": one.bytes,
        "softmax_special_pe": one.special_flops,
        "softmax_vector_pe": one.vector_flops,
        "softmax_special_aten": SOFTMAX_SPECIAL_PER_ELEMENT_ATEN,
        "softmax_aten_special_us": us["special"]
        * SOFTMAX_SPECIAL_PER_ELEMENT_ATEN
        / one.special_flops,
        "softmax_vector_us": us["vector"],
        "softmax_special_us": us["special"],
        "softmax_mem_over_special": us["hbm"] / us["special"],
        "softmax_vs_gemm": t.seconds / versus.seconds,
    }


def adamw_figures(
    fp32: Mapping[str, Cost],
    mixed: Mapping[str, Cost],
    params: int,
    device: Hardware,
    *,
    tensors: int,
) -> dict[str, float | int]:
    """一组参数上三种 AdamW 实现的流量、时间下界与 launch 次数。

    Parameters
    ----------
    fp32, mixed : mapping of str to Cost
        :data:`IMPLS` 中每种实现的一步：全 FP32，与 FP32 master weight 配 BF16 梯度。
    params : int
        参数个数。
    device : roofline_book.Hardware
        目录中的设备（按 FP32 计时）。
    tensors : int
        参数分在几个张量里（算 CUDA 13 构建的 launch 次数）。

    Returns
    -------
    dict
        ``block_params_m`` （百万）；全 FP32 的 ``adamw_{fused,loop}_ms``、
        ``adamw_{fused,loop}_bpp`` （每参数字节）、``adamw_{fused,loop}_I``、``adamw_ratio``
        （循环比 fused 的字节）；``adamw_mixed_{fused,loop}_bpp``；``adamw_{impl}_kernels``、
        ``adamw_{foreach,fused}_kernels_cuda13``；
        ``adamw_loop_passes``、``adamw_flops_per_param``，以及 ``multi_tensor_apply`` 的
        ``mt_chunk`` （每块元素）、``mt_blocks`` 与 ``mt_blocks_cuda13`` （每次 launch 的块数）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> costs = {i: adamw(10**6, i, tensors=1) for i in IMPLS}
    >>> f = adamw_figures(costs, costs, 10**6, hardware("h100-sxm"), tensors=1)
    >>> f["adamw_fused_bpp"], f["adamw_loop_bpp"]    # fused: 4 reads + 3 writes of 4 bytes
    (28, 80)
    """
    ms = {i: time_bound(c, device, "fp32").seconds * 1e3 for i, c in fp32.items()}
    return {
        "adamw_loop_passes": len(adamw_passes("loop")),
        "adamw_flops_per_param": sum(p.flops for p in adamw_passes("fused")),
        "mt_chunk": MULTI_TENSOR_CHUNK,
        "mt_blocks": MULTI_TENSOR_MAX_BLOCKS,
        "mt_blocks_cuda13": MULTI_TENSOR_MAX_BLOCKS_CUDA13,
        "block_params_m": params / 1e6,
        "adamw_ratio": fp32["loop"].bytes / fp32["fused"].bytes,
        "adamw_fused_ms": ms["fused"],
        "adamw_loop_ms": ms["loop"],
        "adamw_fused_bpp": fp32["fused"].bytes // params,
        "adamw_loop_bpp": fp32["loop"].bytes // params,
        "adamw_fused_I": fp32["fused"].intensity,
        "adamw_loop_I": fp32["loop"].intensity,
        "adamw_mixed_fused_bpp": mixed["fused"].bytes // params,
        "adamw_mixed_loop_bpp": mixed["loop"].bytes // params,
        **{f"adamw_{i}_kernels": fp32[i].kernels for i in IMPLS},
        **{
            f"adamw_{i}_kernels_cuda13": adamw(params, i, tensors=tensors, cuda=13).kernels
            for i in ("foreach", "fused")
        },
    }


def closest_figures(
    named: Sequence[tuple[str, Cost]], device: str, *, per_bytes: float, expect: str = "special"
) -> dict[str, float | str]:
    """受带宽限制的算子中离计算上限最近的几个（:func:`~.kernel_figures.closest_to_compute`）。

    Parameters
    ----------
    named : sequence of (str, Cost)
        算子；名字里全角括号之前的部分写进 ``near_names``。
    device : str
        目录中的设备。
    per_bytes : float
        ``near_special`` 按每读写这么多字节计。
    expect : str
        正文说出的那个决定计算时间的单元；不是它时抛出 ``ValueError``。

    Returns
    -------
    dict
        ``min_mem_over_compute`` 与 ``near_ratio`` （最小的 ``T_memory / T_compute``）、
        ``near_names`` （用“和”连起来）与 ``near_special`` （每 ``per_bytes`` 字节的特殊函数求值）。

    Examples
    --------
    >>> from roofline_book import gelu, relu
    >>> f = closest_figures([("relu", relu(2**24)), ("GELU（tanh）", gelu(2**24))], "h100-sxm",
    ...                     per_bytes=4)
    >>> f["near_names"], f["near_special"]               # one tanh per 2 + 2 bytes
    ('GELU', 1.0)
    """
    near = closest_to_compute(named, device)
    if near.resource != expect:
        raise ValueError(f"the closest operators are held by {near.resource!r}, not {expect!r}")
    return {
        "min_mem_over_compute": near.ratio,
        "near_names": " 和 ".join(name.split("（")[0] for name in near.names),
        "near_ratio": near.ratio,
        "near_special": near.special_per_byte * per_bytes,
    }


def headroom_figures(
    cost: Cost, numel: int, device: Hardware, prefix: str, dtype: str = "bf16"
) -> dict[str, float]:
    """一个 elementwise 算子每个元素要做多少运算，才碰到向量单元或特殊函数单元的上限。

    Returns
    -------
    dict
        ``{prefix}I`` （FLOP/byte）；每个元素（``cost.bytes / numel`` 字节）所需的
        ``{prefix}ops_needed`` （每次 1 FLOP 的运算）、``{prefix}flops_needed`` （到向量单元的
        ridge point）与 ``{prefix}special_needed`` （特殊函数求值）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = headroom_figures(gelu(2**24), 2**24, hardware("h100-sxm"), "")
    >>> round(f["flops_needed"], 1)                 # 4 bytes x 133.8 / 3.35
    159.8
    """
    per_element = cost.bytes / numel
    return {
        f"{prefix}ops_needed": device.vector_op_rate(dtype) / device.memory_bandwidth * per_element,
        f"{prefix}I": cost.intensity,
        f"{prefix}flops_needed": device.ridge_point(dtype, unit="vector") * per_element,
        f"{prefix}special_needed": device.ridge_point(dtype, unit="special") * per_element,
    }


def loop_over_fused_figures(
    costs: Mapping[str, Cost], device: Hardware, prefix: str, dtype: str = "fp32"
) -> dict[str, float]:
    """循环版与 fused 版 AdamW 的时间下界 ``{prefix}loop_ms``、``{prefix}fused_ms`` （ms）与
    字节之比 ``{prefix}ratio``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> costs = {i: adamw(10**6, i) for i in IMPLS}
    >>> loop_over_fused_figures(costs, hardware("h100-sxm"), "")["ratio"]   # 80 / 28 bytes
    2.857142857142857
    """
    loop, fused = (time_bound(costs[i], device, dtype).seconds * 1e3 for i in ("loop", "fused"))
    return {
        f"{prefix}loop_ms": loop,
        f"{prefix}fused_ms": fused,
        f"{prefix}ratio": costs["loop"].bytes / costs["fused"].bytes,
    }


def adamw_launch_figures(
    params: int, tensors: int, device: Hardware, prefix: str
) -> dict[str, float | int]:
    """全 FP32 的 AdamW 更新 ``params`` 个参数（分在 ``tensors`` 个张量里）：launch 次数与时间。

    Returns
    -------
    dict
        ``{prefix}{impl}_kernels`` （CUDA 12 构建）与 ``{prefix}{foreach,fused}_kernels_cuda13``；
        ``{prefix}chunks`` （``multi_tensor_apply`` 至少切成的块数）；``{prefix}params_b``
        （十亿）、``{prefix}gb`` （fused 的流量，GB）与 ``{prefix}fused_ms`` （ms）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = adamw_launch_figures(2**20, 4, hardware("h100-sxm"), "")
    >>> f["chunks"], f["fused_kernels"], f["loop_kernels"]   # 2^20 / 65536; 8 passes x 4
    (16, 1, 32)
    """
    model = {i: adamw(params, i, tensors=tensors) for i in IMPLS}
    return {
        **{f"{prefix}{i}_kernels": c.kernels for i, c in model.items()},
        f"{prefix}params_b": params / 1e9,
        f"{prefix}gb": model["fused"].bytes / 1e9,
        **{
            f"{prefix}{i}_kernels_cuda13": adamw(params, i, tensors=tensors, cuda=13).kernels
            for i in ("foreach", "fused")
        },
        f"{prefix}fused_ms": time_bound(model["fused"], device, "fp32").seconds * 1e3,
        f"{prefix}chunks": -(-params // MULTI_TENSOR_CHUNK),
    }


def masked_softmax_figures(
    heads: int, tokens: int, head_dim: int, device: Hardware, prefix: str
) -> dict[str, float | int]:
    """BF16 得分矩阵（``heads`` 个 head，序列长 ``tokens``）在 attention 各种写法下的流量。

    缩放、mask、softmax 分成三个 kernel（各读写一遍）与合成一个；以及 Hugging Face 的 eager
    attention 与最简的三个 kernel（``impl="materialized"``）比 FlashAttention 每个得分多搬的字节。

    Returns
    -------
    dict
        ``{prefix}three_ms``、``{prefix}fused_ms`` （ms）与字节之比 ``{prefix}ratio``；
        ``{prefix}hf_bps``、``{prefix}mat_bps`` （每个得分的字节）与 ``{prefix}hf_kernels``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = masked_softmax_figures(32, 4096, 128, hardware("h100-sxm"), "")
    >>> f["ratio"], f["mat_bps"], f["hf_bps"]   # 6 passes over 2; 2 + 4 + 2; 32 + 2 / 32
    (3.0, 8.0, 32.0625)
    """
    scores, elems = softmax(heads * tokens, tokens, "bf16"), heads * tokens * tokens
    three = elementwise(elems, "bf16") * 2 + scores  # scale and mask, then the softmax
    eager, materialized, flash = (
        attention(1, heads, tokens, tokens, head_dim, impl=i, causal=True)
        for i in ("eager", "materialized", "flash")
    )
    return {
        f"{prefix}three_ms": time_bound(three, device).seconds * 1e3,
        f"{prefix}fused_ms": time_bound(scores, device).seconds * 1e3,
        f"{prefix}ratio": three.bytes / scores.bytes,
        f"{prefix}hf_bps": (eager.bytes - flash.bytes) / elems,
        f"{prefix}mat_bps": (materialized.bytes - flash.bytes) / elems,
        f"{prefix}hf_kernels": eager.kernels,
    }


def adamw_bench_figures(
    device: Hardware, prefix: str, suite: str = "quick"
) -> dict[str, float | int]:
    """CUDA ``suite`` 计时的那一步 AdamW（全 FP32）：各实现在 ``device`` 上的时间下界。

    Returns
    -------
    dict
        ``{prefix}params_m`` （Mi 个参数）、``{prefix}tensors``、``{prefix}loop_kernels`` 与
        ``{prefix}{impl}_ms`` （ms）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = adamw_bench_figures(hardware("h100-sxm"), "")
    >>> f["params_m"], f["tensors"], f["loop_kernels"]      # 8 passes x 8 tensors
    (16.0, 8, 64)
    """
    params, tensors = suite_spec("cuda", suite).adamw  # the AdamW step a CUDA run times
    bench = {i: adamw(params, i, tensors=tensors) for i in IMPLS}
    return {
        f"{prefix}params_m": params / 2**20,
        f"{prefix}tensors": tensors,
        f"{prefix}loop_kernels": bench["loop"].kernels,
        **{
            f"{prefix}{i}_ms": time_bound(c, device, "fp32").seconds * 1e3 for i, c in bench.items()
        },
    }
