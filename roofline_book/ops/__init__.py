"""深度学习算子的 FLOPs 与内存流量。

每个算子是一个返回 :class:`Cost` 的小纯函数。流量是按所描述结构实现的
kernel 在主存（HBM / DRAM）与芯片之间*至少*要搬运的字节数：每个 kernel
的每个输入读一次、每个输出写一次（必需流量，cache 为冷）。kernel 再次读取
的部分单独记在 ``Cost.reread_bytes``：它们可能由 cache 供给。一个 kernel
写出、下一个 kernel 读入的中间结果在两边都计入，尽管足够大的 L2 可能让它
不必到达 HBM。FLOPs 记明由哪种单元执行（:data:`~roofline_book.ops.cost.UNITS`
）：矩阵乘法在矩阵单元上，
elementwise 运算和归约在向量单元上，超越函数在特殊函数单元上。

记号：``s`` 是每个元素的字节数（:func:`roofline_book.dtypes.bytes_per_element`），
``I = FLOPs / bytes`` 是算术强度，单位 FLOP/byte。

NB：``torch.utils.flop_counter.FlopCounterMode`` 只统计矩阵乘法（mm、bmm、
addmm、baddbmm、卷积，以及 CUDA 上的 SDPA）。elementwise 算子、norm、softmax
和优化器步骤它都记为零，所以这些算子在各自 docstring 里写明的 FLOPs 计数约定
是本包自己的约定。
"""

from .attn import (
    ATTENTION_BACKWARD_IMPLS,
    ATTENTION_IMPLS,
    DEFAULT_SRAM_BYTES,
    FA3_SOURCE,
    FlashTile,
    attention,
    attention_backward,
    fa3_tile,
)
from .cost import UNITS, ZERO, Cost
from .matmul import gemm, linear_backward, tiled_gemm
from .mla import mla_attention
from .norms import layernorm, layernorm_backward, rmsnorm, rmsnorm_eager
from .optimizer import (
    ADAMW_IMPLS,
    MULTI_TENSOR_CHUNK,
    MULTI_TENSOR_MAX_BLOCKS,
    MULTI_TENSOR_MAX_BLOCKS_CUDA13,
    MULTI_TENSOR_MAX_TENSORS,
    MULTI_TENSOR_MAX_TENSORS_CUDA13,
    Pass,
    adamw,
    adamw_passes,
    multi_tensor_launches,
)
from .pointwise import (
    GELU_FLOPS_PER_ELEMENT,
    ROPE_FLOPS_PER_ELEMENT,
    SOFTMAX_FLOPS_PER_ELEMENT,
    SWIGLU_FLOPS_PER_ELEMENT,
    add,
    elementwise,
    gelu,
    relu,
    residual_add,
    rope,
    softmax,
    swiglu,
)

__all__ = [
    "ADAMW_IMPLS",
    "ATTENTION_BACKWARD_IMPLS",
    "ATTENTION_IMPLS",
    "DEFAULT_SRAM_BYTES",
    "FA3_SOURCE",
    "GELU_FLOPS_PER_ELEMENT",
    "MULTI_TENSOR_CHUNK",
    "MULTI_TENSOR_MAX_BLOCKS",
    "MULTI_TENSOR_MAX_BLOCKS_CUDA13",
    "MULTI_TENSOR_MAX_TENSORS",
    "MULTI_TENSOR_MAX_TENSORS_CUDA13",
    "ROPE_FLOPS_PER_ELEMENT",
    "SOFTMAX_FLOPS_PER_ELEMENT",
    "SWIGLU_FLOPS_PER_ELEMENT",
    "UNITS",
    "ZERO",
    "Cost",
    "FlashTile",
    "Pass",
    "adamw",
    "adamw_passes",
    "add",
    "attention",
    "attention_backward",
    "mla_attention",
    "elementwise",
    "fa3_tile",
    "gelu",
    "gemm",
    "layernorm",
    "layernorm_backward",
    "linear_backward",
    "multi_tensor_launches",
    "relu",
    "residual_add",
    "rmsnorm",
    "rmsnorm_eager",
    "rope",
    "softmax",
    "swiglu",
    "tiled_gemm",
]
