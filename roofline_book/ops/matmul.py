"""矩阵乘法：GEMM、分块 GEMM 的流量，以及 linear layer 的反向。"""

from __future__ import annotations

from .._base import validate as _validate
from ..dtypes import Precision, bytes_per_element
from .cost import Cost


def gemm(
    m: int,
    k: int,
    n: int,
    dtype: Precision = "bf16",
    *,
    batch: int = 1,
    out_dtype: Precision | None = None,
) -> Cost:
    """矩阵乘法 ``C = A @ B``，``A`` 的形状为 (m, k)，``B`` 为 (k, n)。

    ``m * n`` 个输出各需 ``k`` 次乘法和 ``k`` 次加法，所以

    .. math:: \\text{FLOPs} = 2 m k n

    （NB：每个点积的最后一次加法其实用不着，精确值是 ``2k - 1``；``2k``
    是 PyTorch flop counter 和厂商峰值数字采用的约定。）若 ``A`` 与 ``B`` 各读
    一次、``C`` 写一次，最小流量为 ``s (mk + kn + mn)``。

    Parameters
    ----------
    m : int
        ``A`` 的行数，>= 1。
    k : int
        ``A`` 与 ``B`` 共有的维度（``A`` 的列数、``B`` 的行数），>= 1。
    n : int
        ``B`` 的列数，>= 1。
    dtype : str or torch.dtype
        ``A`` 与 ``B`` 的精度（未给 ``out_dtype`` 时也是 ``C`` 的精度）。
    batch : int
        这一形状的独立乘法的个数（``torch.bmm``）；两个操作数都带 batch 维。
    out_dtype : str or torch.dtype, optional
        ``C`` 的精度，与输入不同时给出。

    Returns
    -------
    Cost

    Examples
    --------
    本书的方阵 GEMM，n = 4096：

    >>> c = gemm(4096, 4096, 4096, "bf16")
    >>> c.flops                      # 2 * 4096**3
    137438953472
    >>> f"{c.flops:.2e}"
    '1.37e+11'

    方阵 GEMM 的 ``I = 2n^3 / (3 s n^2) = 2n / (3s)``；BF16（s = 2）、
    n = 4096 时为 8192 / 6：

    >>> round(c.intensity, 1)
    1365.3
    >>> gemm(4096, 4096, 4096, "fp32").intensity == c.intensity / 2
    True
    """
    m = _validate.size("m", m)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    batch = _validate.size("batch", batch)
    s_in = bytes_per_element(dtype)
    s_out = s_in if out_dtype is None else bytes_per_element(out_dtype, "out_dtype")
    return Cost(
        flops=2 * batch * m * k * n,
        bytes_read=batch * s_in * (m * k + k * n),
        bytes_written=batch * s_out * m * n,
    )


