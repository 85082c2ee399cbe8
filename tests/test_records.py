"""Run files as typed records: every stored run loads and writes back exactly."""

import dataclasses
import json
from pathlib import Path

import pytest

from roofline_book.measure import records, runfile
from roofline_book.measure.records import Entry, Run
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
            model = raw["model"]
            assert entry.rates == (
                model["flops"] / raw["time"]["median_s"],
                (model["bytes_read"] + model["bytes_written"]) / raw["time"]["median_s"],
            )
        else:
            assert entry.time is None and entry.reason == raw["reason"]


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
