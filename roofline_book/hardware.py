"""Devices: a ceiling per compute unit and precision, per memory level, and each figure's source.

The catalog lives in one data file, ``roofline_book/data/hardware.toml``.
Compute ceilings are kept per unit (:data:`COMPUTE_UNITS`): the matrix
units (Tensor Cores, Matrix Cores), the vector units (the FP32/FP64 lanes,
CUDA cores) and the special function units (exp, rsqrt, ...). Memory
ceilings are per level (:data:`MEMORY_LEVELS`): HBM and, where a figure is
published, L2. Peaks are *dense* rates. Vendors print 2:4-sparse rates,
twice as large, first; those are kept apart
(:meth:`Hardware.sparse_peak_flops`) and never used as a roof.

Examples
--------
>>> h100 = hardware("H100-SXM")
>>> h100.peak_flops("bf16") / 1e12, h100.memory_bandwidth / 1e12
(989.5, 3.35)
>>> round(h100.ridge_point("bf16"))
295
>>> h100.ceiling("vector", "bf16") / 1e12        # 16-bit elementwise math runs in FP32
67.0
>>> round(h100.ridge_point("bf16", unit="vector"), 1)
20.0

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

COMPUTE_UNITS = ("matrix", "vector", "special")
"""Compute units with a ceiling of their own (see :data:`roofline_book.ops.UNITS`)."""

MEMORY_LEVELS = ("hbm", "l2")
"""Memory levels with a bandwidth ceiling, main memory and the L2 cache (where published)."""


@dataclass(frozen=True)
class Source:
    """Where a hardware figure was published."""

    key: str
    title: str
    url: str = ""
    date: str = ""
    note: str = ""
    firmness: str = ""
    """``"vendor"`` (datasheet, whitepaper, programming guide), ``"paper"`` (a
    measurement or design paper) or ``"secondary"`` (press, resellers,
    third-party compilations)."""

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
class Ceiling:
    """One roof of a device: a compute unit's rate in a precision, or a memory level's bandwidth.

    Attributes
    ----------
    resource : str
        ``"matrix"``, ``"vector"``, ``"special"``, ``"hbm"`` or ``"l2"``.
    precision : str
        The precision key of a compute ceiling; ``""`` for memory.
    value : float
        FLOP/s (OP/s for int8) or byte/s.
    source : Source
        Where it was published.
    derivation : str
        For a figure computed from published ones, the formula; ``""`` otherwise.
    """

    resource: str
    precision: str
    value: float
    source: Source
    derivation: str = ""

    @property
    def is_memory(self) -> bool:
        return self.resource in MEMORY_LEVELS


@dataclass(frozen=True)
class Hardware:
    """A device for the roofline model, with a ceiling per unit and memory level.

    Parameters
    ----------
    key : str
        Catalog key, e.g. ``"h100-sxm"``.
    name : str
        Full name.
    dense_peaks : mapping of str to float
        Dense matrix-unit (Tensor Core / Matrix Core) rate per precision key
        (FLOP/s; OP/s for int8).
    memory_bandwidth : float
        Peak HBM (main-memory) bandwidth (byte/s).
    vector_peaks : mapping of str to float
        Vector-unit rates per precision (FLOP/s): the FP32 and FP64 lanes, and
        16-bit non-tensor rates where published.
    special_peak : float or None
        Special-function evaluations per second (exp, rsqrt, ...), where
        published or derivable.
    sparse_peaks : mapping of str to float
        2:4-structured-sparsity rates (FLOP/s), for reference only.
    memory_capacity, l2_cache, last_level_cache : float or None
        Sizes in bytes, where published; ``last_level_cache`` is a cache
        beyond L2 (AMD's Infinity Cache).
    l2_bandwidth : float or None
        L2 bandwidth (byte/s), where a vendor or a cited measurement gives it.
    shared_memory_per_sm, l1_shared_per_sm, register_file_per_sm : float or None
        On-chip memory per SM in bytes: the most a block can use as shared
        memory, L1 and shared memory together, the register file.
    sms : int or None
        Streaming multiprocessors (compute units on AMD).
    fp32_lanes_per_sm, sfu_per_sm_per_clock : int or None
        FP32 lanes per SM and special-function results per clock per SM, the
        published inputs from which ``special_peak`` is derived.
    firmness : str
        How firm the device's sources are: ``"vendor"`` (datasheets,
        whitepapers) or ``"secondary"``; ``""`` for an ad-hoc device.
    sources : mapping of str to Source
        Source of each figure, by field name.
    derivations : mapping of str to str
        The formula of each figure computed from published ones.
    """

    key: str
    name: str
    dense_peaks: Mapping[str, float]
    memory_bandwidth: float
    vendor: str = ""
    vector_peaks: Mapping[str, float] = field(default_factory=dict)
    special_peak: float | None = None
    sparse_peaks: Mapping[str, float] = field(default_factory=dict)
    memory_capacity: float | None = None
    l2_cache: float | None = None
    l2_bandwidth: float | None = None
    last_level_cache: float | None = None
    shared_memory_per_sm: float | None = None
    l1_shared_per_sm: float | None = None
    register_file_per_sm: float | None = None
    sms: int | None = None
    fp32_lanes_per_sm: int | None = None
    sfu_per_sm_per_clock: int | None = None
    firmness: str = ""
    sources: Mapping[str, Source] = field(default_factory=dict)
    derivations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        if not self.dense_peaks:
            raise ValueError("dense_peaks must name at least one precision")
        for label, peaks in (
            ("dense_peaks", self.dense_peaks),
            ("vector_peaks", self.vector_peaks),
            ("sparse_peaks", self.sparse_peaks),
        ):
            for precision, value in peaks.items():
                _validate.positive(f"{label}[{precision!r}]", value)
        for name in ("special_peak", "l2_bandwidth"):
            if getattr(self, name) is not None:
                _validate.positive(name, getattr(self, name))
        for precision, sparse in self.sparse_peaks.items():
            dense = self.dense_peaks.get(precision)
            if dense is not None and sparse < dense:
                raise ValueError(
                    f"{self.key}: sparse peak for {precision} ({sparse:g}) is below the "
                    f"dense one ({dense:g}); the two columns look swapped"
                )
        for precision, vector in self.vector_peaks.items():
            matrix = self.dense_peaks.get(precision)
            if matrix is not None and vector > matrix:
                raise ValueError(
                    f"{self.key}: vector peak for {precision} ({vector:g}) is above the "
                    f"matrix one ({matrix:g}); a Tensor Core figure looks filed as vector"
                )
        for name in ("dense_peaks", "vector_peaks", "sparse_peaks", "sources", "derivations"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def precisions(self) -> tuple[str, ...]:
        """Precision keys a matrix product can use, matrix-unit rates first, then vector ones."""
        extra = [p for p in self.vector_peaks if p not in self.dense_peaks]
        return tuple(self.dense_peaks) + tuple(extra)

    def peak_flops(self, dtype: Precision = "bf16") -> float:
        """Dense peak rate of a matrix product in ``dtype`` (FLOP/s).

        This is the matrix-unit rate; a precision the matrix units do not
        take (FP32 without TF32 on NVIDIA) runs its products on the vector
        units, at their rate.

        Raises
        ------
        ValueError
            If the device publishes no figure for that precision.

        Examples
        --------
        >>> hardware("a100-sxm").peak_flops("tf32") / 1e12
        156.0
        >>> hardware("h100-sxm").peak_flops("fp32") / 1e12   # CUDA cores: no FP32 Tensor Core
        67.0
        """
        if ANY_PRECISION in self.dense_peaks:
            precision_name(dtype)  # still reject unknown names
            return self.dense_peaks[ANY_PRECISION]
        key = peak_key(dtype)
        if key in self.dense_peaks:
            return self.dense_peaks[key]
        if key in self.vector_peaks:
            return self.vector_peaks[key]
        raise ValueError(
            f"{self.key} has no published dense peak for {key}; "
            f"allowed: {', '.join(self.precisions)}"
        )

    def vector_peak(self, dtype: Precision = "fp32") -> float:
        """Vector-unit rate for elementwise arithmetic on ``dtype`` data (FLOP/s).

        Elementwise kernels on 16- and 8-bit data compute in FP32 (PyTorch's
        ``opmath`` type) and FP64 data in FP64, so this is the FP32 or FP64
        lane rate. An ad-hoc device without vector figures uses its one peak.

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> h100.vector_peak("bf16") / 1e12, h100.vector_peak("fp64") / 1e12
        (67.0, 34.0)
        """
        key = "fp64" if peak_key(dtype) == "fp64" else "fp32"
        if not self.vector_peaks:
            return self.peak_flops(dtype)
        if key not in self.vector_peaks:
            raise ValueError(
                f"{self.key} has no published vector (non-tensor) peak for {key}; "
                f"allowed: {', '.join(self.vector_peaks)}"
            )
        return self.vector_peaks[key]

    def special_peak_flops(self) -> float:
        """Special-function evaluations per second (exp, tanh, rsqrt, ...).

        Where no figure is published or derivable this is the FP32 vector
        rate: a transcendental costs at least one vector operation, so the
        bound stays a bound.

        Examples
        --------
        H100 SXM: 16 results per clock per SM, 132 SMs, 1.98 GHz:

        >>> round(hardware("h100-sxm").special_peak_flops() / 1e12, 2)
        4.19
        """
        if self.special_peak is not None:
            return self.special_peak
        return self.vector_peak("fp32")

    def ceiling(self, unit: str, dtype: Precision = "bf16") -> float:
        """The compute ceiling of one unit for work in ``dtype`` (FLOP/s).

        Parameters
        ----------
        unit : {"matrix", "vector", "special"}
        dtype : str or torch.dtype
            The operator's data precision.

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> [h100.ceiling(u, "bf16") / 1e12 for u in ("matrix", "vector")]
        [989.5, 67.0]
        >>> h100.ceiling("tensor")
        Traceback (most recent call last):
        ...
        ValueError: unit must be one of matrix, vector, special; got 'tensor'
        """
        unit = _validate.choice("unit", unit, COMPUTE_UNITS)
        if unit == "matrix":
            return self.peak_flops(dtype)
        if unit == "vector":
            return self.vector_peak(dtype)
        precision_name(dtype)  # reject unknown names here too
        return self.special_peak_flops()

    def bandwidth(self, level: str = "hbm") -> float | None:
        """The bandwidth of one memory level (byte/s); None where no figure exists for L2.

        Examples
        --------
        >>> hardware("h100-sxm").bandwidth("hbm") / 1e12
        3.35
        >>> hardware("h100-sxm").bandwidth("dram")
        Traceback (most recent call last):
        ...
        ValueError: level must be one of hbm, l2; got 'dram'
        """
        level = _validate.choice("level", level, MEMORY_LEVELS)
        return self.memory_bandwidth if level == "hbm" else self.l2_bandwidth

    def sparse_peak_flops(self, dtype: Precision = "bf16") -> float:
        """The vendor's 2:4-sparse rate (FLOP/s): reference only, never a roof for dense work."""
        key = peak_key(dtype)
        if key not in self.sparse_peaks:
            raise ValueError(
                f"{self.key} has no published sparse peak for {key}; "
                f"allowed: {', '.join(self.sparse_peaks) or 'none'}"
            )
        return self.sparse_peaks[key]

    def ridge_point(
        self, dtype: Precision = "bf16", *, unit: str = "matrix", level: str = "hbm"
    ) -> float:
        """Intensity where a memory level's slope meets a unit's flat roof (FLOP/byte).

        The defaults, matrix units over HBM, are the ridge of a GEMM.

        Examples
        --------
        >>> h100 = hardware("h100-sxm")
        >>> round(h100.ridge_point("bf16")), round(h100.ridge_point("fp8"))
        (295, 591)
        """
        band = self.bandwidth(level)
        if band is None:
            raise ValueError(f"{self.key} has no published {level} bandwidth")
        return self.ceiling(unit, dtype) / band

    def ceilings(self) -> list[Ceiling]:
        """Each roof of the device with its source: compute by unit and precision, memory by level.

        Examples
        --------
        >>> [(c.resource, c.precision) for c in hardware("h100-sxm").ceilings()][:2]
        [('matrix', 'fp64'), ('matrix', 'tf32')]
        """

        def cited(figure: str) -> Source:
            return self.sources.get(figure, USER_SOURCE)

        out = [Ceiling("matrix", p, v, cited("peak_flops")) for p, v in self.dense_peaks.items()]
        out += [
            Ceiling("vector", p, v, cited("vector_peaks")) for p, v in self.vector_peaks.items()
        ]
        if self.special_peak is not None:
            derivation = self.derivations.get("special_peak", "")
            special = Ceiling(
                "special", "fp32", self.special_peak, cited("special_peak"), derivation
            )
            out.append(special)
        out.append(Ceiling("hbm", "", self.memory_bandwidth, cited("memory_bandwidth")))
        if self.l2_bandwidth is not None:
            derivation = self.derivations.get("l2_bandwidth", "")
            out.append(Ceiling("l2", "", self.l2_bandwidth, cited("l2_bandwidth"), derivation))
        return out

    def source(self, figure: str) -> Source:
        """The source of one figure (``"peak_flops"``, ``"memory_bandwidth"``, ...)."""
        if figure not in self.sources:
            raise ValueError(
                f"figure must be one of {', '.join(self.sources) or '(none)'} for {self.key}, "
                f"got {figure!r}"
            )
        return self.sources[figure]


