"""按书中的样子展示 run file：摘要、结果表、结论表、实测 roofline。

CUDA 附录和实测性能一章都通过这些函数、以同样的方式呈现每一次 run；测试也用它们
呈现作为 fixture 的 run。这里的一切都读自一次 run（即
:func:`roofline_book.measure.runfile.read_run` 返回的 mapping）；没有任何测量，也没有
任何手填的数字。
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..extras import require
from ..hardware import Hardware, catalog
from ..ops import Cost
from ..plotting import PALETTE, UNITS, roofline, text
from ..units import si
from . import predict, runfile
from .cases import OPERATORS
from .ceilings import of_run
from .claims import check_claims, square_gemms, streams_from_memory
from .suites import SMALL_GEMM

#: CUDA 或厂商工具报告的设备名称，映射到目录中的键。
_DATASHEET_NAMES = (
    (r"\bH200\b", "h200-sxm"),
    (r"\bH100\b.*(SXM|HBM3)", "h100-sxm"),
    (r"\bA100\b.*(SXM|80GB)", "a100-sxm"),
    (r"\bB200\b", "b200"),
    (r"\bMI300X\b", "mi300x"),
)


def datasheet_for(run: Mapping[str, Any]) -> Hardware | None:
    """按名称找到 run 所用设备在目录中的条目；不在目录中时为 None。

    Examples
    --------
    >>> datasheet_for({"device": {"name": "NVIDIA H200"}}).key
    'h200-sxm'
    >>> datasheet_for({"device": {"name": "AMD EPYC"}}) is None
    True
    """
    name = run["device"].get("name", "")
    for pattern, key in _DATASHEET_NAMES:
        if re.search(pattern, name):
            return catalog()[key]
    return None


def summary(run: Mapping[str, Any]) -> dict[str, str]:
    """一次 run 的设备、软件、日期和测得的上限，写成可读的文本。"""
    device, software, ceilings = run["device"], run["software"], run["ceilings"]
    out = {
        "device": device.get("name", "?"),
        "type": device.get("type", "?"),
        "host": run.get("host", "?"),
        "date (UTC)": run["date"],
        "suite": run.get("suite", "?"),
        "torch": software.get("torch") or "—",
        "CUDA": software.get("cuda") or "—",
        "driver": software.get("driver") or "—",
    }
    for precision, c in ceilings["peak_flops"].items():
        out[f"measured peak {precision}"] = si(c["value"], "FLOP/s")
    for kind, c in ceilings["bandwidth"].items():
        out[f"measured bandwidth ({kind})"] = si(c["value"], "B/s")
    for level, c in ceilings.get("cache_bandwidth", {}).items():
        out[f"measured bandwidth ({level} copy)"] = si(c["value"], "B/s")
    for precision, c in ceilings.get("vector_flops", {}).items():
        out[f"measured vector {precision}"] = si(c["value"], "FLOP/s")
    if device.get("threads"):
        out["threads"] = str(device["threads"])
    return out


def results_frame(run: Mapping[str, Any]):
    """run 的每个条目，连同模型代价、时间和实测速率（一个 pandas DataFrame）。

    列：id、status、模型的 FLOPs 与字节数、算术强度、时间的中位数与 IQR（秒）、实测的
    FLOP/s 与 byte/s，以及达到实测 roof 的比例（测得的上限给出的时间下界除以实测时间，
    :func:`~roofline_book.measure.predict.bound_seconds`）；跳过或失败的条目保留原因。
    """
    pd = require("pandas", "the run report")

    roofs = of_run(run)
    rows = []
    for entry in runfile.results(run, status=None):
        row = {"id": entry["id"], "status": entry["status"]}
        cost = runfile.model_cost(entry)
        row["FLOPs"] = cost.flops
        row["bytes"] = cost.bytes
        row["intensity [FLOP/B]"] = cost.intensity if cost.bytes else float("nan")
        if entry["status"] == "ok":
            flops, band = runfile.rates(entry)
            row["median [s]"] = entry["time"]["median_s"]
            row["IQR [s]"] = entry["time"]["iqr_s"]
            row["achieved [FLOP/s]"] = flops
            row["achieved [B/s]"] = band
            least = predict.bound_seconds(entry, roofs)
            row["fraction of measured roof"] = (
                least / entry["time"]["median_s"] if least else float("nan")
            )
        row["note"] = entry.get("reason") or entry.get("note") or ""
        if "measured_dram_bytes" in entry:
            row["DRAM bytes (ncu)"] = entry["measured_dram_bytes"]
        rows.append(row)
    return pd.DataFrame(rows)


def claims_frame(run: Mapping[str, Any]):
    """一次 run 的结论清单，写成 pandas DataFrame：结论、判定、数字、规则。"""
    pd = require("pandas", "the run report")

    return pd.DataFrame(
        [
            {
                "claim": c.claim,
                "verdict": c.verdict,
                "figures": "; ".join(str(f) for f in c.figures),
                "rule": c.rule,
            }
            for c in check_claims(run)
        ]
    )


def plot_run(
    ax,
    run: Mapping[str, Any],
    precision: str = "fp32",
    *,
    unit: str | None = None,
    datasheet: Hardware | None = None,
):
    """run 在 ``precision`` 精度下实测的 roofline，该精度的各算子画成点。

    实测 roof 取该精度的峰值和最高的 DRAM 带宽上限；每个测过的 cache 层级
    （``ceilings.cache_bandwidth``）各加一条点线 roof，并写出名称。给了 ``datasheet``
    时（例如 :func:`datasheet_for` 的结果），在旁边用虚线画出它的 dense roof。实心标记的
    数据来自内存；空心标记的工作集足够小，可以部分由 cache 供给，所以可能高于内存 roof。

    Returns
    -------
    list of matplotlib artists
    """
    roofs = of_run(run)
    peak = roofs.rate("matrix", precision)
    if peak is None:
        raise ValueError(f"precision: the run measured no {precision} peak")
    if unit is None:
        unit = "TFLOP/s" if peak >= 1e13 else "GFLOP/s"
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    scale = UNITS[unit]
    drawn = roofline(
        ax,
        peak,
        runfile.memory_roof(run) or roofs.memory.bandwidth or 0.0,
        label=text("measured roof", precision=precision),
        color=PALETTE["blue"],
        intensity_range=(1e-2, 1e4),
        unit=unit,
    )
    cache_colours = ("green", "purple", "sky")
    for (level, c), colour in zip(
        run["ceilings"].get("cache_bandwidth", {}).items(), cache_colours, strict=False
    ):
        drawn += roofline(  # a cache roof: what data that stays in that level may reach
            ax,
            peak,
            c["value"],
            label=text("cache roof", level=level),
            color=PALETTE[colour],
            linestyle=":",
            intensity_range=(1e-2, 1e4),
            unit=unit,
            ridge=False,
        )
    if datasheet is not None:
        drawn += roofline(
            ax,
            datasheet.peak_flops(precision),
            datasheet.memory_bandwidth,
            label=text("datasheet roof", key=datasheet.key, precision=precision),
            color=PALETTE["orange"],
            linestyle="--",
            unit=unit,
            ridge=False,
        )
    groups: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for entry in runfile.results(run):
        cost = runfile.model_cost(entry)
        if not cost.flops or entry["precision"] != precision:
            continue
        hollow = not streams_from_memory(run, cost)
        groups.setdefault((entry["name"], hollow), []).append(
            (cost.intensity, runfile.rates(entry)[0] / scale)
        )
    seen = set()
    for (name, hollow), points in groups.items():  # one collection each: a small SVG
        style = OPERATORS[name]
        color = PALETTE[style.colour]
        drawn.append(
            ax.scatter(
                [x for x, _ in points],
                [y for _, y in points],
                marker=style.marker,
                s=28,
                zorder=5,
                label=None if name in seen else name,
                edgecolors=color,
                linewidths=1.2,
                facecolors="none" if hollow else color,
            )
        )
        seen.add(name)
    ax.minorticks_off()  # a log axis's minor ticks are a third of the figure's SVG
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    return drawn


def summary_frame(run: Mapping[str, Any]):
    """把 :func:`summary` 写成只有一列的 pandas DataFrame，便于展示。"""
    pd = require("pandas", "the run report")

    return pd.Series(summary(run), name="value").to_frame()


def against_datasheet(run: Mapping[str, Any], datasheet: Hardware):
    """测得的上限与 datasheet 的 dense 数字并列（一个 pandas DataFrame）。

    datasheet 列出的每种测过的 GEMM 精度一行，内存带宽一行；
    ``measured / datasheet`` 是达到的比例。
    """
    pd = require("pandas", "the run report")

    if not isinstance(datasheet, Hardware):
        raise TypeError(f"datasheet must be a Hardware, got {type(datasheet).__name__}")
    roofs = of_run(run)
    rows = []
    for precision in run["ceilings"]["peak_flops"]:
        try:
            sheet = datasheet.peak_flops(precision)
        except ValueError:
            continue
        rows.append(
            {
                "ceiling": f"peak {precision} (dense)",
                "measured": roofs.rate("matrix", precision),
                "datasheet": sheet,
                "unit": "FLOP/s",
            }
        )
    rows.append(
        {
            "ceiling": "memory bandwidth",
            "measured": runfile.memory_roof(run),
            "datasheet": datasheet.memory_bandwidth,
            "unit": "B/s",
        }
    )
    frame = pd.DataFrame(rows)
    frame["measured / datasheet"] = frame["measured"] / frame["datasheet"]
    return frame


def highlights(run: Mapping[str, Any]) -> dict[str, Any]:
    """实测性能一章从一次 CPU run 中引用的数字，都是普通的数。

    键：``cpu_name``、``cpu_threads``；测得的峰值 ``cpu_peak32_g`` 与
    ``cpu_peak16_g`` （GFLOP/s），带宽 ``cpu_bw_g`` 与 copy ``cpu_copy_g`` （GB/s），
    ridge point ``cpu_ridge32`` 与 ``cpu_ridge16`` （FLOP/byte）；最大的 FP32 add：
    ``add_numel_m`` （Mi 个元素）、``add_bw_g`` （GB/s）、``add_over_copy`` 和
    ``add_flops_frac_pct`` （占 FP32 峰值的 %）；小 GEMM
    （:data:`~roofline_book.measure.suites.SMALL_GEMM`）与最大的 FP32 方阵 GEMM 占 FP32
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
    copy = run["ceilings"]["bandwidth"].get("copy")
    adds = [e for e in runfile.results(run, "add") if e["precision"] == "fp32"]
    squares = square_gemms(run, "fp32")
    m, k, n = SMALL_GEMM
    small = [
        e
        for e in runfile.results(run, "gemm")
        if e["precision"] == "fp32" and tuple(e["shape"].values()) == (m, k, n)
    ]
    if copy is None or not adds or not squares or not small:
        raise ValueError(
            f"run: needs the copy bandwidth, an fp32 add, fp32 square GEMMs and the "
            f"{m}x{k}x{n} fp32 GEMM"
        )
    peak32, peak16 = roofs.rate("matrix", "fp32"), roofs.rate("matrix", "bf16")
    bandwidth = runfile.memory_roof(run)
    if peak32 is None or peak16 is None or bandwidth is None:
        raise ValueError("run: needs the fp32 and bf16 peaks and a measured bandwidth")
    big_add = max(adds, key=lambda e: e["shape"]["numel"])
    add_flops, add_bw = runfile.rates(big_add)
    largest = max(squares, key=lambda e: e["shape"]["n"])
    checks = check_claims(run)
    verdicts = [c.verdict for c in checks]
    return run_figures(run) | {
        "cpu_name": run["device"]["name"],
        "cpu_threads": int(run["device"].get("threads") or 0),
        "cpu_peak32_g": peak32 / 1e9,
        "cpu_peak16_g": peak16 / 1e9,
        "cpu_bw_g": bandwidth / 1e9,
        "cpu_copy_g": copy["value"] / 1e9,
        "cpu_ridge32": peak32 / bandwidth,
        "cpu_ridge16": peak16 / bandwidth,
        "add_numel_m": big_add["shape"]["numel"] / 2**20,
        "add_bw_g": add_bw / 1e9,
        "add_over_copy": add_bw / copy["value"],
        "add_flops_frac_pct": 100 * add_flops / peak32,
        "small_gemm_pct": 100 * runfile.rates(small[0])[0] / peak32,
        "large_gemm_n": int(largest["shape"]["n"]),
        "large_gemm_pct": 100 * runfile.rates(largest)[0] / peak32,
        "n_claims": len(verdicts),
        "n_pass": verdicts.count("pass"),
        "n_fail": verdicts.count("fail"),
        "n_inconclusive": verdicts.count("inconclusive"),
        "n_unmeasured": verdicts.count("not measured"),
    }


