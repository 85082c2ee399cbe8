"""Devices: peak FLOP/s per precision, memory bandwidth, sizes, and where each figure comes from.

The catalog lives in one data file, ``roofline_book/data/hardware.toml``.
Peaks are *dense* rates. Vendors print 2:4-sparse rates, twice as large,
first; those are kept apart (:meth:`Hardware.sparse_peak_flops`) and never
used as a roof.

Examples
--------
>>> h100 = hardware("H100-SXM")
>>> h100.peak_flops("bf16") / 1e12, h100.memory_bandwidth / 1e12
(989.5, 3.35)
>>> round(h100.ridge_point("bf16"))
295

The reference chapter's example device, 100 TFLOP/s and 1 TB/s:

>>> EXAMPLE.ridge_point()
100.0
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType

from . import _validate
from .dtypes import Precision, precision_name

ANY_PRECISION = "any"
"""Key of an ad-hoc device's single peak, used for every precision."""


@dataclass(frozen=True)
class Source:
    """Where a hardware figure was published."""

    key: str
    title: str
    url: str = ""
    date: str = ""
    note: str = ""

    def __str__(self) -> str:
        when = f" ({self.date})" if self.date else ""
        return f"{self.title}{when}"


USER_SOURCE = Source("user", "supplied by the caller (not a datasheet)")


def peak_key(dtype: Precision) -> str:
    """The catalog key under which a precision's peak is listed (both FP8 formats share 'fp8').

    Examples
    --------
    >>> peak_key("fp8_e5m2"), peak_key("bfloat16")
    ('fp8', 'bf16')
    """
    name = precision_name(dtype)
    return "fp8" if name.startswith("fp8") else name


