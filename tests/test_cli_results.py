"""The --json results as records: every number carries a unit, and the key names it."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

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


def _numbers(cls: Any, seen: set | None = None):
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


def test_every_command_that_prints_json_declares_its_result():
    # bench writes a run file (its schema: measure.runs.records) and prints no --json result
    from roofline_book.cli.schema import SCHEMAS

    declared = {m.__name__.rsplit(".", 1)[-1] for m in SUBCOMMANDS if hasattr(m, "RESULT")}
    assert declared == {m.__name__.rsplit(".", 1)[-1] for m in SUBCOMMANDS} - {"bench"}
    assert set(SCHEMAS) == declared
    for m in SUBCOMMANDS:
        if hasattr(m, "RESULT"):
            assert results.Result in m.RESULT.__mro__


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


def test_attainable_rate_is_the_busiest_units_written_out():
    # A100 80GB SXM datasheet: 2,039 GB/s of HBM, BF16 Tensor Core 312 TFLOPS (dense).
    # add of 1M bf16 elements: 1 vector FLOP each, two inputs read and one output written at
    # 2 bytes: 6 MB, so HBM bounds it at 6e6 / 2.039e12 s and the vector units attain
    # 1e6 FLOP over that time, 2.039e12 / 6 FLOP/s
    from roofline_book.cli import main

    out = _json(main, "op", "add", "--numel", "1M", "--device", "a100-sxm")
    assert (out["bound"], out["attainable_unit"]) == ("hbm", "vector")
    assert out["time_lower_bound_s"] == pytest.approx(6e6 / 2.039e12)
    assert out["attainable_per_s"] == pytest.approx(2.039e12 / 6)
    # a 4096^3 bf16 GEMM: 2 x 4096^3 FLOP on the matrix units, 1365 FLOP/byte, far right of
    # the A100's ridge (312e12 / 2.039e12 = 153): it attains the dense peak
    out = _json(
        main, "op", "gemm", "--m", "4Ki", "--k", "4Ki", "--n", "4Ki", "--device", "a100-sxm"
    )
    assert (out["bound"], out["attainable_unit"]) == ("matrix", "matrix")
    assert out["attainable_per_s"] == pytest.approx(312e12)
    assert out["time_lower_bound_s"] == pytest.approx(2 * 4096**3 / 312e12)


def _json(main, *argv: str) -> dict:
    import contextlib
    import io
    import json

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*argv, "--json"]) == 0
    return json.loads(printed.getvalue())
