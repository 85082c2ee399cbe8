"""FlashAttention kernel 的 tile：一个 thread block 的 query 行数、key 行数与 cluster。

:func:`roofline_book.ops.attention` 用它们数 flash kernel 重读 K 与 V 的字节；Hopper 上的 tile
读自 FlashAttention-3 的源码（:data:`FA3_SOURCE`）。
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, bytes_per_element, precision_name

#: :func:`fa3_tile` 读取 FlashAttention-3 tile 的出处：公开仓库 Dao-AILab/flash-attention 在这个
#: commit 上的 ``hopper/tile_size.h`` （``tile_size_fwd_sm90``）与
#: ``hopper/flash_fwd_launch_template.h`` （``Enable_cluster``）。
FA3_SOURCE = (
    "Dao-AILab/flash-attention@0251105a2fb19d2957484b7f023cd8c115286ced, "
    "hopper/tile_size.h (tile_size_fwd_sm90), hopper/flash_fwd_launch_template.h"
)


@dataclass(frozen=True)
class FlashTile:
    """flash attention kernel 工作所用的 tile（Q、K、V 的行数）。

    Attributes
    ----------
    block_m : int
        一个 thread block 留在片上的 query 行数（``kBlockM``、``Br``）。每个 query 块让 K 与 V
        流过一次。
    block_n : int
        每一步读入的 key 与 value 行数（``kBlockN``、``Bc``）。在 causal mask 下，query 块读入整个
        key 块，所以它读的 key 数向上取整到 ``block_n`` 的倍数（不超过最后一个 key）。取 1 时
        恰好计 mask 保留的 key。
    cluster_m : int
        共享每次 K/V 读入的相邻 query 块个数（带 TMA multicast 的 thread-block cluster）：cluster 为
        它们全体只读一次。只有 query 块能整除成 cluster 时才适用，如 FlashAttention-3；否则每个块各
        自读入。

    Examples
    --------
    >>> FlashTile(128, 176, 2)
    FlashTile(block_m=128, block_n=176, cluster_m=2)
    """

    block_m: int
    block_n: int = 1
    cluster_m: int = 1

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "cluster_m"):
            _validate.size(name, getattr(self, name))


# tile_size_fwd_sm90(headdim, headdim_v=headdim, is_causal, is_local=False, element_size,
# v_colmajor=False, paged_kv_non_TMA=False, softcap=False): {kBlockM, kBlockN} by the
# largest head dim of each branch; kBlockN is (non-causal, causal).
_FA3_SM90 = {
    2: ((64, 192, (192, 128)), (96, 192, (144, 144)), (128, 128, (176, 128)),
        (192, 128, (112, 112)), (256, 128, (80, 80))),
    1: ((64, 192, (160, 160)), (96, 192, (128, 128)), (128, 128, (224, 224)),
        (192, 128, (160, 160)), (256, 128, (128, 128))),
}  # fmt: skip


def fa3_tile(head_dim: int, dtype: Precision = "bf16", causal: bool = False) -> FlashTile:
    """FlashAttention-3 在 Hopper（SM90）上对 ``head_dim`` 与 ``dtype`` 的 forward tile。

    读自 FlashAttention-3 的源码（``FA3_SOURCE``）：``tile_size_fwd_sm90`` 在 Q/K 与 V 的 head dim
    相等、没有 local window、没有 paged KV、没有 softcap 时给出 ``kBlockM`` 与 ``kBlockN``；这些
    tile 由寄存器与 shared memory 的预算决定，而不是 :func:`attention` 退路中的 ``M / (4d)`` 规则。
    对 16 位数据在编译的 head dim 为 128 或以上、FP8 在 192、且没有 causal mask
    时，``run_mha_fwd_`` 启动由两个 query 块组成、以 multicast 共享每次 K/V 读入的
    cluster（``Enable_cluster``）。

    Parameters
    ----------
    head_dim : int
        一个 head 的宽度，1 到 256（FA3 编译 64、96、128、192 和 256，把 head dim
        向上取到其中下一个）。
    dtype : str or torch.dtype
        FP16 或 BF16（2 字节）或 FP8（1 字节），即 FA3 支持的精度。
    causal : bool
        是否用 causal mask（某些 head dim 下 key 块更小，不用 cluster）。

    Examples
    --------
    >>> fa3_tile(64), fa3_tile(128).block_m, fa3_tile(256).block_m
    (FlashTile(block_m=192, block_n=192, cluster_m=1), 128, 128)
    >>> fa3_tile(128, causal=True)
    FlashTile(block_m=128, block_n=128, cluster_m=1)
    >>> fa3_tile(128, "fp8")
    FlashTile(block_m=128, block_n=224, cluster_m=1)
    """
    head_dim = _validate.size("head_dim", head_dim)
    if head_dim > 256:
        raise InvalidArgument(
            "head_dim", f"must be at most 256 for FlashAttention-3, got {head_dim}"
        )
    if not isinstance(causal, bool):
        raise InvalidArgumentType("causal", f"must be True or False, got {causal!r}")
    size = bytes_per_element(dtype)
    if size not in _FA3_SM90:
        raise InvalidArgument(
            "dtype",
            f"must be a 16-bit (fp16, bf16) or 8-bit (fp8) precision for "
            f"FlashAttention-3, got {precision_name(dtype)}",
        )
    compiled, block_m, block_n = next(b for b in _FA3_SM90[size] if head_dim <= b[0])
    clustered = not causal and (compiled >= 128 if size == 2 else compiled == 192)
    return FlashTile(block_m, block_n[int(causal)], 2 if clustered else 1)
