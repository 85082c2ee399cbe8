"""Tensors for the cases: seeded random inputs, sampled checks, out-of-memory errors."""

from __future__ import annotations

import math

from ..registry import Unsupported

CHECK_ROWS = 64
"""Rows (GEMM, norms) or query rows (attention) compared with the reference."""

CHECK_ELEMENTS = 2**20
"""Elementwise results are compared on an evenly strided sample of this many values."""


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
"""Larger inputs repeat a block of this many random values: drawing hundreds of
millions of normal values takes seconds on one core, a copy of the block a few
milliseconds, and a bandwidth or elementwise case does not care which values it moves."""


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
    """Whether an exception is torch (or the OS) running out of memory."""
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or any(
        s in text for s in ("out of memory", "can't allocate memory", "cannot allocate memory")
    )


def _strided(t):
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // CHECK_ELEMENTS)]
