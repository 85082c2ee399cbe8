"""读 Hugging Face 的 ``config.json``：把它的键映射为
:class:`~roofline_book.llm.shape.ModelConfig` 的字段、一个显示名称，以及发布的 checkpoint 的
权重格式（:class:`~roofline_book.llm.quantization.Precisions`）。

:func:`read_config` 接受一个文件路径（或含 ``config.json`` 的目录）、以 ``{`` 开头的 JSON 文本，
或已经读入的 mapping。支持的 ``model_type`` 见 :data:`SUPPORTED`。

哪些键必须给出：决定模型大小的宽度与个数（``hidden_size``、``num_hidden_layers``、
``num_attention_heads``、``vocab_size``、MLP 宽度；MoE 的 expert 数、每个 token 的 expert 数与
expert 宽度；MLA 的 ``kv_lora_rank``、``qk_nope_head_dim``、``qk_rope_head_dim``、``v_head_dim``）。
缺少它们是错误，不会借用 transformers 里某个模型的尺寸。其余的键缺省时取 transformers 中该配置类
的默认值（``configuration_<model_type>.py``），例如 ``num_key_value_heads``：llama 与 deepseek
为 ``num_attention_heads``，mistral 与 mixtral 为 8，qwen2 与 qwen3 为 32，qwen3_moe 与 gemma2 为
4；``tie_word_embeddings``：gemma2 为 True，其余为 False；mistral 的 ``sliding_window`` 为 4096。
``torch_dtype`` 不读：没有 ``quantization_config`` 的 checkpoint 按 BF16 计。

改变代价却没有建模的键是错误，并指出那个键：qwen2/qwen3 的 ``use_sliding_window`` 为 true、
qwen3_moe 的 ``decoder_sparse_step`` 不为 1 或 ``mlp_only_layers`` 非空、deepseek 的
``moe_layer_freq`` 不为 1、不支持的 ``quant_method``、分组不是
:data:`~roofline_book.llm.quantization.QUANT_GROUP` 的 AWQ/GPTQ。不改变代价的键不读：
``rope_scaling``
（llama3、yarn、linear、dynamic 只改变位置编码，``max_context`` 取 ``max_position_embeddings``）、
路由的打分方式、dropout、softcapping。几个只多几个权重的部分也不计：qwen2 的 attention bias
（q、k、v 各一个 bias 向量）、``attention_bias``/``mlp_bias`` 为 true 时的 bias、Gemma 2 每层多出
的两个 norm、DeepSeek-V3 router 的 bias。

本模块不导入 :mod:`roofline_book.llm.config` （那里的 ``model_from_config`` 调用本模块）。

Examples
--------
>>> tiny = read_config({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
...                     "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})
>>> tiny.name, tiny.fields["kv_heads"], tiny.fields["head_dim"], tiny.fields["max_context"]
('llama', 4, 16, 2048)
>>> read_config('{"model_type": "gpt2"}')
Traceback (most recent call last):
...
roofline_book.InvalidArgument: config model_type 'gpt2' is not supported; supported: llama, ...
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from .._base.validate import InvalidArgument, InvalidArgumentType, is_bool
from .quantization import INT4, QUANT_GROUP, Precisions

#: 支持的 ``model_type``。
SUPPORTED = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "deepseek_v2",
    "deepseek_v3",
)

#: ``hidden_act`` （gemma2 为 ``hidden_activation``）到 ModelConfig 的 ``activation``：门控 MLP 的
#: 代价与激活函数的具体形式无关。
ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_new": "gelu",
}

#: 支持的 ``quantization_config.quant_method``。
QUANT_METHODS = ("fp8", "awq", "gptq")

#: transformers 的 ``layer_types`` 中两种 attention 到 ModelConfig 的层种类。
LAYER_TYPES = {"full_attention": "global", "sliding_attention": "local"}

#: ``modules_to_not_convert`` 中可以出现的模块（最后一段名称）：embedding 表与 LM head 本来就按
#: BF16 计，router（``gate``）只有 ``hidden x experts`` 个权重。
UNCONVERTED_OK = ("lm_head", "embed_tokens", "gate")

_REQUIRED = object()


@dataclass(frozen=True)
class HFConfig:
    """一份 Hugging Face 配置读出的模型。

    Attributes
    ----------
    name : str
        显示名称：``_name_or_path``，否则文件名（``config.json`` 时为所在目录名），否则
        ``model_type``。
    model_type : str
    fields : Mapping
        :class:`~roofline_book.llm.shape.ModelConfig` 的字段（含 ``checkpoint``）。
    """

    name: str
    model_type: str
    fields: Mapping[str, object]

    @property
    def checkpoint(self) -> Precisions | None:
        """发布的 checkpoint 的权重格式；None 为 BF16。"""
        value = self.fields["checkpoint"]
        assert value is None or isinstance(value, Precisions)
        return value


def read_config(source: object) -> HFConfig:
    """读一份 Hugging Face 配置：路径、JSON 文本（以 ``{`` 开头）或 mapping。"""
    config, where = _load(source)
    return HFConfig(
        name=_name(config, where),
        model_type=_Reader(config, where).model_type,
        fields=MappingProxyType(model_fields(config, where)),
    )


def _load(source: object) -> tuple[Mapping[str, Any], str]:
    if isinstance(source, Mapping):
        return source, ""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return _parse(source, "the JSON text"), ""
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidArgumentType(
            "config",
            "must be a path to a config.json, its JSON text or a mapping,"
            f" got {type(source).__name__}",
        )
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        detail = f"{str(path)!r} cannot be read: {exc.strerror or exc}"
        raise InvalidArgument("config", detail) from None
    return _parse(text, repr(str(path))), str(path)


def _parse(text: str, what: str) -> Mapping[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidArgument("config", f"{what} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidArgument(
            "config", f"{what} must hold a JSON object, got {type(data).__name__}"
        )
    return data


def _name(config: Mapping[str, Any], where: str) -> str:
    given = config.get("_name_or_path")
    if isinstance(given, str) and given.strip():
        return given.strip().rstrip("/").rsplit("/", 1)[-1]
    if where:
        path = Path(where)
        stem = path.parent.name if path.stem == "config" else path.stem
        if stem:
            return stem
    model_type = config.get("model_type")
    return model_type if isinstance(model_type, str) and model_type else "config"


class _Reader:
    """读键并检查它们；错误信息指出键、它的值与允许的值。"""

    def __init__(self, config: Mapping[str, Any], where: str) -> None:
        self.config = config
        self.where = f" in {where}" if where else ""
        model_type = config.get("model_type")
        if model_type is None:
            self.fail("model_type", f"is required; supported: {', '.join(SUPPORTED)}")
        if model_type not in SUPPORTED:
            raise InvalidArgument(
                "config",
                f"model_type {model_type!r} is not supported{self.where};"
                f" supported: {', '.join(SUPPORTED)}",
            )
        self.model_type: str = model_type

    def fail(self, key: str, detail: str) -> NoReturn:
        raise InvalidArgument("config", f"{key} {detail}{self.where}")

    def get(self, key: str, default: object = _REQUIRED) -> Any:
        if key in self.config:
            return self.config[key]
        if default is _REQUIRED:
            self.fail(key, f"is required in a {self.model_type} config.json")
        return default

    def size(self, key: str, default: object = _REQUIRED, *, minimum: int = 1) -> int:
        value = self.get(key, default)
        if is_bool(value) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"must be an integer >= {minimum}, got {value!r}")
        return int(value)

    def optional_size(self, key: str, default: int | None) -> int | None:
        value = self.get(key, default)
        return None if value is None else self.size(key, default)

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, got {value!r}")
        return bool(value)

    def choice(self, key: str, default: object, allowed: Mapping[str, str]) -> str:
        value = self.get(key, default)
        if value not in allowed:
            self.fail(key, f"{value!r} is not supported; supported: {', '.join(allowed)}")
        return allowed[value]

    def exactly(self, key: str, default: object, expected: object, why: str) -> None:
        value = self.get(key, default)
        if value != expected:
            self.fail(key, f"{value!r} is not modelled ({why}); supported: {expected!r}")


# transformers' defaults, per config class, of the keys that are not sizes
_KV_HEADS = {"mistral": 8, "mixtral": 8, "qwen2": 32, "qwen3": 32, "qwen3_moe": 4, "gemma2": 4}
_MAX_POSITIONS = {
    "llama": 2048,
    "mistral": 4096 * 32,
    "mixtral": 4096 * 32,
    "qwen2": 32768,
    "qwen3": 32768,
    "qwen3_moe": 32768,
    "gemma2": 8192,
    "deepseek_v2": 2048,
    "deepseek_v3": 4096,
}


def model_fields(config: Mapping[str, Any], where: str = "") -> dict[str, object]:
    """一份配置（已读入的 mapping）对应的 ModelConfig 字段，含 ``checkpoint``；``where`` 是错误
    信息中的文件名。"""
    r = _Reader(config, where)
    kind = r.model_type
    hidden = r.size("hidden_size")
    heads = r.size("num_attention_heads")
    kv = r.get("num_key_value_heads", _KV_HEADS.get(kind))
    fields: dict[str, object] = {
        "hidden": hidden,
        "layers": r.size("num_hidden_layers"),
        "heads": heads,
        "kv_heads": heads if kv is None else r.size("num_key_value_heads", kv),
        "ffn": 0,  # set below
        "vocab": r.size("vocab_size"),
        "tied_embeddings": r.flag("tie_word_embeddings", kind == "gemma2"),
        "max_context": r.size("max_position_embeddings", _MAX_POSITIONS[kind]),
    }
    act_key = "hidden_activation" if kind == "gemma2" else "hidden_act"
    fields["activation"] = r.choice(act_key, "gelu_pytorch_tanh" if kind == "gemma2" else "silu",
                                    ACTIVATIONS)  # fmt: skip
    if kind.startswith("deepseek"):
        _deepseek(r, fields)
    else:
        _gqa(r, fields)
    fields["checkpoint"] = checkpoint_precisions(config.get("quantization_config"), r.where)
    return fields


def _gqa(r: _Reader, fields: dict[str, object]) -> None:
    kind = r.model_type
    hidden, heads = fields["hidden"], fields["heads"]
    assert isinstance(hidden, int) and isinstance(heads, int)
    # head_dim: Qwen3Config's default is 128; the others (and Qwen3-MoE's modelling code,
    # getattr(config, "head_dim", hidden_size // num_attention_heads)) use hidden / heads
    default_head = 128 if kind == "qwen3" else 256 if kind == "gemma2" else None
    head_dim = r.optional_size("head_dim", default_head)
    fields["head_dim"] = hidden // heads if head_dim is None else head_dim
    fields["qk_norm"] = kind in ("qwen3", "qwen3_moe")
    if kind in ("qwen2", "qwen3", "qwen3_moe"):
        r.exactly("use_sliding_window", False, False,
                  "sliding-window layers above max_window_layers")  # fmt: skip
    if kind == "qwen3_moe":
        r.exactly("decoder_sparse_step", 1, 1, "a dense MLP between MoE layers")
        only = r.get("mlp_only_layers", None)
        if only:
            r.fail("mlp_only_layers", f"{only!r} is not modelled (dense MLP layers among MoE"
                   " layers); supported: []")  # fmt: skip
    if kind in ("mixtral", "qwen3_moe"):
        experts_key = "num_local_experts" if kind == "mixtral" else "num_experts"
        fields["experts"] = r.size(experts_key)
        fields["experts_per_token"] = r.size("num_experts_per_tok")
    ffn_key = "moe_intermediate_size" if kind == "qwen3_moe" else "intermediate_size"
    fields["ffn"] = r.size(ffn_key)
    _windows(r, fields)


def _windows(r: _Reader, fields: dict[str, object]) -> None:
    kind = r.model_type
    layers = fields["layers"]
    assert isinstance(layers, int)
    if kind in ("qwen2", "qwen3", "qwen3_moe", "llama"):
        window = None  # no sliding window (qwen: use_sliding_window is false)
    else:
        window = r.optional_size("sliding_window", 4096 if kind in ("mistral", "gemma2") else None)
    kinds: list[str]
    has_types = kind in ("qwen2", "qwen3", "qwen3_moe", "gemma2")  # config classes with the key
    types = r.get("layer_types", None) if has_types else None
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            r.fail("layer_types", f"must list one type per layer ({layers}), got {types!r}")
        bad = [t for t in types if t not in LAYER_TYPES]
        if bad:
            r.fail(
                "layer_types", f"{bad[0]!r} is not supported; supported: {', '.join(LAYER_TYPES)}"
            )
        kinds = [LAYER_TYPES[t] for t in types]
    elif kind == "gemma2":  # transformers: layer i slides when (i + 1) % 2, so layer 0 is local
        kinds = ["local" if (i + 1) % 2 else "global" for i in range(layers)]
    else:
        kinds = ["local" if window is not None else "global"] * layers
    if "local" in kinds and window is None:
        r.fail("sliding_window", "is required: the config has sliding-window layers")
    period = next(p for p in range(1, layers + 1) if all(
        kinds[i] == kinds[i % p] for i in range(layers)))  # fmt: skip
    fields["sliding_window"] = window if "local" in kinds else None
    fields["layer_pattern"] = tuple(kinds[:period]) if period > 1 else None


def _deepseek(r: _Reader, fields: dict[str, object]) -> None:
    v3 = r.model_type == "deepseek_v3"
    heads = fields["heads"]
    r.exactly("moe_layer_freq", 1, 1, "dense MLP layers between MoE layers")
    nope, rope = r.size("qk_nope_head_dim"), r.size("qk_rope_head_dim")
    fields.update(
        kv_heads=heads,  # MLA caches one latent for all heads: num_key_value_heads is unused
        head_dim=nope + rope,
        v_head_dim=r.size("v_head_dim"),
        kv_lora_rank=r.size("kv_lora_rank"),
        q_lora_rank=r.optional_size("q_lora_rank", 1536),
        rope_head_dim=rope,
        experts=r.size("n_routed_experts"),
        experts_per_token=r.size("num_experts_per_tok"),
        shared_experts=r.size("n_shared_experts", 1 if v3 else 2, minimum=0),
        dense_layers=r.size("first_k_dense_replace", 3 if v3 else 0, minimum=0),
        ffn=r.size("moe_intermediate_size"),
        mtp_layers=r.size("num_nextn_predict_layers", 0, minimum=0),
    )
    # group-limited routing: a token's experts come from topk_group of n_group groups
    # (transformers: DeepseekV3Config 8 and 4; DeepseekV2Config None, no grouping)
    groups = r.get("n_group", 8 if v3 else None)
    if groups is not None:
        fields["expert_groups"] = r.size("n_group")
        fields["groups_per_token"] = r.size("topk_group", 4 if v3 else None)
    if fields["dense_layers"]:
        fields["dense_ffn"] = r.size("intermediate_size")


def checkpoint_precisions(quantization: object, where: str = "") -> Precisions | None:
    """``quantization_config`` 所说的权重格式；None（没有这个键）为 BF16。

    - ``fp8`` （transformers 的 FineGrainedFP8Config）：W8A8，激活按 token 动态量化；
      ``weight_block_size`` （默认 ``[128, 128]``）的每块一个 FP32 scale。
    - ``awq``：int4，每 :data:`~roofline_book.llm.quantization.QUANT_GROUP` 个权重一组；
      ``zero_point`` （默认 true）时每组一个 zero point。
    - ``gptq``：``bits`` 为 4 或 8，``sym`` （默认 true）为 false 时有 zero point。

    Examples
    --------
    >>> checkpoint_precisions({"quant_method": "awq", "bits": 4, "group_size": 128})
    Precisions(weights='int4', activations='bf16', kv='bf16', zero_point=True, \
quantize_embeddings=False, weight_block=None)
    >>> checkpoint_precisions({"quant_method": "bitsandbytes"})
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: config quantization_config.quant_method 'bitsandbytes' is not \
supported; supported: fp8, awq, gptq
    """
    if quantization is None:
        return None
    if not isinstance(quantization, Mapping):
        raise InvalidArgument("config", f"quantization_config must be an object{where}")
    q = quantization
    method = q.get("quant_method")

    def fail(key: str, detail: str) -> InvalidArgument:
        return InvalidArgument("config", f"quantization_config.{key} {detail}{where}")

    if method not in QUANT_METHODS:
        raise fail(
            "quant_method", f"{method!r} is not supported; supported: {', '.join(QUANT_METHODS)}"
        )
    unconverted = q.get("modules_to_not_convert") or []
    others = [m for m in unconverted if str(m).rsplit(".", 1)[-1] not in UNCONVERTED_OK]
    if others:
        raise fail("modules_to_not_convert", f"names {others[0]!r}: layers kept unquantized are"
                   f" not modelled; supported: {', '.join(UNCONVERTED_OK)}")  # fmt: skip
    if method == "fp8":
        block = q.get("weight_block_size", [128, 128])
        if block is not None and (
            not isinstance(block, list) or len(block) != 2 or block[0] != block[1]
            or is_bool(block[0]) or not isinstance(block[0], int) or block[0] < 1
        ):  # fmt: skip
            raise fail("weight_block_size", f"{block!r} is not supported; supported: square"
                       " blocks such as [128, 128], or null")  # fmt: skip
        fmt = q.get("fmt", "e4m3")
        if fmt not in ("e4m3", "e5m2"):
            raise fail("fmt", f"{fmt!r} is not supported; supported: e4m3, e5m2")
        size = None if block is None else int(block[0])
        return Precisions(weights=fmt, activations="fp8", weight_block=size)
    group = q.get("group_size", 128)
    if group != QUANT_GROUP:
        raise fail("group_size", f"{group!r} is not supported: integer weights are counted in"
                   f" groups of {QUANT_GROUP}; supported: {QUANT_GROUP}")  # fmt: skip
    bits = q.get("bits", 4 if method == "awq" else None)
    allowed = {4: INT4} if method == "awq" else {4: INT4, 8: "int8"}
    if bits not in allowed or is_bool(bits):
        raise fail("bits", f"{bits!r} is not supported; supported: {', '.join(map(str, allowed))}")
    if method == "awq":
        zero = q.get("zero_point", True)
    else:
        sym = q.get("sym", True)
        zero = not sym if isinstance(sym, bool) else sym
    if not isinstance(zero, bool):
        raise fail(
            "zero_point" if method == "awq" else "sym", f"must be true or false, got {zero!r}"
        )
    return Precisions(weights=allowed[bits], zero_point=zero)
