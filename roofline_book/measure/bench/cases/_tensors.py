"""case 所用的 tensor：设定种子的随机输入、抽样检查、内存不足的错误。"""

from __future__ import annotations

import math

from ..registry import Unsupported

CHECK_ROWS = 64
"""与参考结果对照的行（GEMM、norm）或 query 行（attention）的个数。"""

CHECK_ELEMENTS = 2**20
"""elementwise 的结果按均匀间隔抽取这么多个值来对照。"""


def _dtype(precision: str):
    import torch

    table = {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
    }
    if precision not in table:
        raise Unsupported(f"the suite has no {precision} tensors; it runs {', '.join(table)}")
    return table[precision]


RANDOM_TILE = 2**22
"""更大的输入重复使用这么多个随机值组成的一块：在一个核上生成几亿个正态随机数要几秒，复制这一块
只要几毫秒，而带宽或 elementwise 的 case 并不在乎它搬运的是哪些值。
"""


def _randn(shape, precision: str, device, gen):
    import torch

    dtype = _dtype(precision)
    numel = math.prod(shape)
    if numel <= RANDOM_TILE or numel % RANDOM_TILE:
        return torch.randn(shape, generator=gen, device=device, dtype=dtype)
    block = torch.randn(RANDOM_TILE, generator=gen, device=device, dtype=dtype)
    out = torch.empty(shape, device=device, dtype=dtype)
    out.view(-1, RANDOM_TILE).copy_(block)
    return out


def _generator(device):
    import torch

    return torch.Generator(device=device).manual_seed(0)


def is_out_of_memory(exc: BaseException) -> bool:
    """一个异常是否是 torch（或操作系统）内存不足。"""
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or any(
        s in text for s in ("out of memory", "can't allocate memory", "cannot allocate memory")
    )


def _strided(t):
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // CHECK_ELEMENTS)]
