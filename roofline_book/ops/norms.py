"""沿最后一维的归一化：RMSNorm（融合的与 eager 的）与 LayerNorm。"""

from __future__ import annotations

from .._base import validate as _validate
from .._base.validate import InvalidArgumentType
from ..dtypes import Precision, bytes_per_element
from .cost import Cost


def rmsnorm(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """对 ``rows x d`` 的激活沿最后一维做 RMSNorm。

    .. math:: y = \\frac{x}{\\sqrt{\\tfrac1d \\sum_i x_i^2 + \\epsilon}} \\odot \\gamma

    流量：读 ``x`` 一次，读权重 ``gamma`` （``d`` 个值）一次，写 ``y`` 一次。FLOPs（NB：这是
    本包的约定；FlopCounterMode 一次也不计）：每个元素一次平方、一次累加、一次乘以倒数平方根、
    一次乘以 ``gamma`` （4）；每行求均值、``+ eps`` 和倒数平方根（3）。平方根是每行唯一的一次
    特殊函数求值；其余是向量单元的工作。平方与累加是一个 FMA（``acc + x * x``）；
    两次乘法是普通的乘法。

    Examples
    --------
    Llama-7B 大小的激活，4096 个 token 乘 4096 个特征，BF16：

    >>> c = rmsnorm(4096, 4096, "bf16")
    >>> c.bytes == 2 * (2 * 4096 * 4096 + 4096)
    True
    >>> round(c.intensity, 2)               # about 4 FLOP per 4 bytes
    1.0
    >>> c.vector_slots == 3 * 4096 * 4096 + 2 * 4096    # one FMA and two multiplies per element
    True
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype, "weight_dtype")
    return Cost(
        flops=4 * rows * d + 3 * rows,
        bytes_read=s * rows * d + s_w * d,
        bytes_written=s * rows * d,
        vector_flops=4 * rows * d + 2 * rows,
        special_flops=rows,
        vector_fma_flops=2 * rows * d,
    )


def rmsnorm_eager(
    rows: int, d: int, dtype: Precision = "bf16", *, upcast: bool = True
) -> list[tuple[str, Cost]]:
    """用 eager PyTorch 写的 RMSNorm 的各个 kernel，每个运算一个，各带代价。

    顺序与常见的 Llama ``RMSNorm`` 模块相同：``upcast=True`` 时激活先转成 FP32，乘权重之前再
    转回 ``dtype``，所以大多数趟搬运的是 4 字节的元素；``upcast=False`` 时所有 tensor 都保持
    ``dtype``。每个 kernel 从内存读入输入、把输出写回内存：cache 为冷时这是必需流量，但足够小、
    能在两个 kernel 之间留在 L2 的中间结果可能不会到达 HBM。

    Examples
    --------
    >>> kernels = rmsnorm_eager(4096, 4096, "bf16")
    >>> [name for name, _ in kernels][:3]
    ['x.to(float32)', 'x.pow(2)', '.mean(-1)']
    >>> total = sum(c for _, c in kernels)
    >>> total.kernels, round(total.bytes / rmsnorm(4096, 4096, "bf16").bytes, 1)
    (8, 9.0)
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    if not isinstance(upcast, bool):
        raise InvalidArgumentType("upcast", f"must be True or False, got {upcast!r}")
    s = bytes_per_element(dtype)
    w = bytes_per_element("fp32") if upcast else s  # width of the intermediates
    n = rows * d

    def kernel(flops: int, read: int, written: int, special: int = 0) -> Cost:
        return Cost(flops, read, written, vector_flops=flops - special, special_flops=special)

    steps = [
        ("x.pow(2)", kernel(n, w * n, w * n)),
        (".mean(-1)", kernel(n + rows, w * n, w * rows)),
        ("+ eps", kernel(rows, w * rows, w * rows)),
        ("rsqrt", kernel(rows, w * rows, w * rows, special=rows)),
        ("x * r", kernel(n, w * (n + rows), w * n)),
    ]
    if upcast:
        steps.insert(0, ("x.to(float32)", Cost(0, s * n, w * n)))
        steps.append(("y.to(dtype)", Cost(0, w * n, s * n)))
    steps.append(("weight * y", kernel(n, s * (n + d), s * n)))
    return steps


def layernorm(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """对 ``rows x d`` 的激活沿最后一维做 LayerNorm，带权重与偏置。

    流量：读 ``x``、``gamma`` 和 ``beta`` 各一次，写 ``y`` 一次。FLOPs（NB：这是本包的约定）：每个元
    素求均值时的一次累加、减去均值、一次平方、求方差时的一次累加、乘以标准差的倒数、缩放与平移
    （7）；每行两次除以 ``d``、``+ eps`` 和倒数平方根（4）。每个元素有两对是 FMA：平方与求方差时的累
    加（``acc + x' * x'``），缩放与平移（``y * gamma + beta``）。NB：每行的两次除法算作向量工作，不
    算倒数；一行的量太小，无关紧要。

    Examples
    --------
    >>> c = layernorm(2, 8, "fp32")
    >>> c.flops, c.bytes_read, c.bytes_written    # 7*16 + 4*2; 4*(16 + 2*8); 4*16
    (120, 128, 64)
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype, "weight_dtype")
    return Cost(
        flops=7 * rows * d + 4 * rows,
        bytes_read=s * rows * d + 2 * s_w * d,
        bytes_written=s * rows * d,
        vector_flops=7 * rows * d + 3 * rows,
        special_flops=rows,
        vector_fma_flops=4 * rows * d,
    )


def layernorm_backward(
    rows: int, d: int, dtype: Precision = "bf16", *, weight_dtype: Precision | None = None
) -> Cost:
    """LayerNorm 的反向（``rows x d`` 的激活沿最后一维），带权重与偏置的梯度。

    按 PyTorch ``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
    weight, bias, output_mask)`` 的 schema：读 ``dY``、``X``、前向存下的每行 ``mean`` 与
    ``rstd``、``gamma``，写 ``dX``、``dgamma``、``dbeta``（``beta`` 本身不必读）。

    .. math::

        \\hat x = (x - \\mu)\\,r,\\quad g = dy\\,\\gamma,\\quad
        dx = r\\,\\bigl(g - \\overline{g} - \\hat x\\,\\overline{g \\hat x}\\bigr),\\quad
        d\\gamma = \\textstyle\\sum_{rows} dy\\,\\hat x,\\quad d\\beta = \\sum_{rows} dy

    FLOPs（NB：这是本包的约定）：每个元素 13 次，重算 ``x_hat`` （减、乘：2）、``g`` （1）、两个行内
    求和（``sum g`` 1，``sum g x_hat`` 2）、``dx`` （乘、两次减、乘 ``rstd``：4）、``dgamma`` 与
    ``dbeta`` 的累加（2 与 1）；每行两次除以 ``d`` 求两个均值（2）。其中三对是 FMA：
    ``sum g x_hat``、``dgamma`` 的累加、``dx`` 里的 ``(g - mean g) - x_hat * mean(g x_hat)``。
    流量是一趟融合 kernel 的必需流量；``mean`` 与 ``rstd`` 按 ``dtype`` 计（CPU 上如此；CUDA 对
    16 位输入存为 FP32，每行多 4 字节，下界仍成立）。PyTorch 的 CUDA 实现把 ``dX`` 与
    ``dgamma``/``dbeta`` 分成两个 kernel，后者再读一遍 ``dY`` 与 ``X``。

    Examples
    --------
    >>> c = layernorm_backward(2, 8, "fp32")
    >>> c.flops, c.bytes_read, c.bytes_written    # 13*16 + 2*2; 4*(2*16 + 2*2 + 8); 4*(16 + 2*8)
    (212, 176, 128)
    """
    rows = _validate.size("rows", rows)
    d = _validate.size("d", d)
    s = bytes_per_element(dtype)
    s_w = s if weight_dtype is None else bytes_per_element(weight_dtype, "weight_dtype")
    n = rows * d
    return Cost(
        flops=13 * n + 2 * rows,
        bytes_read=s * (2 * n + 2 * rows) + s_w * d,
        bytes_written=s * n + 2 * s_w * d,
        vector_flops=13 * n + 2 * rows,
        vector_fma_flops=6 * n,
    )
