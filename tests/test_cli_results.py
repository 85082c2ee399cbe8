"""The --json results as records: every number carries a unit, and the key names it."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping

import pytest

from roofline_book._base.records import hints, json_schema
from roofline_book.cli import SUBCOMMANDS, results

SHARED = (results.Device, results.CostOn, results.BlockOp, results.StepOp, results.LayerOp)


def _declared() -> list[type]:
    return [m.RESULT for m in SUBCOMMANDS if hasattr(m, "RESULT")] + list(SHARED)


def _base(tp: typing.Any) -> typing.Any:
    """the type a field holds, through ``X | None``, tuples and mappings' values"""
    while True:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        origin = typing.get_origin(tp)
        if origin in (typing.Union, types.UnionType, tuple):
            tp = args[0]
        elif origin is Mapping:
            tp = args[1]
        else:
            return tp


def _numbers(cls: type, seen: set | None = None):
    """(record, field) for every int or float field reachable from ``cls``"""
    seen = set() if seen is None else seen
    if cls in seen:
        return
    seen.add(cls)
    for f in dataclasses.fields(cls):
        tp = _base(hints(cls)[f.name])
        if dataclasses.is_dataclass(tp):
            yield from _numbers(tp, seen)
        elif tp in (int, float):
            yield cls, f


def test_the_commands_declare_results():
    # devices was written first; the others follow the same declaration
    assert results.Result in _declared()[0].__mro__
    assert any(m.__name__.endswith(".devices") for m in SUBCOMMANDS if hasattr(m, "RESULT"))


@pytest.mark.parametrize("cls", _declared(), ids=lambda c: c.__name__)
def test_every_number_carries_a_unit_its_key_names(cls):
    # seconds end in _s, rates in _per_s (FLOP/s, evaluations/s, 1/s) or _Bps (byte/s),
    # capacities and byte counts in bytes, FLOP counts in flops, clocks in _hz
    found = list(_numbers(cls))
    assert found
    for record, f in found:
        where = f"{record.__name__}.{f.name}"
        unit = f.metadata.get("unit")
        if unit is None:  # the value's unit is written next to it, in the key "unit"
            assert "unit" in {g.name for g in dataclasses.fields(record)}, where
            continue
        key = f.metadata.get("key") or f.name
        if key.endswith("_per_s"):
            assert unit.endswith("/s") and unit != "byte/s", where
        elif key.endswith("_Bps"):
            assert unit == "byte/s", where
        elif key.endswith("_s"):
            assert unit == "s", where
        elif key.endswith("_hz"):
            assert unit == "Hz", where
        elif key == "bytes" or key.endswith("_bytes") or key.startswith("bytes_"):
            assert unit == "byte", where
        elif key == "flops" or key.endswith("_flops"):
            assert unit == "FLOP", where
        if unit == "s":
            assert key.endswith("_s"), where
        if unit == "byte/s":
            assert key.endswith("_Bps") or record is results.Bandwidths, where


def test_the_unit_lands_in_the_schema():
    # the appendix's table and a reader of the schema see the unit the record declares
    props = json_schema(results.CostOn)["properties"]
    assert props["time_lower_bound_s"]["description"].endswith("[s]")
    assert props["bytes"]["description"] == "bytes_read + bytes_written [byte]"
    assert "[" not in props["kernels"]["description"]  # a count: unit "1" is not written
