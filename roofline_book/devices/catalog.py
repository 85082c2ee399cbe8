"""设备：每种计算单元、每种精度、每个存储层级各一个上限，以及每个数字的出处。

硬件目录保存在一个数据文件里，``roofline_book/devices/data/hardware.toml``。计算上限按单元保存
（:data:`~roofline_book.devices.ceiling.COMPUTE_UNITS`）：矩阵单元（Tensor Core、Matrix Core）、
向量单元（FP32/FP64 lane，即 CUDA core）和特殊函数单元（exp、rsqrt 等）。内存上限按层级
保存（:data:`~roofline_book.devices.ceiling.MEMORY_LEVELS`）：HBM，以及有公开数字或他人测量时的 L2。
峰值都是 *dense* 速率。厂商通常先印出 2:4 稀疏的速率，是 dense 的 2 倍；这些单独保存
（:meth:`~roofline_book.devices.device.Hardware.sparse_peak_flops`），从不用作 roof。

每个上限都是厂商公布的 dense 数字，按厂商标出它时所用的时钟，不换算：这也是论文、MFU 数字和
读者手里的数字。大多数数字按 boost 时钟 ``Hardware.clock_hz`` 标出；Hopper 的 Tensor Core 各行按
1830 MHz 标出，``Hardware.matrix_clock_hz`` 记下这个时钟。特殊函数的速率由每个 SM 每个时钟的
结果数推算，按 ``clock_hz`` 计，与厂商的向量速率同一个时钟。

Examples
--------
H100 SXM：NVIDIA 给出 dense BF16 为 989.4 TFLOP/s（1830 MHz 下每个 SM 每个时钟 4096 FLOP），
HBM 3.35 TB/s；向量速率按 1980 MHz：

>>> h100 = hardware("H100-SXM")
>>> h100.peak_flops("bf16") / 1e12, h100.memory_bandwidth / 1e12
(989.4, 3.35)
>>> round(h100.ridge_point("bf16"))
295
>>> h100.matrix_clock_hz["bf16"] / 1e6, h100.clock_hz / 1e6
(1830.0, 1980.0)
>>> h100.ceiling("vector", "bf16") / 1e12        # packed BF16x2 non-tensor math
133.8

本书的示例设备，100 TFLOP/s、1 TB/s：

>>> EXAMPLE.ridge_point()
100.0
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from .ceiling import ANY_PRECISION, USER_SOURCE
from .ceiling import COMPUTE_UNITS as COMPUTE_UNITS  # re-exported: the catalog's vocabulary
from .ceiling import LINKS as LINKS
from .ceiling import MEMORY_LEVELS as MEMORY_LEVELS
from .ceiling import Ceiling as Ceiling
from .ceiling import Network as Network
from .ceiling import Source as Source
from .ceiling import peak_key as peak_key
from .device import Hardware
from .loader import load_catalog as load_catalog  # re-exported: reading a catalog's text
from .loader import load_networks as load_networks


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
    """用你自己的数字建一块设备，例如一个算例，或一台测过的机器。

    Parameters
    ----------
    name : str
        任意名称。
    peak_flops : float or mapping of str to float
        矩阵单元峰值：所有精度共用一个（FLOP/s），或每个精度名一个。
    memory_bandwidth : float
        HBM（主存）带宽（byte/s）。
    vector : float or mapping of str to float, optional
        向量单元的峰值，与厂商的算法相同，一个 FMA 计 2 FLOP（只给一个数时视为 FP32）；
        其他向量运算的速率是它的一半。不给时，向量运算受 ``peak_flops`` 约束。
    special : float, optional
        每秒特殊函数运算次数；不给时取向量单元的速率。
    l2_bandwidth : float, optional
        L2 带宽（byte/s）。
    l2_cache : float, optional
        L2 cache 的容量（byte）。
    shared_memory_per_sm : float, optional
        每个 SM 的 shared memory 容量（byte）。

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
        raise InvalidArgumentType("name", f"must be a non-empty string, got {name!r}")
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


#: 本书的示例设备：峰值 100 TFLOP/s，内存带宽 1 TB/s。
EXAMPLE = adhoc("example (100 TFLOP/s, 1 TB/s)", 100e12, 1e12)

#: 包内目录所在的位置，错误信息按这个名字称呼它。
CATALOG_FILE = "roofline_book/devices/data/hardware.toml"


@functools.cache
def catalog() -> Mapping[str, Hardware]:
    """数据文件中的全部设备，按键索引。

    Examples
    --------
    >>> list(catalog())[:3]
    ['a100-sxm', 'a800-sxm', 'h100-sxm']
    """
    return load_catalog(_catalog_text(), CATALOG_FILE)


def _catalog_text() -> str:
    return resources.files(__package__).joinpath("data/hardware.toml").read_text("utf-8")


@functools.cache
def networks() -> Mapping[str, Network]:
    """目录中节点之间的网络，按键索引。

    Examples
    --------
    >>> list(networks())
    ['ib-ndr', 'roce-400g']
    """
    return load_networks(_catalog_text(), CATALOG_FILE)


def network(name: str) -> Network:
    """按键取目录中的网络（``"ib-ndr"``、``"roce-400g"``）。

    Examples
    --------
    >>> network("IB NDR").bandwidth / 1e9      # 400 Gb/s, one direction
    50.0
    """
    if not isinstance(name, str):
        raise InvalidArgumentType("name", f"must be a network name such as 'ib-ndr', got {name!r}")
    key = catalog_key(name)
    if key not in networks():
        raise InvalidArgument(
            "network", f"{name!r} is not in the catalog; allowed: {', '.join(networks())}"
        )
    return networks()[key]


def catalog_key(name: str) -> str:
    """一个名称在目录中的键：小写，空格与下划线换成连字符（硬件、网络与模型目录都用它）。

    Examples
    --------
    >>> catalog_key(" H100_SXM "), catalog_key("IB NDR")
    ('h100-sxm', 'ib-ndr')
    """
    return "-".join(name.strip().lower().replace("_", " ").split())


def hardware(name: str) -> Hardware:
    """按键取目录中的设备；大小写、空格和下划线都不影响。

    Examples
    --------
    >>> hardware("H200 SXM").memory_bandwidth
    4800000000000.0
    >>> mi = hardware("mi300x")
    >>> round(mi.sparse_peak_flops("bf16") / mi.peak_flops("bf16"), 3)
    2.0
    """
    if not isinstance(name, str):
        raise InvalidArgumentType("name", f"must be a device name such as 'h100-sxm', got {name!r}")
    key = catalog_key(name)
    devices = catalog()
    if key not in devices:
        raise InvalidArgument(
            "device", f"{name!r} is not in the catalog; allowed: {', '.join(devices)}"
        )
    return devices[key]


def reported(name: str) -> Hardware | None:
    """驱动或 PyTorch 报告的设备名称（``torch.cuda.get_device_name()``）所对应的目录设备；
    不在目录中时为 None。

    名称与目录中某个设备的 ``reported_names`` 之一相同即可（不计大小写与多余的空格）；
    同一芯片的其他型号（40 GB 的 A100、PCIe 版）报告的名称不同，不会配到别的条目上。

    Examples
    --------
    >>> reported("NVIDIA H100 80GB HBM3").key
    'h100-sxm'
    >>> reported("NVIDIA A100-SXM4-40GB") is None      # 1.555 TB/s, not the 80 GB part
    True
    """
    wanted = " ".join(name.split()).casefold()
    for device in catalog().values():
        if any(" ".join(n.split()).casefold() == wanted for n in device.reported_names):
            return device
    return None
