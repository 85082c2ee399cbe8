"""实测性能一章从一次 CPU run 中引用的数字，都是普通的数，供 ``glue`` 使用。"""

from __future__ import annotations

from typing import Any

from ..measure.bench.suites import SMALL_GEMM
from ..measure.judge import predict
from ..measure.judge.ceilings import of_run
from ..measure.judge.claims import check_claims, square_gemms
from ..measure.runs.records import Entry, Run


def highlights(run: Run) -> dict[str, Any]:
    """实测性能一章从一次 CPU run 中引用的数字。

    键：``cpu_name``、``cpu_threads``；测得的峰值 ``cpu_peak32_g`` 与
    ``cpu_peak16_g`` （GFLOP/s），带宽 ``cpu_bw_g`` 与 copy ``cpu_copy_g`` （GB/s），
    ridge point ``cpu_ridge32`` 与 ``cpu_ridge16`` （FLOP/byte）；最大的 FP32 add：
    ``add_numel_m`` （Mi 个元素）、``add_bw_g`` （GB/s）、``add_over_copy``，run 测了
    L2 之内的 FP32 add 时还有 ``add_of_l2_add_pct`` （它的 FLOP/s 占那个速率的 %：
    同一种运算数据留在 L2 时的速率，而不是 GEMM 的峰值）；小 GEMM
    （:data:`~roofline_book.measure.bench.suites.SMALL_GEMM`）与最大的 FP32 方阵 GEMM 占 FP32
    峰值的 %（``small_gemm_pct``、``large_gemm_n``、``large_gemm_pct``）；各类结论的个数
    （``n_claims``、``n_pass``、``n_fail``、``n_inconclusive``、``n_unmeasured``）。
    run 中有相应数据时（:func:`run_figures`），还有它的测量方式、稳定性、write-allocate
    速率、预测，以及这一章解释的 AdamW 与 RMSNorm 的数字。

    Raises
    ------
    ValueError
        run 中缺少 FP32 GEMM 扫描、小 GEMM、FP32 add 或 copy 带宽。
    """
    roofs = of_run(run)
    copy = run.ceilings.bandwidth.get("copy")
    adds = [e for e in run.results("add") if e.precision == "fp32"]
    squares = square_gemms(run, "fp32")
    m, k, n = SMALL_GEMM
    small = [
        e
        for e in run.results("gemm")
        if e.precision == "fp32" and tuple(e.shape.values()) == (m, k, n)
    ]
    if copy is None or not adds or not squares or not small:
        raise ValueError(
            f"run: needs the copy bandwidth, an fp32 add, fp32 square GEMMs and the "
            f"{m}x{k}x{n} fp32 GEMM"
        )
    peak32, peak16 = roofs.rate("matrix", "fp32"), roofs.rate("matrix", "bf16")
    bandwidth = run.memory_roof
    if peak32 is None or peak16 is None or bandwidth is None:
        raise ValueError("run: needs the fp32 and bf16 peaks and a measured bandwidth")
    big_add = max(adds, key=lambda e: e.shape["numel"])
    add_flops, add_bw = big_add.rates
    largest = max(squares, key=lambda e: e.shape["n"])
    verdicts = [c.verdict for c in check_claims(run)]
    out = run_figures(run) | {
        "cpu_name": run.device.name,
        "cpu_threads": int(run.device.threads or 0),
        "cpu_peak32_g": peak32 / 1e9,
        "cpu_peak16_g": peak16 / 1e9,
        "cpu_bw_g": bandwidth / 1e9,
        "cpu_copy_g": copy.value / 1e9,
        "cpu_ridge32": peak32 / bandwidth,
        "cpu_ridge16": peak16 / bandwidth,
        "add_numel_m": big_add.shape["numel"] / 2**20,
        "add_bw_g": add_bw / 1e9,
        "add_over_copy": add_bw / copy.value,
        "small_gemm_pct": 100 * small[0].rates[0] / peak32,
        "large_gemm_n": int(largest.shape["n"]),
        "large_gemm_pct": 100 * largest.rates[0] / peak32,
        "n_claims": len(verdicts),
        "n_pass": verdicts.count("pass"),
        "n_fail": verdicts.count("fail"),
        "n_inconclusive": verdicts.count("inconclusive"),
        "n_unmeasured": verdicts.count("not measured"),
    }
    l2_add = run.ceilings.vector_flops.get("fp32")
    if l2_add is not None:  # the same add with its data in L2: the rate to hold it against
        out["add_of_l2_add_pct"] = 100 * add_flops / l2_add.value
    return out


def _rounds(entry: Entry) -> int:
    return len(entry.rounds_s or (0,))


