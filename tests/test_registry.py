"""The operator registry: what it reads from a model function's signature, and who reads it."""

from __future__ import annotations

import argparse

import pytest

from roofline_book.measure.bench import cases
from roofline_book.measure.profile.atenops import ATEN_MODELS
from roofline_book.ops import Cost, registry
from roofline_book.ops.registry import REGISTRY, VOCABULARY, Entry, register


def _probe(
    rows: int, dtype: str = "bf16", *, upcast: bool = True, tile: tuple | None = None
) -> Cost:
    return Cost(rows, rows, rows)


def test_kinds_required_and_defaults_come_from_the_signature():
    entry = Entry("probe", _probe, ("a probe", "探针"))
    params = {p.name: p for p in entry.params}
    # int -> size, str -> text, bool -> flag; a tuple is no command-line parameter
    assert [(p.name, p.kind, p.required, p.default) for p in params.values()] == [
        ("rows", "size", True, None),
        ("dtype", "text", False, "bf16"),
        ("upcast", "flag", False, True),
    ]
    # the words come from the vocabulary, by name
    assert params["rows"].help == VOCABULARY["rows"].help == "rows (tokens)"
    assert params["rows"].label == "行数" and params["rows"].example == 4096
    assert params["dtype"].flag == "--dtype"


def test_a_parameter_without_words_is_refused_with_its_name():
    def widget(widgets: int) -> Cost:
        return Cost(widgets, 0, 0)

    with pytest.raises(ValueError, match="'widgets' has no entry in the vocabulary"):
        register(Entry("widget", widget, ("widgets", "部件")))
    assert "widget" not in REGISTRY
    with pytest.raises(ValueError, match="'tile' is not a size, flag or text parameter"):
        Entry("probe", _probe, ("a probe", "探针"), args=("rows", "tile")).params  # noqa: B018


def test_an_operator_a_case_or_an_aten_op_registers_once(monkeypatch):
    # as torch.utils.flop_counter.register_flop_formula: "duplicate registrations for {target}"
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # this test's own
    with pytest.raises(ValueError, match="'gemm' is registered already"):
        register(REGISTRY["gemm"])
    with pytest.raises(ValueError, match="benchmark case 'gemm' is registered already"):
        register(Entry("gemm2", _probe, ("a probe", "探针"), case="gemm"))
    register(Entry("probe", _probe, ("a probe", "探针"), aten=("aten::probe",)))
    with pytest.raises(ValueError, match="aten::probe already modelled by probe"):
        register(Entry("probe2", _probe, ("a probe", "探针"), aten=("aten::probe",)))
    assert "gemm2" not in registry._REGISTRY and "probe2" not in registry._REGISTRY


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_function_takes_what_the_command_line_builds(name):
    # the parser `op NAME` builds, fed each required size's example, calls the function
    from roofline_book.cli.operators import add_operator_arguments

    entry = REGISTRY[name]
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_operator_arguments(parser, entry)
    argv = [a for p in entry.params if p.required for a in (p.flag, str(p.example))]
    given = vars(parser.parse_args(argv))
    cost, arguments = entry.call(given)
    assert isinstance(cost, Cost) and cost.bytes > 0, name
    assert set(given) <= set(arguments) and entry.roof_dtype in arguments


def test_benchmark_cases_and_registry_name_each_other():
    # every operator the suite measures (not the bandwidth probes) is a registered one, and
    # every case a registry entry names is measured
    named = {e.case: e.name for e in REGISTRY.values() if e.case is not None}
    measured = {n for n, op in cases.OPERATORS.items() if op.family != "ceiling"}
    assert set(named) == measured


def test_the_profiler_models_every_aten_op_an_operator_claims():
    claimed = [a for e in REGISTRY.values() for a in e.aten]
    assert all(a in ATEN_MODELS for a in claimed)


def test_a_benchmark_case_no_operator_names_is_refused():
    from roofline_book.measure.bench import registry as bench

    gemm = cases.OPERATORS["gemm"]
    with pytest.raises(ValueError, match="'conv2d' is no registered operator's case"):
        bench.register(bench.Operator("conv2d", ("n",), ("conv",), "gemm", gemm.make))
    assert "conv2d" not in cases.OPERATORS
