"""roofline_book: FLOPs, memory traffic, arithmetic intensity and the roofline model.

The models behind the book. Everything a chapter computes comes from here, so
a snippet copied from the book gives the same numbers.

>>> from roofline_book import Cost, gemm, add, ridge_point, attainable, hardware
>>> gemm(4096, 4096, 4096, "bf16").flops
137438953472
>>> add(1, "bf16").bytes
6
>>> ridge_point(100e12, 1e12)
100.0
>>> attainable(add(2**20).intensity, 100e12, 1e12) < 1e12
True
>>> hardware("h100-sxm").peak_flops("bf16")
989500000000000.0
"""

from .dtypes import BYTES, bytes_per_element, precision_name
from .hardware import EXAMPLE, Hardware, Source, adhoc, catalog, hardware
from .ops import (
    Cost,
    Pass,
    adamw,
    adamw_passes,
    add,
    attention,
    elementwise,
    gelu,
    gemm,
    layernorm,
    linear_backward,
    relu,
    residual_add,
    rmsnorm,
    softmax,
    swiglu,
)
from .roofline import (
    TimeBound,
    achieved,
    attainable,
    bound,
    fraction_of_roof,
    ridge_point,
    time_lower_bound,
)
from .transformer import LLAMA2_7B, DecoderConfig, block_ops, block_table, optimizer_table

__version__ = "0.1.0"

__all__ = [
    "BYTES",
    "EXAMPLE",
    "LLAMA2_7B",
    "Cost",
    "DecoderConfig",
    "Hardware",
    "Pass",
    "Source",
    "TimeBound",
    "achieved",
    "adamw",
    "adamw_passes",
    "add",
    "adhoc",
    "attainable",
    "attention",
    "block_ops",
    "block_table",
    "bound",
    "bytes_per_element",
    "catalog",
    "elementwise",
    "fraction_of_roof",
    "gelu",
    "gemm",
    "hardware",
    "layernorm",
    "linear_backward",
    "optimizer_table",
    "precision_name",
    "relu",
    "residual_add",
    "ridge_point",
    "rmsnorm",
    "softmax",
    "swiglu",
    "time_lower_bound",
]
