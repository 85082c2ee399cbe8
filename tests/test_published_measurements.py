"""No published measurement beats a bound or a capacity the package prints.

Each row of ``tests/data/published_measurements.toml`` is a figure someone measured
on real hardware, with its source. Its ``kind`` names the function below that
computes, with the package's public functions, what the package says about that
configuration: a time lower bound (turned into the largest rate it allows, or kept
as a time) or a capacity. A lower bound a real kernel beats is wrong, so each
measured value must sit on the allowed side; a failure prints the margin.

A row with a ``sweep`` stands for one row per swept value (``value`` is then a list).
Add a kind by adding a function to :data:`KINDS`.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roofline_book import attention, elementwise, gemm, hardware, time_bound
from roofline_book.devices.catalog import Hardware, network
from roofline_book.devices.kernels import device_sram_bytes
from roofline_book.distributed.allreduce import multi_node_all_reduce
from roofline_book.distributed.collectives import bus_bandwidth
from roofline_book.distributed.parallel import all_reduce
from roofline_book.llm.inference import Precisions, model, step_ops, step_time

DATA = Path(__file__).parent / "data" / "published_measurements.toml"
FIELDS = ("id", "kind", "what", "device", "config", "value", "unit", "source", "url", "note")

#: Each unit in SI base units (FLOP/s, byte/s, token/s, second, byte).
UNITS = {
    "TFLOP/s": 1e12,
    "TB/s": 1e12,
    "GB/s": 1e9,
    "tok/s": 1.0,
    "ms": 1e-3,
    "s": 1.0,
    "B": 1.0,
    "MiB": 2.0**20,
    "GiB": 2.0**30,
}


@dataclass(frozen=True)
class Limit:
    """What the package allows for a measurement, in SI base units.

    ``at_most``: the measured value may not exceed ``value`` (a rate a time lower
    bound allows, or a capacity the catalog must hold); otherwise it may not fall
    below it (a time lower bound).
    """

    value: float
    at_most: bool
    why: str


def _attention_forward(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.attention`` (flash, the device's shared memory per SM) and
    ``roofline.time_bound``: the paper's FLOPs (4 s^2 d h per sequence, halved when
    causal) over the bound is the fastest rate the bound allows."""
    seqlen, d, causal = c["seqlen"], c["head_dim"], c["causal"]
    batch, heads = c.get("batch", 16384 // seqlen), c.get("heads", 2048 // d)
    cost = attention(
        batch,
        heads,
        seqlen,
        seqlen,
        d,
        c["dtype"],
        causal=causal,
        sram_bytes=device_sram_bytes(device),
    )
    bound = time_bound(cost, device, c["dtype"])
    flops = 4 * seqlen**2 * d * heads * batch / (2 if causal else 1)
    return Limit(flops / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})")


