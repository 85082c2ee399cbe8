"""GEMM：``torch.mm`` 写入预先分配的输出；模型为 :func:`roofline_book.ops.gemm`。"""

from __future__ import annotations

import math

from .... import ops
from ..registry import Case, Operator, Prepared, Unsupported, compare, register
from ._tensors import CHECK_ROWS, _generator, _randn


def gemm_case(m: int, k: int, n: int, *, impl: str = "mm", precision: str = "fp32") -> Case:
    """``torch.mm(a, b, out=c)``，``a`` 为 (m, k)，``b`` 为 (k, n)；模型为 :func:`ops.gemm`。

    ``"tf32"`` 在 ``torch.set_float32_matmul_precision("high")`` 下运行 float32 tensor（TF32 tensor
    core，仅 CUDA）；``"fp32"`` 用 ``"highest"`` （真正的 FP32）。之后恢复原设置。
    """
    cost = ops.gemm(m, k, n, precision)
    rows = min(m, CHECK_ROWS)
    footprint = cost.bytes + 8 * (rows * k + k * n + rows * n)

    def build(device) -> Prepared:
        import torch

        if precision == "tf32" and device.type != "cuda":
            raise Unsupported("tf32 is a CUDA tensor-core mode")
        gen = _generator(device)
        a = _randn((m, k), precision, device, gen)
        b = _randn((k, n), precision, device, gen)
        c = torch.empty((m, n), device=device, dtype=a.dtype)
        try:
            before = torch.get_float32_matmul_precision()
        except RuntimeError:  # torch >= 2.9 refuses to read a mix of its old and new settings
            before = None
        setting = {"tf32": "high", "fp32": "highest"}.get(precision, before)
        if setting is not None:
            torch.set_float32_matmul_precision(setting)

        def close() -> None:
            if before is not None:
                torch.set_float32_matmul_precision(before)

        def fn() -> None:
            torch.mm(a, b, out=c)

        def check() -> dict:
            fn()
            ref = a[:rows].double() @ b.double()
            return compare(c[:rows], ref, precision, scale=math.sqrt(k))

        note = f"float32_matmul_precision={setting}" if precision in ("fp32", "tf32") else ""
        return Prepared(fn, check, close, note)

    shape = (("m", m), ("k", k), ("n", n))
    return Case("gemm", shape, precision, impl, cost, footprint, build)


register(
    Operator(
        "gemm",
        ("m", "k", "n"),
        ("mm",),
        "gemm",
        gemm_case,
        label=lambda s: f"{s['m']}x{s['k']}x{s['n']}",
        marker="o",
        colour="blue",
    )
)
