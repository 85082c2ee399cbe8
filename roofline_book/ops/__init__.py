"""FLOPs and memory traffic of deep-learning operators.

Every operator is a small pure function that returns a :class:`Cost`. The
traffic is the *minimum* a kernel of the described structure must move
between main memory (HBM / DRAM) and the chip: each input read once, each
output written once, per kernel (compulsory traffic, with a cold cache).
Reads a kernel makes again are kept apart (``Cost.reread_bytes``): a
cache may serve them. An intermediate that one kernel writes and the next
reads counts in both, though an L2 large enough to hold it may keep it from
HBM. The FLOPs say which unit runs them (:data:`UNITS`): matrix products on
the matrix units, elementwise arithmetic and reductions on the vector
units, transcendentals on the special function units.

Notation: ``s`` is bytes per element (:func:`roofline_book.dtypes.bytes_per_element`),
``I = FLOPs / bytes`` the arithmetic intensity in FLOP/byte.

NB: ``torch.utils.flop_counter.FlopCounterMode`` counts matrix products only
(mm, bmm, addmm, baddbmm, convolutions and, on CUDA, SDPA). It reports zero for
elementwise operators, norms, softmax and optimizer steps, so for those the
FLOP conventions stated in each docstring are this package's own.
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
    layernorm,
    relu,
    residual_add,
    rmsnorm,
    rmsnorm_eager,
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
    "elementwise",
    "fa3_tile",
    "gelu",
    "gemm",
    "layernorm",
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
