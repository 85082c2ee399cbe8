"""``torch.optim.AdamW`` 的一步，分 loop、foreach 和 fused 三种实现。"""

from __future__ import annotations

import warnings
from typing import Any

from .... import ops
from ...._base import validate as _validate
from ....dtypes import bytes_per_element
from ..registry import Case, Operator, Prepared, Unsupported, compare, power_text, register
from ._tensors import _generator, _randn, is_out_of_memory

ADAMW_HYPER: dict[str, Any] = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2}
"""所测 AdamW 一步的超参数（它们不改变代价）。"""

ADAMW_FLAGS: dict[str, dict[str, Any]] = {
    "loop": {"foreach": False},
    "foreach": {"foreach": True},
    "fused": {"fused": True},
}
"""每种实现对应的 ``torch.optim.AdamW`` 选项。"""


def _flags(impl: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in ADAMW_FLAGS[impl].items())


def adamw_case(params: int, tensors: int, *, impl: str, precision: str = "fp32") -> Case:
    """对分在 ``tensors`` 个等大 tensor 中的 ``params`` 个参数做一次 ``torch.optim.AdamW.step``。

    ``impl``：``"loop"`` （``foreach=False``）、``"foreach"`` （``foreach=True``）或 ``"fused"``
    （``fused=True``）。模型为 :func:`ops.adamw`。检查从同一状态出发，与 float64 的
    ``foreach=False`` AdamW 对照一步。
    """
    impl = _validate.choice("impl", impl, tuple(ADAMW_FLAGS))
    if params % tensors:
        raise ValueError(f"params ({params}) must be a multiple of tensors ({tensors})")
    cost = ops.adamw(params, impl, tensors=tensors, param_dtype=precision)
    footprint = 4 * params * bytes_per_element(precision) + 4 * 8 * params

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        size = params // tensors
        weights = [
            torch.nn.Parameter(_randn((size,), precision, device, gen)) for _ in range(tensors)
        ]
        grads = [_randn((size,), precision, device, gen) for _ in weights]
        for w, g in zip(weights, grads, strict=True):
            w.grad = g
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                opt = torch.optim.AdamW(weights, **ADAMW_HYPER, **ADAMW_FLAGS[impl])
        except (RuntimeError, ValueError, TypeError) as exc:
            raise Unsupported(f"AdamW({_flags(impl)}) on {device.type}: {exc}") from None
        if caught:
            raise Unsupported(f"AdamW({_flags(impl)}) warns: {caught[0].message}")

        def fn() -> None:
            opt.step()

        def check() -> dict:
            ref = [torch.nn.Parameter(w.detach().double().clone()) for w in weights]
            for r, g in zip(ref, grads, strict=True):
                r.grad = g.double()
            ref_opt = torch.optim.AdamW(ref, **ADAMW_HYPER, foreach=False)
            try:
                fn()
            except RuntimeError as exc:
                if is_out_of_memory(exc):
                    raise
                raise Unsupported(f"AdamW({_flags(impl)}).step on {device.type}: {exc}") from None
            ref_opt.step()
            got = torch.cat([w.detach().reshape(-1) for w in weights])
            want = torch.cat([r.detach().reshape(-1) for r in ref])
            return compare(got, want, precision, reference="fp64 AdamW(foreach=False)")

        return Prepared(fn, check)

    shape = (("params", params), ("tensors", tensors))
    return Case("adamw", shape, precision, impl, cost, footprint, build, inplace=True)


register(
    Operator(
        "adamw",
        ("params", "tensors"),
        tuple(ADAMW_FLAGS),
        "optimizer",
        adamw_case,
        label=lambda s: f"{power_text(s['params'])} in {s['tensors']}",
        marker="^",
        colour="purple",
    )
)
