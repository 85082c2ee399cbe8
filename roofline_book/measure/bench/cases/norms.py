"""沿最后一维的 RMSNorm、softmax 与 LayerNorm 的反向。"""

from __future__ import annotations

from .... import ops
from ....dtypes import bytes_per_element
from ..registry import Case, Operator, Prepared, Unsupported, compare, register
from ._tensors import CHECK_ROWS, _generator, _randn

RMSNORM_EPS = 1e-6
"""所测 RMSNorm 的 epsilon。"""


def rmsnorm_case(rows: int, d: int, *, impl: str = "rms_norm", precision: str = "fp32") -> Case:
    """沿最后一维的 ``torch.nn.functional.rms_norm``；模型为 :func:`ops.rmsnorm`。

    需要 torch >= 2.4（更早的版本跳过）。每次调用都分配输出，与模型前向时一样。
    """
    cost = ops.rmsnorm(rows, d, precision)
    footprint = (
        cost.bytes + rows * d * bytes_per_element(precision) + 8 * 3 * min(rows, CHECK_ROWS) * d
    )

    def build(device) -> Prepared:
        import torch

        rms_norm = getattr(torch.nn.functional, "rms_norm", None)
        if rms_norm is None:
            raise Unsupported(
                f"torch.nn.functional.rms_norm needs torch >= 2.4 ({torch.__version__})"
            )
        gen = _generator(device)
        x = _randn((rows, d), precision, device, gen)
        w = _randn((d,), precision, device, gen)
        box = {}

        def fn() -> None:
            box["y"] = rms_norm(x, (d,), w, RMSNORM_EPS)

        def check() -> dict:
            fn()
            r = min(rows, CHECK_ROWS)
            xs = x[:r].double()
            ref = xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + RMSNORM_EPS) * w.double()
            return compare(box["y"][:r], ref, precision)

        return Prepared(fn, check, note="output allocated per call")

    kernels = ops.rmsnorm_eager(rows, d, precision, upcast=precision != "fp32")
    composite = sum((c for _, c in kernels), ops.Cost(0, 0, 0, 0))
    shape = (("rows", rows), ("d", d))
    return Case("rmsnorm", shape, precision, impl, cost, footprint, build, implementation=composite)


def softmax_case(rows: int, cols: int, *, impl: str = "softmax", precision: str = "fp32") -> Case:
    """``torch.softmax(x, -1, out=y)``；模型为 :func:`ops.softmax`。"""
    cost = ops.softmax(rows, cols, precision)
    footprint = cost.bytes + 8 * 2 * min(rows, CHECK_ROWS) * cols

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((rows, cols), precision, device, gen)
        y = torch.empty_like(x)

        def fn() -> None:
            torch.softmax(x, -1, out=y)

        def check() -> dict:
            fn()
            r = min(rows, CHECK_ROWS)
            return compare(y[:r], torch.softmax(x[:r].double(), -1), precision, scale=1 / cols)

        return Prepared(fn, check)

    shape = (("rows", rows), ("cols", cols))
    return Case("softmax", shape, precision, impl, cost, footprint, build)


LAYERNORM_EPS = 1e-5
"""所测 LayerNorm 的 epsilon（``torch.nn.LayerNorm`` 的默认值）。"""


def layernorm_backward_case(
    rows: int, d: int, *, impl: str = "native_layer_norm_backward", precision: str = "fp32"
) -> Case:
    """``aten::native_layer_norm_backward``，求 dX、dgamma、dbeta；模型为
    :func:`ops.layernorm_backward <roofline_book.ops.norms.layernorm_backward>`。

    mean 与 rstd 由前向（``native_layer_norm``）先算好，不计时。每次调用都分配三个梯度。
    """
    cost = ops.norms.layernorm_backward(rows, d, precision)
    footprint = cost.bytes + 8 * 6 * min(rows, CHECK_ROWS) * d

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((rows, d), precision, device, gen)
        dy = _randn((rows, d), precision, device, gen)
        w = _randn((d,), precision, device, gen)
        b = _randn((d,), precision, device, gen)
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, [d], w, b, LAYERNORM_EPS)
        box = {}

        def fn() -> None:
            box["dx"] = torch.ops.aten.native_layer_norm_backward(
                dy, x, [d], mean, rstd, w, b, [True, True, True]
            )[0]

        def check() -> dict:
            fn()
            r = min(rows, CHECK_ROWS)
            xs, g = x[:r].double(), dy[:r].double() * w.double()
            centred = xs - xs.mean(-1, keepdim=True)
            rs = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + LAYERNORM_EPS)
            xh = centred * rs
            mean_g, mean_gx = g.mean(-1, keepdim=True), (g * xh).mean(-1, keepdim=True)
            ref = rs * (g - mean_g - xh * mean_gx)
            # |dx| reaches about 8 with unit-normal dY, X and gamma
            return compare(box["dx"][:r], ref, precision, scale=8.0)

        return Prepared(fn, check, note="gradients allocated per call")

    shape = (("rows", rows), ("d", d))
    return Case("layernorm_backward", shape, precision, impl, cost, footprint, build)


register(Operator("rmsnorm", ("rows", "d"), ("rms_norm",), "norm", rmsnorm_case, marker="D",
                  colour="green"))  # fmt: skip
register(Operator("softmax", ("rows", "cols"), ("softmax",), "norm", softmax_case, marker="D",
                  colour="sky"))  # fmt: skip
register(Operator("layernorm_backward", ("rows", "d"), ("native_layer_norm_backward",), "norm",
                  layernorm_backward_case, marker="D", colour="orange"))  # fmt: skip