def run_figures(run: Mapping[str, Any]) -> dict[str, Any]:
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
    out: dict[str, Any] = {"threads": int(run["device"].get("threads") or 0)}
    ceilings = run["ceilings"]
    if "spread" in ceilings["peak_flops"].get("fp32", {}):
        by_id = {e["id"]: e for e in runfile.results(run)}
        probe = by_id[ceilings["peak_flops"]["fp32"]["entry"]]
        copy = by_id[ceilings["bandwidth"]["copy"]["entry"]]
        out |= {
            "rounds": len(copy.get("rounds_s", [0])),
            "peak_rounds": len(probe.get("rounds_s", [0])),
            "peak32_spread_pct": 100 * ceilings["peak_flops"]["fp32"]["spread"],
            "copy_spread_pct": 100 * ceilings["bandwidth"]["copy"]["spread"],
        }
        if "spread" in ceilings["peak_flops"].get("bf16", {}):  # only a measured spread
            out["peak16_spread_pct"] = 100 * ceilings["peak_flops"]["bf16"]["spread"]
    stability = run.get("stability")
    if stability is not None and "spread" in stability:
        out |= {
            "stable": bool(stability["stable"]),
            "sentinel_spread_pct": 100 * stability["spread"],
            "checkpoints": len(stability["checkpoints_s"]),
        }
    for level, c in ceilings.get("cache_bandwidth", {}).items():
        out[f"{level.lower()}_g"] = c["value"] / 1e9
    for precision, c in ceilings.get("vector_flops", {}).items():
        out[f"vector{precision[-2:]}_g"] = c["value"] / 1e9
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
    adamw = {e["impl"]: e for e in runfile.results(run, "adamw")}
    if {"loop", "fused"} <= adamw.keys():
        loop, fused = adamw["loop"], adamw["fused"]
        roof = predict.bound_seconds(fused, of_run(run))
        out |= {
            "adamw_time_ratio": loop["time"]["median_s"] / fused["time"]["median_s"],
            "adamw_bytes_ratio": runfile.model_cost(loop).bytes / runfile.model_cost(fused).bytes,
            "fused_of_roof_pct": 100 * roof / fused["time"]["median_s"] if roof else None,
        }
    norms = {e["precision"]: e for e in runfile.results(run, "rmsnorm")}
    if {"fp32", "bf16"} <= norms.keys() and "implementation" in norms["bf16"]:
        n16, n32 = norms["bf16"], norms["fp32"]
        out |= {
            "norm_time_ratio": n16["time"]["median_s"] / n32["time"]["median_s"],
            "norm_kernels": n16["implementation"]["kernels"],
            "norm_bytes_ratio16": Cost(**n16["implementation"]).bytes
            / runfile.model_cost(n16).bytes,
            "norm_bytes_ratio32": Cost(**n32["implementation"]).bytes
            / runfile.model_cost(n32).bytes,
        }
    return out


