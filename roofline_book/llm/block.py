"""一个 Transformer decoder block 的各个算子，以及对它的权重做的优化器一步。

block 是 Llama 式的 pre-norm block：RMSNorm、融合的 QKV 投影、Q 与 K 的旋转位置编码（RoPE）、
attention、输出投影和一次 residual add；然后是 RMSNorm、SwiGLU MLP 的 gate 与 up 投影、门控激活、
down 投影和第二次 residual add。只含前向。对 block 参数做的优化器一步单独列出，因为它每个训练步
运行一次，而不是每次前向运行一次。放到某块设备上，它们就成为表格
（:func:`roofline_book.present.tables.block_table`、:func:`roofline_book.present.tables.optimizer_table`）。

Examples
--------
>>> [name for name, _ in block_ops(LLAMA2_7B)][:4]
['attention norm (RMSNorm)', 'QKV projection', 'rotary embedding (RoPE)', 'attention (flash)']
>>> [name for name, _ in optimizer_ops(LLAMA2_7B)]
['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)']
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..dtypes import Precision, precision_name
from ..ops import (
    ADAMW_IMPLS,
    ATTENTION_IMPLS,
    DEFAULT_SRAM_BYTES,
    Cost,
    FlashTile,
    adamw,
    attention,
    gemm,
    residual_add,
    rmsnorm,
    rope,
    swiglu,
)


@dataclass(frozen=True)
class DecoderConfig:
    """一个 decoder block 的各个尺寸，以及它处理的 batch。

    Parameters
    ----------
    batch : int
        序列数。
    seq : int
        每条序列的 token 数。
    hidden : int
        模型宽度 ``d_model``；必须能被 ``heads`` 整除。
    heads : int
        attention head 数。
    ffn : int
        MLP 隐藏层的宽度。
    dtype : str
        权重与激活的精度。
    causal : bool
        causal self-attention（decoder 的默认）。
    """

    batch: int
    seq: int
    hidden: int
    heads: int
    ffn: int
    dtype: str = "bf16"
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("batch", "seq", "hidden", "heads", "ffn"):
            _validate.size(name, getattr(self, name))
        if self.hidden % self.heads:
            raise InvalidArgument(
                "hidden", f"({self.hidden}) must be divisible by heads ({self.heads})"
            )
        object.__setattr__(self, "dtype", precision_name(self.dtype))
        if not isinstance(self.causal, bool):
            raise InvalidArgumentType("causal", f"must be True or False, got {self.causal!r}")

    @property
    def tokens(self) -> int:
        """每个激活矩阵的行数，``batch * seq``。"""
        return self.batch * self.seq

    @property
    def head_dim(self) -> int:
        """一个 head 的宽度，``hidden / heads``。"""
        return self.hidden // self.heads

    @property
    def parameters(self) -> int:
        """block 的权重个数（QKV、输出、gate、up、down 投影，以及两个 norm 权重）。

        Examples
        --------
        >>> LLAMA2_7B.parameters             # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        h, f = self.hidden, self.ffn
        return 4 * h * h + 3 * h * f + 2 * h


#: Llama-2-7B 的一个 block，序列长度 4096，batch 1，BF16。
LLAMA2_7B = DecoderConfig(batch=1, seq=4096, hidden=4096, heads=32, ffn=11008)


#: :func:`block_ops` 与 :func:`optimizer_ops` 各算子的稳定标识（命令行 ``--json`` 中的 ``id``），
#: 按显示用的名字查找：名字可以改写，标识不变。attention 的实现另有一个字段，不进标识。
BLOCK_OP_KEYS = {
    "attention norm (RMSNorm)": "attention_norm",
    "QKV projection": "qkv_projection",
    "rotary embedding (RoPE)": "rope",
    **{f"attention ({impl})": "attention" for impl in ATTENTION_IMPLS},
    "output projection": "output_projection",
    "residual add": "residual_add",
    "MLP norm (RMSNorm)": "mlp_norm",
    "MLP gate projection": "mlp_gate_projection",
    "MLP up projection": "mlp_up_projection",
    "activation (SwiGLU)": "activation",
    "MLP down projection": "mlp_down_projection",
    "residual add (MLP)": "mlp_residual_add",
    **{f"AdamW ({impl})": f"adamw_{impl}" for impl in ADAMW_IMPLS},
}