@dataclass(frozen=True)
class Hardware:
    """A device for the roofline model.

    Parameters
    ----------
    key : str
        Catalog key, e.g. ``"h100-sxm"``.
    name : str
        Full name.
    dense_peaks : mapping of str to float
        Dense peak rate per precision key (FLOP/s; OP/s for int8).
    memory_bandwidth : float
        Peak main-memory bandwidth (byte/s).
    sparse_peaks : mapping of str to float
        2:4-structured-sparsity rates (FLOP/s), for reference only.
    memory_capacity, l2_cache, shared_memory_per_sm : float or None
        Sizes in bytes, where published.
    sms : int or None
        Streaming multiprocessors (compute units on AMD).
    sources : mapping of str to Source
        Source of each figure, by field name.
    """

    key: str
    name: str
    dense_peaks: Mapping[str, float]
    memory_bandwidth: float
    vendor: str = ""
    sparse_peaks: Mapping[str, float] = field(default_factory=dict)
    memory_capacity: float | None = None
    l2_cache: float | None = None
    shared_memory_per_sm: float | None = None
    sms: int | None = None
    sources: Mapping[str, Source] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        if not self.dense_peaks:
            raise ValueError("dense_peaks must name at least one precision")
        for label, peaks in (
            ("dense_peaks", self.dense_peaks),
            ("sparse_peaks", self.sparse_peaks),
        ):
            for precision, value in peaks.items():
                _validate.positive(f"{label}[{precision!r}]", value)
        for precision, sparse in self.sparse_peaks.items():
            dense = self.dense_peaks.get(precision)
            if dense is not None and sparse < dense:
                raise ValueError(
                    f"{self.key}: sparse peak for {precision} ({sparse:g}) is below the "
                    f"dense one ({dense:g}); the two columns look swapped"
                )
        object.__setattr__(self, "dense_peaks", MappingProxyType(dict(self.dense_peaks)))
        object.__setattr__(self, "sparse_peaks", MappingProxyType(dict(self.sparse_peaks)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    @property
    def precisions(self) -> tuple[str, ...]:
        """Precision keys with a published dense peak."""
        return tuple(self.dense_peaks)

    def peak_flops(self, dtype: Precision = "bf16") -> float:
        """Dense peak rate for matrix products in ``dtype`` (FLOP/s).

        Raises
        ------
        ValueError
            If the device publishes no figure for that precision.

        Examples
        --------
        >>> hardware("a100-sxm").peak_flops("tf32") / 1e12
        156.0
        """
        if ANY_PRECISION in self.dense_peaks:
            precision_name(dtype)  # still reject unknown names
            return self.dense_peaks[ANY_PRECISION]
        key = peak_key(dtype)
        if key not in self.dense_peaks:
            raise ValueError(
                f"{self.key} has no published dense peak for {key}; "
                f"allowed: {', '.join(self.dense_peaks)}"
            )
        return self.dense_peaks[key]

    def sparse_peak_flops(self, dtype: Precision = "bf16") -> float:
        """The vendor's 2:4-sparse rate (FLOP/s): reference only, never a roof for dense work."""
        key = peak_key(dtype)
        if key not in self.sparse_peaks:
            raise ValueError(
                f"{self.key} has no published sparse peak for {key}; "
                f"allowed: {', '.join(self.sparse_peaks) or 'none'}"
            )
        return self.sparse_peaks[key]

    def ridge_point(self, dtype: Precision = "bf16") -> float:
        """Intensity where the memory roof meets the compute roof (FLOP/byte)."""
        from .roofline import ridge_point

        return ridge_point(self.peak_flops(dtype), self.memory_bandwidth)

    def source(self, figure: str) -> Source:
        """The source of one figure (``"peak_flops"``, ``"memory_bandwidth"``, ...)."""
        if figure not in self.sources:
            raise ValueError(
                f"figure must be one of {', '.join(self.sources) or '(none)'} for {self.key}, "
                f"got {figure!r}"
            )
        return self.sources[figure]


def adhoc(name: str, peak_flops: float | Mapping[str, float], memory_bandwidth: float) -> Hardware:
    """A device from your own figures, e.g. a worked example or a measured machine.

    Parameters
    ----------
    name : str
        Any label.
    peak_flops : float or mapping of str to float
        One peak used for every precision (FLOP/s), or one per precision name.
    memory_bandwidth : float
        Bytes per second.

    Examples
    --------
    >>> dev = adhoc("mine", {"bf16": 200e12, "fp32": 50e12}, 2e12)
    >>> dev.ridge_point("bf16"), dev.ridge_point("fp32")
    (100.0, 25.0)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if isinstance(peak_flops, Mapping):
        peaks = {
            peak_key(k): _validate.positive(f"peak_flops[{k!r}]", v) for k, v in peak_flops.items()
        }
    else:
        peaks = {ANY_PRECISION: _validate.positive("peak_flops", peak_flops)}
    bandwidth = _validate.positive("memory_bandwidth", memory_bandwidth)
    return Hardware(
        key=name,
        name=name,
        dense_peaks=peaks,
        memory_bandwidth=bandwidth,
        sources={"peak_flops": USER_SOURCE, "memory_bandwidth": USER_SOURCE},
    )


#: The reference chapter's example device, 100 TFLOP/s peak and 1 TB/s memory bandwidth.
EXAMPLE = adhoc("example (100 TFLOP/s, 1 TB/s)", 100e12, 1e12)

_FIGURES = (
    "peak_flops",
    "peak_flops_sparse",
    "memory_bandwidth",
    "memory_capacity",
    "l2_cache",
    "shared_memory_per_sm",
    "sms",
)


@functools.cache
def catalog() -> Mapping[str, Hardware]:
    """Every device of the data file, by key.

    Examples
    --------
    >>> list(catalog())
    ['a100-sxm', 'h100-sxm', 'h200-sxm', 'b200', 'mi300x']
    """
    text = resources.files(__package__).joinpath("data/hardware.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = {k: Source(key=k, **v) for k, v in data["sources"].items()}
    devices = {}
    for key, entry in data["devices"].items():
        cited = entry.get("sources", {})
        for figure in _FIGURES:
            if figure in entry and cited.get(figure) not in sources:
                raise ValueError(f"hardware.toml: {key}.{figure} names no known source")
        devices[key] = Hardware(
            key=key,
            name=entry["name"],
            vendor=entry.get("vendor", ""),
            dense_peaks=entry["peak_flops"],
            sparse_peaks=entry.get("peak_flops_sparse", {}),
            memory_bandwidth=entry["memory_bandwidth"],
            memory_capacity=entry.get("memory_capacity"),
            l2_cache=entry.get("l2_cache"),
            shared_memory_per_sm=entry.get("shared_memory_per_sm"),
            sms=entry.get("sms"),
            sources={f: sources[cited[f]] for f in _FIGURES if f in entry},
        )
    return MappingProxyType(devices)


def hardware(name: str) -> Hardware:
    """A catalog device by key; case, spaces and underscores do not matter.

    Examples
    --------
    >>> hardware("H200 SXM").memory_bandwidth
    4800000000000.0
    >>> mi = hardware("mi300x")
    >>> round(mi.sparse_peak_flops("bf16") / mi.peak_flops("bf16"), 3)
    2.0
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a device name such as 'h100-sxm', got {name!r}")
    key = "-".join(name.strip().lower().replace("_", " ").split())
    devices = catalog()
    if key not in devices:
        raise ValueError(f"unknown device {name!r}; allowed: {', '.join(devices)}")
    return devices[key]
