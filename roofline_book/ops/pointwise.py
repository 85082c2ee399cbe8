"""elementwise 算子与 softmax：对各自的 tensor 各读写一趟（归一化见 :mod:`.norms`）。"""

from __future__ import annotations

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..dtypes import Precision, bytes_per_element
from .cost import Cost


def elementwise(
    numel: int,
    dtype: Precision = "bf16",
    *,
    inputs: int = 1,
    outputs: int = 1,
    flops_per_element: int = 1,
    special_per_element: int = 0,
    fma_per_element: int = 0,
) -> Cost:
    """一个 kernel，读 ``inputs`` 个、写 ``outputs`` 个 tensor，每个 ``numel`` 个元素。

    .. math:: \\text{bytes} = (\\text{inputs} + \\text{outputs})\\, s\\, N,
              \\qquad I = \\frac{\\text{flops per element}}{(\\text{inputs} + \\text{outputs})\\, s}

    Parameters
    ----------
    numel : int
        每个 tensor 的元素个数，>= 1。
    dtype : str or torch.dtype
        所有 tensor 的精度。
    inputs : int
        读取的 tensor 个数，>= 1。
    outputs : int
        写出的 tensor 个数，>= 0（``x.add_(y)`` 这样的原地更新读两个 tensor、写一个）。
    flops_per_element : int
        每个输出元素的 FLOPs（>= 0）。FlopCounterMode 把这些运算记为零；这里的约定是
        每次算术运算计 1。
    special_per_element : int
        其中有几次是特殊函数求值（exp、tanh、rsqrt，以及 IEEE 除法编译成的倒数），在特殊函数单元上计
        算；其余在向量单元上运行。这里没有任何运算在矩阵单元上。
    fma_per_element : int
        向量 FLOPs 中有几次配成 fused multiply-add，每个 FMA 计 2（所以是偶数）；见
        :class:`~roofline_book.ops.Cost` 的 ``vector_fma_flops``。

    Examples
    --------
    >>> c = elementwise(10, "fp32", inputs=3, outputs=1, flops_per_element=2)
    >>> c.bytes, c.flops_by_unit
    (160, {'matrix': 0, 'vector': 20, 'special': 0})
    >>> elementwise(10, "fp32", inputs=3, flops_per_element=2, fma_per_element=2).vector_slots
    10
    """
    numel = _validate.size("numel", numel)
    inputs = _validate.size("inputs", inputs, minimum=1)
    outputs = _validate.size("outputs", outputs, minimum=0)
    flops_per_element = _validate.size("flops_per_element", flops_per_element, minimum=0)
    special_per_element = _validate.size("special_per_element", special_per_element, minimum=0)
    fma_per_element = _validate.size("fma_per_element", fma_per_element, minimum=0)
    if special_per_element > flops_per_element:
        raise InvalidArgument(
            "special_per_element",
            f"must be <= flops_per_element ({flops_per_element}), got {special_per_element}",
        )
    vector = flops_per_element - special_per_element
    if fma_per_element > vector or fma_per_element % 2:
        raise InvalidArgument(
            "fma_per_element",
            f"must be an even number <= the vector FLOPs per element "
            f"({vector}), 2 per FMA; got {fma_per_element}",
        )
    s = bytes_per_element(dtype)
    return Cost(
        flops=flops_per_element * numel,
        bytes_read=inputs * s * numel,
        bytes_written=outputs * s * numel,
        vector_flops=vector * numel,
        special_flops=special_per_element * numel,
        vector_fma_flops=fma_per_element * numel,
    )


def add(numel: int, dtype: Precision = "bf16") -> Cost:
    """对 ``numel`` 个元素做 ``z = x + y``：每个元素 1 FLOP，读两次、写一次。

    Examples
    --------
    每个 BF16 元素：读 x（2 字节），读 y（2），写 z（2），1 个 FLOP 对 6 字节，所以 ``I = 1/6``：

    >>> per_element = add(1, "bf16")
    >>> per_element.bytes_read, per_element.bytes_written, per_element.bytes
    (4, 2, 6)
    >>> round(add(2**20).intensity, 2)
    0.17
    >>> add(10**6).bytes                            # 6 N bytes
    6000000
    """
    return elementwise(numel, dtype, inputs=2, outputs=1, flops_per_element=1)


def residual_add(numel: int, dtype: Precision = "bf16") -> Cost:
    """``y = x + f(x)``，Transformer block 的 skip connection；代价与 :func:`add` 相同。

    Examples
    --------
    >>> residual_add(4096 * 4096) == add(4096 * 4096)
    True
    """
    return add(numel, dtype)


def relu(numel: int, dtype: Precision = "bf16") -> Cost:
    """``y = max(x, 0)``：每个元素一个输入、一个输出、一个 FLOP（一次比较）。

    Examples
    --------
    >>> relu(1, "bf16").bytes, relu(2**20, "bf16").intensity
    (4, 0.25)
    """
    return elementwise(numel, dtype, inputs=1, outputs=1, flops_per_element=1)