def block_ops(
    config: DecoderConfig,
    *,
    attention_impl: str = "flash",
    sram_bytes: int = DEFAULT_SRAM_BYTES,
    tile: FlashTile | None = None,
) -> list[tuple[str, Cost]]:
    """一个 block 的前向算子，按执行顺序排列，各带代价。

    每个算子是一个单独的 kernel。RoPE 单独成一行，与 Hugging Face eager 代码的运行方式相同；
    融合的 kernel 常在 QKV 投影的 epilogue 或 attention kernel 内部完成它，这样省去它的流量
    （多一次 Q 与 K 的读写），但省不掉它的 FLOPs。``sram_bytes`` 与 ``tile`` 交给 flash kernel
    （:func:`roofline_book.ops.attention`）。

    Examples
    --------
    各投影的 FLOPs 之和是 2 x token 数 x 权重数：

    >>> ops = dict(block_ops(LLAMA2_7B))
    >>> gemms = [c for name, c in ops.items() if "projection" in name]
    >>> sum(c.flops for c in gemms) == 2 * 4096 * (4 * 4096**2 + 3 * 4096 * 11008)
    True
    """
    if not isinstance(config, DecoderConfig):
        raise InvalidArgumentType("config", f"must be a DecoderConfig, got {type(config).__name__}")
    attention_impl = _validate.choice("attention_impl", attention_impl, ATTENTION_IMPLS)
    t, h, f, s = config.tokens, config.hidden, config.ffn, config.dtype
    attn = attention(
        config.batch,
        config.heads,
        config.seq,
        config.seq,
        config.head_dim,
        s,
        impl=attention_impl,
        causal=config.causal,
        sram_bytes=sram_bytes,
        tile=tile,
    )
    return [
        ("attention norm (RMSNorm)", rmsnorm(t, h, s)),
        ("QKV projection", gemm(t, h, 3 * h, s)),
        ("rotary embedding (RoPE)", rope(t, config.heads, config.head_dim, s)),
        (f"attention ({attention_impl.strip().lower()})", attn),
        ("output projection", gemm(t, h, h, s)),
        ("residual add", residual_add(t * h, s)),
        ("MLP norm (RMSNorm)", rmsnorm(t, h, s)),
        ("MLP gate projection", gemm(t, h, f, s)),
        ("MLP up projection", gemm(t, h, f, s)),
        ("activation (SwiGLU)", swiglu(t * f, s)),
        ("MLP down projection", gemm(t, f, h, s)),
        ("residual add (MLP)", residual_add(t * h, s)),
    ]


def optimizer_ops(
    config: DecoderConfig,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
) -> list[tuple[str, Cost]]:
    """对 block 的参数做一步 AdamW，每种实现一项，各带代价。

    block 的权重是 7 个 tensor（5 个投影，2 个 norm 权重）。

    Examples
    --------
    三种实现的 FLOPs 相同：

    >>> len({c.flops for _, c in optimizer_ops(LLAMA2_7B)})
    1
    """
    if not isinstance(config, DecoderConfig):
        raise InvalidArgumentType("config", f"must be a DecoderConfig, got {type(config).__name__}")
    return [
        (
            f"AdamW ({impl})",
            adamw(
                config.parameters,
                impl,
                tensors=7,
                param_dtype=param_dtype,
                grad_dtype=grad_dtype,
                state_dtype=state_dtype,
                model_dtype=model_dtype,
            ),
        )
        for impl in ADAMW_IMPLS
    ]