def adhoc(
    name: str,
    peak_flops: float | Mapping[str, float],
    memory_bandwidth: float,
    *,
    vector: float | Mapping[str, float] | None = None,
    special: float | None = None,
    l2_bandwidth: float | None = None,
    l2_cache: float | None = None,
    shared_memory_per_sm: float | None = None,
) -> Hardware:
    """A device from your own figures, e.g. a worked example or a measured machine.

    Parameters
    ----------
    name : str
        Any label.
    peak_flops : float or mapping of str to float
        Matrix-unit peak: one used for every precision (FLOP/s), or one per
        precision name.
    memory_bandwidth : float
        HBM (main-memory) bandwidth, bytes per second.
    vector : float or mapping of str to float, optional
        Vector-unit rate (one figure is taken as FP32); without it, vector
        work is held to ``peak_flops``.
    special : float, optional
        Special-function evaluations per second; without it, the vector rate.
    l2_bandwidth, l2_cache, shared_memory_per_sm : float, optional
        L2 bandwidth (byte/s) and sizes (byte).

    Examples
    --------
    >>> dev = adhoc("mine", {"bf16": 200e12, "fp32": 50e12}, 2e12)
    >>> dev.ridge_point("bf16"), dev.ridge_point("fp32")
    (100.0, 25.0)
    >>> gpu = adhoc("mine", 200e12, 2e12, vector=20e12)
    >>> gpu.ceiling("vector", "bf16") / 1e12, gpu.ridge_point(unit="vector")
    (20.0, 10.0)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if isinstance(peak_flops, Mapping):
        peaks = {
            peak_key(k): _validate.positive(f"peak_flops[{k!r}]", v) for k, v in peak_flops.items()
        }
    else:
        peaks = {ANY_PRECISION: _validate.positive("peak_flops", peak_flops)}
    if vector is None:
        vectors: dict[str, float] = {}
    elif isinstance(vector, Mapping):
        vectors = {peak_key(k): _validate.positive(f"vector[{k!r}]", v) for k, v in vector.items()}
    else:
        vectors = {"fp32": _validate.positive("vector", vector)}
    user = {"peak_flops": USER_SOURCE, "memory_bandwidth": USER_SOURCE}
    if vectors:
        user["vector_peaks"] = USER_SOURCE
    optional = {
        "special_peak": special,
        "l2_bandwidth": l2_bandwidth,
        "l2_cache": l2_cache,
        "shared_memory_per_sm": shared_memory_per_sm,
    }
    for figure, value in optional.items():
        if value is not None:
            optional[figure] = _validate.positive(figure, value)
            user[figure] = USER_SOURCE
    return Hardware(
        key=name,
        name=name,
        dense_peaks=peaks,
        memory_bandwidth=_validate.positive("memory_bandwidth", memory_bandwidth),
        vector_peaks=vectors,
        special_peak=optional["special_peak"],
        l2_bandwidth=optional["l2_bandwidth"],
        l2_cache=optional["l2_cache"],
        shared_memory_per_sm=optional["shared_memory_per_sm"],
        sources=user,
    )


#: The reference chapter's example device, 100 TFLOP/s peak and 1 TB/s memory bandwidth.
EXAMPLE = adhoc("example (100 TFLOP/s, 1 TB/s)", 100e12, 1e12)

#: Catalog table key -> Hardware field, for the figures read as they are.
_FIELDS = {
    "matrix": "dense_peaks",
    "matrix_sparse": "sparse_peaks",
    "vector": "vector_peaks",
    "special": "special_peak",
    "memory_bandwidth": "memory_bandwidth",
    "memory_capacity": "memory_capacity",
    "l2_cache": "l2_cache",
    "l2_bandwidth": "l2_bandwidth",
    "last_level_cache": "last_level_cache",
    "shared_memory_per_sm": "shared_memory_per_sm",
    "l1_shared_per_sm": "l1_shared_per_sm",
    "register_file_per_sm": "register_file_per_sm",
    "sms": "sms",
}
#: Hardware field -> the name its source goes by (kept from the one-roof catalog).
_SOURCE_NAMES = {"dense_peaks": "peak_flops", "sparse_peaks": "peak_flops_sparse"}
#: Inputs of derived figures: they need a source but are not ceilings themselves.
_INPUTS = ("fp32_lanes_per_sm", "sfu_per_sm_per_clock")


def _derived_special(entry: Mapping, key: str) -> tuple[float, str] | None:
    """The special-function rate from the SFU count, the SMs and the clock the FP32 peak implies.

    ``clock = FP32 peak / (2 FLOP per FMA x FP32 lanes per SM x SMs)`` and
    ``special = SFU results per clock per SM x SMs x clock``.
    """
    needed = ("sfu_per_sm_per_clock", "fp32_lanes_per_sm", "sms")
    if "special" in entry or not all(k in entry for k in needed):
        return None
    fp32 = entry.get("vector", {}).get("fp32")
    if fp32 is None:
        raise ValueError(f"hardware.toml: {key} derives its special rate but has no vector fp32")
    sfu, lanes, sms = (entry[k] for k in needed)
    clock = fp32 / (2 * lanes * sms)
    formula = (
        f"{sfu} results/clock/SM x {sms} SMs x {clock / 1e9:.3f} GHz, the clock at which "
        f"{lanes} FP32 lanes/SM x 2 FLOP reach the {fp32 / 1e12:g} TFLOP/s FP32 peak"
    )
    return sfu * sms * clock, formula


@functools.cache
def catalog() -> Mapping[str, Hardware]:
    """Every device of the data file, by key.

    Examples
    --------
    >>> list(catalog())[:3]
    ['a100-sxm', 'a800-sxm', 'h100-sxm']
    """
    text = resources.files(__package__).joinpath("data/hardware.toml").read_text("utf-8")
    data = tomllib.loads(text)
    sources = {k: Source(key=k, **v) for k, v in data["sources"].items()}
    devices = {}
    for key, entry in data["devices"].items():
        cited = entry.get("sources", {})
        for figure in (*_FIELDS, *_INPUTS):
            if figure in entry and cited.get(figure) not in sources:
                raise ValueError(f"hardware.toml: {key}.{figure} names no known source")
        fields = {_FIELDS[k]: v for k, v in entry.items() if k in _FIELDS}
        figure_sources = {
            _SOURCE_NAMES.get(_FIELDS[k], _FIELDS[k]): sources[cited[k]]
            for k in entry
            if k in _FIELDS
        }
        fields.update({k: entry[k] for k in _INPUTS if k in entry})
        derivations = {}
        derived = _derived_special(entry, key)
        if derived is not None:
            fields["special_peak"], derivations["special_peak"] = derived
            figure_sources["special_peak"] = sources[cited["sfu_per_sm_per_clock"]]
            figure_sources["fp32_lanes_per_sm"] = sources[cited["fp32_lanes_per_sm"]]
        devices[key] = Hardware(
            key=key,
            name=entry["name"],
            vendor=entry.get("vendor", ""),
            firmness=entry.get("firmness", ""),
            sources=figure_sources,
            derivations=derivations,
            **fields,
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
