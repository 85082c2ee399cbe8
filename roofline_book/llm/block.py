"""一个 decoder block 的一次前向（任何目录中的模型的一层），以及对它的权重做的优化器一步。

block 是模型的一层（:class:`~roofline_book.llm.shape.ModelConfig`）按 Hugging Face 建模代码
逐模块运行的前向：:func:`~roofline_book.llm.layers.layer_ops` 的 ``kernels="eager"``。对 block
参数做的优化器一步单独列出，因为它每个训练步运行一次，而不是每次前向运行一次。放到某块设备上，
它们就成为表格（:func:`roofline_book.present.tables.block_table`、
:func:`roofline_book.present.tables.optimizer_table`）。

Examples
--------
>>> [name for name, _ in block_ops(LLAMA2_7B)][:4]
['attention norm (RMSNorm)', 'QKV projection', 'rotary embedding (RoPE)', 'attention (flash)']
>>> [name for name, _ in optimizer_ops(LLAMA2_7B)]
['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)']
>>> Block(model("mistral-7b"), seq=8192).parameters == model("mistral-7b").layer_parameters()
True
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgumentType
from ..dtypes import Precision, precision_name
from ..ops import ADAMW_IMPLS, DEFAULT_SRAM_BYTES, FlashTile, adamw
from .config import ModelConfig, adhoc_model, model
from .layers import Op, layer_ops
from .quantization import Precisions


@dataclass(frozen=True)
class Block:
    """一个模型的一层，以及它在一次前向中处理的 batch。

    Parameters
    ----------
    model : roofline_book.llm.shape.ModelConfig
        模型（目录中的，或 :func:`~roofline_book.llm.config.adhoc_model` 建的）。
    batch : int
        序列数。
    seq : int
        每条序列的 token 数。
    dtype : str
        权重与激活的精度。
    causal : bool
        causal self-attention（decoder 的默认）。
    layer : int
        第几层（从 0 数起）：模型既有 sliding-window 层又有 global 层时选其中一种。
    """

    model: ModelConfig
    batch: int = 1
    seq: int = 4096
    dtype: str = "bf16"
    causal: bool = True
    layer: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.model, ModelConfig):
            raise InvalidArgumentType(
                "model", f"must be a ModelConfig, got {type(self.model).__name__}"
            )
        _validate.size("batch", self.batch)
        _validate.size("seq", self.seq)
        object.__setattr__(self, "dtype", precision_name(self.dtype))
        if not isinstance(self.causal, bool):
            raise InvalidArgumentType("causal", f"must be True or False, got {self.causal!r}")
        self.model.layer_kind(self.layer)  # checks the layer

    @property
    def hidden(self) -> int:
        """模型宽度 ``d_model``。"""
        return self.model.hidden

    @property
    def heads(self) -> int:
        """query head 数。"""
        return self.model.heads

    @property
    def ffn(self) -> int:
        """MLP 隐藏层的宽度（MoE 时为每个 expert 的宽度）。"""
        return self.model.ffn

    @property
    def head_dim(self) -> int:
        """一个 head 的宽度。"""
        return self.model.d

    @property
    def tokens(self) -> int:
        """每个激活矩阵的行数，``batch * seq``。"""
        return self.batch * self.seq

    @property
    def parameters(self) -> int:
        """这一层的权重个数（:meth:`~roofline_book.llm.shape.ModelConfig.layer_parameters`）。

        Examples
        --------
        >>> LLAMA2_7B.parameters             # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        return self.model.layer_parameters()

    @property
    def tensors(self) -> int:
        """这一层的权重 tensor 数：QKV 与输出投影、MLP 各矩阵（每个 expert）、router、两个 norm。"""
        m = self.model
        return 2 + (3 if m.gated else 2) * m.experts + (m.experts > 1) + 2


def DecoderConfig(  # noqa: N802 (the name of a config, built from sizes)
    batch: int,
    seq: int,
    hidden: int,
    heads: int,
    ffn: int,
    dtype: str = "bf16",
    causal: bool = True,
) -> Block:
    """按尺寸建一个 Llama 式 block（multi-head attention、SwiGLU MLP）。

    Parameters
    ----------
    batch, seq : int
        序列数与每条序列的 token 数。
    hidden, heads, ffn : int
        模型宽度（须能被 ``heads`` 整除）、attention head 数、MLP 隐藏层的宽度。
    dtype : str
        权重与激活的精度。
    causal : bool
        causal self-attention。

    Examples
    --------
    >>> DecoderConfig(batch=1, seq=4096, hidden=4096, heads=32, ffn=11008).parameters
    202383360
    """
    sizes = {"hidden": hidden, "heads": heads, "ffn": ffn}
    # one layer, no embedding: the vocabulary is not used
    shape = adhoc_model("decoder", layers=1, kv_heads=heads, vocab=1, **sizes)
    return Block(shape, batch, seq, dtype, causal)


#: Llama-2-7B 的一个 block（目录中的 ``llama-2-7b``），序列长度 4096，batch 1，BF16。
LLAMA2_7B = Block(model("llama-2-7b"))


def _checked(config: Block) -> Block:
    if not isinstance(config, Block):
        raise InvalidArgumentType("config", f"must be a Block, got {type(config).__name__}")
    return config


def block_ops(
    config: Block,
    *,
    attention_impl: str = "flash",
    sram_bytes: int = DEFAULT_SRAM_BYTES,
    tile: FlashTile | None = None,
) -> list[Op]:
    """一个 block 的前向算子，按执行顺序排列，各带稳定标识与代价。

    每个算子是一个单独的 kernel（:func:`~roofline_book.llm.layers.layer_ops` 的
    ``kernels="eager"``）。RoPE 单独成一行，与 Hugging Face eager 代码的运行方式相同；融合的
    kernel 常在 QKV 投影的 epilogue 或 attention kernel 内部完成它，这样省去它的流量（多一次 Q 与 K
    的读写），但省不掉它的 FLOPs。``sram_bytes`` 与 ``tile`` 交给 flash kernel
    （:func:`roofline_book.ops.attention`）。

    Examples
    --------
    各投影的 FLOPs 之和是 2 x token 数 x 权重数：

    >>> ops = dict(block_ops(LLAMA2_7B))
    >>> gemms = [c for name, c in ops.items() if "projection" in name]
    >>> sum(c.flops for c in gemms) == 2 * 4096 * (4 * 4096**2 + 3 * 4096 * 11008)
    True
    """
    c = _checked(config)
    return layer_ops(
        c.model,
        c.batch,
        c.seq,
        c.seq,
        Precisions(weights=c.dtype, activations=c.dtype, kv=c.dtype),
        layer=c.layer,
        kernels="eager",
        attention_impl=attention_impl,
        causal=c.causal,
        sram_bytes=sram_bytes,
        tile=tile,
    )


def optimizer_ops(
    config: Block,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
) -> list[Op]:
    """对 block 的参数做一步 AdamW，每种实现一项，各带稳定标识与代价。

    block 的权重是 :attr:`Block.tensors` 个 tensor（Llama：5 个投影，2 个 norm 权重）。

    Examples
    --------
    三种实现的 FLOPs 相同：

    >>> len({c.flops for _, c in optimizer_ops(LLAMA2_7B)})
    1
    """
    c = _checked(config)
    return [
        Op(
            f"adamw_{impl}",
            f"AdamW ({impl})",
            adamw(
                c.parameters,
                impl,
                tensors=c.tensors,
                param_dtype=param_dtype,
                grad_dtype=grad_dtype,
                state_dtype=state_dtype,
                model_dtype=model_dtype,
            ),
        )
        for impl in ADAMW_IMPLS
    ]
