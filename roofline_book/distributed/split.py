"""推理的切分（:class:`Split`）：TP、PP、EP，以及 EP 大于 TP 时的 DP attention；它检查一个模型
能否这样切。每块设备的代价与通信在 :mod:`roofline_book.distributed.parallel`。
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..llm.config import ModelConfig


@dataclass(frozen=True)
class Split:
    """推理的切分：``tp`` 块设备切每一层（Megatron），``pp`` 个流水线 stage，MoE 的 routed expert
    分在 ``ep`` 块设备上。

    ``ep`` 整除 ``tp`` 时，expert 并行用 TP 组的设备，attention 仍按 TP 切。``ep`` 大于 ``tp``
    （且是它的倍数）时是 DeepSeek 与 SGLang 的 DP attention：``ep`` 块设备各放 ``ceil(experts /
    ep)`` 个 routed expert，attention、dense 层与 shared expert 在 ``ep / tp`` 个 TP 组里数据并行，
    每组处理 batch 中自己的那些序列；token 经 all-to-all 送到它的 expert（dispatch），算完再送回
    （combine）。
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep"):
            _validate.size(name, getattr(self, name))
        if self.tp % self.ep and self.ep % self.tp:
            raise InvalidArgument(
                "ep",
                f"({self.ep}) must divide tp ({self.tp}), or be a multiple of it: experts over"
                " the TP group, or over ep devices with attention data-parallel",
            )

    @property
    def devices(self) -> int:
        """整组的设备数，``max(tp, ep) x pp``。"""
        return max(self.tp, self.ep) * self.pp

    @property
    def attention_dp(self) -> int:
        """attention 数据并行的组数：``ep > tp`` 时为 ``ep / tp``，否则为 1。"""
        return self.ep // self.tp if self.ep > self.tp else 1

    @property
    def expert_shards(self) -> int:
        """routed expert 的工作分成几份：``ep > tp`` 时为 ``ep``，否则为 ``tp``。"""
        return max(self.tp, self.ep)

    def check(self, config: ModelConfig, *, per_node: int | None = None) -> None:
        """这个模型能否这样切（给出 ``per_node`` 时，TP 组还要在一个节点之内）；不能时的
        ``InvalidArgument`` 写出是哪个参数。推理与训练的切分都由它检查。

        Examples
        --------
        >>> from roofline_book.llm.inference import model
        >>> Split(tp=3).check(model("llama-3-70b"))
        Traceback (most recent call last):
        ...
        roofline_book.InvalidArgument: tp (3) must divide the model's 64 attention heads
        """
        if config.heads % self.tp:
            raise InvalidArgument(
                "tp", f"({self.tp}) must divide the model's {config.heads} attention heads"
            )
        if not config.mla and self.tp > config.kv_heads and self.tp % config.kv_heads:
            raise InvalidArgument(
                "tp", f"({self.tp}) above the {config.kv_heads} KV heads must be a multiple of them"
            )
        if config.ffn % self.tp:
            raise InvalidArgument("tp", f"({self.tp}) must divide the MLP width ({config.ffn})")
        if self.pp > config.layers:
            raise InvalidArgument(
                "pp", f"({self.pp}) must be at most the model's {config.layers} layers"
            )
        if self.ep > 1 and config.experts == 1:
            raise InvalidArgument(
                "ep", f"({self.ep}) needs a mixture-of-experts model; {config.key} is dense"
            )
        if self.ep <= self.tp and config.experts % self.ep:
            raise InvalidArgument(
                "ep", f"({self.ep}) must divide the model's {config.experts} experts"
            )
        if self.ep > config.experts:
            raise InvalidArgument(
                "ep", f"({self.ep}) must be at most the model's {config.experts} experts"
            )
        if per_node is not None and self.tp > per_node:
            raise InvalidArgument("tp", f"{self.tp} must fit in one node of {per_node} GPUs")

    def kv_shards(self, config: ModelConfig) -> int:
        """KV cache 分成几份：``min(tp, kv_heads)``；``tp`` 更大时每个 KV head 在 ``tp / kv_heads``
        块设备上各存一份。MLA 的 latent 为所有 head 共用，每块设备存一整份：1。"""
        return 1 if config.mla else min(self.tp, config.kv_heads)
