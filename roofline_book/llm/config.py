"""decoder-only 语言模型：它们的形状，以及 ``data/models.toml`` 中的目录。

:class:`~roofline_book.llm.shape.ModelConfig` 保存推理下界所需的一切：各宽度、head、MLP、
词表、mixture-of-experts 的路由，以及哪些层通过 sliding window 做 attention。
:func:`model` 按名称找到目录中的模型，:func:`adhoc_model` 按你自己的尺寸建一个。

Examples
--------
>>> mistral = model("Mistral-7B")
>>> mistral.sliding_window, mistral.local_layers
(4096, 32)
>>> gemma = model("gemma-2-9b")
>>> gemma.local_layers, gemma.layers - gemma.local_layers, gemma.layer_kind(0)
(21, 21, 'local')
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from types import MappingProxyType

from .._base import validate as _validate
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.catalog import catalog_key
from ..devices.ceiling import Source
from .hf import read_config

# the shape of a model lives in .shape; re-exported here, where the chapters import it
from .shape import ACTIVATIONS as ACTIVATIONS
from .shape import LAYER_KINDS as LAYER_KINDS
from .shape import ModelConfig as ModelConfig

#: 目录所在的位置，供错误信息使用。
CATALOG_FILE = "roofline_book/llm/data/models.toml"

# --------------------------------------------------------------------------
# The catalog


#: 目录条目或 :func:`adhoc_model` 可以设置的字段。
FIELDS = (
    "hidden",
    "layers",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "head_dim",
    "gated",
    "activation",
    "tied_embeddings",
    "max_context",
    "experts",
    "experts_per_token",
    "sliding_window",
    "layer_pattern",
    "v_head_dim",
    "kv_lora_rank",
    "q_lora_rank",
    "rope_head_dim",
    "shared_experts",
    "dense_layers",
    "dense_ffn",
    "expert_groups",
    "groups_per_token",
    "qk_norm",
    "mtp_layers",
)


#: 指向 ``config.json`` 的目录条目可以有的键：形状全部来自那份文件。
CONFIG_ENTRY = ("name", "source", "config")


def parse_catalog(text: str, where: str = CATALOG_FILE) -> Mapping[str, ModelConfig]:
    """目录文件文本中的模型，按键索引；``where`` 是错误信息中的文件名。

    模型条目的每个键都必须是一个字段（:data:`FIELDS`）、``name`` 或 ``source``：拼错的键是错误，
    不会当作默认值。条目也可以写 ``config = "configs/<key>.json"``：形状由 :func:`model_from_config`
    从这份发布的 ``config.json`` （相对于 ``llm/data/``）读出，条目只再写 ``name`` 与 ``source``，
    所以目录与导入不会不一致。

    Examples
    --------
    >>> parse_catalog('''
    ... [sources.s]
    ... title = "t"
    ... [models.m]
    ... name = "M"
    ... source = "s"
    ... hidden = 8
    ... layers = 1
    ... heads = 2
    ... kv_heads = 2
    ... ffn = 8
    ... vocab = 8
    ... sliding_widow = 4
    ... ''', "my.toml")
    Traceback (most recent call last):
    ...
    ValueError: my.toml: model 'm' has an unknown key 'sliding_widow'; allowed: name, ...
    """
    data = tomllib.loads(text)
    fields_of_source = ("title", "url", "date", "note", "firmness")
    sources = {}
    for k, v in data.get("sources", {}).items():
        _validate.known_keys(f"{where}: source {k!r}", v, fields_of_source)
        sources[k] = Source(key=k, **v)
    allowed = ("name", "source", *FIELDS)
    out = {}
    for key, entry in data.get("models", {}).items():
        with_config = "config" in entry
        _validate.known_keys(
            f"{where}: model {key!r}", entry, CONFIG_ENTRY if with_config else allowed
        )
        if entry.get("source") not in sources:
            raise ValueError(f"{where}: model {key!r} names no known source")
        if "name" not in entry:
            raise ValueError(f"{where}: model {key!r} has no name")
        fields = {f: entry[f] for f in FIELDS if f in entry}
        if "layer_pattern" in fields:
            fields["layer_pattern"] = tuple(fields["layer_pattern"])
        try:
            if with_config:
                text = _data_text(entry["config"])
                imported = model_from_config(text, name=entry["name"], key=key)
                out[key] = replace(imported, source=sources[entry["source"]])
            else:
                out[key] = ModelConfig(
                    key=key, name=entry["name"], source=sources[entry["source"]], **fields
                )
        except (TypeError, ValueError, OSError) as error:
            raise ValueError(f"{where}: model {key!r}: {error}") from error
    return MappingProxyType(out)


@functools.cache
def models() -> Mapping[str, ModelConfig]:
    """数据文件中的全部模型，按键索引。"""
    return parse_catalog(_catalog_text())


def _catalog_text() -> str:
    return _data_text("models.toml")


def _data_text(name: str) -> str:
    """``llm/data/`` 中一个文件的文本（目录与它指向的 ``config.json``）。"""
    return resources.files(__package__).joinpath("data", *name.split("/")).read_text("utf-8")


def model_from_config(
    source: object,
    *,
    name: str | None = None,
    key: str | None = None,
) -> ModelConfig:
    """按 Hugging Face 的 ``config.json`` 建模型：一个路径（或含它的目录）、以 ``{`` 开头的 JSON
    文本，或一个 mapping。

    支持的 ``model_type`` 与各键的读法见 :mod:`roofline_book.llm.hf`；改变代价却没有建模的键、
    不支持的 ``model_type`` 与缺少的尺寸都是 :class:`~roofline_book.InvalidArgument`，指出那个键。
    ``quantization_config`` 给出 ``ModelConfig.checkpoint``。

    Parameters
    ----------
    source : str, os.PathLike or Mapping
        配置。
    name : str, optional
        显示名称；默认取配置的 ``_name_or_path``，否则文件名，否则 ``model_type``。
    key : str, optional
        键；默认由名称得出（小写、连字符）。

    Examples
    --------
    >>> m = model_from_config({
    ...     "model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28,
    ...     "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    ...     "intermediate_size": 3072, "vocab_size": 151936, "tie_word_embeddings": True,
    ... }, name="Qwen3-0.6B")
    >>> m.key, m.q_dim, m.kv_elements, m.qk_norm, m.max_context   # head_dim 128, not 1024 / 16
    ('qwen3-0.6b', 2048, 2048, True, 32768)
    >>> model_from_config({"model_type": "qwen2", "num_hidden_layers": 28})
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: config hidden_size is required in a qwen2 config.json
    """
    config = read_config(source)
    shown = config.name if name is None else name
    if not isinstance(shown, str) or not shown.strip():
        raise InvalidArgumentType("name", f"must be a non-empty string, got {shown!r}")
    fields = dict(config.fields)
    return ModelConfig(
        key=catalog_key(shown) if key is None else key,
        name=shown,
        **fields,  # type: ignore[arg-type]
    )


def model(name: str) -> ModelConfig:
    """按名称取目录中的模型；大小写、空格和下划线都不影响。

    Examples
    --------
    >>> model("Mixtral 8x7B").experts
    8
    >>> model("gpt-5")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: model 'gpt-5' is not in the catalog; allowed: llama-2-7b, ...
    """
    if not isinstance(name, str):
        raise InvalidArgumentType(
            "name", f"must be a model name such as 'llama-2-7b', got {name!r}"
        )
    catalog = models()
    key = catalog_key(name)
    if key not in catalog:
        raise InvalidArgument(
            "model", f"{name!r} is not in the catalog; allowed: {', '.join(catalog)}"
        )
    return catalog[key]


def adhoc_model(name: str, **sizes: object) -> ModelConfig:
    """按你自己的尺寸建一个模型（字段即 :class:`~roofline_book.llm.shape.ModelConfig` 的字段）。

    Examples
    --------
    >>> tiny = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    >>> tiny.kv_dim
    128
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgumentType("name", f"must be a non-empty string, got {name!r}")
    unknown = sorted(set(sizes) - set(FIELDS))
    if unknown:
        raise InvalidArgument(unknown[0], f"is not a model field; allowed: {', '.join(FIELDS)}")
    required = FIELDS[: FIELDS.index("vocab") + 1]  # the fields without a default
    missing = [f for f in required if f not in sizes]
    if missing:
        raise InvalidArgumentType(
            missing[0], f"is required by adhoc_model; required: {', '.join(required)}"
        )
    return ModelConfig(key=catalog_key(name), name=name, **sizes)  # type: ignore[arg-type]
