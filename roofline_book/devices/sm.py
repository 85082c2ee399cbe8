"""一种架构的 SM：warp 的线程数、warp scheduler（子分区）数、Tensor Core 数、可驻留的 warp 数。

这些是架构的事实（同一架构的各款产品相同），记在目录数据文件的 ``[architectures.KEY]`` 表里，
连同出处；设备按 ``Hardware.architecture`` 找到它的一行。GPU 一章的 SM 图与 occupancy 的算术
读它们。
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from .catalog import CATALOG_FILE, _catalog_text, hardware
from .ceiling import Source
from .device import Hardware
from .loader import _catalog_sources


@dataclass(frozen=True)
class SMFacts:
    """一种架构的 SM 的组织。

    Attributes
    ----------
    architecture : str
        架构名（小写，与 ``Hardware.architecture`` 相同）。
    warp_size : int
        一个 warp 的线程数（lane 数）。
    sub_partitions : int
        SM 的子分区数，每个子分区一个 warp scheduler、一份寄存器堆、一个 Tensor Core 与它那一份
        CUDA core 和 SFU。
    tensor_cores_per_sm : int
        每个 SM 的 Tensor Core 数。
    max_warps_per_sm : int
        一个 SM 上同时驻留的 warp 数上限（occupancy 的分母）。
    max_threads_per_block : int
        一个 thread block 的线程数上限。
    sources : mapping of str to Source
        每个数字的出处，按字段名索引。

    Examples
    --------
    >>> facts = sm_facts("h100-sxm")
    >>> facts.warp_size, facts.sub_partitions, facts.max_threads_per_sm
    (32, 4, 2048)
    """

    architecture: str
    warp_size: int
    sub_partitions: int
    tensor_cores_per_sm: int
    max_warps_per_sm: int
    max_threads_per_block: int
    sources: Mapping[str, Source] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in _FIGURES:
            _validate.size(name, getattr(self, name))

    @property
    def max_threads_per_sm(self) -> int:
        """一个 SM 上同时驻留的线程数上限：warp 数上限 x 每个 warp 的线程数。"""
        return self.max_warps_per_sm * self.warp_size


_FIGURES = tuple(f.name for f in fields(SMFacts) if f.name not in ("architecture", "sources"))


def load_architectures(text: str, origin: str = "<text>") -> Mapping[str, SMFacts]:
    """从目录文本的 ``[architectures.KEY]`` 表读出各架构的 SM；每个数字须在 ``sources`` 中有出处。

    Examples
    --------
    >>> lines = ['[sources.mine]', 'title = "guide"', '[architectures.x]', 'warp_size = 32',
    ...          'sub_partitions = 4', 'tensor_cores_per_sm = 4', 'max_warps_per_sm = 48',
    ...          'max_threads_per_block = 1024', '[architectures.x.sources]',
    ...          *[f'{k} = "mine"' for k in _FIGURES]]
    >>> load_architectures("\\n".join(lines))["x"].max_threads_per_sm
    1536
    >>> load_architectures("\\n".join(lines[:-1]), "mine.toml")
    Traceback (most recent call last):
    ...
    ValueError: mine.toml: architecture 'x' gives max_threads_per_block without a source
    """
    data = tomllib.loads(text)
    sources = _catalog_sources(data, origin)
    out = {}
    for key, entry in data.get("architectures", {}).items():
        where = f"{origin}: architecture {key!r}"
        _validate.known_keys(where, entry, (*_FIGURES, "sources"))
        cited = entry.get("sources", {})
        taken = {}
        for name in _FIGURES:
            if name not in entry:
                raise ValueError(f"{where} lacks {name}")
            keys = cited.get(name)
            keys = [keys] if isinstance(keys, str) else keys
            if not keys:
                raise ValueError(f"{where} gives {name} without a source")
            if not all(k in sources for k in keys):
                raise ValueError(f"{where}: sources.{name} names no known source: {keys!r}")
            taken[name] = sources[keys[0]]
        figures = {name: entry[name] for name in _FIGURES}
        out[key] = SMFacts(architecture=key, sources=MappingProxyType(taken), **figures)
    return MappingProxyType(out)


@functools.cache
def architectures() -> Mapping[str, SMFacts]:
    """目录中各架构的 SM，按架构名索引。

    Examples
    --------
    >>> sorted(architectures())
    ['ampere', 'hopper']
    """
    return load_architectures(_catalog_text(), CATALOG_FILE)


def sm_facts(device: Hardware | str) -> SMFacts:
    """``device`` （目录中的名字或 ``Hardware``）所属架构的 SM。

    Examples
    --------
    >>> sm_facts("a100-sxm").tensor_cores_per_sm
    4
    >>> sm_facts("mi300x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: device mi300x (architecture 'cdna3') has no SM entry ...
    """
    dev = hardware(device) if isinstance(device, str) else device
    facts = architectures().get(dev.architecture)
    if facts is None:
        known = ", ".join(architectures())
        raise InvalidArgument(
            "device",
            f"{dev.key} (architecture {dev.architecture!r}) has no SM entry in the catalog; "
            f"known architectures: {known}",
        )
    return facts