def run_figures(run: Run) -> dict[str, Any]:
    """一次 run 是怎样测的、数据说明了什么，都写成普通的数（只给 run 中有的）。

    键：``threads``；``rounds`` （带宽探针的轮数）、``peak_rounds`` （峰值 GEMM 的轮数，
    每个检查点也会测）以及 ``peak32_spread_pct``、``peak16_spread_pct``、
    ``copy_spread_pct`` （上限探针各轮之间的离散程度，%）；``stable`` 与
    ``sentinel_spread_pct``、``checkpoints``；``l2_g``、``l3_g`` （cache roof，GB/s）、
    ``vector32_g``、``vector16_g`` （L2 之内的 add，GFLOP/s）；``copy_g``、``triad_g``、
    ``inplace_g`` 与 ``copy_wa_g``、``triad_wa_g`` （GB/s，按模型字节数和计入
    write-allocate 的字节数）；``prediction_pct`` （误差的中位数，%）、``predicted``、
    ``left_out``；``adamw_time_ratio`` 与 ``adamw_bytes_ratio`` （loop 比 fused）、
    ``fused_of_roof_pct``；``norm_time_ratio`` （BF16 比 FP32 的 RMSNorm）、
    ``norm_kernels``、``norm_bytes_ratio16`` 与 ``norm_bytes_ratio32`` （实际运行的
    相对 fused 模型）。
    """
    out: dict[str, Any] = {"threads": int(run.device.threads or 0)}
    ceilings = run.ceilings
    peak32, peak16 = ceilings.peak_flops.get("fp32"), ceilings.peak_flops.get("bf16")
    copy_ceiling = ceilings.bandwidth.get("copy")
    if (
        peak32 is not None
        and peak32.spread is not None
        and copy_ceiling is not None
        and copy_ceiling.spread is not None
    ):
        copy = run.entry(copy_ceiling.entry)
        out |= {
            "rounds": _rounds(copy),
            "peak_rounds": _rounds(run.entry(peak32.entry)),
            "peak32_spread_pct": 100 * peak32.spread,
            "copy_spread_pct": 100 * copy_ceiling.spread,
        }
        if peak16 is not None and peak16.spread is not None:  # only a measured spread
            out["peak16_spread_pct"] = 100 * peak16.spread
    stability = run.stability
    if stability is not None and stability.spread is not None:
        out |= {
            "stable": bool(stability.stable),
            "sentinel_spread_pct": 100 * stability.spread,
            "checkpoints": len(stability.checkpoints_s or ()),
        }
    for level, cache in ceilings.cache_bandwidth.items():
        out[f"{level.lower()}_g"] = cache.value / 1e9
    for precision, vector in ceilings.vector_flops.items():
        out[f"vector{precision[-2:]}_g"] = vector.value / 1e9
    rates = predict.write_allocate_rates(run)
    if {"copy", "triad", "triad_inplace"} <= rates.keys():
        out |= {
            "copy_g": rates["copy"][0] / 1e9,
            "triad_g": rates["triad"][0] / 1e9,
            "inplace_g": rates["triad_inplace"][0] / 1e9,
            "copy_wa_g": rates["copy"][1] / 1e9,
            "triad_wa_g": rates["triad"][1] / 1e9,
        }
    items = predict.predictions(run)
    error = predict.median_error(items)
    if error is not None:
        out |= {
            "prediction_pct": 100 * error,
            "predicted": sum(not p.excluded for p in items),
            "left_out": sum(bool(p.excluded) for p in items),
        }
    adamw = {e.impl: e for e in run.results("adamw")}
    if {"loop", "fused"} <= adamw.keys():
        loop, fused = adamw["loop"], adamw["fused"]
        roof = predict.bound_seconds(fused, of_run(run))
        out |= {
            "adamw_time_ratio": loop.median_s / fused.median_s,
            "adamw_bytes_ratio": loop.cost.bytes / fused.cost.bytes,
            "fused_of_roof_pct": 100 * roof / fused.median_s if roof else None,
        }
    norms = {e.precision: e for e in run.results("rmsnorm")}
    if {"fp32", "bf16"} <= norms.keys() and norms["bf16"].implementation is not None:
        n16, n32 = norms["bf16"], norms["fp32"]
        ran16, ran32 = n16.implementation, n32.implementation or n32.cost
        assert ran16 is not None
        out |= {
            "norm_time_ratio": n16.median_s / n32.median_s,
            "norm_kernels": ran16.kernels,
            "norm_bytes_ratio16": ran16.bytes / n16.cost.bytes,
            "norm_bytes_ratio32": ran32.bytes / n32.cost.bytes,
        }
    return out


def source_link(measurement: Any) -> Any:
    """一个已发表测量的出处，作为页面里的一个短链接（``{glue:md}`` 读取）。

    链接文字是出处的第一段（仓库或文档的名字），目标是它的 ``url``：完整的出处
    （文件、提交、表格）在链接那头，句子里只留一个名字。

    Examples
    --------
    >>> from roofline_book.measure.published import measurement
    >>> source_link(measurement("gptfast-llama2-7b", weights="bf16")).data[:23]
    '[pytorch-labs/gpt-fast]'
    """
    from IPython.display import Markdown

    short = measurement.source.split(",")[0].strip()
    url = measurement.row.url
    return Markdown(f"[{short}]({url})" if url else short)
