"""The hardware appendix's tables: every device's peaks, sparse peaks, caches and sources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..hardware import Hardware, catalog
from ..units import si

#: Precisions of the peaks table, in column order.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")

#: What a table shows for a figure the device table does not hold.
MISSING = "—"


def _devices(devices: Mapping[str, Hardware] | None) -> Mapping[str, Hardware]:
    return catalog() if devices is None else devices


def peaks_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Dense peak per precision (FLOP/s; OP/s for int8), bandwidth, BF16 ridge and capacity.

    Parameters
    ----------
    devices : mapping of str to Hardware, optional
        ``{key: device}``; the whole :func:`roofline_book.catalog` by default.

    Returns
    -------
    pandas.DataFrame
        Text cells, indexed by key; a figure the device lacks is ``"—"``.

    Examples
    --------
    H100 SXM: 989.5 TFLOP/s / 3.35 TB/s = 295 FLOP/byte; the example device has
    one peak for any precision, so its per-precision cells are empty:

    >>> from roofline_book import EXAMPLE, hardware
    >>> df = peaks_frame({"h100-sxm": hardware("h100-sxm"), "example": EXAMPLE})
    >>> columns = ["bf16 dense", "int8 dense", "bandwidth", "ridge bf16 [FLOP/B]"]
    >>> df.loc["h100-sxm", columns].tolist()
    ['989.5 TFLOP/s', '1.979 POP/s', '3.35 TB/s', '295']
    >>> df.loc["example", "bf16 dense"], df.loc["example", "capacity"]
    ('—', '—')
    """
    import pandas as pd

    rows = []
    for key, dev in _devices(devices).items():
        row = {"key": key, "device": dev.name}
        for p in PRECISIONS:
            unit = "OP/s" if p == "int8" else "FLOP/s"
            row[f"{p} dense"] = si(dev.dense_peaks[p], unit) if p in dev.dense_peaks else MISSING
        row["bandwidth"] = si(dev.memory_bandwidth, "B/s")
        row["ridge bf16 [FLOP/B]"] = f"{dev.ridge_point('bf16'):.0f}"
        row["capacity"] = si(dev.memory_capacity, "B") if dev.memory_capacity else MISSING
        rows.append(row)
    return pd.DataFrame(rows).set_index("key")


def sparse_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """2:4 sparse peaks beside the dense ones (FLOP/s) and their ratio, per device and precision.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(key, precision)``; devices without sparse peaks have no rows.

    Examples
    --------
    >>> df = sparse_frame()
    >>> df.loc[("h100-sxm", "bf16"), "ratio"]  # 2:4 sparsity doubles the peak
    '2.00'
    """
    import pandas as pd

    rows = [
        {
            "key": key,
            "precision": p,
            "sparse (2:4)": si(v, "FLOP/s"),
            "dense": si(dev.peak_flops(p), "FLOP/s"),
            "ratio": f"{v / dev.peak_flops(p):.2f}",
        }
        for key, dev in _devices(devices).items()
        for p, v in dev.sparse_peaks.items()
    ]
    return pd.DataFrame(rows).set_index(["key", "precision"])


def cache_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """On-chip memory per device: L2 (bytes), shared memory per SM (bytes), SM count.

    Returns
    -------
    pandas.DataFrame
        Text cells indexed by key (the SM count stays an int); unknown figures are ``"—"``.

    Examples
    --------
    >>> row = cache_frame().loc["h100-sxm"]
    >>> row["L2 / last-level cache"], row["SMs / CUs"]
    ('52.43 MB', 132)
    """
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "key": key,
                "L2 / last-level cache": si(dev.l2_cache, "B") if dev.l2_cache else MISSING,
                "shared memory per SM": (
                    si(dev.shared_memory_per_sm, "B") if dev.shared_memory_per_sm else MISSING
                ),
                "SMs / CUs": dev.sms or MISSING,
            }
            for key, dev in _devices(devices).items()
        ]
    ).set_index("key")


def sources_frame(devices: Mapping[str, Hardware] | None = None) -> Any:
    """Where each figure of each device comes from: citation, note and URL.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(key, figure)``.

    Examples
    --------
    >>> df = sources_frame()
    >>> list(df.columns), df.index.names
    (['source', 'note', 'url'], FrozenList(['key', 'figure']))
    """
    import pandas as pd

    rows = [
        {"key": key, "figure": figure, "source": str(src), "note": src.note, "url": src.url}
        for key, dev in _devices(devices).items()
        for figure, src in dev.sources.items()
    ]
    return pd.DataFrame(rows).set_index(["key", "figure"])
