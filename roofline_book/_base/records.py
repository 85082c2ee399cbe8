"""记录类与 JSON：字段的 JSON 约定、按它读写，以及由它生成的 JSON Schema。

一个记录类是冻结的 dataclass，每个字段用 :func:`record_field` 声明它在 JSON 中的样子：键（默认
是字段名）、可否省略、可否为 null、值的约束（``minimum``、``enum``、``pattern`` ……）、说明与单位；
``inline=True`` 的字段是另一个记录类，它的键并入外层对象（同一组键出现在几种输出里时用它）。
:func:`from_mapping` 与 :func:`as_mapping` 按字段的类型注解（``int``、``float``、``str``、
``bool``、``X | None``、``tuple[X, ...]``、``Mapping[str, X]``、另一个记录类、用 :func:`codec`
登记了 JSON 形式的类型，例如 :class:`~roofline_book.ops.Cost`）读写，:func:`json_schema` 由同样的
注解与约束生成 schema，所以一份定义同时是类型和文件格式：run file
（:mod:`roofline_book.measure.runs.records`）与命令行的 ``--json`` 都这样定义。

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, kw_only=True)
... class Point:
...     x: int = record_field(minimum=0, unit="byte", description="offset")
...     label: str | None = record_field(optional=True, minLength=1)
>>> as_mapping(from_mapping(Point, {"x": 3}))
{'x': 3}
>>> json_schema(Point)["required"], json_schema(Point)["properties"]["x"]
(['x'], {'type': 'integer', 'minimum': 0, 'description': 'offset [byte]'})
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Codec:
    """一个非记录类型的 JSON 形式：写出、读入，以及它的 schema。"""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    schema: Callable[[], dict[str, Any]]


_CODECS: dict[type, Codec] = {}


def codec(
    tp: type,
    encode: Callable[[Any], Any],
    decode: Callable[[Any], Any],
    schema: Callable[[], dict[str, Any]],
) -> None:
    """登记类型 ``tp`` 的 JSON 形式（定义 ``tp`` 的模块在导入时调用，每个类型一次）。"""
    if tp in _CODECS:
        raise RuntimeError(f"duplicate JSON codec for {tp.__name__}")
    _CODECS[tp] = Codec(encode, decode, schema)


_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def record_field(
    *,
    key: str | None = None,
    optional: bool = False,
    nullable: bool = False,
    only: str | None = None,
    description: str | None = None,
    unit: str | None = None,
    inline: bool = False,
    keep_empty: bool = False,
    item: Mapping[str, Any] | None = None,
    keys: list[str] | None = None,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    **constraints: Any,
) -> Any:
    """声明一个记录字段及其 JSON 约定。

    Parameters
    ----------
    key : str, optional
        JSON 中的键（默认是字段名）。
    optional : bool
        键可以省略；省略等于默认值（None 或空），写出时默认值也省略。
    nullable : bool
        键总在，值可以是 null。
    only : str, optional
        只在记录的 ``type`` 字段为它时出现（设备记录：CPU 或 CUDA 才有的字段）。
    description : str, optional
        写进 schema 的说明。
    unit : str, optional
        数（或数组、对象中每个数）的单位，如 ``"s"``、``"FLOP/s"``、``"byte"``；无量纲的数
        是 ``"1"``。写进 schema 的说明末尾，如 ``[s]`` （``"1"`` 不写）。
    keep_empty : bool
        ``optional`` 的字段只在值为 None 时省略，空的对象或数组照样写出。
    inline : bool
        字段是一个记录类，它的键按顺序并入外层对象，而不是成为一个嵌套的对象。
    item : Mapping, optional
        数组或对象中每个值的约束。
    keys : list of str, optional
        对象允许的键。
    **constraints
        这个值本身的 JSON Schema 约束。
    """
    if (optional or only is not None) and default is dataclasses.MISSING:
        if default_factory is dataclasses.MISSING:
            default = None
    meta = {
        "key": key,
        "optional": optional,
        "nullable": nullable,
        "only": only,
        "description": description,
        "unit": unit,
        "inline": inline,
        "keep_empty": keep_empty,
        "item": dict(item or {}),
        "keys": keys,
        "constraints": constraints,
    }
    return dataclasses.field(default=default, default_factory=default_factory, metadata=meta)


def key_of(f: dataclasses.Field) -> str:
    """字段在 JSON 中的键。"""
    return f.metadata.get("key") or f.name


@functools.cache
def hints(cls: Any) -> dict[str, Any]:
    """一个记录类各字段的类型（已求值的注解）。"""
    return typing.get_type_hints(cls)


def _unwrap(tp: Any) -> tuple[bool, Any]:
    """``X | None`` 给出 (True, X)，其余给出 (False, tp)。"""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return True, args[0]
        raise TypeError(f"a record field is one type or that type | None; got {tp}")
    return False, tp


def _decode(tp: Any, value: Any) -> Any:
    _, tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if value is None:
        return None
    if origin is tuple:
        return tuple(_decode(typing.get_args(tp)[0], v) for v in value)
    if origin is Mapping:
        return {k: _decode(typing.get_args(tp)[1], v) for k, v in value.items()}
    if tp in _CODECS:
        return _CODECS[tp].decode(value)
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value)
    return value


def _encode(tp: Any, value: Any) -> Any:
    _, tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if value is None:
        return None
    if origin is tuple:
        return [_encode(typing.get_args(tp)[0], v) for v in value]
    if origin is Mapping:
        return {k: _encode(typing.get_args(tp)[1], v) for k, v in value.items()}
    if tp in _CODECS:
        return _CODECS[tp].encode(value)
    if dataclasses.is_dataclass(tp):
        return as_mapping(value)
    return value


def from_mapping(cls: Any, data: Mapping[str, Any]) -> Any:
    """由 JSON 对象 ``data`` （已按 :func:`json_schema` 校验）构建记录类 ``cls`` 的实例。"""
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} needs a mapping, got {type(data).__name__}")
    found = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get("inline"):
            found[f.name] = from_mapping(hints(cls)[f.name], data)
        elif key_of(f) in data:
            found[f.name] = _decode(hints(cls)[f.name], data[key_of(f)])
    return cls(**found)


def _omitted(record: Any, f: dataclasses.Field, value: Any) -> bool:
    only = f.metadata.get("only")
    if only is not None and record.type != only:
        return True
    if f.metadata.get("keep_empty"):
        return bool(f.metadata.get("optional")) and value is None
    return bool(f.metadata.get("optional")) and value in (None, {}, ())


def as_mapping(record: Any) -> dict[str, Any]:
    """记录写回 JSON 对象：:func:`from_mapping` 的逆。"""
    cls: Any = type(record)
    out = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.metadata.get("inline"):
            out.update(as_mapping(value))
        elif not _omitted(record, f, value):
            out[key_of(f)] = _encode(hints(cls)[f.name], value)
    return out


def _value_schema(tp: Any, meta: Mapping[str, Any]) -> dict[str, Any]:
    """一个值的 schema：它的类型，加上字段的约束。"""
    origin = typing.get_origin(tp)
    constraints = dict(meta.get("constraints") or {})
    item = {"constraints": meta.get("item") or {}}
    if origin is tuple:
        return {"type": "array", "items": _value_schema(typing.get_args(tp)[0], item)} | constraints
    if origin is Mapping:
        out: dict[str, Any] = {"type": "object"}
        if meta.get("keys") is not None:
            out["propertyNames"] = {"enum": list(meta["keys"])}
        out["additionalProperties"] = _value_schema(typing.get_args(tp)[1], item)
        return out | constraints
    if tp in _CODECS:
        return _CODECS[tp].schema()
    if dataclasses.is_dataclass(tp):
        return json_schema(tp)
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]} | constraints
    raise TypeError(f"no JSON form for {tp!r}")


def field_schema(cls: Any, f: dataclasses.Field) -> dict[str, Any]:
    """记录类 ``cls`` 的字段 ``f`` 的 schema。"""
    none_ok, tp = _unwrap(hints(cls)[f.name])
    schema = _value_schema(tp, f.metadata)
    if f.metadata.get("nullable"):
        if not none_ok:
            raise TypeError(f"{cls.__name__}.{f.name} is nullable but not typed ... | None")
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    unit = f.metadata.get("unit")
    words = [f.metadata.get("description"), f"[{unit}]" if unit not in (None, "1") else None]
    if any(words):
        schema["description"] = " ".join(w for w in words if w)
    return schema


def required(f: dataclasses.Field) -> bool:
    """字段的键是否总在 JSON 中。"""
    return not f.metadata.get("optional") and f.metadata.get("only") is None


def json_schema(cls: Any) -> dict[str, Any]:
    """记录类 ``cls`` 的 JSON Schema（draft 2020-12），外加它的 ``SCHEMA_EXTRA`` （若有）。"""
    keys: list[str] = []
    properties: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get("inline"):
            inner = json_schema(hints(cls)[f.name])
            keys += inner["required"]
            properties |= inner["properties"]
            continue
        if required(f):
            keys.append(key_of(f))
        properties[key_of(f)] = field_schema(cls, f)
    schema: dict[str, Any] = {
        "type": "object",
        "required": keys,
        "additionalProperties": False,
        "properties": properties,
    }
    return schema | dict(getattr(cls, "SCHEMA_EXTRA", {}))


__all__ = [
    "Codec",
    "as_mapping",
    "codec",
    "field_schema",
    "from_mapping",
    "hints",
    "json_schema",
    "key_of",
    "record_field",
    "required",
]
