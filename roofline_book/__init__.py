"""roofline_book：FLOPs、内存流量、算术强度与 roofline 模型。

本书背后的模型。每一章算出的一切都来自这里，所以从书中复制的代码片段会得到同样的数字。

>>> from roofline_book import Cost, gemm, add, ridge_point, attainable, hardware, time_bound
>>> gemm(4096, 4096, 4096, "bf16").flops
137438953472
>>> add(1, "bf16").bytes
6
>>> ridge_point(100e12, 1e12)
100.0
>>> attainable(add(2**20).intensity, 100e12, 1e12) < 1e12
True
>>> hardware("h100-sxm").peak_flops("bf16") / 1e12   # NVIDIA's dense BF16, rated at 1830 MHz
989.4
>>> time_bound(add(2**20), hardware("h100-sxm")).resource
'hbm'
"""

from ._base.validate import InvalidArgument
from .devices.catalog import EXAMPLE, Ceiling, Hardware, Source, adhoc, catalog, hardware
from .dtypes import BYTES, bytes_per_element, precision_name
from .llm.block import LLAMA2_7B, DecoderConfig, block_ops
from .llm.config import model_from_config
from .ops import (
    Cost,
    FlashTile,
    Pass,
    adamw,
    adamw_passes,
    add,
    attention,
    attention_backward,
    elementwise,
    fa3_tile,
    gelu,
    gemm,
    layernorm,
    linear_backward,
    relu,
    residual_add,
    rmsnorm,
    rmsnorm_eager,
    rope,
    softmax,
    swiglu,
    tiled_gemm,
)
from .present.tables import (
    Row,
    block_table,
    cost_table,
    optimizer_table,
    table_frame,
)
from .roofline.bounds import Ceilings, Level, TimeBound, bound
from .roofline.roofs import (
    achieved,
    attainable,
    attainable_on,
    fraction_of_roof,
    gemm_tokens_to_ridge,
    overhead_fraction,
    ridge_point,
    roof_kind,
    square_gemm_size_to_ridge,
    time_bound,
    time_lower_bound,
)

__version__ = "0.1.0"

__all__ = [
    "BYTES",
    "EXAMPLE",
    "LLAMA2_7B",
    "Ceiling",
    "Cost",
    "DecoderConfig",
    "FlashTile",
    "Hardware",
    "InvalidArgument",
    "Pass",
    "Row",
    "Source",
    "Ceilings",
    "Level",
    "TimeBound",
    "achieved",
    "adamw",
    "adamw_passes",
    "add",
    "adhoc",
    "attainable",
    "attainable_on",
    "attention",
    "attention_backward",
    "block_ops",
    "block_table",
    "bound",
    "bytes_per_element",
    "catalog",
    "cost_table",
    "elementwise",
    "fa3_tile",
    "fraction_of_roof",
    "gelu",
    "gemm",
    "gemm_tokens_to_ridge",
    "hardware",
    "layernorm",
    "linear_backward",
    "model_from_config",
    "optimizer_table",
    "overhead_fraction",
    "precision_name",
    "relu",
    "residual_add",
    "ridge_point",
    "roof_kind",
    "rmsnorm",
    "rmsnorm_eager",
    "rope",
    "softmax",
    "square_gemm_size_to_ridge",
    "swiglu",
    "table_frame",
    "tiled_gemm",
    "time_bound",
    "time_lower_bound",
]