def tiled_gemm(m: int, k: int, n: int, tile: int, dtype: Precision = "bf16") -> Cost:
    """按 ``tile x tile`` 的输出块计算的 GEMM，各块之间不经 cache 共享任何数据。

    模型：``C`` （m x n）切成 ``ceil(m/T) * ceil(n/T)`` 个 ``T x T`` 的输出块。
    一个块的累加器在整个 ``k`` 循环中都留在片上；这个块从主存读入 ``A``
    中属于它的那几行（行数乘 ``k``）和 ``B`` 中属于它的那几列（``k`` 乘列数），
    并把自己那部分 ``C`` 写出一次。块与块之间不复用彼此取来的数据（L2 不命中），
    所以 ``A`` 被读 ``ceil(n/T)`` 次，``B`` 被读 ``ceil(m/T)`` 次：

    .. math:: \\text{bytes} = s\\,\\Big(k\\,\\big(m \\lceil n/T \\rceil
              + n \\lceil m/T \\rceil\\big) + m n\\Big)

    FLOPs 与 :func:`gemm` 相同，都是 ``2 m k n``：分块只改变流量，不改变运算量。
    对方阵 GEMM，若 ``T`` 整除 ``n``，流量为 ``s (2 n^3 / T + n^2)``，
    ``I = 2 n T / (s (2n + T))``。

    ``T`` 不必整除 ``m`` 或 ``n``：每行、每列的最后一块只覆盖剩下的行或列，
    也只读这些，向上取整计的就是这个。``T >= max(m, n)`` 时只有一个块，
    每个操作数读一次，代价与 :func:`gemm` 相同；``T = 1`` 时每个输出都要取
    ``A`` 的一整行和 ``B`` 的一整列，``I = 2k / (s (2k + 1))``，约为 ``1/s``。

    Parameters
    ----------
    m : int
        ``A`` 的行数，>= 1。
    k : int
        ``A`` 与 ``B`` 共有的维度，>= 1。
    n : int
        ``B`` 的列数，>= 1。
    tile : int
        方形输出块的边长 ``T`` （元素个数），>= 1；大于 ``m`` 或 ``n``
        表示那一边只有一个块。
    dtype : str or torch.dtype
        ``A``、``B`` 与 ``C`` 的精度（每个元素 ``s`` 字节）。

    Returns
    -------
    Cost
        一次 kernel launch；各个块就是它的 thread block。

    Examples
    --------
    一个块覆盖整个 ``C``，就是理想的 GEMM：

    >>> tiled_gemm(4096, 4096, 4096, 4096) == gemm(4096, 4096, 4096)
    True

    BF16、n = 4096 的乘法用 128 x 128 的块：``A`` 与 ``B`` 各读
    4096 / 128 = 32 次，所以 ``I = 2 * 4096 * 128 / (2 * (8192 + 128))``：

    >>> c = tiled_gemm(4096, 4096, 4096, 128)
    >>> c.flops == 2 * 4096**3, c.bytes == 2 * (2 * 4096**3 // 128 + 4096**2)
    (True, True)
    >>> round(c.intensity, 2)
    63.02

    每个块只有一个输出，``I = 2 * 4096 / (2 * 8193)``，约为 1/s：

    >>> round(tiled_gemm(4096, 4096, 4096, 1).intensity, 4)
    0.4999

    边缘不整齐：100 = 3 * 32 + 4，每边 4 个块，``A`` 与 ``B`` 各读 4 次，
    读入 ``2 * 64 * (100 * 4 + 100 * 4)`` 字节：

    >>> ragged = tiled_gemm(100, 64, 100, 32)
    >>> ragged.bytes_read, ragged.bytes_written
    (102400, 20000)
    """
    m = _validate.size("m", m)
    k = _validate.size("k", k)
    n = _validate.size("n", n)
    tile = _validate.size("tile", tile)
    s = bytes_per_element(dtype)
    a_reads, b_reads = -(-n // tile), -(-m // tile)  # ceil, in integers
    return Cost(
        flops=2 * m * k * n,
        bytes_read=s * k * (m * a_reads + n * b_reads),
        bytes_written=s * m * n,
    )


def linear_backward(
    tokens: int, in_features: int, out_features: int, dtype: Precision = "bf16"
) -> Cost:
    """``y = x @ W.T`` （``torch.nn.functional.linear``，无 bias）的反向。

    两个 GEMM：输入梯度 ``dx = dy @ W`` （tokens x out x in）和权重梯度
    ``dW = dy.T @ x`` （out x tokens x in），所以反向的 FLOPs 是前向的 2 倍，
    ``4 * tokens * in * out``。

    Examples
    --------
    >>> fwd = gemm(8, 16, 32)
    >>> linear_backward(8, 16, 32).flops == 2 * fwd.flops
    True
    """
    tokens = _validate.size("tokens", tokens)
    in_features = _validate.size("in_features", in_features)
    out_features = _validate.size("out_features", out_features)
    grad_input = gemm(tokens, out_features, in_features, dtype)
    grad_weight = gemm(out_features, tokens, in_features, dtype)
    return grad_input + grad_weight
