"""与设备有关的 kernel 事实：flash kernel 可用的片上存储，Hopper 上 FlashAttention-3 的 tile。

设备属于哪种架构由目录给出（``Hardware.architecture``）。
"""

from __future__ import annotations

import dataclasses

from ..dtypes import Precision
from ..ops import FlashTile, fa3_tile
from ..ops.attn import DEFAULT_SRAM_BYTES
from .device import Hardware


def device_sram_bytes(device: Hardware) -> int:
    """flash kernel 的一个 block 在 ``device`` 上可用的片上存储（byte）。

    取设备每个 SM 的 shared memory；目录中没有这个数字时取
    :data:`roofline_book.ops.attn.DEFAULT_SRAM_BYTES` （192 KiB，A100 每个 SM 的 L1 与 shared
    memory 合计容量，即 Dao et al. 所用的例子）。

    Examples
    --------
    >>> from roofline_book.devices.catalog import EXAMPLE, hardware
    >>> device_sram_bytes(hardware("h100-sxm")) // 1024, device_sram_bytes(EXAMPLE) // 1024
    (228, 192)
    """
    smem = device.shared_memory_per_sm
    return DEFAULT_SRAM_BYTES if smem is None else int(smem)


def device_flash_tile(
    device: Hardware, head_dim: int, dtype: Precision = "bf16", causal: bool = False
) -> FlashTile | None:
    """``device`` 上 flash kernel 的下界所取的 tile：Hopper 上（目录中
    ``architecture = "hopper"`` 的设备）是 FlashAttention-3 的 tile 加上两块
    一组的 cluster，否则为 None。

    K、V 的重读取决于调度，而不只取决于算子：FA3 在不加 mask 且 head dim 够大时让相邻两个 query
    块组成 cluster、以 TMA multicast 共享每次 K/V 读入，加 causal mask 时不用
    （:func:`roofline_book.ops.fa3_tile`）。
    同样的 tile 用两块的 cluster（或 ``Br`` 加倍）重读至多是不用时的一半，Hopper 的任何 kernel 都
    可以这样调度，所以下界在这两种调度中取重读较少的一种，即总是带 cluster。FA3 自己的调度给出的 L2
    时间是一个估计（它还依赖测得的 L2 带宽），不是下界。

    None 表示这个设备没有公开的 tile 表，于是 :func:`roofline_book.ops.attention` 退回它的片上存储规
    则（``sram_bytes``，:func:`device_sram_bytes`）。FA3 不支持的 head dim 或精度（大于 256、FP32）
    也得到 None。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> device_flash_tile(hardware("h100-sxm"), 128)
    FlashTile(block_m=128, block_n=176, cluster_m=2)
    >>> device_flash_tile(hardware("h100-sxm"), 128, causal=True)  # FA3's causal tile + a cluster
    FlashTile(block_m=128, block_n=128, cluster_m=2)
    >>> device_flash_tile(hardware("a100-sxm"), 128) is None
    True
    """
    if device.architecture != "hopper":
        return None
    try:
        tile = fa3_tile(head_dim, dtype, causal)
    except ValueError:
        return None
    return dataclasses.replace(tile, cluster_m=max(tile.cluster_m, 2))