def plot_runs(run: Mapping[str, Any], precisions: Sequence[str], *, datasheet=None):
    """每种精度一张实测 roofline，并排放在一个 matplotlib Figure 中，标题写明设备和精度；
    ``datasheet`` 的含义同 :func:`plot_run`。
    """
    plt = require("matplotlib.pyplot", "the run report")

    fig, axes = plt.subplots(
        1, len(precisions), figsize=(5 * len(precisions), 3.9), sharey=True, squeeze=False
    )
    for ax, precision in zip(axes[0], precisions, strict=True):
        plot_run(ax, run, precision, datasheet=datasheet)
        ax.set_title(f"{run['device']['name']}, {precision}")
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    return fig


def measured_precisions(run: Mapping[str, Any]) -> list[str]:
    """一次 run 要画哪些精度：测了 FP32 和 BF16 就画这两种，否则画第一个峰值的精度。"""
    measured = list(run["ceilings"]["peak_flops"])
    return [p for p in ("fp32", "bf16") if p in measured] or measured[:1]


PREDICTION_TARGET = 0.2
"""``predicted = measured`` 周围画出的带：在构建本书的 CPU 上，预测误差的中位数须在带内。"""


def plot_predictions(ax, run: Mapping[str, Any], *, band: float = PREDICTION_TARGET):
    """每个计过时的条目的预测时间对实测时间（log-log），每个算子一种颜色，画出对角线和它
    周围的 ``band``；上限探针和用来拟合固定开销的 case 画成空心（它们不计入误差）。

    Returns
    -------
    list of matplotlib artists
    """
    from .predict import predictions

    items = predictions(run)
    if not items:
        raise ValueError("run: nothing to predict (no bandwidth ceiling or no measured peak)")
    low = min(min(p.predicted_s, p.measured_s) for p in items) / 2
    high = max(max(p.predicted_s, p.measured_s) for p in items) * 2
    drawn = ax.plot([low, high], [low, high], color=PALETTE["black"], lw=1, label=text("equal"))
    drawn.append(
        ax.fill_between(
            [low, high],
            [low * (1 - band), high * (1 - band)],
            [low * (1 + band), high * (1 + band)],
            color=PALETTE["sky"],
            alpha=0.25,
            label=text("within", pct=100 * band),
        )
    )
    names = {p.id.split("/")[0] for p in items}
    for name in [n for n in OPERATORS if n in names]:
        style = OPERATORS[name]
        colour = PALETTE[style.colour]
        for hollow in (False, True):
            group = [p for p in items if p.id.split("/")[0] == name and bool(p.excluded) == hollow]
            if group:
                drawn.append(
                    ax.scatter(
                        [p.predicted_s for p in group],
                        [p.measured_s for p in group],
                        marker=style.marker,
                        s=26,
                        zorder=5,
                        edgecolors=colour,
                        facecolors="none" if hollow else colour,
                        label=None if hollow else name,
                    )
                )
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high))
    ax.minorticks_off()
    ax.set_xlabel(text("predicted time"))
    ax.set_ylabel(text("measured time"))
    ax.legend(loc="upper left", fontsize=7, ncol=2)
    return drawn


def predictions_figure(run: Mapping[str, Any], *, title: str = ""):
    """把 :func:`plot_predictions` 画在单独的一个 matplotlib Figure 上，带标题。"""
    plt = require("matplotlib.pyplot", "the run report")

    fig, ax = plt.subplots(figsize=(5.4, 4.2))
    plot_predictions(ax, run)
    if title:
        ax.set_title(title)
    return fig
