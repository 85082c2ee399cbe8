"""Run files as typed records: every stored run loads and writes back exactly."""

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path

import pytest

from roofline_book._base import records as schema
from roofline_book.measure.runs import records, runfile
from roofline_book.measure.runs.records import Entry, Run
from roofline_book.ops import Cost

ROOT = Path(__file__).resolve().parent.parent
STORED = sorted(
    [
        *(ROOT / "tests" / "data").glob("fixture-*.json"),
        *(ROOT / "docs" / "data").glob("*.json"),
        *(ROOT / "_build" / "bench").glob("*.json"),
    ]
)


def test_there_are_stored_runs():
    assert len([p for p in STORED if p.parent.name == "data"]) >= 2


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_run_round_trips(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    run = runfile.load_run(path)
    assert run.as_mapping() == data
    # and the JSON the writer would emit parses back to the same run
    assert Run.from_mapping(json.loads(json.dumps(run.as_mapping()))) == run
    assert len(run.entries) == len(data["results"])
    for entry, raw in zip(run.entries, data["results"], strict=True):
        assert entry.id == raw["id"]
        assert entry.cost == Cost(**raw["model"])
        if raw["status"] == "ok":
            assert entry.median_s == raw["time"]["median_s"]
        else:
            assert entry.time is None and entry.reason == raw["reason"]


def test_an_entrys_rates_are_its_model_counts_over_its_median():
    # the fixture's 1024^3 FP32 GEMM: 2 x 1024^3 = 2^31 FLOP, and A, B read and C written,
    # 3 x 1024^2 x 4 bytes = 12 MiB, in a median of 20 ms
    run = runfile.load_run(ROOT / "tests" / "data" / "fixture-cpu-pass.json")
    flops, bandwidth = run.entry("gemm/fp32/mm/m=1024,k=1024,n=1024").rates
    assert flops == pytest.approx(107.374_182_4e9)  # 2^31 / 0.02
    assert bandwidth == pytest.approx(629.145_6e6)  # 12,582,912 / 0.02


def _entry(**changes):
    base = dict(
        id="gemm/bf16/mm/m=512,k=512,n=512",
        name="gemm",
        shape={"m": 512, "k": 512, "n": 512},
        precision="bf16",
        impl="mm",
        status="skipped",
        reason="not here",
        cost=Cost(2 * 512**3, 3 * 512 * 512 * 2, 512 * 512 * 2),
    )
    return Entry(**(base | changes))


def test_entry_text_is_the_readers_words():
    assert _entry().text == "gemm bf16 512x512x512"
    fused = _entry(
        id="adamw/fp32/fused/params=8388608,tensors=8",
        name="adamw",
        shape={"params": 8388608, "tensors": 8},
        precision="fp32",
        impl="fused",
    )
    assert fused.text == "adamw fp32 2^23 in 8 (fused)"  # 8388608 = 2^23


def test_an_id_that_disagrees_with_its_fields_is_refused():
    with pytest.raises(ValueError, match="id"):
        _entry(id="gemm/bf16/mm/m=512,k=512,n=1024")


def test_results_filter_and_entry_lookup():
    run = runfile.load_run(ROOT / "tests" / "data" / "fixture-cpu-pass.json")
    gemms = run.results("gemm")
    assert gemms and all(e.name == "gemm" and e.ok for e in gemms)
    assert len(run.results(status=None)) == len(run.entries)
    assert run.entry(gemms[0].id) is gemms[0]
    with pytest.raises(KeyError, match="no result"):
        run.entry("gemm/fp32/mm/m=1,k=1,n=1")
    with pytest.raises(ValueError, match="name must be one of"):
        run.results("gemv")
    with pytest.raises(ValueError, match="status must be one of"):
        run.results(status="done")


def test_the_cost_record_writes_its_counts_and_only_the_units_it_uses():
    # the writer always gives flops, bytes and kernels; unit and re-read fields when non-zero
    assert records.cost_mapping(Cost(4, 8, 8, vector_flops=4)) == {
        "flops": 4,
        "bytes_read": 8,
        "bytes_written": 8,
        "kernels": 1,
        "vector_flops": 4,
    }
    required = [f.name for f in dataclasses.fields(Cost) if f.default is dataclasses.MISSING]
    assert set(required) <= set(records.COST_REQUIRED)


def _record_types(tp):
    """The record classes (or Cost) in a field's type: (where their schema sits, the class)."""
    _, tp = schema._unwrap(tp)
    via, args = {tuple: ("items", 0), Mapping: ("additionalProperties", 1)}.get(
        typing.get_origin(tp), (None, None)
    )
    inner = tp if via is None else typing.get_args(tp)[args]
    return [(via, inner)] if dataclasses.is_dataclass(inner) else []


def _agree(cls, node, where):
    """The schema node of a record has exactly its fields, and requires the ones always written:
    the check a schema built by hand would have to pass."""
    names = [f.name for f in dataclasses.fields(cls)]
    keys = [schema.key_of(f) for f in dataclasses.fields(cls)]
    assert node["type"] == "object" and node["additionalProperties"] is False, where
    assert set(node["properties"]) == set(keys), where
    if cls is Cost:
        assert node["required"] == list(records.COST_REQUIRED), where
        return
    always = {schema.key_of(f) for f in dataclasses.fields(cls) if schema.required(f)}
    assert set(node["required"]) == always, where
    for name, key in zip(names, keys, strict=True):
        for via, inner in _record_types(schema.hints(cls)[name]):
            child = node["properties"][key]
            child = child[via] if via else child
            _agree(inner, child, f"{where}.{key}")


def test_the_schema_holds_the_run_files_top_level_keys():
    # the top-level keys of a version-1 run file, as every stored run (tests/data) has them
    assert set(runfile.RUN_SCHEMA["properties"]) == {
        "format", "version", "date", "host", "suite", "device", "software", "ceilings",
        "results", "load_average", "stability",
    }  # fmt: skip


def test_a_field_added_to_a_record_reaches_the_schema():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Grown(records.Check):
        tolerance_note: str | None = schema.record_field(optional=True, minLength=1)

    grown = schema.json_schema(Grown)
    assert "tolerance_note" in grown["properties"]
    assert set(grown["properties"]) - set(schema.json_schema(records.Check)["properties"]) == {
        "tolerance_note"
    }
    with pytest.raises(AssertionError):  # a schema missing the field disagrees with the type
        _agree(Grown, schema.json_schema(records.Check), "check")


def test_every_optional_field_written_validates():
    # the CPU run holds samples, rounds, the stability record and the implementation costs;
    # add what only a GPU or a failed case writes, and the writer's output must pass the schema
    data = json.loads((ROOT / "tests" / "data" / "fixture-cpu-pass.json").read_text())
    run = Run.from_mapping(data)
    timed = run.results()[0]
    measured = records.MeasuredBytes(read=8, written=8, kernels=1, tool="ncu")
    extra = dataclasses.replace(
        timed, measured_dram_bytes=measured, note="fused", rounds_s=(1.0, 2.0)
    )
    full = dataclasses.replace(run, entries=(extra, *run.entries[1:]))
    runfile.validate_run(full.as_mapping())
    bad = full.as_mapping()
    bad["results"][0]["measured_dram_bytes"]["cycles"] = 1
    with pytest.raises(ValueError, match="measured_dram_bytes"):
        runfile.validate_run(bad)


def test_a_stability_record_keeps_the_levels_measured_slower_than_dram():
    """A run on a loaded machine: its L3 copy at 12 GB/s, below its DRAM at 17.7 GB/s (the
    new-user review's CPU run). The finding is written, validates and reads back; a run
    without one writes no key (older runs stay as they were)."""
    data = json.loads((ROOT / "tests" / "data" / "fixture-cpu-pass.json").read_text())
    run = Run.from_mapping(data)
    slow = records.LevelInversion(level="l3", bandwidth=12e9, outer="dram", outer_bandwidth=17.7e9)
    stability = records.Stability(probe="copy", first_s=1.0, last_s=1.0, drift=1.0, stable=True)
    plain = dataclasses.replace(run, stability=stability)
    assert "inverted_levels" not in plain.as_mapping()["stability"]
    found = dataclasses.replace(stability, inverted_levels=(slow,))
    written = dataclasses.replace(run, stability=found).as_mapping()
    runfile.validate_run(written)
    assert written["stability"]["inverted_levels"] == [
        {"level": "l3", "bandwidth": 12e9, "outer": "dram", "outer_bandwidth": 17.7e9}
    ]
    assert Run.from_mapping(written).stability.inverted_levels == (slow,)
    written["stability"]["inverted_levels"][0]["level"] = "dram"  # main memory is never inside
    with pytest.raises(ValueError, match="inverted_levels"):
        runfile.validate_run(written)