def _gemm(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.gemm`` and ``roofline.time_bound``: 2 m k n over the bound."""
    if "n" in c and "m" not in c:
        m = n = k = c["n"]
    else:
        m, (n, k) = c["m"], c["nk"]
    cost = gemm(m, k, n, c["dtype"], out_dtype=c.get("out_dtype"))
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        2 * m * k * n / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})"
    )


def _peak_rate(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``Hardware.ceiling``: the unit's peak, which no kernel of any shape exceeds."""
    return Limit(device.ceiling(c["unit"], c["dtype"]), True, f"{c['unit']} ceiling")


#: BabelStream's kernels: (arrays read, arrays written, FLOPs per element).
_STREAM = {
    "copy": (1, 1, 0),
    "mul": (1, 1, 1),
    "add": (2, 1, 1),
    "triad": (2, 1, 2),
    "dot": (2, 0, 2),
}


def _stream(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``ops.elementwise`` and ``roofline.time_bound``: bytes over the bound is the
    fastest bandwidth the bound allows."""
    reads, writes, flops = _STREAM[c["kernel"]]
    cost = elementwise(
        c["numel"], c["dtype"], inputs=reads, outputs=writes, flops_per_element=flops
    )
    bound = time_bound(cost, device, c["dtype"])
    return Limit(
        cost.bytes / bound.seconds, True, f"bound {bound.seconds:.4g} s ({bound.resource})"
    )


def _precisions(c: Mapping[str, Any]) -> Precisions:
    if "precision" in c:
        p = c["precision"]
        return Precisions(weights=p, activations=p, kv=p)
    return Precisions(weights=c.get("weights", "bf16"))


def _shape(c: Mapping[str, Any]) -> tuple[int, int, int]:
    if "batch_prompt_generated" in c:
        batch, prompt, generated = c["batch_prompt_generated"]
        return batch, prompt, generated
    return c["batch"], c["prompt"], c["generated"]


def _generation(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``inference.step_ops`` and ``inference.step_time``: a prefill of the prompt
    (which gives the first token) plus one decode step per further token, each at its
    own context; batch x generated tokens over that time is the fastest rate."""
    config, p = model(c["model"]), _precisions(c)
    batch, prompt, generated = _shape(c)
    seconds = step_time(step_ops(config, batch, prompt, prompt, p), device, p).seconds
    for context in range(prompt + 1, prompt + generated):
        seconds += step_time(step_ops(config, batch, 1, context, p), device, p).seconds
    return Limit(batch * generated / seconds, True, f"bound {seconds:.4g} s for the request")


def _prefill(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``inference.step_ops`` and ``inference.step_time`` of the prompt: the first
    token cannot come sooner."""
    p = _precisions(c)
    ops = step_ops(model(c["model"]), c["batch"], c["prompt"], c["prompt"], p)
    return Limit(step_time(ops, device, p).seconds, False, "prefill bound")


def _capacity(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``Hardware.memory_capacity``: what the driver reports fits, so the catalog must
    hold at least as much (a largest batch from less is beaten by reality)."""
    if device.memory_capacity is None:
        pytest.fail(f"{device.key} has no memory capacity to check")
    return Limit(device.memory_capacity, True, "catalog memory_capacity")


def _all_reduce_busbw(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``parallel.all_reduce`` on the catalog's link, its bandwidth term: the busbw it allows
    (nccl-tests: algbw = bytes / time, busbw = algbw x 2(n-1)/n)."""
    n, nbytes = c["devices"], c["bytes"]
    seconds = all_reduce(nbytes, n, device).bandwidth_s
    return Limit(bus_bandwidth("all_reduce", nbytes / seconds, n), True, f"bound {seconds:.4g} s")


def _all_reduce_busbw_nodes(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``allreduce.multi_node_all_reduce`` across ``devices / per_node`` nodes, the catalog's
    link inside (its NVLink SHARP where the switch reduces) and one NIC of ``network`` per GPU:
    the busiest link's bandwidth term, as the busbw it allows."""
    n, p, nbytes = c["devices"], c["per_node"], c["bytes"]
    if device.link_bandwidth is None or device.link_latency is None:
        pytest.fail(f"{device.key} has no link in the catalog")
    nic = network(c["network"])
    t = multi_node_all_reduce(
        nbytes,
        p,
        n // p,
        device.link_bandwidth,
        device.link_latency,
        nic.bandwidth,
        nic.latency,
        intra_reduces=device.link_reduces,
    )
    seconds = t.bandwidth_s
    return Limit(bus_bandwidth("all_reduce", nbytes / seconds, n), True, f"bound {seconds:.4g} s")


def _all_reduce_time(device: Hardware, c: Mapping[str, Any]) -> Limit:
    """``parallel.all_reduce`` on the catalog's link: its bandwidth term is a time lower bound
    (the latency term is not: one-shot kernels beat NCCL's ring latency)."""
    seconds = all_reduce(c["bytes"], c["devices"], device).bandwidth_s
    return Limit(seconds, False, "all-reduce bandwidth term")


#: Row kind -> the function that computes its limit.
KINDS: dict[str, Callable[[Hardware, Mapping[str, Any]], Limit]] = {
    "attention_forward": _attention_forward,
    "gemm": _gemm,
    "peak_rate": _peak_rate,
    "stream": _stream,
    "generation": _generation,
    "prefill": _prefill,
    "capacity": _capacity,
    "all_reduce_busbw": _all_reduce_busbw,
    "all_reduce_busbw_nodes": _all_reduce_busbw_nodes,
    "all_reduce_time": _all_reduce_time,
}


@dataclass(frozen=True)
class Case:
    """One published value and the configuration it was measured in."""

    row: Mapping[str, Any]
    config: Mapping[str, Any]
    value: float

    @property
    def id(self) -> str:
        swept = {k: v for k, v in self.config.items() if k not in self.row["config"]}
        return self.row["id"] + "".join(f"[{k}={v}]" for k, v in swept.items())


def _rows() -> list[dict[str, Any]]:
    return list(tomllib.loads(DATA.read_text("utf-8"))["measurement"])


def _cases(row: Mapping[str, Any]) -> list[Case]:
    if "sweep" not in row:
        return [Case(row, row["config"], float(row["value"]))]
    ((field, values),) = row["sweep"].items()
    if len(values) != len(row["value"]):
        raise ValueError(f"{row['id']}: {len(values)} swept values, {len(row['value'])} measured")
    return [
        Case(row, {**row["config"], field: v}, float(x))
        for v, x in zip(values, row["value"], strict=True)
    ]


def _params() -> list[Any]:
    params = []
    for row in _rows():
        params += [pytest.param(case, id=case.id) for case in _cases(row)]
    return params


def test_rows_are_complete_and_sourced() -> None:
    rows = _rows()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for row in rows:
        missing = [f for f in FIELDS if f not in row]
        assert not missing, f"{row.get('id')}: missing {missing}"
        assert row["kind"] in KINDS, f"{row['id']}: unknown kind {row['kind']!r}"
        assert row["unit"] in UNITS, f"{row['id']}: unknown unit {row['unit']!r}"
        assert row["url"].startswith("https://"), row["id"]
        assert row["source"].strip(), row["id"]
        hardware(row["device"])  # a catalog device
    kinds = {r["kind"] for r in rows}
    assert kinds == set(KINDS), f"kinds without a row: {set(KINDS) - kinds}"


@pytest.mark.parametrize("case", _params())
def test_no_published_measurement_beats_the_package(case: Case) -> None:
    row = case.row
    limit = KINDS[row["kind"]](hardware(row["device"]), case.config)
    scale = UNITS[row["unit"]]
    allowed = limit.value / scale
    assert math.isfinite(allowed) and allowed > 0
    ok = case.value <= allowed if limit.at_most else case.value >= allowed
    relation = "at most" if limit.at_most else "at least"
    assert ok, (
        f"{case.id}: {row['what']} on {row['device']} measured {case.value:g} {row['unit']}, "
        f"but the package allows {relation} {allowed:.6g} {row['unit']} ({limit.why}); "
        f"measured / allowed = {case.value / allowed:.3f}. Source: {row['source']}"
    )


def test_a_beaten_bound_fails() -> None:
    """The check can fail: a GEMM measured 1 % above the H100 BF16 matrix peak."""
    config = {"dtype": "bf16", "n": 8192}
    row: dict[str, Any] = {"id": "x", "what": "GEMM", "device": "h100-sxm", "unit": "TFLOP/s",
                           "source": "-", "kind": "gemm", "config": config}  # fmt: skip
    peak = hardware("h100-sxm").ceiling("matrix", "bf16") / 1e12  # 989.5
    with pytest.raises(AssertionError, match="measured / allowed = 1.010"):
        test_no_published_measurement_beats_the_package(Case(row, config, 1.01 * peak))