#: tanh 形式的 GELU ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` 每个元素的 FLOPs：
#: x^3（2），括号内的缩放与加法（2），乘 sqrt(2/pi)（1），tanh（1，NB：一次超越函数计为
#: 一个 FLOP，在特殊函数单元上），外层的加法与两次乘法（3）。
GELU_FLOPS_PER_ELEMENT = 9

#: 其中配成 FMA 的 FLOPs：``0.044715 x^3 + x`` 是先乘后加（一个 FMA，2 FLOP）。外面的
#: ``0.5 x (1 + t)`` 是先加后乘，所以不配对。
GELU_FMA_FLOPS_PER_ELEMENT = 2


def gelu(numel: int, dtype: Precision = "bf16") -> Cost:
    """GELU 激活，tanh 形式；见 :data:`~roofline_book.ops.pointwise.GELU_FLOPS_PER_ELEMENT`。

    Examples
    --------
    即使每个元素 9 个 FLOP，GELU 仍远在任何 GPU 的 ridge point 左边：

    >>> gelu(2**20, "bf16").intensity
    2.25
    """
    return elementwise(
        numel,
        dtype,
        inputs=1,
        outputs=1,
        flops_per_element=GELU_FLOPS_PER_ELEMENT,
        special_per_element=1,
        fma_per_element=GELU_FMA_FLOPS_PER_ELEMENT,
    )


#: ``silu(gate) * up`` 每个元素的 FLOPs。sigmoid ``1 / (1 + exp(-g))`` 计 4（取负、exp、
#: 加、除），乘以 ``g`` 计 1，乘以 ``up`` 计 1。
SWIGLU_FLOPS_PER_ELEMENT = 6

#: 其中的特殊函数求值：exp 与除法。PyTorch 构建时不开 fast math，所以 IEEE 的 ``a / b`` 编译成
#: 特殊函数单元上的一次倒数（MUFU.RCP）和修正它的几个 FMA（NB：这些 FMA 不计，所以下界仍是下界）。
#: SwiGLU 没有先乘后加的 FLOP，所以一个也不标为 FMA。
SWIGLU_SPECIAL_PER_ELEMENT = 2


def swiglu(numel: int, dtype: Precision = "bf16") -> Cost:
    """SwiGLU MLP 的门控激活 ``silu(gate) * up``：两个输入，一个输出。

    Examples
    --------
    >>> swiglu(1, "bf16").bytes      # read gate, read up, write the product
    6
    """
    return elementwise(
        numel,
        dtype,
        inputs=2,
        outputs=1,
        flops_per_element=SWIGLU_FLOPS_PER_ELEMENT,
        special_per_element=SWIGLU_SPECIAL_PER_ELEMENT,
    )


#: 旋转位置编码 ``x * cos + rotate_half(x) * sin`` 中 Q 或 K 每个元素的 FLOPs：两次乘法、
#: 一次加法。NB：Hugging Face 的 ``apply_rotary_pos_emb`` 还把每个 head 的一半取负
#: （``rotate_half`` 中的 ``-x2``），融合 kernel 把这个符号并入减法，所以不计。
ROPE_FLOPS_PER_ELEMENT = 3

#: 其中配成 FMA 的 FLOPs：``x * cos`` 是一次乘法，``+ rotate_half(x) * sin`` 是先乘后加（一个
#: FMA，2 FLOP），所以每个元素占 2 个 lane slot。
ROPE_FMA_FLOPS_PER_ELEMENT = 2


