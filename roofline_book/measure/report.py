"""Run files as the book shows them: summary, results table, claims table, measured roofline.

The CUDA appendix and the achieved-performance chapter render every run the
same way through these functions; the tests render fixture runs with them.
Everything here reads a run (a mapping as :func:`roofline_book.measure.runfile.read_run`
returns it); nothing is measured or typed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..extras import require
from ..hardware import Hardware, catalog
from ..ops import Cost
from ..plotting import PALETTE, UNITS, roofline, text
from ..roofline import attainable
from ..units import si
from . import runfile
from .cases import OPERATORS
from .claims import check_claims, square_gemms, streams_from_memory
from .suites import SMALL_GEMM

#: Device names as CUDA or the vendor tools report them, mapped to catalog keys.
_DATASHEET_NAMES = (
    (r"\bH200\b", "h200-sxm"),
    (r"\bH100\b.*(SXM|HBM3)", "h100-sxm"),
    (r"\bA100\b.*(SXM|80GB)", "a100-sxm"),
    (r"\bB200\b", "b200"),
    (r"\bMI300X\b", "mi300x"),
)


def datasheet_for(run: Mapping[str, Any]) -> Hardware | None:
    """The catalog device a run was measured on, matched by name; None if not in the catalog.

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
    """Device, software, date and measured ceilings of a run, as readable text."""
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
    """Every entry of a run with its model cost, time and achieved rates (a pandas DataFrame).

    Columns: id, status, model FLOPs and bytes, intensity, median time and IQR
    (second), achieved FLOP/s and byte/s, the measured roof at that intensity
    and the fraction of it reached; skipped or failed entries keep their reason.
    """
    pd = require("pandas", "the run report")

    device = runfile.as_hardware(run)
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
            if cost.flops:
                roof = _roof(device, entry["precision"], cost.intensity)
                row["fraction of measured roof"] = flops / roof if roof else float("nan")
            else:
                row["fraction of measured roof"] = band / device.memory_bandwidth
        row["note"] = entry.get("reason") or entry.get("note") or ""
        if "measured_dram_bytes" in entry:
            row["DRAM bytes (ncu)"] = entry["measured_dram_bytes"]
        rows.append(row)
    return pd.DataFrame(rows)


def _roof(device: Hardware, precision: str, intensity: float) -> float | None:
    try:
        peak = device.peak_flops(precision)
    except ValueError:
        return None
    return attainable(intensity, peak, device.memory_bandwidth)


