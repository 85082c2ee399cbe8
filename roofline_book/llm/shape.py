"""一个 decoder-only 语言模型的形状（:class:`ModelConfig`）：宽度、head、MLP 与 MoE、MLA、
sliding window，以及由它们数出的参数。模型目录与 ``config.json`` 的读入在
:mod:`roofline_book.llm.config`。
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.ceiling import Source
from .quantization import Precisions

#: 层的种类。``"global"`` 对整个上下文做 attention，``"local"`` 只对最后 ``sliding_window`` 个
#: token 做 attention，cache 中也只保留它们。
LAYER_KINDS = ("global", "local")

#: 门控 MLP 的激活函数，按 Hugging Face 配置中的名称（``hidden_act``）索引。
ACTIVATIONS = {"silu": "SwiGLU", "gelu": "GeGLU"}


@dataclass(frozen=True)
class ModelConfig:
    """一个 decoder-only 语言模型的形状。

    Parameters
    ----------
    key, name : str
        目录中的键（``"llama-2-7b"``）与显示名称。
    hidden, layers, heads, kv_heads, ffn, vocab : int
        模型宽度、decoder 层数、query head 数、key/value head 数（GQA 时少于 ``heads``，MQA 时为
        1）、 MLP 宽度（MoE 时为每个 expert 的宽度）、词表大小。
    head_dim : int, optional
        一个 head 的宽度；默认为 ``hidden // heads``。
    gated : bool
        门控 MLP（gate、up、down 三个投影），否则是普通的两矩阵 MLP。
    activation : str
        门控 MLP 的激活函数，:data:`ACTIVATIONS` 的一个键：``"silu"`` （SwiGLU）或 ``"gelu"``
        （GeGLU，tanh 形式）。普通 MLP 用 GELU。
    tied_embeddings : bool
        LM head 与 embedding 共用一个矩阵。
    max_context : int
        模型训练时的最长上下文（token 数）。
    experts, experts_per_token : int
        每个 MLP 中可路由的 expert 数，以及每个 token 用几个（dense 模型为 1、1）。
    sliding_window : int, optional
        ``"local"`` 层做 attention 的 token 数，包括当前 token；它的 KV cache 只保留这些
        （Mistral 的 rolling buffer）。None：没有 local 层。
    layer_pattern : tuple of str, optional
        第 0、1、... 层的种类（:data:`LAYER_KINDS`），在所有层上循环。默认在给了 ``sliding_window``
        时每层都是 ``"local"`` （Mistral-7B），否则都是 ``"global"``；Gemma 2 交替为
        ``("local", "global")``。
    v_head_dim : int, optional
        一个 head 的 value 宽度；默认等于 ``head_dim``。MLA 的 ``head_dim`` 是 query 与 key 的宽度
        （DeepSeek-V3：128 + 64 = 192），value 另有宽度（128）。
    kv_lora_rank, q_lora_rank : int, optional
        MLA（multi-head latent attention）：key 与 value 压缩成的 latent 的宽度，以及 query 压缩成
        的宽度（None：query 不压缩）。给出 ``kv_lora_rank`` 即是 MLA 模型：KV cache 每层每个
        token 只存 ``kv_lora_rank + rope_head_dim`` 个元素。
    rope_head_dim : int
        MLA 中与内容分开、单独带位置（RoPE）的那一段 query/key 宽度（``qk_rope_head_dim``）；
        它的 key 对所有 head 共用一份，存在 cache 里。非 MLA 模型为 0。
    shared_experts : int
        MoE 层中每个 token 都经过的 shared expert 数（DeepSeek：1），宽度与 routed expert 相同。
    dense_layers : int
        MoE 模型最前面用 dense MLP 的层数（``first_k_dense_replace``）。
    dense_ffn : int, optional
        这些 dense 层的 MLP 宽度（``intermediate_size``）；默认等于 ``ffn``。
    expert_groups, groups_per_token : int
        分组路由（DeepSeek 的 ``n_group``、``topk_group``）：routed expert 按序号分成
        ``expert_groups`` 组，一个 token 的 expert 只从它选中的 ``groups_per_token`` 组里挑。
        不改变一步用到多少 expert，只改变 token 要送往多少块设备（expert 并行时）。
    qk_norm : bool
        query 与 key 在 attention 前各过一个每 head 的 RMSNorm（Qwen3）：只多几个权重。
    mtp_layers : int
        multi-token prediction 的模块数（DeepSeek-V3：1）：它们的权重不计入 :meth:`parameters`
        （发布的参数量也不计），推理时作为 speculative decoding 的 draft。
    checkpoint : roofline_book.llm.quantization.Precisions, optional
        发布的 checkpoint 的权重格式（``quantization_config``）；None 为 BF16。
    source : roofline_book.devices.ceiling.Source, optional
        这份配置发表在哪里。
    """

    key: str
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int | None = None
    gated: bool = True
    activation: str = "silu"
    tied_embeddings: bool = False
    max_context: int = 4096
    experts: int = 1
    experts_per_token: int = 1
    sliding_window: int | None = None
    layer_pattern: tuple[str, ...] | None = None
    v_head_dim: int | None = None
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    rope_head_dim: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    dense_ffn: int | None = None
    expert_groups: int = 1
    groups_per_token: int = 1
    qk_norm: bool = False
    mtp_layers: int = 0
    checkpoint: Precisions | None = None
    source: Source | None = None

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "max_context"):
            _validate.size(field, getattr(self, field))
        _validate.size("experts", self.experts)
        _validate.size("experts_per_token", self.experts_per_token)
        if self.heads % self.kv_heads:
            raise InvalidArgument(
                "heads", f"({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts_per_token > self.experts:
            raise InvalidArgument(
                "experts_per_token",
                f"({self.experts_per_token}) must be <= experts ({self.experts})",
            )
        if self.activation not in ACTIVATIONS:
            raise InvalidArgument(
                "activation", f"must be one of {', '.join(ACTIVATIONS)}; got {self.activation!r}"
            )
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise InvalidArgument(
                    "hidden", f"({self.hidden}) must be divisible by heads ({self.heads})"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        _validate.size("head_dim", self.head_dim)
        self._check_mla_and_moe()
        if self.sliding_window is not None:
            _validate.size("sliding_window", self.sliding_window)
        pattern = self.layer_pattern
        if pattern is not None:
            if isinstance(pattern, str) or not pattern:
                raise InvalidArgumentType(
                    "layer_pattern", f"must be a non-empty sequence of kinds, got {pattern!r}"
                )
            pattern = tuple(pattern)
            bad = [k for k in pattern if k not in LAYER_KINDS]
            if bad:
                raise InvalidArgument(
                    "layer_pattern", f"kinds must be {' or '.join(LAYER_KINDS)}; got {bad[0]!r}"
                )
            if "local" in pattern and self.sliding_window is None:
                raise InvalidArgument(
                    "layer_pattern", "has local layers but sliding_window is not set"
                )
            object.__setattr__(self, "layer_pattern", pattern)

    def _check_mla_and_moe(self) -> None:
        for field in ("v_head_dim", "kv_lora_rank", "q_lora_rank", "dense_ffn"):
            if getattr(self, field) is not None:
                _validate.size(field, getattr(self, field))
        for field in ("rope_head_dim", "shared_experts", "dense_layers", "mtp_layers"):
            _validate.size(field, getattr(self, field), minimum=0)
        if not isinstance(self.qk_norm, bool):
            raise InvalidArgumentType("qk_norm", f"must be True or False, got {self.qk_norm!r}")
        if self.checkpoint is not None and not isinstance(self.checkpoint, Precisions):
            raise InvalidArgumentType(
                "checkpoint", f"must be a Precisions or None, got {type(self.checkpoint).__name__}"
            )
        if self.kv_lora_rank is None:
            for field in ("q_lora_rank", "rope_head_dim"):
                if getattr(self, field):
                    raise InvalidArgument(field, "is a field of MLA: set kv_lora_rank too")
        else:
            assert self.head_dim is not None
            if not 0 < self.rope_head_dim < self.head_dim:
                raise InvalidArgument(
                    "rope_head_dim",
                    f"({self.rope_head_dim}) of MLA must be above 0 and below head_dim"
                    f" ({self.head_dim}), the query/key width with it",
                )
        if self.experts == 1:
            for field in ("shared_experts", "dense_layers"):
                if getattr(self, field):
                    raise InvalidArgument(field, "needs a mixture-of-experts model (experts > 1)")
            if self.dense_ffn is not None:
                raise InvalidArgument("dense_ffn", "needs a mixture-of-experts model (experts > 1)")
        _validate.size("expert_groups", self.expert_groups)
        _validate.size("groups_per_token", self.groups_per_token)
        if self.experts % self.expert_groups:
            raise InvalidArgument(
                "expert_groups", f"({self.expert_groups}) must divide experts ({self.experts})"
            )
        if self.groups_per_token > self.expert_groups:
            raise InvalidArgument(
                "groups_per_token",
                f"({self.groups_per_token}) must be <= expert_groups ({self.expert_groups})",
            )
        if self.groups_per_token * self.experts // self.expert_groups < self.experts_per_token:
            raise InvalidArgument(
                "groups_per_token",
                f"({self.groups_per_token}) groups hold fewer experts than the"
                f" {self.experts_per_token} a token uses",
            )
        if self.dense_layers > self.layers:
            raise InvalidArgument(
                "dense_layers", f"({self.dense_layers}) must be <= layers ({self.layers})"
            )

    @property
    def mla(self) -> bool:
        """attention 是否是 MLA（multi-head latent attention）。"""
        return self.kv_lora_rank is not None

    @property
    def vd(self) -> int:
        """一个 head 的 value 宽度（``v_head_dim``，已补全）。"""
        return self.v_head_dim if self.v_head_dim is not None else self.d

    @property
    def o_dim(self) -> int:
        """全部 head 的 attention 输出合起来的宽度，``heads * v_head_dim``。"""
        return self.heads * self.vd

    @property
    def kv_elements(self) -> int:
        """一层 KV cache 为每个 token 存的元素个数：MLA 为 ``kv_lora_rank + rope_head_dim``，
        否则为 key 与 value 各 ``kv_heads * head_dim``。

        Examples
        --------
        >>> from roofline_book.llm.config import model
        >>> model("llama-2-7b").kv_elements       # 2 x 32 heads x 128
        8192
        """
        if self.kv_lora_rank is not None:
            return self.kv_lora_rank + self.rope_head_dim
        return self.kv_dim + self.kv_heads * self.vd

    def moe_layer(self, layer: int) -> bool:
        """第 ``layer`` 层（从 0 数起）的 MLP 是否是 mixture-of-experts。"""
        layer = _validate.size("layer", layer, minimum=0)
        if layer >= self.layers:
            raise InvalidArgument("layer", f"must be below {self.layers}, got {layer}")
        return self.experts > 1 and layer >= self.dense_layers

    @property
    def d(self) -> int:
        """一个 head 的宽度（``head_dim``，已补全）。"""
        assert self.head_dim is not None
        return self.head_dim

    @property
    def q_dim(self) -> int:
        """全部 query head 合起来的宽度，``heads * head_dim``。"""
        return self.heads * self.d

    @property
    def kv_dim(self) -> int:
        """全部 key（或 value）head 合起来的宽度，``kv_heads * head_dim``。"""
        return self.kv_heads * self.d

    @property
    def activation_name(self) -> str:
        """门控 MLP 的名称，``"SwiGLU"`` 或 ``"GeGLU"``。"""
        return ACTIVATIONS[self.activation]

    def layer_kind(self, layer: int) -> str:
        """第 ``layer`` 层（从 0 数起）的种类：``"local"`` （sliding window）或 ``"global"``。"""
        layer = _validate.size("layer", layer, minimum=0)
        if layer >= self.layers:
            raise InvalidArgument("layer", f"must be below {self.layers}, got {layer}")
        if self.layer_pattern is not None:
            return self.layer_pattern[layer % len(self.layer_pattern)]
        return "local" if self.sliding_window is not None else "global"

    def window(self, layer: int) -> int | None:
        """第 ``layer`` 层做 attention 的 token 数：sliding window，或 None（整个上下文）。"""
        return self.sliding_window if self.layer_kind(layer) == "local" else None

    @property
    def local_layers(self) -> int:
        """通过 sliding window 做 attention 的层数。"""
        return sum(self.layer_kind(i) == "local" for i in range(self.layers))

    def attention_parameters(self) -> int:
        """一层 attention 中各 linear 层的权重个数。

        GQA：Q、K、V、O 四个投影。MLA：query 的压缩与展开（不压缩时一个投影），key/value 压缩成
        latent 并带出共用的 RoPE key，latent 展开成每个 head 的 key 与 value，输出投影。
        """
        h = self.hidden
        if self.kv_lora_rank is None:
            return h * self.q_dim + h * self.kv_dim + h * self.kv_heads * self.vd + self.o_dim * h
        q = h * self.q_dim if self.q_lora_rank is None else self.q_lora_rank * (h + self.q_dim)
        down = h * (self.kv_lora_rank + self.rope_head_dim)
        up = self.kv_lora_rank * self.heads * (self.d - self.rope_head_dim + self.vd)
        return q + down + up + self.o_dim * h

    def mlp_parameters(self, layer: int | None = None, *, active: bool = False) -> int:
        """一层 MLP 中各 linear 层的权重个数：dense 层一个 MLP；MoE 层是 router、全部（或每个
        token 用到的 ``active`` 个）routed expert 与 shared expert。``layer`` 为 None 时取最后
        一层（MoE 模型的一个 MoE 层）。"""
        layer = self.layers - 1 if layer is None else layer
        per = (3 if self.gated else 2) * self.hidden
        if not self.moe_layer(layer):
            return per * (self.dense_ffn or self.ffn)
        routed = self.experts_per_token if active else self.experts
        return self.hidden * self.experts + (routed + self.shared_experts) * per * self.ffn

    def norm_parameters(self) -> int:
        """一层中 norm 的权重个数：attention 前与 MLP 前各一个；Qwen3 的 query/key norm；MLA 对
        压缩后的 query 与 latent 各一个。"""
        n = 2 * self.hidden + (2 * self.d if self.qk_norm else 0)
        return n + (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)

    def layer_parameters(self, *, active: bool = False, layer: int | None = None) -> int:
        """一层的权重个数：attention、MLP（全部 expert，或 ``active`` 个）、router、norm。

        Examples
        --------
        >>> from roofline_book.llm.config import model
        >>> llama = model("llama-2-7b")
        >>> llama.layer_parameters()    # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        return self.layer_matrix_parameters(active=active, layer=layer) + self.norm_parameters()

    def layer_matrix_parameters(self, *, active: bool = False, layer: int | None = None) -> int:
        """一层中各 linear 层的权重个数（即权重量化所转换的那些）；``layer`` 为 None 时取最后
        一层。"""
        return self.attention_parameters() + self.mlp_parameters(layer, active=active)

    def matrix_parameters(self, *, active: bool = False) -> int:
        """全部层中 linear 层的权重个数（不含 embedding 与 LM head）。

        Examples
        --------
        >>> from roofline_book.llm.config import model
        >>> m = model("llama-2-7b")
        >>> m.matrix_parameters() == 32 * m.layer_matrix_parameters()
        True
        """
        dense = min(self.dense_layers, self.layers) if self.experts > 1 else self.layers
        first = self.layer_matrix_parameters(active=active, layer=0)
        last = self.layer_matrix_parameters(active=active)
        return dense * first + (self.layers - dense) * last

    def parameters(self, *, active: bool = False) -> int:
        """全部权重个数：各层、embedding、最后的 norm，以及（不共用时的）LM head。

        Examples
        --------
        >>> from roofline_book.llm.config import model
        >>> round(model("llama-2-7b").parameters() / 1e9, 2)     # "7B"
        6.74
        """
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return (
            self.matrix_parameters(active=active)
            + self.layers * self.norm_parameters()
            + self.vocab * self.hidden
            + (self.hidden + head)
        )
