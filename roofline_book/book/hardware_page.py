"""附录“硬件参数表”正文里的数：各单元的峰值、时钟、容量与带宽，都从设备目录算出。"""

# The devices named here carry every figure used (the doctest and the appendix build read them
# all), so the catalog's optional fields are not None here.
# mypy: disable-error-code="operator"

from __future__ import annotations

from ..devices.catalog import catalog, hardware


def hardware_figures() -> dict[str, float | None]:
    """附录正文引用的每个数，按粘贴名给出（单位写在名字里：``_mhz``、``_t`` 为 T/s 等）。

    Examples
    --------
    >>> f = hardware_figures()
    >>> round(f["h100_bf16"], 1), round(f["h100_ridge"], 1), f["h100_sms"]
    (989.4, 295.3, 132)
    """
    h100, h200, a100 = hardware("h100-sxm"), hardware("h200-sxm"), hardware("a100-sxm")
    b200, mi300x = hardware("b200"), hardware("mi300x")
    l40s, rtx4090 = hardware("l40s"), hardware("rtx-4090")
    rated_mhz = h100.rated_clock("matrix", "bf16") / 1e6
    return dict(
        n_devices=len(catalog()),
        # the clock each figure is rated at
        h100_clock_mhz=h100.clock_hz / 1e6,
        a100_clock_mhz=a100.clock_hz / 1e6,
        mi300x_clock_mhz=mi300x.clock_hz / 1e6,
        h100_rated_mhz=rated_mhz,
        h100_bf16=h100.peak_flops("bf16") / 1e12,
        h100_fp8=h100.peak_flops("fp8") / 1e12,
        h100_fp64_matrix=h100.peak_flops("fp64") / 1e12,
        h100_fp64_per_sm_clock=h100.per_sm_clock("matrix", "fp64"),
        h100_ridge=h100.ridge_point("bf16"),
        # L40S: the rate its own datasheet implies; RTX 4090: FP32 accumulation
        l40s_bf16=l40s.peak_flops("bf16") / 1e12,
        l40s_sparse=l40s.sparse_peak_flops("bf16") / 1e12,
        l40s_sms=l40s.sms,
        l40s_per_sm_clock=l40s.per_sm_clock("matrix", "bf16"),
        l40s_clock_mhz=l40s.clock_hz / 1e6,
        rtx4090_fp16=rtx4090.peak_flops("fp16") / 1e12,
        # special function units, evaluations per second
        h100_sfu_per_clock=h100.sfu_per_sm_per_clock,
        h100_sms=h100.sms,
        h100_special_t=h100.special_peak_flops() / 1e12,
        h100_special_rated_t=h100.per_sm_clock("special") * h100.sms * rated_mhz * 1e6 / 1e12,
        h100_matrix_per_sm_clock=h100.per_sm_clock("matrix", "bf16"),
        d64=64,
        d64_matrix_flops=4 * 64,
        d64_per_clock=h100.per_sm_clock("matrix", "bf16") / (4 * 64),
        d64_exp_ratio=100
        * (1 / h100.per_sm_clock("special"))
        / (4 * 64 / h100.per_sm_clock("matrix", "bf16")),
        # the vector units: FMA = 2 FLOP, packed 16-bit pairs
        h100_fp32=h100.vector_peak("fp32") / 1e12,
        h100_fp32_ops=h100.vector_op_rate("fp32") / 1e12,
        h100_lanes=h100.fp32_lanes_per_sm,
        h100_packed_instr=h100.vector_op_rate("bf16") / 2 / 1e12,
        h100_packed=h100.vector_peak("bf16") / 1e12,
        h100_packed_ops=h100.vector_op_rate("bf16") / 1e12,
        a100_fp32=a100.vector_peak("fp32") / 1e12,
        a100_fp16=a100.vector_peak("fp16") / 1e12,
        a100_bf16=a100.vector_peak("bf16") / 1e12,
        # capacity as the device exposes it
        h100_mib=h100.memory_capacity / 2**20,
        h100_cap_gb=h100.memory_capacity / 1e9,
        h100_cap_over_decimal=100 * (h100.memory_capacity / 80e9 - 1),
        h200_mib=h200.memory_capacity / 2**20,
        h200_cap_gb=h200.memory_capacity / 1e9,
        a100_mib=a100.memory_capacity / 2**20,
        mi300x_gib=mi300x.memory_capacity / 2**30,
        # B200: two vendor bandwidths
        b200_bw=b200.memory_bandwidth / 1e12,
        dgx_gpus=8,
        dgx_b200_bw=8 * b200.memory_bandwidth / 1e12,
        b200_bw_other=b200.compared_figures["memory_bandwidth"][0] / 1e12,
        # L2: the A100 whitepaper's rate, H100 measured by others
        h100_l2=h100.bandwidth("l2") / 1e12,
        h100_l2_other=h100.compared_figures["l2_bandwidth"][0] / 1e12,
        a100_l2=a100.bandwidth("l2") / 1e12,
        a100_l2_per_clock=a100.bandwidth("l2") / a100.clock_hz,
        a100_l2_measured=a100.compared_figures["l2_bandwidth"][0] / 1e12,
        h100_l2_over_hbm=h100.bandwidth("l2") / h100.memory_bandwidth,
    )