def claims_frame(run: Mapping[str, Any]):
    """The claims checklist of a run as a pandas DataFrame: claim, verdict, figures, rule."""
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
    """The run's measured roofline in ``precision``, with that precision's operators as dots.

    The measured roof uses the peak of that precision and the best DRAM
    bandwidth ceiling; each measured cache level (``ceilings.cache_bandwidth``)
    adds its own roof, dotted and named. If ``datasheet`` is given (for example
    :func:`datasheet_for`), its dense roof is drawn dashed beside it. Filled
    markers stream from memory; hollow markers have a working set small
    enough to be served partly from cache, so they may sit above the memory
    roof.

    Returns
    -------
    list of matplotlib artists
    """
    device = runfile.as_hardware(run)
    peak = device.peak_flops(precision)
    if unit is None:
        unit = "TFLOP/s" if peak >= 1e13 else "GFLOP/s"
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    scale = UNITS[unit]
    drawn = roofline(
        ax,
        peak,
        device.memory_bandwidth,
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
    """:func:`summary` as a one-column pandas DataFrame, for display."""
    pd = require("pandas", "the run report")

    return pd.Series(summary(run), name="value").to_frame()


def against_datasheet(run: Mapping[str, Any], datasheet: Hardware):
    """Measured ceilings beside the datasheet's dense figures (a pandas DataFrame).

    One row per measured GEMM precision the datasheet lists, and one for the
    memory bandwidth; ``measured / datasheet`` is the fraction reached.
    """
    pd = require("pandas", "the run report")

    if not isinstance(datasheet, Hardware):
        raise TypeError(f"datasheet must be a Hardware, got {type(datasheet).__name__}")
    device = runfile.as_hardware(run)
    rows = []
    for precision in device.precisions:
        try:
            sheet = datasheet.peak_flops(precision)
        except ValueError:
            continue
        rows.append(
            {
                "ceiling": f"peak {precision} (dense)",
                "measured": device.peak_flops(precision),
                "datasheet": sheet,
                "unit": "FLOP/s",
            }
        )
    rows.append(
        {
            "ceiling": "memory bandwidth",
            "measured": device.memory_bandwidth,
            "datasheet": datasheet.memory_bandwidth,
            "unit": "B/s",
        }
    )
    frame = pd.DataFrame(rows)
    frame["measured / datasheet"] = frame["measured"] / frame["datasheet"]
    return frame


def highlights(run: Mapping[str, Any]) -> dict[str, Any]:
    """The figures the achieved-performance chapter quotes from a CPU run, as plain numbers.

    Keys: ``cpu_name``, ``cpu_threads``; measured peaks ``cpu_peak32_g`` and
    ``cpu_peak16_g`` (GFLOP/s), bandwidth ``cpu_bw_g`` and copy ``cpu_copy_g``
    (GB/s), ridge points ``cpu_ridge32`` and ``cpu_ridge16`` (FLOP/byte); the
    largest FP32 add: ``add_numel_m`` (Mi elements), ``add_bw_g`` (GB/s),
    ``add_over_copy`` and ``add_flops_frac_pct`` (% of the FP32 peak); the small
    GEMM (:data:`~roofline_book.measure.suites.SMALL_GEMM`) and the largest FP32
    square GEMM as % of the FP32 peak (``small_gemm_pct``, ``large_gemm_n``,
    ``large_gemm_pct``); the claims' counts (``n_claims``, ``n_pass``, ``n_fail``,
    ``n_inconclusive``, ``n_unmeasured``). Where the run has them (:func:`run_figures`),
    also how it was measured, its stability, the write-allocate rates, the prediction,
    and the AdamW and RMSNorm figures the chapter explains.

    Raises
    ------
    ValueError
        If the run lacks an FP32 GEMM sweep, the small GEMM, an FP32 add or the
        copy bandwidth.
    """
    cpu = runfile.as_hardware(run)
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
    peak32 = cpu.peak_flops("fp32")
    big_add = max(adds, key=lambda e: e["shape"]["numel"])
    add_flops, add_bw = runfile.rates(big_add)
    largest = max(squares, key=lambda e: e["shape"]["n"])
    checks = check_claims(run)
    verdicts = [c.verdict for c in checks]
    return run_figures(run) | {
        "cpu_name": run["device"]["name"],
        "cpu_threads": int(run["device"].get("threads") or 0),
        "cpu_peak32_g": peak32 / 1e9,
        "cpu_peak16_g": cpu.peak_flops("bf16") / 1e9,
        "cpu_bw_g": cpu.memory_bandwidth / 1e9,
        "cpu_copy_g": copy["value"] / 1e9,
        "cpu_ridge32": cpu.ridge_point("fp32"),
        "cpu_ridge16": cpu.ridge_point("bf16"),
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
    """How a run was measured and what its data show, as plain numbers (those it has).

    Keys: ``threads``; ``rounds`` (of the bandwidth probes), ``peak_rounds`` (of the
    peak GEMMs, timed at every checkpoint too) and ``peak32_spread_pct``,
    ``peak16_spread_pct``, ``copy_spread_pct`` (the spread of the ceiling probes'
    rounds, %); ``stable`` and ``sentinel_spread_pct``,
    ``checkpoints``; ``l2_g``, ``l3_g`` (cache roofs, GB/s), ``vector32_g``,
    ``vector16_g`` (the in-L2 add, GFLOP/s); ``copy_g``, ``triad_g``, ``inplace_g`` and
    ``copy_wa_g``, ``triad_wa_g`` (GB/s, model bytes and with write-allocate);
    ``prediction_pct`` (median error, %), ``predicted``, ``left_out``; ``adamw_time_ratio``
    and ``adamw_bytes_ratio`` (loop over fused), ``fused_of_roof_pct``;
    ``norm_time_ratio`` (BF16 over FP32 RMSNorm), ``norm_kernels``, ``norm_bytes_ratio16``
    and ``norm_bytes_ratio32`` (what runs over the fused model).
    """
    from . import predict

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
        roof = predict.bound_seconds(fused, predict.roofs(run))
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
    """One measured roofline per precision, side by side (a matplotlib Figure), each titled
    with the device and precision; ``datasheet`` as in :func:`plot_run`."""
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
    """The precisions to draw for a run: FP32 and BF16 where measured, else the first peak."""
    measured = list(run["ceilings"]["peak_flops"])
    return [p for p in ("fp32", "bf16") if p in measured] or measured[:1]


PREDICTION_TARGET = 0.2
"""The band drawn around ``predicted = measured``: the prediction's median error is
held to it on the CPU the book is built on."""


def plot_predictions(ax, run: Mapping[str, Any], *, band: float = PREDICTION_TARGET):
    """Predicted against measured time for every timed entry (log-log), one colour per
    operator, the diagonal and a ``band`` around it; the ceilings and the cases the fixed
    cost is fitted on are hollow (they are not part of the error).

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
    """:func:`plot_predictions` on a figure of its own (a matplotlib Figure), titled."""
    plt = require("matplotlib.pyplot", "the run report")

    fig, ax = plt.subplots(figsize=(5.4, 4.2))
    plot_predictions(ax, run)
    if title:
        ax.set_title(title)
    return fig
