"""roofline_book.measure.profiling: profiles of known shapes, checked by hand arithmetic."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from roofline_book.bounds import Ceilings  # noqa: E402
from roofline_book.measure import atenops, profiling  # noqa: E402


def _profile(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        fn()
    return prof


def _rows(attribution, name):
    return [r for r in attribution.rows if r.name == name]


def test_matmul_rows_hand_arithmetic_and_profiler_flops():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    attribution = profiling.attribute(_profile(lambda: [a @ b for _ in range(3)]))
    (mm,) = _rows(attribution, "aten::mm")
    assert mm.calls == 3
    assert mm.shapes == ((64, 32), (32, 16))
    assert mm.flops == 3 * 2 * 64 * 32 * 16  # 196,608
    assert mm.bytes == 3 * 4 * (64 * 32 + 32 * 16 + 64 * 16)  # 3 * 14,336
    assert mm.profiler_flops == mm.flops  # the profiler counts 2MKN too
    # aten::matmul is composite: its mm carries the model, nothing counted twice
    assert all(r.cost is None for r in _rows(attribution, "aten::matmul"))
    assert attribution.total().flops == 196_608


def test_linear_with_and_without_bias():
    x, w, bias = torch.randn(4, 8), torch.randn(16, 8), torch.randn(16)
    attribution = profiling.attribute(_profile(lambda: (F.linear(x, w), F.linear(x, w, bias))))
    assert all(r.cost is None for r in _rows(attribution, "aten::linear"))
    (addmm,) = _rows(attribution, "aten::addmm")
    assert addmm.flops == 2 * 4 * 8 * 16  # 1024, as the profiler counts addmm
    assert addmm.bytes == 4 * (4 * 8 + 8 * 16 + 4 * 16 + 16)  # A, B, C and the bias once
    assert addmm.profiler_flops == 1024
    assert attribution.total().flops == 2 * 1024


def test_elementwise_and_broadcast():
    x, y, v = torch.randn(1000), torch.randn(1000), torch.randn(16)
    m = torch.randn(8, 16)
    attribution = profiling.attribute(_profile(lambda: (x + y, m * v, torch.exp(x))))
    (add,) = _rows(attribution, "aten::add")
    assert (add.flops, add.bytes) == (1000, 4 * 3 * 1000)  # read x, y; write z
    assert add.intensity == pytest.approx(1 / 12)
    assert add.profiler_flops == 1000  # counted here: 1 per element, as the model
    (mul,) = _rows(attribution, "aten::mul")
    assert (mul.flops, mul.bytes) == (128, 4 * (128 + 16 + 128))  # v is read once: 1088
    (exp,) = _rows(attribution, "aten::exp")
    assert exp.cost.special_flops == 1000 and exp.bytes == 8000
    assert exp.profiler_flops is None  # the profiler counts none for exp


def test_layer_norm_and_rms_norm():
    x, w, b = torch.randn(10, 32), torch.randn(32), torch.randn(32)
    attribution = profiling.attribute(_profile(lambda: F.layer_norm(x, (32,), w, b)))
    (ln,) = _rows(attribution, "aten::native_layer_norm")
    # 7 FLOPs per element and 4 per row; read x, gamma, beta, write y (FP32)
    assert ln.flops == 7 * 320 + 4 * 10  # 2280
    assert ln.bytes == 4 * (320 + 2 * 32) + 4 * 320  # 2816
    assert all(r.cost is None for r in _rows(attribution, "aten::layer_norm"))
    # RMSNorm on the CPU is a composite: its pieces carry the models
    attribution = profiling.attribute(_profile(lambda: F.rms_norm(x, (32,), w)))
    (fused,) = _rows(attribution, "aten::_fused_rms_norm")
    assert fused.cost is None  # decomposed: x * rsqrt(mean(x^2) + eps) * w
    (rsqrt,) = _rows(attribution, "aten::rsqrt")
    assert (rsqrt.flops, rsqrt.bytes) == (10, 4 * 2 * 10)  # one per row
    pieces = {r.name for r in attribution.modelled()}
    assert {"aten::pow", "aten::rsqrt", "aten::mul"} <= pieces


def test_adamw_step_against_hand_counts():
    p = torch.nn.Parameter(torch.randn(100))
    opt = torch.optim.AdamW([p], lr=1e-3, foreach=False)
    p.grad = torch.randn(100)
    opt.step()  # the first step creates the moments; profile the second
    attribution = profiling.attribute(_profile(opt.step))
    calls = {r.name: r.calls for r in attribution.modelled()}
    assert calls == {
        "aten::mul_": 2,  # param *= 1 - lr * wd; exp_avg_sq *= beta2
        "aten::lerp_": 1,
        "aten::addcmul_": 1,
        "aten::sqrt": 1,
        "aten::div": 1,
        "aten::add_": 1,
        "aten::addcdiv_": 1,
    }
    total = attribution.total()
    # 1 + 3 + 1 + 3 + 1 + 1 + 1 + 3 = 14 FLOPs per parameter, as adamw() counts
    assert total.flops == 14 * 100
    # bytes per parameter: mul_ 8, lerp_ 12, mul_ 8, addcmul_ 16 (grad counted twice: the
    # shapes cannot tell it is one tensor), sqrt 8, div 8, add_ 8, addcdiv_ 16 = 84
    assert total.bytes == 84 * 100


def test_sdpa_causal_and_profiler_blind_spot():
    q = torch.randn(1, 2, 16, 8)
    attribution = profiling.attribute(
        _profile(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
    )
    (sdpa,) = [r for r in attribution.modelled() if "flash_attention" in r.name]
    pairs = 16 * 17 // 2  # a causal mask keeps 136 of 256 pairs
    assert sdpa.flops == 2 * pairs * (4 * 8 + 5)  # 2 heads, 4 d + 5 FLOPs per pair
    assert sdpa.bytes == 2 * 4 * 8 * (3 * 16 + 16)  # Q, K, V read, O written
    assert sdpa.profiler_flops is None  # torch counts no FLOPs for CPU SDPA


def test_shares_add_up_and_match_key_averages():
    a = torch.randn(128, 128)
    prof = _profile(lambda: torch.relu(a @ a) + a)
    attribution = profiling.attribute(prof)
    assert sum(r.share for r in attribution.rows) == pytest.approx(1.0)
    averages = prof.key_averages(group_by_input_shape=True)
    assert attribution.total_time_s == pytest.approx(
        sum(e.self_cpu_time_total for e in averages) * 1e-6, rel=1e-6
    )
    mm = {e.count for e in averages if e.key == "aten::mm"}
    assert mm == {_rows(attribution, "aten::mm")[0].calls}
    modelled = sum(r.share for r in attribution.rows if r.cost is not None)
    assert attribution.explained == pytest.approx(modelled) and 0 < modelled < 1


def test_region_keeps_only_ops_inside():
    a = torch.randn(32, 32)

    def run():
        a @ a
        with torch.profiler.record_function("inside"):
            a @ a
            a @ a

    attribution = profiling.attribute(_profile(run), region="inside")
    assert _rows(attribution, "aten::mm")[0].calls == 2
    with pytest.raises(ValueError, match="region 'elsewhere' was not recorded"):
        profiling.attribute(_profile(run), region="elsewhere")


def test_a_run_files_ceilings_hold_each_unit_and_level():
    import copy

    from test_predict import DRAM, PASS, PEAK32

    from roofline_book import add, gemm
    from roofline_book.measure.ceilings import of_run

    run = copy.deepcopy(PASS)
    run["device"]["cache_bytes"] = None  # no cache reported: DRAM is the only level
    roofs = of_run(run)
    big = profiling.row_bound(gemm(1024, 1024, 1024, "fp32"), roofs, "fp32")
    # 2 * 1024**3 FLOP at the 107 GFLOP/s peak: 20 ms, against 12 MiB at 32.2 GB/s: 0.4 ms
    assert big.resource == "matrix"
    assert big.seconds == pytest.approx(2 * 1024**3 / PEAK32)
    small = profiling.row_bound(add(1000, "fp32"), roofs, "fp32")
    # its 12 kB from DRAM at the best bandwidth probe (line fills counted); its 1000 adds
    # take 1000 lane slots at the FP32 peak taken as slots per second
    assert dict(small.by_resource) == {
        "dram": pytest.approx(12_000 / DRAM),
        "vector": pytest.approx(1000 / PEAK32),
    }
    # a precision the run did not measure: no bound rather than a partial one
    assert profiling.row_bound(gemm(64, 64, 64, "fp16"), roofs, "fp16") is None


def test_a_run_files_ceilings_hold_data_to_the_smallest_level_that_holds_it():
    from test_predict import PASS, with_l2_roof

    from roofline_book import add
    from roofline_book.measure.ceilings import of_run

    run = with_l2_roof(PASS)  # L1 48 KiB (no roof), L2 2 MiB (a roof), L3 16 MiB (none)
    roofs = of_run(run)
    l2, dram = roofs.level("l2").bandwidth, roofs.memory.bandwidth
    assert l2 == pytest.approx(786432 / 1e-5)  # the L2 copy's rate, line fills counted
    # 12 MiB: over 4 x 2 MiB, within 4 x 16 MiB: the L3 holds it, which has no roof, and
    # its bytes pass the L2 on the way
    near = profiling.row_bound(add(2**20, "fp32"), roofs, "fp32")
    assert near.resource == "l2" and near.by_resource["l2"] == pytest.approx(12 * 2**20 / l2)
    assert "dram" not in near.by_resource
    # 96 MiB: over 4 x 16 MiB, so from DRAM at the best bandwidth probe
    far = profiling.row_bound(add(2**23, "fp32"), roofs, "fp32")
    assert far.resource == "dram" and far.seconds == pytest.approx(96 * 2**20 / dram)
    # 12 kB fits the L1, which has no roof: only the lanes hold it
    tiny = profiling.row_bound(add(1000, "fp32"), roofs, "fp32")
    assert dict(tiny.by_resource) == {"vector": pytest.approx(1000 / roofs.rate("vector", "fp32"))}


def test_a_fill_under_zero_is_counted_once():
    x = torch.empty(2, 256, 8, 64)  # 2^18 elements: zero_ runs a fill_ (a small one may not)
    attribution = profiling.attribute(_profile(x.zero_))
    (zero,) = _rows(attribution, "aten::zero_")
    (fill,) = _rows(attribution, "aten::fill_")
    assert zero.cost is None and fill.bytes == 4 * 2**18  # written once
    assert attribution.total().bytes == 4 * 2**18


def test_fraction_of_roof_is_bound_over_time():
    from roofline_book import hardware

    x = torch.randn(1 << 16)
    attribution = profiling.attribute(_profile(lambda: x * 2.0), Ceilings.of(hardware("h100-sxm")))
    (mul,) = _rows(attribution, "aten::mul")
    # 512 KiB: the 50 MiB L2 may hold it, so it is held to the L2 at 8.43 TB/s, not to HBM
    assert mul.bound == "l2"
    expected = (8 * (1 << 16) / 8428.6e9) / mul.self_time_s  # 8 bytes per element
    assert mul.fraction_of_roof == pytest.approx(expected)
    assert mul.achieved_bytes == pytest.approx(8 * (1 << 16) / mul.self_time_s)


def test_unmodelled_ops_keep_time_but_no_figures():
    x = torch.randn(10, 10)
    attribution = profiling.attribute(_profile(lambda: torch.cat([x, x])))
    (cat,) = _rows(attribution, "aten::cat")
    assert cat.cost is None and cat.flops is None and cat.fraction_of_roof is None
    assert cat.share > 0


def test_call_models_from_shapes():
    assert atenops.model(
        atenops.Call("aten::bmm", ((4, 8, 16), (4, 16, 2)), ("float",) * 2)
    ).flops == (2 * 4 * 8 * 16 * 2)
    # an integer tensor has no float precision: no model
    assert atenops.model(atenops.Call("aten::add", ((10,), (10,)), ("long int",) * 2)) is None
    # shapes that do not broadcast: no model rather than a wrong one
    assert atenops.model(atenops.Call("aten::mul", ((3,), (4,)), ("float",) * 2)) is None


def test_roof_figures_count_rows_a_cold_start_bound_would_miss():
    from test_predict import PASS, with_l2_roof

    from roofline_book import add
    from roofline_book.book.profiling import roof_figures
    from roofline_book.measure.ceilings import of_run

    roofs = of_run(with_l2_roof(PASS))
    cost = add(2**20, "fp32")  # 12 MiB: held to the L2 roof, not to DRAM
    dram_s, l2_s = cost.bytes / roofs.memory.bandwidth, cost.bytes / roofs.level("l2").bandwidth
    assert l2_s < dram_s

    def row(seconds):
        held = profiling.row_bound(cost, roofs, "fp32")
        return profiling.OpRow("aten::add", ((2**20,), (2**20,)), ("float",) * 2, 1, seconds,
                               0.5, cost, "fp32", held, None)  # fmt: skip

    between = (l2_s + dram_s) / 2  # faster than DRAM allows, slower than the L2 roof
    attribution = profiling.Attribution((row(between), row(2 * dram_s)), 3 * dram_s, roofs, "cpu")
    figures = roof_figures(attribution)
    assert figures["cold_beaten"] == 1 and figures["cache_margin"] == 4
    assert figures["levels_zh"].startswith("L1（48 KiB，没有实测 roof）、L2（2 MiB，")
    assert all(r.fraction_of_roof <= 1 for r in attribution.rows)  # the bound holds
