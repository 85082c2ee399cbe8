"""读入硬件目录的数据文件（``data/hardware.toml`` 的格式）：每个数字都要有出处，不认识的键是错误。

数据文件的格式写在它自己的开头；读入的设备与网络见 :mod:`roofline_book.devices.catalog`。
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from types import MappingProxyType

from .._base import validate as _validate
from .ceiling import Network, Source
from .device import Hardware

#: 目录表中的键 -> Hardware 的字段，用于原样读入的数字。
_FIELDS = {
    "matrix": "dense_peaks",
    "matrix_sparse": "sparse_peaks",
    "vector": "vector_peaks",
    "special": "special_peak",
    "memory_bandwidth": "memory_bandwidth",
    "l2_cache": "l2_cache",
    "l2_bandwidth": "l2_bandwidth",
    "last_level_cache": "last_level_cache",
    "shared_memory_per_sm": "shared_memory_per_sm",
    "l1_shared_per_sm": "l1_shared_per_sm",
    "register_file_per_sm": "register_file_per_sm",
    "sms": "sms",
    "clock_hz": "clock_hz",
    "link": "link",
    "link_bandwidth": "link_bandwidth",
    "link_latency": "link_latency",
    "link_reduces": "link_reduces",
    "pcie_generation": "pcie_generation",
    "pcie_lanes": "pcie_lanes",
}
#: Hardware 的字段 -> 其出处所用的名称（沿用只有一条 roof 时的目录）。
_SOURCE_NAMES = {"dense_peaks": "peak_flops", "sparse_peaks": "peak_flops_sparse"}
#: 推算数字的输入：它们需要出处，但本身不是上限。
_INPUTS = ("fp32_lanes_per_sm", "sfu_per_sm_per_clock", "matrix_clock_hz")
#: 给出容量的两种写法（字节数 = 数值 x 单位）；两者都引用 ``memory_capacity`` 的出处。
_CAPACITY = {"memory_capacity_mib": 2**20, "memory_capacity_gib": 2**30}
#: 设备条目中不是数字的键。
_TEXT = (
    "name",
    "vendor",
    "architecture",
    "reported_names",
    "firmness",
    "sources",
    "derivations",
    "compared",
)
#: 设备条目可以有的全部键。
_DEVICE_KEYS = (*_TEXT, *_FIELDS, *_INPUTS, *_CAPACITY)
#: 按精度索引的表，它们的出处可以按精度分别给出（``"vector.bf16"``）。
_PER_PRECISION = ("matrix", "matrix_sparse", "vector")


def _figure_source_name(key: str) -> str:
    """目录中一个键的出处在 ``Hardware.sources`` 中所用的名字。"""
    if key in _CAPACITY:
        return "memory_capacity"
    if key in _FIELDS:
        return _SOURCE_NAMES.get(_FIELDS[key], _FIELDS[key])
    return key


def _rated_matrix_clocks(entry: Mapping, fields: dict, where: str) -> dict[str, float]:
    """``matrix_clock_hz``：厂商按低于 ``clock_hz`` 的时钟标出的矩阵单元各精度的时钟（Hz）。

    数字原样用作 roof，不换算；这里只检查它们，并记下每个数字所对应的时钟。
    """
    rated = entry.get("matrix_clock_hz", {})
    if not rated:
        return {}
    clock = entry.get("clock_hz")
    if clock is None:
        raise ValueError(f"{where}: matrix_clock_hz needs the device's clock_hz")
    out: dict[str, float] = {}
    for precision, at in rated.items():
        if precision not in fields["dense_peaks"]:
            raise ValueError(f"{where}: matrix_clock_hz names {precision!r}, which has no rate")
        _validate.positive(f"{where}: matrix_clock_hz[{precision!r}]", at)
        if at > clock:
            raise ValueError(
                f"{where}: matrix_clock_hz[{precision!r}] ({at:g}) is above clock_hz "
                f"({clock:g}); clock_hz is the device's highest rated SM clock"
            )
        out[precision] = float(at)
    return out


def _derived_special(entry: Mapping) -> tuple[float, str] | None:
    """特殊函数的速率：每个 SM 每个时钟周期的 SFU 结果数 x SM 个数 x 设备时钟。"""
    needed = ("sfu_per_sm_per_clock", "sms", "clock_hz")
    if "special" in entry or not all(k in entry for k in needed):
        return None
    sfu, sms, clock = (entry[k] for k in needed)
    formula = (
        f"{sfu} results/clock/SM x {sms} SMs x {clock / 1e6:g} MHz "
        "(clock_hz, the clock of the vendor's vector figures)"
    )
    return sfu * sms * clock, formula


def _sources_of(
    entry: Mapping, sources: Mapping[str, Source], where: str
) -> tuple[dict[str, Source], dict[str, tuple[Source, ...]]]:
    """每个数字的出处，以及与它比较过但没有采用的出处，按出处名索引。"""
    cited = entry.get("sources", {})
    present = [k for k in entry if k not in _TEXT]
    allowed = {_figure_source_name(k) for k in present} | {
        f"{_figure_source_name(k)}.{p}" for k in _PER_PRECISION if k in entry for p in entry[k]
    }
    taken: dict[str, Source] = {}
    compared: dict[str, tuple[Source, ...]] = {}
    for k, value in cited.items():
        table, _, precision = k.partition(".")
        name = _figure_source_name(table) + (f".{precision}" if precision else "")
        if name not in allowed:
            raise ValueError(
                f"{where}: sources names {k!r}, which is no figure of this device; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        keys = [value] if isinstance(value, str) else list(value)
        if not keys or not all(isinstance(s, str) and s in sources for s in keys):
            raise ValueError(f"{where}: sources.{k} names no known source: {value!r}")
        taken[name] = sources[keys[0]]
        if keys[1:]:
            compared[name] = tuple(sources[s] for s in keys[1:])
    for k in present:
        if _figure_source_name(k) not in taken:
            raise ValueError(f"{where}: {k} names no known source")
    return taken, compared


def load_catalog(text: str, origin: str = "<text>") -> Mapping[str, Hardware]:
    """从 ``data/hardware.toml`` 格式的目录文本中读出设备。

    Parameters
    ----------
    text : str
        TOML：每份文献一个 ``[sources.KEY]`` 表，每个设备一个 ``[devices.KEY]`` 表（带它的
        ``sources``，以及可选的 ``derivations``）。
    origin : str
        文本的来处；每条错误信息都写出它。

    Raises
    ------
    ValueError
        遇到格式不认识的键（拼错的数字是错误，不会被悄悄丢掉）、没有已知出处的数字，或规则不接受的数字。

    Examples
    --------
    >>> lines = ['[sources.mine]', 'title = "my datasheet"', '[devices.gpu]',
    ...          'name = "My GPU"', 'matrix = { bf16 = 100e12 }', 'memory_bandwidth = 1e12',
    ...          '[devices.gpu.sources]', 'matrix = "mine"', 'memory_bandwidth = "mine"']
    >>> load_catalog("\\n".join(lines))["gpu"].ridge_point()
    100.0
    >>> lines.insert(6, "shared_memory_per_SM = 65536")
    >>> load_catalog("\\n".join(lines), "mine.toml")
    Traceback (most recent call last):
    ...
    ValueError: mine.toml: device 'gpu' has an unknown key 'shared_memory_per_SM'; allowed: ...
    """
    data = tomllib.loads(text)
    sources = _catalog_sources(data, origin)
    devices = {}
    for key, entry in data.get("devices", {}).items():
        where = f"{origin}: device {key!r}"
        _validate.known_keys(where, entry, _DEVICE_KEYS)
        figure_sources, compared = _sources_of(entry, sources, where)
        fields = {_FIELDS[k]: v for k, v in entry.items() if k in _FIELDS}
        fields.update({k: entry[k] for k in _INPUTS[:2] if k in entry})
        derivations = dict(entry.get("derivations", {}))
        for figure in derivations:
            if figure not in figure_sources:
                raise ValueError(f"{where}: derivations names {figure!r}, which it does not cite")
        figures = {k: tuple(v) for k, v in entry.get("compared", {}).items()}
        for figure, values in figures.items():
            if len(values) != len(compared.get(figure, ())):
                raise ValueError(
                    f"{where}: compared.{figure} must give one figure per source compared "
                    f"({len(compared.get(figure, ()))}), got {len(values)}"
                )
        capacity = [k for k in _CAPACITY if k in entry]
        if len(capacity) > 1:
            raise ValueError(f"{where}: give memory_capacity_mib or memory_capacity_gib, not both")
        if capacity:
            unit = capacity[0]
            amount = _validate.positive(f"{where}: {unit}", entry[unit])
            fields["memory_capacity"] = amount * _CAPACITY[unit]
            fields["memory_capacity_basis"] = "driver" if unit.endswith("mib") else "nominal"
            derivations.setdefault(
                "memory_capacity",
                f"{amount:g} MiB, the total the driver reports (nvidia-smi)"
                if unit.endswith("mib")
                else f"{amount:g} GiB, the nominal capacity read as binary (no driver total cited)",
            )
        matrix_clocks = _rated_matrix_clocks(entry, fields, where)
        derived = _derived_special(entry)
        if derived is not None:
            fields["special_peak"], derivations["special_peak"] = derived
            figure_sources["special_peak"] = figure_sources["sfu_per_sm_per_clock"]
        devices[key] = Hardware(
            key=key,
            name=entry["name"],
            vendor=entry.get("vendor", ""),
            architecture=entry.get("architecture", ""),
            reported_names=entry.get("reported_names", ()),
            firmness=entry.get("firmness", ""),
            sources=figure_sources,
            compared_sources=compared,
            compared_figures=figures,
            derivations=derivations,
            matrix_clock_hz=matrix_clocks,
            **fields,
        )
    return MappingProxyType(devices)


_TABLES = ("sources", "devices", "networks", "architectures")


def _catalog_sources(data: Mapping, origin: str) -> dict[str, Source]:
    """目录的各表名都认识，再读出 ``[sources]``。"""
    for table in data:
        if table not in _TABLES:
            raise ValueError(f"{origin}: unknown table {table!r}; allowed: {', '.join(_TABLES)}")
    known = tuple(sorted(f.name for f in dataclasses.fields(Source) if f.name != "key"))
    sources = {}
    for key, entry in data.get("sources", {}).items():
        _validate.known_keys(f"{origin}: source {key!r}", entry, known)
        sources[key] = Source(key=key, **entry)
    return sources


_NETWORK_FIGURES = ("bandwidth", "latency")


def load_networks(text: str, origin: str = "<text>") -> Mapping[str, Network]:
    """从目录文本的 ``[networks.KEY]`` 表中读出节点之间的网络。

    每个网络有 ``name``、``bandwidth`` （一个 NIC 端口每个方向的 byte/s）、``latency`` （秒），
    以及这两个数字的 ``sources``（和可选的 ``derivations``）。

    Examples
    --------
    >>> lines = ['[sources.mine]', 'title = "my NIC"', '[networks.nic]', 'name = "My NIC"',
    ...          'bandwidth = 25e9', 'latency = 3e-6',
    ...          '[networks.nic.sources]', 'bandwidth = "mine"', 'latency = "mine"']
    >>> load_networks("\\n".join(lines))["nic"].bandwidth
    25000000000.0
    >>> load_networks("\\n".join(lines[:-1]), "mine.toml")
    Traceback (most recent call last):
    ...
    ValueError: mine.toml: network 'nic': latency names no known source
    """
    data = tomllib.loads(text)
    sources = _catalog_sources(data, origin)
    out = {}
    for key, entry in data.get("networks", {}).items():
        where = f"{origin}: network {key!r}"
        _validate.known_keys(where, entry, ("name", *_NETWORK_FIGURES, "sources", "derivations"))
        cited = entry.get("sources", {})
        _validate.known_keys(f"{where}: sources", cited, _NETWORK_FIGURES)
        for figure in _NETWORK_FIGURES:
            if figure not in entry:
                raise ValueError(f"{where}: {figure} is missing")
            if cited.get(figure) not in sources:
                raise ValueError(f"{where}: {figure} names no known source")
        out[key] = Network(
            key=key,
            name=entry["name"],
            bandwidth=entry["bandwidth"],
            latency=entry["latency"],
            sources={f: sources[cited[f]] for f in _NETWORK_FIGURES},
            derivations=dict(entry.get("derivations", {})),
        )
    return MappingProxyType(out)
