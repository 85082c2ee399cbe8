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
    memory_transaction_bytes : int
        一个 warp 访问显存时合并成的内存事务的大小（byte）：warp 的各个地址落在几个这样对齐的
        段里，就搬几段（coalescing）。
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
    memory_transaction_bytes: int
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
    ...          'max_threads_per_block = 1024', 'memory_transaction_bytes = 32',
    ...          '[architectures.x.sources]',
    ...          *[f'{k} = "mine"' for k in _FIGURES]]
    >>> load_architectures("\\n".join(lines))["x"].max_threads_per_sm
    1536
    >>> load_architectures("\\n".join(lines[:-1]), "mine.toml")
    Traceback (most recent call last):
    ...
    ValueError: mine.toml: architecture 'x' gives memory_transaction_bytes without a source
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


def resident_warps(
    device: Hardware | str, *, registers_per_thread: int, threads_per_block: int
) -> int:
    """寄存器决定的、一个 SM 上能同时驻留的 warp 数：放得下几个整 block，就驻留几个 block 的 warp，
    至多 ``max_warps_per_sm``。

    一个 SM 的寄存器堆（``Hardware.register_file_per_sm``，每个寄存器 4 byte）按 block 分配：
    能放下 ``寄存器总数 // (registers_per_thread x threads_per_block)`` 个 block。occupancy 是它除以
    ``max_warps_per_sm``。只计寄存器这一项限制（shared memory 与每 SM 的 block 数上限另计），
    也不计寄存器按 warp 分配时的取整。

    Examples
    --------
    H100：65536 个寄存器；每线程 64 个、每 block 256 个线程时放得下 4 个 block，即 32 个 warp。

    >>> resident_warps("h100-sxm", registers_per_thread=64, threads_per_block=256)
    32
    >>> resident_warps("h100-sxm", registers_per_thread=32, threads_per_block=256)   # 64 封顶
    64
    """
    dev = hardware(device) if isinstance(device, str) else device
    facts = sm_facts(dev)
    regs = _validate.size("registers_per_thread", registers_per_thread)
    threads = _validate.size("threads_per_block", threads_per_block)
    if threads > facts.max_threads_per_block:
        raise InvalidArgument(
            "threads_per_block", f"must be at most {facts.max_threads_per_block}; got {threads}"
        )
    if dev.register_file_per_sm is None:
        raise InvalidArgument("device", f"{dev.key} publishes no register file size")
    registers = int(dev.register_file_per_sm) // 4
    blocks = registers // (regs * threads)
    warps_per_block = -(-threads // facts.warp_size)
    return min(facts.max_warps_per_sm, blocks * warps_per_block)


def warp_load_bytes(device: Hardware | str, *, element_bytes: int, stride: int = 1) -> int:
    """一个 warp 的每个线程各读一个 ``element_bytes`` 字节的元素、相邻线程相隔 ``stride`` 个元素时，
    显存实际搬的字节数（byte）：这些地址落在多少个对齐的内存事务里，就搬多少个事务。

    起始地址按事务对齐。``stride=1`` 是合并（coalesced）访问：搬的正好是用到的字节；
    相邻线程相隔一个事务以上时，每个线程独占一个事务。

    Examples
    --------
    32 个线程各读 4 byte：连续时是 128 byte，即 4 个 32 byte 事务；相隔 8 个元素（32 byte）时
    是 32 个事务，1024 byte，用到的只有 1/8。

    >>> warp_load_bytes("h100-sxm", element_bytes=4)
    128
    >>> warp_load_bytes("h100-sxm", element_bytes=4, stride=8)
    1024
    """
    facts = sm_facts(device)
    size = _validate.size("element_bytes", element_bytes)
    step = _validate.size("stride", stride)
    sector = facts.memory_transaction_bytes
    # every sector between a thread's first and last byte is moved too
    spans = {
        k
        for lane in range(facts.warp_size)
        for k in range(lane * step * size // sector, (lane * step * size + size - 1) // sector + 1)
    }
    return len(spans) * sector
