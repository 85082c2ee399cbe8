"""Run files as the book shows them: summary, results table, claims table, measured roofline.

The CUDA appendix and the achieved-performance chapter render every run the
same way through these functions; the tests render fixture runs with them.
Everything here reads a run (a mapping as :func:`roofline_book.measure.runfile.read_run`
returns it); nothing is measured or typed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..hardware import Hardware, catalog
from ..plotting import PALETTE, UNITS, roofline
from ..roofline import attainable
from ..units import si
from . import runfile
from .cases import OPERATORS
from .claims import check_claims, streams_from_memory

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
    return out


def results_frame(run: Mapping[str, Any]):
    """Every entry of a run with its model cost, time and achieved rates (a pandas DataFrame).

    Columns: id, status, model FLOPs and bytes, intensity, median time and IQR
    (second), achieved FLOP/s and byte/s, the measured roof at that intensity
    and the fraction of it reached; skipped or failed entries keep their reason.
    """
    import pandas as pd

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
    import pandas as pd

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

    The measured roof uses the best GEMM of that precision and the best
    bandwidth ceiling. If ``datasheet`` is given (for example
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
        label=f"measured roof ({precision})",
        color=PALETTE["blue"],
        intensity_range=(1e-2, 1e4),
        unit=unit,
    )
    if datasheet is not None:
        drawn += roofline(
            ax,
            datasheet.peak_flops(precision),
            datasheet.memory_bandwidth,
            label=f"datasheet roof ({datasheet.key}, dense {precision})",
            color=PALETTE["orange"],
            linestyle="--",
            unit=unit,
            ridge=False,
        )
    seen = set()
    for entry in runfile.results(run):
        cost = runfile.model_cost(entry)
        if not cost.flops or entry["precision"] != precision:
            continue
        flops, _ = runfile.rates(entry)
        style = OPERATORS[entry["name"]]
        marker, color = style.marker, PALETTE[style.colour]
        hollow = not streams_from_memory(run, cost)
        label = None if entry["name"] in seen else entry["name"]
        seen.add(entry["name"])
        drawn.append(
            ax.scatter(
                [cost.intensity],
                [flops / scale],
                marker=marker,
                s=28,
                zorder=5,
                label=label,
                edgecolors=color,
                linewidths=1.2,
                facecolors="none" if hollow else color,
            )
        )
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    return drawn


def summary_frame(run: Mapping[str, Any]):
    """:func:`summary` as a one-column pandas DataFrame, for display."""
    import pandas as pd

    return pd.Series(summary(run), name="value").to_frame()


def against_datasheet(run: Mapping[str, Any], datasheet: Hardware):
    """Measured ceilings beside the datasheet's dense figures (a pandas DataFrame).

    One row per measured GEMM precision the datasheet lists, and one for the
    memory bandwidth; ``measured / datasheet`` is the fraction reached.
    """
    import pandas as pd

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