def rope(
    tokens: int,
    heads: int,
    head_dim: int,
    dtype: Precision = "bf16",
    *,
    kv_heads: int | None = None,
) -> Cost:
    """对 Q 和 K 做旋转位置编码（RoPE），一个融合 kernel。

    ``Q`` 和 ``K`` 的每个元素做 ``x * cos + rotate_half(x) * sin``
    （:data:`~roofline_book.ops.pointwise.ROPE_FLOPS_PER_ELEMENT`
    ，全是向量单元的工作：一次乘法和一个 FMA，即
    :data:`~roofline_book.ops.pointwise.ROPE_FMA_FLOPS_PER_ELEMENT`）。必需流量：读 ``Q``
    （``tokens x heads x head_dim``）、``K`` （``tokens x kv_heads x head_dim``）以及 ``cos`` 和
    ``sin`` 两张表（各 ``tokens x head_dim``，所有 head 共用，精度为 ``dtype``），写出旋转后的
    ``Q`` 和 ``K``：

    .. math:: \\text{bytes} = s\\,\\big(2\\,t\\,(h + h_{kv})\\,d + 2\\,t\\,d\\big)

    这是 Hugging Face ``apply_rotary_pos_emb`` （Llama）的计法：它计算
    ``q * cos + rotate_half(q) * sin``，对 ``k`` 也一样，``cos`` 和 ``sin`` 的 shape 为
    (batch, seq, head_dim)，转换为激活的精度。eager 运行时每个 tensor 五个 kernel（``-x2``、
    ``cat``、两次乘法、一次加法），共十个，每个都读写自己的操作数；这里的 Cost 是它们融合成的
    单个 kernel，即下界。生成这两张表（每次前向一次，各层共用）不计入。

    Parameters
    ----------
    tokens : int
    heads : int
    head_dim : int
    dtype : str or torch.dtype
    kv_heads : int, optional

    Returns
    -------
    Cost

    Examples
    --------
    Llama-2-7B 的一层，4096 个 token：Q 和 K 各为 4096 x 32 x 128，两张表各为 4096 x 128，全部
    BF16。2 * 4096 * 4096 个元素每个 3 FLOP；读入 2 * (2 * 4096**2 + 2 * 4096 * 128) 字节，
    写出 2 * 2 * 4096**2 字节：

    >>> c = rope(4096, 32, 128)
    >>> c.flops, c.bytes_read, c.bytes_written
    (100663296, 69206016, 67108864)
    >>> c.flops_by_unit["vector"] == c.flops, round(c.intensity, 2)
    (True, 0.74)
    >>> c.vector_slots == 2 * 2 * 4096 * 4096      # a multiply and an FMA per element
    True
    """
    tokens = _validate.size("tokens", tokens)
    heads = _validate.size("heads", heads)
    head_dim = _validate.size("head_dim", head_dim, minimum=2)
    if head_dim % 2:
        raise InvalidArgument("head_dim", f"must be even (RoPE rotates pairs), got {head_dim}")
    kv_heads = heads if kv_heads is None else _validate.size("kv_heads", kv_heads)
    s = bytes_per_element(dtype)
    rotated = tokens * (heads + kv_heads) * head_dim  # elements of Q and K
    flops = ROPE_FLOPS_PER_ELEMENT * rotated
    return Cost(
        flops=flops,
        bytes_read=s * (rotated + 2 * tokens * head_dim),
        bytes_written=s * rotated,
        vector_flops=flops,
        vector_fma_flops=ROPE_FMA_FLOPS_PER_ELEMENT * rotated,
    )


# --------------------------------------------------------------------------
# Softmax


#: 数值稳定的 softmax 每个元素的 FLOPs：求 running max、相减、exp（NB：计为一个，在特殊
#: 函数单元上）、累加进 sum、乘以行和的倒数。
SOFTMAX_FLOPS_PER_ELEMENT = 5

#: 其中的特殊函数求值：exp 一次。最少的 kernel 每行求一次行和的倒数，再逐元素乘它（向量单元上的
#: 乘法；NB：每行那一次倒数不计，下界只会偏低）。下界取这个最少的次数。
SOFTMAX_SPECIAL_PER_ELEMENT = 1

#: PyTorch 自己的 CUDA softmax kernel 每个元素的特殊函数求值：exp 两次、倒数一次。ATen
#: ``aten/src/ATen/native/cuda/SoftMax.cu`` 在求和那一趟算一次 exp（``SumExpFloat``：
#: ``sum + std::exp(v - max_k)``），写出时又算一次（``SoftMaxForwardEpilogue``：
#: ``std::exp(input - max_input) / sum``），那次除法是 IEEE 除法（不开 fast math），编译成特殊函数
#: 单元上的一次倒数（MUFU.RCP）。:func:`~roofline_book.ops.softmax` 不用它：它是一个 kernel
#: 的做法，不是下界。
SOFTMAX_SPECIAL_PER_ELEMENT_ATEN = 3


def softmax(rows: int, cols: int, dtype: Precision = "bf16") -> Cost:
    """沿 ``rows x cols`` tensor 的最后一维做 softmax，一个融合 kernel。

    每行读一次、写一次（一行装得进片上，或 online softmax 一趟算出 max 和 sum）；见
    :data:`~roofline_book.ops.pointwise.SOFTMAX_FLOPS_PER_ELEMENT`。每个元素一次 exp
    （:data:`~roofline_book.ops.pointwise.SOFTMAX_SPECIAL_PER_ELEMENT`），其余在向量单元上：这是
    最少的 kernel 的计法，所以是下界。PyTorch 自己的 kernel 每个元素做
    :data:`~roofline_book.ops.pointwise.SOFTMAX_SPECIAL_PER_ELEMENT_ATEN` 次特殊函数求值。

    Examples
    --------
    >>> c = softmax(4, 8, "fp32")
    >>> c.flops, c.bytes, c.special_flops       # one exp per element
    (160, 256, 32)
    """
    rows = _validate.size("rows", rows)
    cols = _validate.size("cols", cols)
    return elementwise(
        rows * cols,
        dtype,
        inputs=1,
        outputs=1,
        flops_per_element=SOFTMAX_FLOPS_PER_ELEMENT,
        special_per_element=SOFTMAX_SPECIAL_PER_ELEMENT,
    )
